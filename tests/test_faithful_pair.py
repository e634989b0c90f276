"""The paper-faithful pair of Fig. 2 (docs/experiments/rnn_vs_attention.md): its -50 models are the faithful search's
runs (searches/rnn_vs_attention_faithful.yaml) and its -30 models experiment=rnn_vs_attention_faithful's. The -30 runs
must train exactly as the -50 runs of their family and seed but on shorter pairs, with the recipe the search chose."""
from __future__ import annotations

import json

import pytest
import yaml
from omegaconf import OmegaConf

from seqbench.config.compose import CONF_DIR
from seqbench.sweep import halving

from conftest import compose_train, dotted_leaves

ROOT = CONF_DIR.parent
SEARCH = ROOT / "searches" / "rnn_vs_attention_faithful.yaml"
RECORDS = ROOT / "docs" / "results" / "rnn_vs_attention_faithful"
FAMILIES = {"rnnencdec": "rnnenc", "rnnsearch_small": "rnnsearch"}  # model preset -> the search's family
# What a -30 run may set differently from the -50 run of its seed: the data it trains on, its name in reports and the
# wall-clock guard (a guard ends a stuck run; it is not the budget)
MAY_DIFFER = {"data.train_max_len", "compare.label", "compare.paper_names.none", "compare.paper_names.bahdanau",
              "trainer.max_time"}


def _swept_models() -> list[str]:
    params = compose_train(["experiment=rnn_vs_attention_faithful"], hydra_config=True).hydra.sweeper.params
    return str(params["model"]).split(",")


def _finalist(family: str) -> dict:
    """The configuration the search ranked first at its last rung (its recipe, since it confirms the top one)."""
    summary = json.loads((RECORDS / "summary.json").read_text())["families"][family]
    assert summary["finalists"], f"{family}: the search's last rung is not complete in the records"
    return summary["configurations"][summary["finalists"][0]]


@pytest.mark.parametrize("model", _swept_models())
def test_each_swept_models_recipe_is_the_configuration_its_search_chose(model):
    recipe = dotted_leaves(yaml.safe_load((CONF_DIR / "recipe" / "faithful" / f"{model}.yaml").read_text()))
    assert recipe == _finalist(FAMILIES[model])["params"]


@pytest.mark.parametrize("model", _swept_models())
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_minus_30_run_is_its_minus_50_run_but_for_the_training_lengths(model, seed):
    """Composed, a -30 job and the search's job of the same family, configuration and seed agree on every key but
    MAY_DIFFER, and the -30 job trains on pairs of at most 30 words."""
    config = halving.load(SEARCH)
    finalist = _finalist(FAMILIES[model])
    own = config["constants"]["seed"]
    job = halving.Job(FAMILIES[model], "search" if seed == own else "confirm", finalist["index"],
                      config["rungs"][-1], seed)
    fifty = compose_train(halving.job_overrides(config, finalist["params"], job))
    thirty = compose_train(["experiment=rnn_vs_attention_faithful", f"model={model}", f"seed={seed}"])
    a = dotted_leaves(OmegaConf.to_container(fifty, resolve=True))
    b = dotted_leaves(OmegaConf.to_container(thirty, resolve=True))
    differ = {key for key in a.keys() | b.keys() if a.get(key) != b.get(key)}
    assert differ <= MAY_DIFFER, sorted(differ - MAY_DIFFER)
    assert (a["data.train_max_len"], b["data.train_max_len"]) == (50, 30)
    assert b["compare.label"] == f"{FAMILIES[model]}-30"


THIRTY = ROOT / "docs" / "results" / "rnn_vs_attention_faithful_30"


@pytest.mark.parametrize("record", sorted(THIRTY.glob("*/*/config.yaml")), ids=lambda p: f"{p.parent.parent.name}/"
                         f"{p.parent.name}")
def test_each_committed_minus_30_run_ran_its_minus_50_runs_config_but_for_the_training_lengths(record):
    """What the runs recorded, not only what the configs compose to: the committed -30 run of a family and seed and
    the search's committed run of the same family, chosen configuration and seed differ only in MAY_DIFFER."""
    thirty = dotted_leaves(yaml.safe_load(record.read_text()))
    family, seed = record.parent.parent.name, thirty["seed"]
    config = halving.load(SEARCH)
    finalist = _finalist(family)
    stage = "search" if seed == config["constants"]["seed"] else "confirm"
    job = halving.Job(family, stage, finalist["index"], config["rungs"][-1], seed)
    fifty = dotted_leaves(yaml.safe_load((job.run_dir(RECORDS) / "config.yaml").read_text()))
    differ = {key for key in fifty.keys() | thirty.keys() if fifty.get(key) != thirty.get(key)}
    assert differ <= MAY_DIFFER, sorted(differ - MAY_DIFFER)
    assert (fifty["data.train_max_len"], thirty["data.train_max_len"]) == (50, 30)
