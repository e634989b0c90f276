"""Interrupted runs exit non-zero, record it, and resume to exactly the uninterrupted result; diverged runs stop with
one line; a failing job does not end a multirun; the same seed gives the same numbers; bad checkpoints get one line.

Runs are cut deterministically by `SignalAt`, a test-only callback that sends the signal to its own process at a
given update or test batch (`+callbacks.cut._target_=test_resume.SignalAt`). In-process here, except where only a
real process proves it (a SIGTERM and the restart in a fresh process, a multirun's failed job): the integration tier.
"""
from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
from pathlib import Path

import lightning as L
import pytest
import torch

from seqbench.rundir.layout import RunDir
from seqbench.rundir.results import read_results
from seqbench.training.status import Diverged, Interrupted

from conftest import TINY, TINY_MODELS, seqbench_cli, train_in_process
from test_train import train_subprocess

# Tiny transformer (with dropout, so the RNG state matters) for 14 updates over several epochs, validated and
# checkpointed every epoch; small eval batches so the test set takes several batches.
RESUMABLE = [*TINY, *TINY_MODELS["transformer"], "model.dropout=0.1", "trainer.max_steps=14",
             "trainer.max_epochs=50", "data.eval_max_tokens=600", "measure.decode_sentences=4",
             "measure.peak_flops_seconds=0.05", "trainer.log_every_n_steps=1"]


class SignalAt(L.Callback):
    """Sends `signum` to this process after update `step`, or after test batch `test_batch` (test-only). `group`: rank
    0 sends it to its whole process group instead, as Ctrl-C in a terminal does to every rank of a DDP run; `rank`:
    only that rank sends it to itself."""

    def __init__(self, step: int | None = None, test_batch: int | None = None, signum: str = "SIGTERM",
                 group: bool = False, rank: int | None = None):
        self.step, self.test_batch, self.signum, self.group = step, test_batch, getattr(signal, signum), group
        self.rank = rank  # only this DDP rank sends it

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        if self.rank is not None and trainer.global_rank != self.rank:
            return
        if trainer.global_step == self.step and not self.group:
            os.kill(os.getpid(), self.signum)
        elif trainer.global_step == self.step and trainer.is_global_zero:
            os.killpg(os.getpgrp(), self.signum)

    def on_test_batch_end(self, trainer, pl_module, outputs, batch, batch_idx, dataloader_idx=0):
        if batch_idx == self.test_batch:
            os.kill(os.getpid(), self.signum)


class CrashAt(L.Callback):
    """Raises after update `step`: a run killed there (SIGKILL, a lost node) saves nothing (test-only)."""

    def __init__(self, step: int):
        self.step = step

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        if trainer.global_step == self.step:
            raise RuntimeError(f"killed after update {self.step}")


def _weights(run_dir: Path) -> dict[str, torch.Tensor]:
    return torch.load(RunDir(run_dir).last_checkpoint, map_location="cpu", weights_only=True)["state_dict"]


def _outcome(run_dir: Path) -> dict:
    """Everything of a finished run that must not depend on being interrupted (timings excluded)."""
    results = read_results(run_dir)
    throughput = results["throughput"]
    return {"status": results["status"], "valid": results["valid"], "test": results["test"],
            "train": {k: results["train"][k] for k in ("steps", "epochs")},
            "counters": {k: throughput[k] for k in ("tokens_seen", "train_flops", "measured_steps",
                                                    "mean_src_tokens", "mean_tgt_tokens")},
            "curve": [{k: v for k, v in p.items() if k not in ("train_seconds", "train_cpu_seconds")}
                      for p in results["curve"]],
            "hypotheses": RunDir(run_dir).text("hypotheses", "test").read_text(),
            "best": Path(results["train"]["best_checkpoint"]).name}


def _losses(run_dir: Path) -> list[tuple[str, str]]:
    with (run_dir / "csv" / "metrics.csv").open(newline="") as f:
        return [(row["step"], row["train/loss"]) for row in csv.DictReader(f) if row.get("train/loss")]


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("uninterrupted") / "run"
    train_in_process(run_dir, RESUMABLE)
    return run_dir


def _assert_same_run(resumed: Path, reference: Path) -> None:
    assert _outcome(resumed) == _outcome(reference)
    a, b = _weights(resumed), _weights(reference)
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a), "final weights differ"


def test_the_same_seed_twice_gives_identical_losses_and_bleu(tmp_path, uninterrupted):
    train_in_process(tmp_path / "run", RESUMABLE)
    _assert_same_run(tmp_path / "run", uninterrupted)
    assert len(_losses(uninterrupted)) == 14 and _losses(tmp_path / "run") == _losses(uninterrupted)


