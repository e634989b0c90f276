"""`seqbench train` (seqbench.training.run) on tiny settings, in-process: every family leaves a complete record whose
scores are the scores of the hypotheses it wrote; train=false evaluates the checkpoint it is given; logger=none,
early stopping and a stop between validations. Multi-process DDP is in the integration tier."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import sacrebleu
import torch

from seqbench.rundir.layout import RunDir
from seqbench.rundir.results import SCHEMA_VERSION, read_results

from conftest import ROOT, TINY, TINY_MODELS, seqbench_cli, train_in_process

# One case per family, the fixed context and two attentions of the RNN, and rotary positions (no position table:
# max_positions far below the data's lengths must pass the preflight). The other RNN attentions take the same path.
FAMILIES = ["transformer", "transformer_rope", "rnn_none", "rnn_bahdanau", "rnn_luong_dot", "cnn"]


def train_subprocess(tmp_path: Path, *overrides: str, run_dir: Path | None = None, env: dict | None = None,
                     multirun: bool = False, timeout: int = 600, session: bool = False) -> subprocess.CompletedProcess:
    """`python train.py <overrides>` in a fresh process (the integration tier): the __main__ path, signals, DDP.
    `session`: in a process group of its own, which a test may signal as a terminal's Ctrl-C does."""
    where = f"hydra.{'sweep' if multirun else 'run'}.dir={run_dir or tmp_path / 'run'}"
    env = env or dict(os.environ, OMP_NUM_THREADS="1", HYDRA_FULL_ERROR="0", WANDB_MODE="offline")
    args = [sys.executable, str(ROOT / "train.py"), *(["-m"] if multirun else []),
            f"paths.cache_dir={tmp_path.parent / 'cache'}", where, *overrides]
    return subprocess.run(args, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=timeout,
                          start_new_session=session)


def _scores_of_files(run_dir: Path, split: str) -> tuple[float, float]:
    """BLEU and chrF of the hypotheses the run wrote, computed here with sacreBLEU's defaults."""
    run = RunDir(run_dir)
    hyps, refs = (run.text(name, split).read_text().splitlines() for name in ("hypotheses", "references"))
    return (sacrebleu.corpus_bleu(hyps, [refs]).score, sacrebleu.corpus_chrf(hyps, [refs]).score)


@pytest.mark.parametrize("model", FAMILIES)
def test_every_family_records_the_scores_of_its_own_hypotheses(tmp_path, model, monkeypatch):
    monkeypatch.setattr(os, "getloadavg", lambda: (5.5, 1.0, 1.0))
    run_dir = tmp_path / "run"
    results = train_in_process(run_dir, [*TINY, *TINY_MODELS[model]])
    record = read_results(run_dir)
    assert record["schema_version"] == SCHEMA_VERSION and record["status"] == "completed"
    assert record["model"]["name"] == model.split("_")[0] and record["train"]["steps"] == 4
    assert record["train"]["max_steps"] == 4 and record["train"]["stopped_by"] == "max_steps"
    for split in ("valid", "test"):
        bleu, chrf = _scores_of_files(run_dir, split)
        assert record[split]["bleu"] == pytest.approx(bleu) and record[split]["chrf"] == pytest.approx(chrf)
        assert "tok:13a" in record[split]["bleu_signature"]
        hypotheses = RunDir(run_dir).text("hypotheses", split).read_text().splitlines()
        assert record[split]["n_sentences"] == len(hypotheses)
    weights = torch.load(RunDir(run_dir).last_checkpoint, weights_only=True)["state_dict"].values()
    # tied weights (the Transformer's output layer and target embedding) share one storage in the checkpoint
    assert record["parameters"] == sum({w.untyped_storage().data_ptr(): w.numel() for w in weights}.values())
    assert record["throughput"]["measured_steps"] == 4 - 2  # debug=limit excludes 2 warm-up steps
    assert record["throughput"]["load_average_max"] == 5.5  # the machine's load while the steps were timed
    assert record["seed"] == 42 and record["threads"] == 1 and record["versions"]["torch"] == torch.__version__
    assert results["test"] == record["test"]


