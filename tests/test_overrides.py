"""Command-line overrides as `seqbench train` meets them: everything Hydra composes passes the whole front of the
command (seqbench.config.checks.check_group_overrides, Hydra's parser, composition and sweeper, the config checks of
every job); a mistyped group choice or a malformed override, swept or not, is one line and exit status 2 before any
job starts. Hydra itself decides the group choices (MissingConfigException); the lines are worded from its
exceptions' attributes. In-process, with the run replaced by the config checks alone, so nothing trains."""
from __future__ import annotations

import pytest

from seqbench.config.checks import check_group_overrides, validate

from conftest import seqbench_cli


@pytest.fixture
def jobs(monkeypatch):
    """The configs of the jobs that started: each is checked (seqbench.config.checks.validate) and not run."""
    import seqbench.training.run

    started = []

    def checked_only(cfg):
        validate(cfg)
        started.append(cfg)
        return {"valid": {"bleu": 0.0}}

    monkeypatch.setattr(seqbench.training.run, "run", checked_only)
    monkeypatch.delenv("HYDRA_FULL_ERROR", raising=False)
    return started


def train(argv, tmp_path, capsys):
    """`seqbench train <argv>` with its run and sweep directories under tmp_path: (exit status, stderr)."""
    status, _, err = seqbench_cli(["train", *argv, f"hydra.run.dir={tmp_path}/run",
                                   f"hydra.sweep.dir={tmp_path}/sweep"], capsys)
    return status, err


@pytest.mark.parametrize("argv, runs", [
    (["model=transformer"], 1),
    (["logger=[csv,wandb]"], 1),                  # two loggers
    (["logger=[]"], 1),
    (["-m", "model=transformer,cnn"], 2),         # multirun commas
    (["-m", "model=choice(transformer,cnn)"], 2),
    (["-m", "model=glob(rnn*)"], 4),              # rnn, rnnencdec, rnnsearch, rnnsearch_small
    (["-m", "model.n_heads=range(1,9)", "model.d_model=840"], 8),  # a config key: any sweep Hydra takes
    (["-m", "logger=[csv],[csv,wandb]"], 2),      # a sweep over lists
    (["experiment=arch_comparison", "hydra.mode=RUN"], 1),
    (["~logger"], 1),
    (["model='cnn'"], 1),
    (["--cfg", "job", "-p", "model", "model=rnn"], 0),  # Hydra's flags and their values are Hydra's
    (["hydra/launcher=basic"], 1),                # Hydra's own groups and keys are Hydra's business
    (["trainer.max_steps=10", "optimizer.lr=1e-3"], 1),
    (["recipe=equal_search/cnn"], 1),             # an option in a folder of its group
])
def test_what_hydra_composes_passes(argv, runs, jobs, tmp_path, capsys):
    status, err = train(argv, tmp_path, capsys)
    assert status == 0 and "error:" not in err, err
    assert len(jobs) == runs


def test_flags_and_their_values_are_left_to_hydra():
    check_group_overrides(["--multirun", "--config-name", "train", "-p", "model", "--info", "defaults",
                        "hparams_search=transformer_shape"])


@pytest.mark.parametrize("argv, message", [
    (["model=transfomer"], "model='transfomer': allowed values are cnn, convs2s_wmt_en_de, luong, rnn"),
    (["logger=[csv,wandbb]"], "logger='wandbb': allowed values are csv, none, tensorboard, wandb"),
    (["-m", "model=transformer,cnnn"], "model='cnnn': allowed values are"),
    (["-m", "model=choice(transformer,lstm)"], "model='lstm': allowed values are"),
    (["-m", "logger=[csv],[neptune]"], "logger='neptune': allowed values are"),
    (["-m", "hydra/launcher=submitit_locl"], "hydra/launcher='submitit_locl': allowed values are basic, slurm"),
    (["+experiment=arch_comparisn"], "experiment='arch_comparisn': allowed values are arch_comparison,"),
    (["-m", "model=glob(lstm*)"], "model=glob(lstm*): matches no model config (allowed values are cnn,"),
    (["-m", "model=range(1,3)"], "model=range(1,3): model is a config group, its values are config names (allowed "
                                 "values are cnn,"),
    (["model=1"], "model=1: model is a config group, its values are config names (allowed values are cnn,"),
    (["logger=null"], "logger=null: logger is a config group, its values are config names (allowed values are csv, "
                      "none, tensorboard, wandb); ~logger removes it"),
    (["recipe=equal_search/lstm"], "recipe='equal_search/lstm': allowed values are cnn, convs2s_wmt_en_de,"),
    (["recipe=equal_search/lstm"], "equal_search/cnn, equal_search/rnnsearch_small, equal_search/transformer,"),
    # what Hydra rejects itself in one line: a group already in the defaults list, a package it does not have
    (["+experiment=arch_comparison"], "Multiple values for experiment. To override a value use 'override "
                                      "experiment: arch_comparison'"),
    (["model@model=cnn"], "Could not override 'model@model'. Did you mean to override model?"),
    (["model=choice(transformer"], "model=choice(transformer: cannot be parsed (no viable alternative at input "
                                   "'choice(transformer')"),
    (["model.n_heads=[1,2"], "model.n_heads=[1,2: cannot be parsed (no viable alternative at input '[1,2')"),
])
def test_a_bad_override_is_one_line_before_any_job(argv, message, jobs, tmp_path, capsys):
    status, err = train(argv, tmp_path, capsys)
    lines = err.strip().splitlines()
    assert status == 2 and len(lines) == 1 and lines[0].startswith("error: "), err
    assert message in lines[0], lines[0]
    assert "Traceback" not in err
    assert jobs == [], "found before any job started"
    sweep = tmp_path / "sweep"  # Hydra's basic sweeper writes multirun.yaml, then composes every job, then launches
    assert not sweep.exists() or [p.name for p in sweep.iterdir()] == ["multirun.yaml"]