def test_a_completed_run_launched_again_is_not_redone_unless_it_missed_its_budget_or_its_config_changed(tmp_path):
    """What relaunching a multirun to finish its remaining jobs does to the finished ones: nothing."""
    run_dir = tmp_path / "run"
    train_in_process(run_dir, RESUMABLE)
    def written():  # every file but the lock, which names whichever process last held the directory
        return {p: p.stat().st_mtime_ns for p in run_dir.rglob("*") if p.is_file() and p.name != ".lock"}

    before = written()
    assert train_in_process(run_dir, RESUMABLE)["status"] == "completed"
    assert written() == before  # nothing run or written
    # stopped by its wall-clock guard: not its result yet, so the same command resumes it (here: evaluates again)
    record = json.loads(RunDir(run_dir).results.read_text())
    record["train"]["stopped_by"] = "max_time"
    RunDir(run_dir).results.write_text(json.dumps(record))
    assert train_in_process(run_dir, RESUMABLE)["train"]["stopped_by"] == "max_steps"
    # a longer budget is another config: training resumes from update 14
    assert train_in_process(run_dir, [*RESUMABLE, "trainer.max_steps=16"])["train"]["steps"] == 16


def test_a_completed_run_moved_to_another_directory_and_cache_is_not_redone(tmp_path, data_cache):
    """A multirun's committed records restored elsewhere (another run directory, another data cache) count as
    finished when the job is launched there: only locations differ, so nothing is trained or written again."""
    import shutil

    first = tmp_path / "first" / "run"
    train_in_process(first, RESUMABLE)
    moved, cache = tmp_path / "elsewhere" / "job", tmp_path / "other_cache"
    shutil.copytree(data_cache, cache)
    shutil.move(first, moved)
    before = {p: p.stat().st_mtime_ns for p in moved.rglob("*") if p.is_file() and p.name != ".lock"}
    assert train_in_process(moved, RESUMABLE, cache_dir=cache)["status"] == "completed"
    assert {p: p.stat().st_mtime_ns for p in moved.rglob("*") if p.is_file() and p.name != ".lock"} == before
    # a setting that is not a location still reruns it
    assert train_in_process(moved, [*RESUMABLE, "trainer.max_steps=15"], cache_dir=cache)["train"]["steps"] == 15


def test_sigint_during_testing_records_it_and_the_rerun_gives_the_same_results(tmp_path, uninterrupted):
    run_dir = tmp_path / "run"
    with pytest.raises(Interrupted) as stop:
        train_in_process(run_dir, [*RESUMABLE, "+callbacks.cut._target_=test_resume.SignalAt",
                                   "+callbacks.cut.test_batch=0", "+callbacks.cut.signum=SIGINT"])
    assert stop.value.exit_status == 128 + signal.SIGINT and stop.value.phase == "testing"
    record = read_results(run_dir)
    assert record["status"] == "interrupted" and record["phase"] == "testing" and record["step"] == 14
    assert not RunDir(run_dir).text("hypotheses", "test").exists()
    train_in_process(run_dir, RESUMABLE)  # the rerun finds last.ckpt at update 14: no training left, only testing
    _assert_same_run(run_dir, uninterrupted)
    assert _losses(run_dir) == _losses(uninterrupted), "metrics.csv keeps the rows logged before the rerun"


def test_a_run_stopped_again_after_resuming_resumes_from_its_newest_checkpoint(tmp_path, uninterrupted):
    """SIGTERM at update 5 saves last.ckpt; the resumed run validates and checkpoints at update 7 (its epoch's end)
    and is killed at update 12, saving nothing: the rerun continues from update 7 into last.ckpt (ModelCheckpoint had
    written last-v1.ckpt beside the one saved at the SIGTERM), and from a checkpoint taken at an epoch's end ends as
    the uninterrupted run, every update's metrics.csv row at its update (the restart made another loader iterator,
    which drew from the dropout stream, gave the sampler the next epoch, and logged one update late)."""
    run_dir = tmp_path / "run"
    with pytest.raises(Interrupted):
        train_in_process(run_dir, [*RESUMABLE, "+callbacks.cut._target_=test_resume.SignalAt", "+callbacks.cut.step=5"])
    with pytest.raises(RuntimeError, match="killed after update 12"):
        train_in_process(run_dir, [*RESUMABLE, "+callbacks.cut._target_=test_resume.CrashAt", "+callbacks.cut.step=12"])
    checkpoints = RunDir(run_dir).checkpoints
    assert sorted(p.name for p in checkpoints.glob("last*")) == ["last.ckpt"]
    assert torch.load(RunDir(run_dir).last_checkpoint, map_location="cpu", weights_only=True)["global_step"] == 7
    record = train_in_process(run_dir, RESUMABLE)
    _assert_same_run(run_dir, uninterrupted)
    assert _losses(run_dir) == _losses(uninterrupted)
    assert record["train"]["resumed_at"] == [5, 7] and read_results(uninterrupted)["train"]["resumed_at"] == []


