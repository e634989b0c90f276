"""Expected best validation score after k trials (seqbench.analysis.tuning, Dodge et al. 2019) on hand-computed
values, and the report that puts recipe searches side by side."""
from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from seqbench.analysis.tuning import expected_best, expected_best_curve
from seqbench.report.tuning import write_tuning_report

ROOT = Path(__file__).resolve().parents[1]


def test_expected_best_by_hand():
    scores = [10.0, 20.0, 40.0]
    # k = 1: the mean; k = 2: the max of two draws with replacement: 10 w.p. 1/9, 20 w.p. 3/9, 40 w.p. 5/9
    assert expected_best(scores, 1)[0] == pytest.approx(70 / 3)
    mean, std = expected_best(scores, 2)
    assert mean == pytest.approx((10 * 1 + 20 * 3 + 40 * 5) / 9)
    assert std == pytest.approx(math.sqrt((100 * 1 + 400 * 3 + 1600 * 5) / 9 - mean ** 2))
    assert expected_best([5.0] * 4, 3) == (pytest.approx(5.0), pytest.approx(0.0))
    curve = [p["expected_best"] for p in expected_best_curve(scores)]
    assert curve == sorted(curve) and curve[-1] < 40.0  # rises with k, below the best trial (draws repeat)
    with pytest.raises(ValueError):
        expected_best([], 1)


def _sweep(root, name, metrics):
    trials = [{"number": i, "state": "complete" if m is not None else "failed", "metric": m,
               "params": {"optimizer.lr": 0.001 * (i + 1)}, "run_dir": str(root / name / "trials" / f"{i:03d}")}
              for i, m in enumerate(metrics)]
    (root / name).mkdir(parents=True)
    (root / name / "summary.json").write_text(json.dumps({"sweep": {"name": name}, "method": "random",
                                                          "trials": trials}))
    return root / name


def test_tuning_report_puts_searches_side_by_side(tmp_path):
    a = _sweep(tmp_path, "recipe_a", [10.0, None, 40.0, 20.0])  # a failed trial counts as 0
    b = _sweep(tmp_path, "recipe_b", [30.0, 31.0, 29.0, 30.0])
    text = write_tuning_report([a, b], tmp_path / "out").read_text()
    row_a = next(line for line in text.splitlines() if line.startswith("| recipe_a |"))
    assert "| 4 | 1 | 40.00 (trial 2) |" in row_a and "optimizer.lr=0.003" in row_a
    assert f"| {expected_best([10.0, 0.0, 40.0, 20.0], 2)[0]:.2f} |" in row_a
    assert (tmp_path / "out" / "expected_best.png").stat().st_size > 1000


def test_every_family_gets_the_same_tuning_budget():
    """The three recipe searches differ only in the model and in what only one family has (the Transformer's
    pre/post-LN): the same trials, update budget, size, seed, sampler and recipe space, so no family is tuned harder."""
    import yaml

    sweeps = {family: yaml.safe_load((ROOT / "sweeps" / f"recipe_{family}.yaml").read_text())
              for family in ("transformer", "rnn", "cnn")}
    own = {"transformer": {"model", "model.norm_first"}, "rnn": {"model"}, "cnn": {"model"}}
    shared = {family: {k: v for k, v in s["parameters"].items() if k not in own[family]}
              for family, s in sweeps.items()}
    assert shared["transformer"] == shared["rnn"] == shared["cnn"]
    assert len({(s["run_cap"], s["method"], s["metric"]["name"]) for s in sweeps.values()}) == 1
    assert {s["parameters"]["model"]["value"] for s in sweeps.values()} == {"transformer", "rnnsearch_small", "cnn"}


@pytest.mark.parametrize("model", ["transformer", "rnnsearch_small", "cnn"])
def test_each_family_trains_with_its_searched_recipe(model):
    """conf/recipe/halving/<model>.yaml, from the search every family got equally (searches/recipe_halving.yaml),
    reaches the presets that compare the families at its budget (equal_compute, budget_sweep), and
    conf/recipe/halving_settled/<model>.yaml, from the settled search (searches/recipe_halving_settled.yaml), reaches
    equal_compute_settled; arch_comparison keeps the recipe of the 24-trial search its committed runs used
    (conf/recipe/equal_search/); recipe=none removes a recipe (the train.yaml defaults return)."""
    import yaml
    from omegaconf import OmegaConf

    from conftest import compose_train, dotted_leaves

    def leaves(path: Path) -> dict:
        tree = yaml.safe_load(path.read_text())
        tree.pop("defaults", None)
        return dotted_leaves(tree)

    recipes = ROOT / "conf" / "recipe"
    for preset, recipe in ((["experiment=equal_compute"], "halving"), (["experiment=budget_sweep"], "halving"),
                           (["experiment=equal_compute_settled"], "halving_settled"),
                           (["experiment=arch_comparison"], "equal_search")):
        searched = leaves(recipes / recipe / f"{model}.yaml")
        cfg = compose_train([*preset, f"model={model}"])
        assert {key: OmegaConf.select(cfg, key) for key in searched} == searched, preset
    searched = leaves(recipes / "halving" / f"{model}.yaml")
    plain = compose_train([f"model={model}", "recipe=none"])
    assert {key: OmegaConf.select(plain, key) for key in searched} != searched
    assert OmegaConf.select(plain, "scheduler.kind") == "inverse_sqrt" and plain.optimizer.lr == 4e-3


def test_the_quickstart_recipe_stays_out_of_the_comparisons():
    """No comparison preset composes to the quickstart's Transformer recipe (conf/recipe/transformer.yaml) unless it
    is the equal search's: equal_compute and budget_sweep have the equal multi-fidelity search's, arch_comparison and
    position_extrapolation the 24-trial search's their committed runs used."""
    from conftest import compose_train

    def recipe(cfg) -> tuple:
        return cfg.model.norm_first, cfg.optimizer.lr, cfg.scheduler.warmup_steps, cfg.module.label_smoothing

    halving = (True, 3.65e-3, 620, 0.0122)
    for preset in ("equal_compute", "budget_sweep"):
        assert recipe(compose_train([f"experiment={preset}", "model=transformer"])) == halving, preset
    for preset in ("arch_comparison", "position_extrapolation"):
        assert recipe(compose_train([f"experiment={preset}", "model=transformer"])) == (False, 1.5e-3, 400, 0.2)
    assert recipe(compose_train([])) in (halving, (True, 4e-3, 300, 0.1))  # the searched or the hand-found


@pytest.mark.parametrize("preset, models", [
    ("rnn_vs_attention", ["model=rnnencdec", "model=rnnsearch_small"]),
    ("rnn_vs_attention_longrange", ["model=rnnencdec"]),
    ("luong_variants", [f"model.attention={a}" for a in ("luong_dot", "luong_general", "luong_concat", "bahdanau")]),
])
def test_rnn_presets_train_every_model_with_the_rnn_familys_recipe(preset, models):
    """The attention ablations share one recipe, the RNN family's searched one, so attention is their only
    difference: RNNenc too, which has no search of its own."""
    import yaml
    from omegaconf import OmegaConf

    from conftest import compose_train, dotted_leaves

    recipe = dotted_leaves(yaml.safe_load((ROOT / "conf" / "recipe" / "equal_search" /
                                           "rnnsearch_small.yaml").read_text()))
    for model in models:
        cfg = compose_train([f"experiment={preset}", model])
        assert {key: OmegaConf.select(cfg, key) for key in recipe} == recipe, (preset, model)
