"""Command-line overrides checked with Hydra's own parsers (config_check.check_group_choices): everything Hydra
composes passes, a mistyped group choice or a malformed override is one line."""
from __future__ import annotations

import pytest

from seqbench.common.errors import ConfigError
from seqbench.config.arguments import check_group_choices
from seqbench.config.compose import CONF_DIR

CONF_DIR = str(CONF_DIR)


@pytest.mark.parametrize("argv", [
    ["model=transformer"],
    ["logger=[csv,wandb]"],                      # two loggers
    ["logger=[]"],
    ["logger=null"],
    ["-m", "model=transformer,cnn"],             # multirun commas
    ["-m", "model=choice(transformer,cnn)"],
    ["-m", "model=glob(rnn*)"],
    ["-m", "model.n_heads=range(1,9)"],          # a config key: only parsed
    ["-m", "logger=[csv],[csv,wandb]"],          # a sweep over lists
    ["+experiment=arch_comparison"],
    ["~logger"],
    ["model@model=cnn"],
    ["model='cnn'"],
    ["--multirun", "--config-name", "train", "hparams_search=transformer_shape"],
    ["--cfg", "job", "-p", "model", "model=rnn"],
    ["hydra/launcher=basic", "hydra.run.dir=/tmp/x"],  # Hydra's own groups and keys are Hydra's business
    ["trainer.max_steps=10", "optimizer.lr=1e-3"],
    ["recipe=equal_search/cnn"],  # an option in a folder of its group
])
def test_what_hydra_composes_passes(argv):
    check_group_choices(argv, CONF_DIR)


@pytest.mark.parametrize("argv, message", [
    (["model=transfomer"], "model='transfomer': allowed values are cnn, convs2s_wmt_en_de, luong, rnn"),
    (["logger=[csv,wandbb]"], "logger='wandbb': allowed values are csv, none, tensorboard, wandb"),
    (["-m", "model=transformer,cnnn"], "model='cnnn': allowed values are"),
    (["-m", "model=choice(transformer,lstm)"], "model='lstm': allowed values are"),
    (["-m", "logger=[csv],[neptune]"], "logger='neptune': allowed values are"),
    (["-m", "hydra/launcher=submitit_locl"], "hydra/launcher='submitit_locl': allowed values are basic, slurm"),
    (["+experiment=arch_comparisn"], "experiment='arch_comparisn': allowed values are arch_comparison,"),
    (["-m", "model=glob(lstm*)"], "model=glob(lstm*): matches no model"),
    (["-m", "model=range(1,3)"], "model='1': allowed values are"),
    (["recipe=equal_search/lstm"], "recipe='equal_search/lstm': allowed values are cnn, equal_search/cnn,"),
    (["model=choice(transformer"], "cannot parse override 'model=choice(transformer':"),
    (["model.n_heads=[1,2"], "cannot parse override 'model.n_heads=[1,2':"),
])
def test_a_bad_override_is_one_line(argv, message):
    with pytest.raises(ConfigError) as error:
        check_group_choices(argv, CONF_DIR)
    assert message in str(error.value) and "\n" not in str(error.value)
