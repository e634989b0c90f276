"""Bad input to `seqbench train`, as a table: every case must end with exit status 2 and exactly one line on stderr
that starts with `error: ` and names the problem, with no traceback, before anything but the log is written.

What a failed run may leave in its run directory: nothing at all when Hydra rejects the command line (the directory
is never created); `.hydra/` (the composed config) and `train.log` (Hydra's job log) when the project's checks reject
it, since Hydra writes those before the task starts. No checkpoints, csv/, results.json, hypotheses or attention maps:
the test compares the run directory before and after and allows only those two names to appear.

The cases run in-process through the command's own entry (seqbench.commands.main), so the whole table costs one
import of the project: the config cases fail before any data is built (asserted: the cache stays empty); the data
cases share one tiny cached synthetic corpus. The `__main__` path itself is tested once, in tests/test_train.py.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

from seqbench.commands import COMMANDS

from conftest import compose_train, seqbench_cli

TINY_DATA = ["data.corpus.train_size=60", "data.corpus.valid_per_bucket=1", "data.corpus.test_per_bucket=1",
             "data.vocab_size=200", "threads=1", "callbacks.progress_bar=null"]
TINY_TRANSFORMER = ["model.d_model=16", "model.n_heads=2", "model.d_ff=32", "model.encoder_layers=1",
                    "model.decoder_layers=1"]
# written by Hydra before the task function runs, and the run-directory lock (seqbench.rundir.lock) taken first
ALLOWED_IN_RUN_DIR = {".hydra", "train.log", ".lock"}
NO_GPU = pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a GPU: the request is valid here")

# (case id, overrides, text the one line must contain). "{tmp}" is the test's own temporary directory.
# Config: values of every kind of key, rejected before any data is built.
CONFIG_CASES = [
    ("max_steps_not_int", ["trainer.max_steps=abc"], "trainer.max_steps"),
    ("max_steps_float", ["trainer.max_steps=2.5"], "trainer.max_steps"),
    ("max_steps_negative", ["trainer.max_steps=-5"], "trainer.max_steps"),
    ("max_epochs_negative", ["trainer.max_epochs=-3"], "trainer.max_epochs"),
    ("seed_not_int", ["seed=abc"], "seed"),
    ("seed_float", ["seed=1.5"], "seed"),
    ("seed_negative", ["seed=-1"], "seed"),
    ("lr_negative", ["optimizer.lr=-0.001"], "optimizer.lr"),
    ("lr_zero", ["optimizer.lr=0"], "optimizer.lr"),
    ("betas_one_value", ["optimizer.betas=[0.9]"], "optimizer.betas"),
    ("warmup_negative", ["scheduler.warmup_steps=-10"], "scheduler.warmup_steps"),
    ("cosine_without_an_end", ["scheduler.kind=cosine", "trainer.max_steps=-1", "trainer.max_epochs=-1"],
     "scheduler.total_steps=-1"),
    ("schedule_unknown", ["scheduler.kind=linear"], "scheduler.kind='linear': must be one of inverse_sqrt"),
    ("clip_negative", ["trainer.gradient_clip_val=-1"], "trainer.gradient_clip_val"),
    ("precision_unknown", ["trainer.precision=8-bit"], "trainer.precision"),
    ("limit_val_fraction_above_1", ["trainer.limit_val_batches=1.5"], "trainer.limit_val_batches"),
    ("limit_train_negative", ["+trainer.limit_train_batches=-1"], "trainer.limit_train_batches"),
    ("trainer_argument_not_in_yaml", ["trainer.limit_train_batches=0.5"], "+trainer.limit_train_batches="),
    ("val_check_interval_zero", ["trainer.val_check_interval=0.0"], "trainer.val_check_interval"),
    ("max_time_format", ["trainer.max_time=7min"], "trainer.max_time"),
    ("accumulate_zero", ["trainer.accumulate_grad_batches=0"], "trainer.accumulate_grad_batches"),
    ("num_nodes_zero", ["trainer.num_nodes=0"], "trainer.num_nodes"),
    ("deterministic_word", ["trainer.deterministic=sometimes"], "trainer.deterministic"),
    ("strategy_unknown", ["+trainer.strategy=fastest"], "trainer.strategy"),
    ("trainer_key_typo_added", ["+trainer.max_step=5"], "trainer.max_steps"),  # suggests the real key
    ("optimizer_key_not_an_argument", ["+optimizer.momentun=0.9"], "optimizer.momentun"),
    ("model_target_missing", ["model._target_=seqbench.models.nope.Model"], "model._target_"),
    ("train_not_bool", ["train=maybe"], "train"),
    ("max_tokens_zero", ["data.max_tokens=0"], "data.max_tokens"),
    ("max_tokens_word", ["data.max_tokens=lots"], "data.max_tokens"),
    ("max_sentences_zero", ["data.max_sentences=0"], "data.max_sentences"),
    ("num_workers_negative", ["data.num_workers=-1"], "data.num_workers"),
    ("beam_zero", ["module.decoding.beam_size=0"], "module.decoding.beam_size"),
    ("max_len_a_negative", ["module.decoding.max_len_a=-1"], "module.decoding.max_len_a"),
    ("test_greedy_not_boolean", ["module.test_greedy=sometimes"], "module.test_greedy"),
    ("positions_unknown", ["model.positions=alibi"], "model.positions='alibi': must be one of sinusoidal"),
    ("early_stopping_without_val_bleu", ["callbacks=early_stopping", "module.val_bleu=false"],
     "callbacks.model_checkpoint.monitor=val/bleu: needs module.val_bleu=true"),
    ("attention_examples_negative", ["measure.attention_examples=-1"], "measure.attention_examples"),
    ("heads_do_not_divide", ["model.n_heads=3"], "model.n_heads"),
    ("dropout_above_1", ["model.dropout=1.5"], "model.dropout"),
    # Hydra's own errors: unknown keys (with the closest valid key), unknown groups, unparsable overrides
    ("hydra_key_typo", ["model.n_head=4"], "model.n_heads"),
    ("hydra_trainer_key_typo", ["trainer.max_stpes=5"], "trainer.max_steps"),
    ("hydra_unknown_top_key", ["sede=1"], "seed"),
    ("unknown_model", ["model=lstm"], "model='lstm'"),
    ("unknown_optimizer", ["optimizer=adamw"], "optimizer='adamw'"),
    ("unknown_experiment", ["+experiment=nope"], "experiment='nope'"),
    ("hydra_unparsable", ["model.d_model=[1,"], "model.d_model"),
    # devices
    ("accelerator_unknown", ["trainer.accelerator=quantum"], "trainer.accelerator"),
    ("devices_zero", ["trainer.devices=0"], "trainer.devices"),
    pytest.param("gpu_preset_without_gpu", ["trainer=gpu"], "trainer=cpu", marks=NO_GPU),
    pytest.param("cuda_without_gpu", ["trainer.accelerator=cuda"], "trainer.accelerator=cpu", marks=NO_GPU),
    # files and directories
    ("ckpt_missing", ["ckpt_path={tmp}/nope.ckpt"], "ckpt_path"),
    ("ckpt_text_file", ["ckpt_path={tmp}/notes.txt"], "ckpt_path"),
    ("ckpt_empty_file", ["ckpt_path={tmp}/empty.ckpt"], "ckpt_path"),
    ("ckpt_truncated", ["ckpt_path={tmp}/truncated.ckpt"], "ckpt_path"),
    ("ckpt_resumed_is_corrupt", [], "last.ckpt"),  # the run directory holds a broken checkpoints/last.ckpt
    ("output_dir_not_writable", ["paths.output_dir={tmp}/a_file/run"], "paths.output_dir"),
    ("cache_dir_not_writable", ["paths.cache_dir={tmp}/a_file/cache"], "paths.cache_dir"),
    ("run_dir_not_writable", ["hydra.run.dir={tmp}/a_file/run"], "hydra.run.dir"),
    ("run_dir_is_a_file", ["hydra.run.dir={tmp}/a_file"], "hydra.run.dir"),
    ("train_false_without_ckpt", ["train=false"], "ckpt_path"),
    ("files_corpus_missing_file", ["data=files", "data.corpus.train={tmp}/nope.tsv",
                                   "data.corpus.valid={tmp}/nope.tsv", "data.corpus.test={tmp}/nope.tsv"],
     "data.corpus.train"),
]
# Against the data, after it is tokenised and before the first batch (a tiny shared corpus).
DATA_CASES = [
    ("positions_shorter_than_data", [*TINY_TRANSFORMER, "model.max_positions=6"], "model.max_positions"),
    ("cnn_positions_shorter_than_data", ["model=cnn", "model.embed_dim=16", "model.out_embed_dim=16",
                                         "model.encoder_layers=[[16,3]]", "model.decoder_layers=[[16,3]]",
                                         "model.max_positions=6"], "model.max_positions"),
    # the training data fits 400 positions, but beam search may run to 1.5 * source + 1000 tokens
    ("positions_too_short_to_decode", [*TINY_TRANSFORMER, "model.max_positions=400",
                                       "module.decoding.max_len_b=1000"], "positions to decode"),
    ("batch_budget_below_one_pair", [*TINY_TRANSFORMER, "data.max_tokens=6"], "data.max_tokens"),
    ("eval_budget_below_one_pair", [*TINY_TRANSFORMER, "data.eval_max_tokens=6"], "data.eval_max_tokens"),
    ("lightning_misconfiguration", [*TINY_TRANSFORMER, "callbacks.lr_monitor.logging_interval=hour"],
     "logging_interval"),
    ("lightning_trainer_misconfiguration", [*TINY_TRANSFORMER, "+trainer.profiler=nope"], "profiler"),
]


@pytest.fixture(scope="module")
def shared_cache(tmp_path_factory):
    """One tiny corpus for the data cases, built on first use without the datasets library's progress bars (a
    build's output on stderr, not part of an error)."""
    import datasets

    datasets.disable_progress_bars()
    yield tmp_path_factory.mktemp("cache")
    datasets.enable_progress_bars()