def test_nan_loss_stops_naming_the_update_and_keeps_the_last_good_checkpoint(tmp_path):
    """lr 1e30 makes the loss non-finite within a few updates; every update is validated and checkpointed, so
    last.ckpt holds the last finite weights, from the update before the bad one, which is never applied."""
    run_dir = tmp_path / "run"
    with pytest.raises(Diverged) as diverged:
        train_in_process(run_dir, [*TINY, *TINY_MODELS["transformer"], "trainer.max_steps=30",
                                   "trainer.max_epochs=50", "optimizer.lr=1e30", "scheduler.kind=constant",
                                   "trainer.check_val_every_n_epoch=null", "trainer.val_check_interval=1",
                                   "module.val_bleu=false"])
    line = str(diverged.value)
    assert line.startswith("training diverged: the loss is ") and " at update " in line
    record = read_results(run_dir)
    update = int(line.split(" at update ")[1].split()[0])
    assert record["status"] == "diverged" and record["error"] == line and record["step"] == update - 1 >= 1
    saved = torch.load(RunDir(run_dir).last_checkpoint, map_location="cpu", weights_only=True)
    assert saved["global_step"] == update - 1
    assert all(torch.isfinite(t).all() for t in saved["state_dict"].values() if t.is_floating_point())


def test_a_checkpoint_of_another_vocabulary_or_architecture_is_one_line(tmp_path, uninterrupted, capsys):
    checkpoint = RunDir(uninterrupted).last_checkpoint
    not_a_checkpoint = tmp_path / "notes.ckpt"
    not_a_checkpoint.write_text("not a checkpoint")
    cases = [([*RESUMABLE, "data.vocab_size=280"], checkpoint, "trained with another vocabulary"),
             ([*TINY, *TINY_MODELS["rnn_bahdanau"]], checkpoint, "a checkpoint of another model"),
             (RESUMABLE, not_a_checkpoint, "not a")]
    for i, (overrides, path, words) in enumerate(cases):
        status, _, err = seqbench_cli(["train", *overrides, f"ckpt_path={path}", f"hydra.run.dir={tmp_path / str(i)}",
                                       f"paths.cache_dir={tmp_path / 'cache'}"], capsys)
        lines = err.strip().splitlines()
        assert status == 2 and lines[-1].startswith("error: ckpt_path=") and words in lines[-1], err[-2000:]
        assert "Traceback" not in err and not (tmp_path / str(i) / "checkpoints").exists()


@pytest.mark.integration
def test_sigterm_mid_epoch_exits_nonzero_and_a_fresh_process_resumes_exactly(tmp_path, uninterrupted):
    run_dir = tmp_path / "run"
    env = dict(os.environ, OMP_NUM_THREADS="1", HYDRA_FULL_ERROR="0", WANDB_MODE="offline",
               PYTHONPATH=os.pathsep.join([str(Path(__file__).parent), os.environ.get("PYTHONPATH", "")]))
    loggers = "logger=[csv,wandb]"  # W&B offline (env): the resumed run continues the cut run's W&B run
    cut = train_subprocess(tmp_path, *RESUMABLE, loggers, "+callbacks.cut._target_=test_resume.SignalAt",
                           "+callbacks.cut.step=10", env=env)  # 7 batches an epoch: step 7 would stop at validation
    assert cut.returncode == 128 + signal.SIGTERM, cut.stderr[-3000:]
    assert "Traceback" not in cut.stderr
    assert cut.stderr.strip().splitlines()[-1] == (f"error: interrupted by SIGTERM during training; rerun with "
                                                   f"hydra.run.dir={run_dir} to resume")
    record = read_results(run_dir)
    assert record["status"] == "interrupted" and record["phase"] == "training" and record["step"] == 10
    assert record["resume_checkpoint"] == "checkpoints/last.ckpt" and record["run_dir"] == "."  # relative to it
    saved = torch.load(RunDir(run_dir).last_checkpoint, map_location="cpu", weights_only=True)
    state = next(v for k, v in saved["callbacks"].items() if k.startswith("ResumeState"))
    assert saved["global_step"] == 10 and 0 < state["batches_done"] < 7, "cut mid-epoch"

    resumed = train_subprocess(tmp_path, *RESUMABLE, loggers, env=env)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "Restoring states from the checkpoint path" in resumed.stdout + resumed.stderr
    assert not list(RunDir(run_dir).checkpoints.glob(".*tmp*")), "no temporary checkpoint files left behind"
    _assert_same_run(run_dir, uninterrupted)
    assert _losses(run_dir) == _losses(uninterrupted), "metrics.csv has every update's row once"
    w_and_b = sorted(p.name for p in (run_dir / "wandb").glob("offline-run-*"))
    assert len(w_and_b) == 2 and len({name.rsplit("-", 1)[1] for name in w_and_b}) == 1, w_and_b  # one W&B run id


