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


SEARCH_RECORDS = CONF_DIR.parent / "docs" / "results" / "recipe_halving"
DECODING_RECORDS = CONF_DIR.parent / "docs" / "results" / "decoding_tuning"


@pytest.mark.parametrize("model", ["transformer", "rnnsearch_small", "cnn"])
def test_the_searched_recipes_are_the_configurations_the_committed_search_chose(model):
    """conf/recipe/halving/<model>.yaml trains with what the search recorded as its choice (recipes/<model>.yaml,
    written by the runner from summary.json's chosen configuration), value for value; only decoding is added."""
    import yaml

    chosen = dotted_leaves(yaml.safe_load((SEARCH_RECORDS / "recipes" / f"{model}.yaml").read_text()))
    summary = json.loads((SEARCH_RECORDS / "summary.json").read_text())["families"][model]
    assert chosen == summary["configurations"][summary["chosen"]["index"]]["params"]
    recipe = dotted_leaves(yaml.safe_load((CONF_DIR / "recipe" / "halving" / f"{model}.yaml").read_text()))
    assert {k: v for k, v in recipe.items() if not k.startswith("module.decoding.")} == chosen


@pytest.mark.parametrize("model", ["transformer", "rnnsearch_small", "cnn"])
def test_each_searched_recipe_decodes_as_its_committed_tuning_chose(model):
    """The beam, length penalty and normalisation of conf/recipe/halving/<model>.yaml are the setting
    `seqbench tune-decoding` chose on validation for that recipe (docs/results/decoding_tuning/<model>/)."""
    import yaml

    tuned = json.loads((DECODING_RECORDS / model / "decoding.json").read_text())
    chosen = {key: tuned["chosen"][key] for key in ("beam_size", "length_penalty", "length_normalization")}
    recipe = dotted_leaves(yaml.safe_load((CONF_DIR / "recipe" / "halving" / f"{model}.yaml").read_text()))
    assert {k.removeprefix("module.decoding."): v for k, v in recipe.items() if k.startswith("module.decoding.")} \
        == chosen
    assert tuned["split"] == "valid"
    cfg = compose_train(["experiment=equal_compute", f"model={model}"])
    assert {key: cfg.module.decoding[key] for key in chosen} == chosen
