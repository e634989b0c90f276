"""conf/recipe/: every model preset names its training recipe in a file of its own (train.yaml's `recipe: ${model}`),
so a recipe is never picked, or skipped, by a preset's name alone."""
from __future__ import annotations

import json

import pytest
from omegaconf import OmegaConf

from seqbench.config.compose import CONF_DIR

from conftest import compose_train, dotted_leaves, seqbench_cli

MODELS = sorted(p.stem for p in (CONF_DIR / "model").glob("*.yaml"))
DEFAULTS = OmegaConf.load(CONF_DIR / "train.yaml")


@pytest.mark.parametrize("model", MODELS)
def test_every_model_preset_has_a_recipe_file(model):
    assert (CONF_DIR / "recipe" / f"{model}.yaml").is_file(), f"conf/recipe/{model}.yaml is missing"
    cfg = compose_train([f"model={model}"], hydra_config=True)
    assert cfg.hydra.runtime.choices["recipe"] == model


def test_a_searched_recipe_sets_the_training_and_none_keeps_train_yaml():
    searched = OmegaConf.load(CONF_DIR / "recipe" / "halving" / "cnn.yaml")
    cnn = compose_train(["model=cnn"])
    assert cnn.optimizer.lr == searched.optimizer.lr != DEFAULTS.get("optimizer", {}).get("lr")
    plain = compose_train(["model=cnn", "recipe=none"])
    assert plain.scheduler.kind == DEFAULTS.scheduler.kind
    assert plain.optimizer.lr != searched.optimizer.lr
    rnn = compose_train(["model=rnn"])  # no searched recipe: its file says so, and the defaults apply
    assert rnn.scheduler.kind == DEFAULTS.scheduler.kind
    assert rnn.scheduler.warmup_steps == DEFAULTS.scheduler.warmup_steps


def test_a_model_preset_without_a_recipe_file_is_one_error_line(tmp_path, capsys):
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "mine.yaml").write_text("defaults:\n  - transformer\nname: mine\n")
    status, out, err = seqbench_cli(["train", f"hydra.searchpath=[file://{tmp_path}]", "model=mine",
                                     f"hydra.run.dir={tmp_path / 'run'}"], capsys)
    assert status != 0
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: recipe='mine':"), err
    assert "add conf/recipe/mine.yaml" in lines[0] and "recipe=none" in lines[0]
    assert not (tmp_path / "run" / "checkpoints").exists()


RESULTS = CONF_DIR.parent / "docs" / "results"
SEARCH_FILES = CONF_DIR.parent / "searches"
# each equal search's records and the recipe folder its choices were written to (conf/recipe/<folder>/)
SEARCHES = {"recipe_halving": "halving", "recipe_halving_settled": "halving_settled"}
# each recipe folder's decoding tuning (docs/results/<records>/<model>/) and the preset that trains with it
TUNINGS = {"halving": ("decoding_tuning", "equal_compute"),
           "halving_settled": ("decoding_tuning_settled", "equal_compute_settled")}
FAMILIES = ["transformer", "rnnsearch_small", "cnn"]


@pytest.mark.parametrize("search", sorted(SEARCHES))
@pytest.mark.parametrize("model", FAMILIES)
def test_the_searched_recipes_are_the_configurations_the_committed_search_chose(search, model):
    """conf/recipe/<folder>/<model>.yaml trains with what the search recorded as its choice (recipes/<model>.yaml,
    written by the runner from summary.json's chosen configuration), value for value, with the family's settings the
    search file fixed for every configuration (its overrides beside the model preset: pre-LN, the GRU cell); only
    decoding is added."""
    import yaml

    records = RESULTS / search
    chosen = dotted_leaves(yaml.safe_load((records / "recipes" / f"{model}.yaml").read_text()))
    summary = json.loads((records / "summary.json").read_text())
    family = summary["families"][model]
    assert chosen == family["configurations"][family["chosen"]["index"]]["params"]
    search_file = yaml.safe_load((SEARCH_FILES / f"{search}.yaml").read_text())
    assert search_file == summary["search"], "the committed search file is the one its records ran"
    fixed = {k: v for k, v in (search_file["families"][model].get("overrides") or {}).items() if k != "model"}
    recipe = dotted_leaves(yaml.safe_load((CONF_DIR / "recipe" / SEARCHES[search] / f"{model}.yaml").read_text()))
    assert {k: v for k, v in recipe.items() if not k.startswith("module.decoding.")} == {**chosen, **fixed}


@pytest.mark.parametrize("folder", sorted(TUNINGS))
@pytest.mark.parametrize("model", FAMILIES)
def test_each_searched_recipe_decodes_as_its_committed_tuning_chose(folder, model):
    """The beam, length penalty and normalisation of conf/recipe/<folder>/<model>.yaml are the setting
    `seqbench tune-decoding` chose on validation for that recipe (docs/results/decoding_tuning*/<model>/), and the
    preset that compares the families with those recipes decodes with them."""
    import yaml

    records, preset = TUNINGS[folder]
    tuned = json.loads((RESULTS / records / model / "decoding.json").read_text())
    chosen = {key: tuned["chosen"][key] for key in ("beam_size", "length_penalty", "length_normalization")}
    recipe = dotted_leaves(yaml.safe_load((CONF_DIR / "recipe" / folder / f"{model}.yaml").read_text()))
    assert {k.removeprefix("module.decoding."): v for k, v in recipe.items() if k.startswith("module.decoding.")} \
        == chosen
    assert tuned["split"] == "valid"
    cfg = compose_train([f"experiment={preset}", f"model={model}"])
    assert {key: cfg.module.decoding[key] for key in chosen} == chosen