CPU_DDP = [*TINY, *TINY_MODELS["transformer"], "trainer.max_steps=12", "trainer.max_epochs=50", "test=false",
           "trainer.accelerator=cpu", "trainer.devices=2", "+trainer.strategy=ddp", "module.val_bleu=false",
           "trainer.limit_val_batches=0"]


def _ddp_cut_at_step_6(tmp_path: Path, *cut: str) -> subprocess.CompletedProcess:
    """A 2-rank CPU DDP run, in a process group of its own, that test_resume.SignalAt (`cut`) stops after update 6."""
    env = dict(os.environ, OMP_NUM_THREADS="1", HYDRA_FULL_ERROR="0", WANDB_MODE="offline",
               PYTHONPATH=os.pathsep.join([str(Path(__file__).parent), os.environ.get("PYTHONPATH", "")]))
    return train_subprocess(tmp_path, *CPU_DDP, "+callbacks.cut._target_=test_resume.SignalAt",
                            "+callbacks.cut.step=6", *cut, env=env, session=True, timeout=240)


@pytest.mark.integration
def test_ctrl_c_to_a_cpu_ddp_run_ends_it_in_one_line_and_a_rerun_resumes(tmp_path):
    """Ctrl-C in a terminal signals every process of its group: each rank, and then the launcher forwards it. The
    ranks agree to stop after one batch, rank 0 alone prints the line, last.ckpt is kept and a rerun resumes. (Before,
    Lightning's handler broadcast once per signal, rank 1 got two, the collectives stopped pairing: the run hung.)"""
    cut = _ddp_cut_at_step_6(tmp_path, "+callbacks.cut.signum=SIGINT", "+callbacks.cut.group=true")
    assert cut.returncode == 128 + signal.SIGINT, cut.stderr[-3000:]
    errors = [line for line in cut.stderr.splitlines() if line.startswith("error: ")]
    assert errors == [f"error: interrupted by SIGINT during training; rerun with hydra.run.dir={tmp_path / 'run'} to "
                      "resume"] and "Traceback" not in cut.stderr
    record = read_results(tmp_path / "run")
    assert record["status"] == "interrupted" and record["resume_checkpoint"] == "checkpoints/last.ckpt"
    resumed = train_subprocess(tmp_path, *CPU_DDP, session=True, timeout=240)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "Restoring states from the checkpoint path" in resumed.stdout + resumed.stderr
    assert read_results(tmp_path / "run")["train"]["steps"] == 12


@pytest.mark.integration
def test_a_killed_ddp_rank_leaves_the_other_ending_in_one_line_that_names_it(tmp_path):
    cut = _ddp_cut_at_step_6(tmp_path, "+callbacks.cut.signum=SIGKILL", "+callbacks.cut.rank=1")
    assert cut.returncode == 1 and "Traceback" not in cut.stderr, cut.stderr[-3000:]
    errors = [line for line in cut.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and errors[0].startswith(
        f"error: DDP rank 1 (killed by SIGKILL) ended during training; this rank stopped too; rerun with "
        f"hydra.run.dir={tmp_path / 'run'} to "), errors
    assert read_results(tmp_path / "run")["status"] == "failed"


@pytest.mark.integration
def test_a_failing_multirun_job_is_recorded_and_the_others_run(tmp_path):
    sweep = tmp_path / "sweep"
    # job 1 fails after composition (model.d_model must be divisible by model.n_heads)
    proc = train_subprocess(tmp_path, *TINY, *TINY_MODELS["transformer"], "model.n_heads=2,3,4", run_dir=sweep,
                            multirun=True)
    assert proc.returncode == 1, proc.stderr[-3000:]
    records = {job: read_results(sweep / job) for job in ("0", "1", "2")}
    assert records["0"]["status"] == records["2"]["status"] == "completed"
    assert records["1"]["status"] == "failed" and "model.n_heads" in records["1"]["error"]
    assert f"{sweep / '1'}: " in proc.stderr and "1 job(s) of the multirun failed" in proc.stderr
    from seqbench.report import write_report

    report = write_report([sweep], tmp_path / "report", n_samples=10).read_text()
    assert "## Runs that did not complete" in report and "| failed |" in report