def _files(tmp: Path) -> None:
    (tmp / "notes.txt").write_text("these are my notes, not a checkpoint\n")
    (tmp / "empty.ckpt").write_bytes(b"")
    torch.save({"state_dict": {"w": torch.zeros(64, 64)}, "epoch": 0}, tmp / "whole.ckpt")
    whole = (tmp / "whole.ckpt").read_bytes()
    (tmp / "truncated.ckpt").write_bytes(whole[: len(whole) // 2])  # a copy cut off mid-way
    (tmp / "a_file").write_text("a file where a directory is expected\n")


def _snapshot(run_dir: Path) -> set[str]:
    return {str(p.relative_to(run_dir)) for p in run_dir.rglob("*")} if run_dir.exists() else set()


def run_train(monkeypatch, capsys, overrides: list[str], cache: Path, run_dir: Path):
    """`seqbench train <overrides>` in this process: (exit status, stderr)."""
    monkeypatch.delenv("HYDRA_FULL_ERROR", raising=False)
    status, _, err = seqbench_cli(["train", f"paths.cache_dir={cache}", f"hydra.run.dir={run_dir}", *overrides],
                                  capsys)
    return status, err


def _check(case, overrides, expected, tmp_path, cache, monkeypatch, capsys):
    _files(tmp_path)
    run_dir = tmp_path / "run"
    if case == "ckpt_resumed_is_corrupt":
        (run_dir / "checkpoints").mkdir(parents=True)
        (run_dir / "checkpoints" / "last.ckpt").write_bytes((tmp_path / "truncated.ckpt").read_bytes())
    overrides = [o.replace("{tmp}", str(tmp_path)) for o in overrides]
    before = _snapshot(run_dir)
    status, stderr = run_train(monkeypatch, capsys, overrides, cache, run_dir)
    lines = stderr.strip().splitlines()
    assert status == 2, stderr
    assert len(lines) == 1 and lines[0].startswith("error: "), stderr
    assert expected in lines[0], lines[0]
    assert "Traceback" not in stderr
    new = {path.split("/")[0] for path in _snapshot(run_dir) - before}
    assert new <= ALLOWED_IN_RUN_DIR, f"written before failing: {sorted(new - ALLOWED_IN_RUN_DIR)}"
    return lines[0]


@pytest.mark.parametrize("case, overrides, expected", CONFIG_CASES)
def test_bad_config_is_one_line_before_any_data(case, overrides, expected, tmp_path, monkeypatch, capsys):
    cache = tmp_path / "cache"
    _check(case, overrides, expected, tmp_path, cache, monkeypatch, capsys)
    assert not cache.exists(), "config errors must be found before any data is built"


@pytest.mark.parametrize("case, overrides, expected", DATA_CASES)
def test_config_that_does_not_fit_the_data_is_one_line_before_training(case, overrides, expected, tmp_path,
                                                                      shared_cache, monkeypatch, capsys):
    _check(case, [*TINY_DATA, *overrides], expected, tmp_path, shared_cache, monkeypatch, capsys)


def test_unknown_key_suggests_the_closest_one(tmp_path, monkeypatch, capsys):
    line = _check("typo", ["model.n_head=4"], "model.n_head", tmp_path, tmp_path / "cache", monkeypatch, capsys)
    assert "did you mean model.n_heads?" in line


def test_gpu_preset_on_cpu_names_the_fix(tmp_path, monkeypatch, capsys):
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    line = _check("gpu", ["trainer=gpu"], "trainer.accelerator=gpu", tmp_path, tmp_path / "cache", monkeypatch,
                  capsys)
    assert "trainer=cpu" in line and "trainer.accelerator=cpu" in line


def test_hydra_full_error_shows_the_whole_trace(tmp_path, monkeypatch):
    from hydra.errors import ConfigCompositionException

    from seqbench.commands import main

    monkeypatch.setenv("HYDRA_FULL_ERROR", "1")
    with pytest.raises(ConfigCompositionException):
        main(["train", f"hydra.run.dir={tmp_path / 'run'}", "model.n_head=4"])
    assert os.environ["HYDRA_FULL_ERROR"] == "1"


def test_a_real_bug_keeps_its_traceback(tmp_path, monkeypatch, capsys):
    import seqbench.config.environment

    def broken(cfg):
        raise RuntimeError("a bug in the project, not the user's input")

    monkeypatch.setattr(seqbench.config.environment, "check_environment", broken)
    status, stderr = run_train(monkeypatch, capsys, [], tmp_path / "cache", tmp_path / "run")
    assert status == 1 and "Traceback" in stderr and "a bug in the project" in stderr
    assert "HYDRA_FULL_ERROR" not in os.environ, "the command runner restores the environment"


def test_valid_edge_values_pass():
    from seqbench.config.checks import validate

    overrides = ["trainer.max_epochs=-1", "trainer.max_steps=-1", "trainer.max_time=null", "seed=0",
                 "trainer.limit_val_batches=5", "+trainer.limit_train_batches=0.5", "trainer.devices=auto",
                 "trainer.precision=bf16-mixed", "trainer.gradient_clip_val=null", "scheduler.kind=cosine",
                 "scheduler.warmup_steps=10", "scheduler.total_steps=10", "+trainer.strategy=ddp",
                 "trainer.val_check_interval=200", "trainer.deterministic=warn", "logger=none"]
    validate(compose_train(overrides))


@pytest.mark.parametrize("argv", [
    ["bench", "--families", "lstmformer"], ["bench", "--steps", "0"], ["bench", "--threads", "-1"],
    ["export", "RUN", "OUT", "--format", "onnx2"], ["translate", "RUN", "--engine", "tensorrt"],
    ["sweep", "sweeps/recipe_rnn.yaml", "--count", "0"], ["score", "--hyp", "h"], ["report"],
    ["tune-decoding", "RUN"], ["data", "explain"], ["average", "RUN", "--last", "x"],
], ids=" ".join)
def test_every_commands_argument_errors_are_one_line(argv, capsys):
    status, out, err = seqbench_cli(argv, capsys)
    assert status == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and err.startswith(f"error: seqbench {argv[0]}: "), err
    assert f"(see seqbench {argv[0]} --help)" in err


@pytest.mark.parametrize("command", sorted(set(COMMANDS) - {"train"}))  # train's --help is Hydra's
def test_every_commands_help_prints_its_usage(command, capsys):
    """The argument errors above point at `seqbench <command> --help`: it must print, not crash (a help string's bare
    `%` once broke argparse's formatting of bench's)."""
    status, out, err = seqbench_cli([command, "--help"], capsys)
    assert status == 0 and f"usage: seqbench {command}" in out, err


def test_lightnings_values_are_lightnings_own(tmp_path):
    """An argument Lightning types as a Literal (trainer.precision) is checked against that type: every value it
    declares passes, nothing is copied. trainer.profiler is typed `str`, so its names are a list in the checks:
    Lightning's Trainer takes each of them."""
    import inspect
    import typing

    from lightning.pytorch import Trainer
    from omegaconf import OmegaConf

    from seqbench.config.checks import LIGHTNING_PROFILERS, check_targets

    cfg = compose_train([])
    declared = inspect.signature(Trainer, eval_str=True).parameters["precision"].annotation
    values = [v for member in typing.get_args(declared) for v in typing.get_args(member)]
    assert "bf16-mixed" in values and 32 in values
    for value in values:
        check_targets(OmegaConf.merge(cfg, {"trainer": {"precision": value}}))
    for name in LIGHTNING_PROFILERS:
        Trainer(profiler=name, accelerator="cpu", devices=1, logger=False, enable_checkpointing=False,
                enable_progress_bar=False, enable_model_summary=False, default_root_dir=tmp_path)