def test_the_command_prints_a_summary_and_writes_nothing_outside_the_run(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    status, out, err = seqbench_cli(["train", *TINY, *TINY_MODELS["transformer"], f"hydra.run.dir={tmp_path / 'run'}",
                                     f"paths.cache_dir={tmp_path / 'cache'}"], capsys)
    assert status == 0, err[-3000:]
    record = read_results(tmp_path / "run")
    assert f"{record['test']['bleu']:.2f}" in out and "run directory" in out and str(tmp_path / "run") in out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cache", "run"]  # no lightning_logs/, no stray .ckpt


def test_train_false_evaluates_the_given_checkpoint(trained_run, tmp_path):
    from conftest import TRAINED_RUN

    last = RunDir(trained_run).last_checkpoint  # the weights the trained run tested (its only validation's)
    train_in_process(tmp_path / "evaluated", [*TRAINED_RUN, "train=false", f"ckpt_path={last}"],
                     cache_dir=trained_run.parent / "cache")
    evaluated = RunDir(tmp_path / "evaluated")
    hypotheses = evaluated.text("hypotheses", "test").read_text()
    assert hypotheses == RunDir(trained_run).text("hypotheses", "test").read_text()
    assert read_results(evaluated.path)["train"]["best_checkpoint"] == str(last)


def test_logger_none_and_a_stop_between_validations(tmp_path):
    """`logger=none`: no logger, so the learning-rate monitor (which needs one) is left out and the run completes.
    ValidateLastUpdate: 4 updates end inside the first epoch; the final weights are validated there, so they are the
    best checkpoint and the learning curve ends at update 4 (Lightning alone would validate nothing)."""
    record = train_in_process(tmp_path / "run", [*TINY, *TINY_MODELS["transformer"], "logger=none", "test=false"])
    assert record["train"]["epochs"] < 1  # the premise: training stopped inside the first epoch
    assert [point["step"] for point in record["curve"]] == [4]
    buckets = [b["bucket"] for b in record["valid"]["bleu_by_length"] if b["sentences"]]
    assert list(record["curve"][0]["bleu_by_length"]) == buckets  # BLEU by length without any logger file
    assert Path(record["train"]["best_checkpoint"]).name == "best-epoch000.ckpt"
    assert not (tmp_path / "run" / "csv").exists() and "test" not in record


def test_a_cosine_schedule_with_an_epoch_budget_decays_over_those_epochs(tmp_path):
    """max_steps=-1 (a budget in epochs, as trainer=gpu has): the cosine's end is the updates of max_epochs
    (Lightning's estimated_stepping_batches), so the last update's lr is near zero, not an error or a flat lr."""
    import csv

    record = train_in_process(tmp_path / "run", [*TINY, *TINY_MODELS["transformer"], "trainer.max_steps=-1",
                                                 "trainer.max_epochs=2", "scheduler.kind=cosine",
                                                 "scheduler.warmup_steps=1", "optimizer.lr=0.01", "test=false",
                                                 "trainer.log_every_n_steps=1"])
    with open(tmp_path / "run" / "csv" / "metrics.csv", newline="") as f:
        lrs = [float(row["lr-AdamW"]) for row in csv.DictReader(f) if row.get("lr-AdamW")]
    assert record["train"]["steps"] == len(lrs) > 2 and record["train"]["stopped_by"] == "max_epochs"
    assert lrs[0] == pytest.approx(0.01) and lrs[-1] < 0.01 * 0.1 and lrs == sorted(lrs, reverse=True)
    assert 0.3 * 0.01 < lrs[len(lrs) // 2] < 0.7 * 0.01  # a half-way lr: the decay spans the run, not one update


def test_early_stopping_ends_training_when_validation_bleu_stops_improving(tmp_path):
    """callbacks=early_stopping: with a gain of 100 BLEU required, the second validation (update 4) is no improvement
    and, with patience 1, ends training at update 4 of 40; the curve records training FLOPs at every validation, and
    the best checkpoint is chosen by validation BLEU."""
    record = train_in_process(tmp_path / "run", [
        *TINY, *TINY_MODELS["transformer"], "test=false", "callbacks=early_stopping", "callbacks.progress_bar=null",
        "callbacks.early_stopping.patience=1", "callbacks.early_stopping.min_delta=100", "trainer.max_steps=40",
        "trainer.check_val_every_n_epoch=null", "trainer.val_check_interval=2", "data.max_tokens=256"])
    assert record["train"]["steps"] == 4 and [point["step"] for point in record["curve"]] == [2, 4]
    assert record["train"]["stopped_by"] == "early_stopping"
    flops = [point["train_flops"] for point in record["curve"]]
    assert 0 < flops[0] < flops[1] == pytest.approx(record["throughput"]["train_flops"])
    assert record["config"]["callbacks"]["model_checkpoint"]["monitor"] == "val/bleu"
    assert record["config"]["callbacks"]["early_stopping"]["_target_"].endswith("EarlyStopping")


def test_a_run_stopped_by_its_wall_clock_guard_says_so(tmp_path):
    """trainer.max_time ends training after a second, far short of the update budget: the record says the clock,
    not the budget, stopped it (the report flags such runs), and the stop's weights are still validated and kept."""
    record = train_in_process(tmp_path / "run", [*TINY, *TINY_MODELS["transformer"], "test=false",
                                                 "trainer.max_steps=100000", "trainer.max_epochs=-1",
                                                 "trainer.max_time=00:00:00:01"])
    assert record["train"]["stopped_by"] == "max_time" and 0 < record["train"]["steps"] < 100000
    assert record["curve"][-1]["step"] == record["train"]["steps"]


@pytest.mark.integration
def test_ddp_on_two_cpu_processes_scores_the_whole_test_set(tmp_path):
    """Two DDP ranks (real processes) each decode their share of the test batches; BLEU is on the gathered whole."""
    proc = train_subprocess(tmp_path, *TINY, *TINY_MODELS["transformer"], "trainer.accelerator=cpu",
                            "trainer.devices=2", "+trainer.strategy=ddp", "measure.decode_sentences=4",
                            "trainer.limit_test_batches=1.0")
    assert proc.returncode == 0, proc.stderr[-3000:]
    record = read_results(tmp_path / "run")
    assert record["test"]["n_sentences"] == record["data"]["sizes"]["test"]
    assert record["test"]["bleu"] == pytest.approx(_scores_of_files(tmp_path / "run", "test")[0])


@pytest.mark.integration
def test_the_main_path_prints_one_line_and_exits_2(tmp_path):
    """`python train.py` itself (the in-process tests skip its process start): a bad value is one line, status 2."""
    proc = train_subprocess(tmp_path, "optimizer.lr=-1", timeout=300)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip() == "error: optimizer.lr=-1: must be a number > 0", proc.stderr
    assert "Traceback" not in proc.stderr


def test_each_checkpoint_is_loaded_once_and_the_test_perplexity_is_logged(tmp_path, monkeypatch):
    """A run reads its best checkpoint once (for the final validation and test together); a resumed run reads its
    last.ckpt once to train on (its check of the model reads through a memory map, not the weights). The test split's
    perplexity is logged beside the validation's."""
    import csv

    loads = []
    real_load = torch.load

    def counting_load(source, *args, **kwargs):
        path = str(getattr(source, "path", getattr(source, "name", source)))  # Lightning passes an open file
        if path.endswith(".ckpt"):
            loads.append((Path(path).name, bool(kwargs.get("mmap"))))
        return real_load(source, *args, **kwargs)

    monkeypatch.setattr(torch, "load", counting_load)
    run_dir = tmp_path / "run"
    overrides = [*TINY, *TINY_MODELS["transformer"], "logger=csv"]
    record = train_in_process(run_dir, overrides)
    best = Path(record["train"]["best_checkpoint"]).name
    assert [name for name, mmap in loads if not mmap] == [best], loads
    with open(run_dir / "csv" / "metrics.csv") as f:
        assert any(row.get("test/ppl") for row in csv.DictReader(f))
    loads.clear()
    train_in_process(run_dir, [*overrides, "module.decoding.beam_size=1"])  # changed: resumes from last.ckpt
    full = [name for name, mmap in loads if not mmap]
    assert full.count("last.ckpt") == 1 and ("last.ckpt", True) in loads, loads


@pytest.mark.parametrize("version", [0, 2, None])
def test_a_record_of_another_schema_version_is_one_line_and_a_relaunch_reruns(tmp_path, version, capsys):
    """results.json of schema version 0, 2 or none: reading it is one line naming the version; launching the run
    again does not take it for a finished record (it reruns and writes a record of this version)."""
    import json

    from seqbench.common.errors import InputError

    run_dir = tmp_path / "run"
    overrides = [*TINY, *TINY_MODELS["transformer"], "test=false"]
    train_in_process(run_dir, overrides)
    record = json.loads(RunDir(run_dir).results.read_text())
    if version is None:
        del record["schema_version"]
    else:
        record["schema_version"] = version
    RunDir(run_dir).results.write_text(json.dumps(record))
    with pytest.raises(InputError, match=f"a results record of schema version {version}; this seqbench reads "
                                         f"version {SCHEMA_VERSION}"):
        read_results(run_dir)
    status, _, err = seqbench_cli(["report", str(run_dir), "--out", str(tmp_path / "report")], capsys)
    assert status == 2 and len(err.strip().splitlines()) == 1 and "schema version" in err
    assert train_in_process(run_dir, overrides)["status"] == "completed"
    assert read_results(run_dir)["schema_version"] == SCHEMA_VERSION


def test_a_tiny_bf16_mixed_run_on_the_cpu(tmp_path):
    """trainer.precision=bf16-mixed on the CPU (autocast): trains, decodes, and measures MFU against the bf16 peak."""
    record = train_in_process(tmp_path / "run", [*TINY, *TINY_MODELS["transformer"], "trainer.precision=bf16-mixed"])
    assert record["status"] == "completed" and record["config"]["trainer"]["precision"] == "bf16-mixed"
    assert record["flops"]["peak_dtype"] == "bfloat16" and record["test"]["n_sentences"] > 0
