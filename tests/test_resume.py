"""Interrupted runs exit non-zero, record it, and resume to exactly the uninterrupted result; diverged runs stop with
one line; a failing job does not end a multirun; the same seed gives the same numbers; bad checkpoints get one line.

Runs are cut deterministically by `SignalAt`, a test-only callback that sends the signal to its own process at a
given update or test batch (`+callbacks.cut._target_=test_resume.SignalAt`).
"""
from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import lightning as L
import pytest
import torch
from test_train_cli import ROOT, TINY, TINY_MODELS

TESTS = Path(__file__).resolve().parent
# Tiny transformer (with dropout, so the RNG state matters) for 14 updates over several epochs, validated and
# checkpointed every epoch; small eval batches so the test set takes several batches.
RESUMABLE = [*TINY, *TINY_MODELS["transformer"], "trainer.max_steps=14", "trainer.max_epochs=50",
             "data.eval_max_tokens=600", "measure.decode_sentences=4", "measure.peak_flops_seconds=0.05",
             "trainer.log_every_n_steps=1"]


class SignalAt(L.Callback):
    """Sends `signum` to this process after update `step`, or after test batch `test_batch` (test-only)."""

    def __init__(self, step: int | None = None, test_batch: int | None = None, signum: str = "SIGTERM"):
        self.step, self.test_batch, self.signum = step, test_batch, getattr(signal, signum)

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        if trainer.global_step == self.step:
            os.kill(os.getpid(), self.signum)

    def on_test_batch_end(self, trainer, pl_module, outputs, batch, batch_idx, dataloader_idx=0):
        if batch_idx == self.test_batch:
            os.kill(os.getpid(), self.signum)


def train(tmp_path: Path, run_dir: Path, *overrides: str, multirun: bool = False) -> subprocess.CompletedProcess:
    env = dict(os.environ, OMP_NUM_THREADS="1", HYDRA_FULL_ERROR="0", WANDB_MODE="offline",
               PYTHONPATH=os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")]))
    where = f"hydra.sweep.dir={run_dir}" if multirun else f"hydra.run.dir={run_dir}"
    args = [sys.executable, str(ROOT / "train.py"), *(["-m"] if multirun else []),
            f"paths.cache_dir={tmp_path.parent / 'cache'}", where, *overrides]
    return subprocess.run(args, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)


def _weights(run_dir: Path) -> dict[str, torch.Tensor]:
    return torch.load(run_dir / "checkpoints" / "last.ckpt", map_location="cpu", weights_only=True)["state_dict"]


def _outcome(run_dir: Path) -> dict:
    """Everything of a finished run that must not depend on being interrupted (timings excluded)."""
    results = json.loads((run_dir / "results.json").read_text())
    throughput = results["throughput"]
    return {"status": results["status"], "valid": results["valid"], "test": results["test"],
            "train": {k: results["train"][k] for k in ("steps", "epochs")},
            "counters": {k: throughput[k] for k in ("tokens_seen", "train_flops", "measured_steps",
                                                    "mean_src_tokens", "mean_tgt_tokens")},
            "curve": [{k: v for k, v in p.items() if k != "train_seconds"} for p in results["curve"]],
            "hypotheses": (run_dir / "hypotheses.test.txt").read_text(),
            "best": Path(results["train"]["best_checkpoint"]).name}


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("uninterrupted")
    proc = train(tmp_path, tmp_path / "run", *RESUMABLE)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return tmp_path / "run"


def _assert_same_run(resumed: Path, reference: Path) -> None:
    assert _outcome(resumed) == _outcome(reference)
    a, b = _weights(resumed), _weights(reference)
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a), "final weights differ"


def test_sigterm_mid_epoch_exits_nonzero_and_the_rerun_resumes_exactly(tmp_path, uninterrupted):
    run_dir = tmp_path / "run"
    cut = train(tmp_path, run_dir, *RESUMABLE, "+callbacks.cut._target_=test_resume.SignalAt",
                "+callbacks.cut.step=10")  # 7 batches an epoch: step 7 would stop during the epoch's validation
    assert cut.returncode == 128 + signal.SIGTERM, cut.stderr[-3000:]
    assert "Traceback" not in cut.stderr
    assert cut.stderr.strip().splitlines()[-1] == (f"error: interrupted by SIGTERM during training; rerun with "
                                                   f"hydra.run.dir={run_dir} to resume")
    record = json.loads((run_dir / "results.json").read_text())
    assert record["status"] == "interrupted" and record["phase"] == "training" and record["step"] == 10
    assert record["resume_checkpoint"] == str(run_dir / "checkpoints" / "last.ckpt")
    saved = torch.load(run_dir / "checkpoints" / "last.ckpt", map_location="cpu", weights_only=True)
    assert saved["global_step"] == 10
    batches_done = next(v for k, v in saved["callbacks"].items() if k.startswith("ResumeState"))["batches_done"]
    assert 0 < batches_done and not next(v for k, v in saved["callbacks"].items()
                                         if k.startswith("ResumeState"))["epoch_finished"], "cut mid-epoch"

    resumed = train(tmp_path, run_dir, *RESUMABLE)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "Restoring states from the checkpoint path" in resumed.stdout + resumed.stderr
    _assert_same_run(run_dir, uninterrupted)


def test_sigint_during_testing_exits_nonzero_and_the_rerun_gives_the_same_results(tmp_path, uninterrupted):
    run_dir = tmp_path / "run"
    cut = train(tmp_path, run_dir, *RESUMABLE, "+callbacks.cut._target_=test_resume.SignalAt",
                "+callbacks.cut.test_batch=0", "+callbacks.cut.signum=SIGINT")
    assert cut.returncode == 128 + signal.SIGINT, cut.stderr[-3000:]
    assert "Traceback" not in cut.stderr
    record = json.loads((run_dir / "results.json").read_text())
    assert record["status"] == "interrupted" and record["phase"] == "testing" and record["step"] == 14
    assert not (run_dir / "hypotheses.test.txt").exists()

    resumed = train(tmp_path, run_dir, *RESUMABLE)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    _assert_same_run(run_dir, uninterrupted)


def _losses(run_dir: Path) -> list[tuple[str, str]]:
    with (run_dir / "csv" / "metrics.csv").open(newline="") as f:
        return [(row["step"], row["train/loss"]) for row in csv.DictReader(f) if row.get("train/loss")]


def test_the_same_seed_twice_gives_identical_losses_and_bleu(tmp_path, uninterrupted):
    again = train(tmp_path, tmp_path / "run", *RESUMABLE)
    assert again.returncode == 0, again.stderr[-3000:]
    _assert_same_run(tmp_path / "run", uninterrupted)
    assert len(_losses(uninterrupted)) == 14 and _losses(tmp_path / "run") == _losses(uninterrupted)


def test_nan_loss_stops_with_one_line_naming_the_update_and_keeps_the_last_good_checkpoint(tmp_path):
    run_dir = tmp_path / "run"
    proc = train(tmp_path, run_dir, *TINY, *TINY_MODELS["transformer"], "trainer.max_steps=30",
                 "trainer.max_epochs=50", "optimizer.lr=1e30", "scheduler=constant")
    assert proc.returncode == 1, proc.stderr[-3000:]
    line = proc.stderr.strip().splitlines()[-1]
    assert line.startswith("error: training diverged: the loss is ") and " at update " in line, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    record = json.loads((run_dir / "results.json").read_text())
    assert record["status"] == "diverged" and record["error"] == line.removeprefix("error: ")
    update = int(line.split(" at update ")[1].split()[0])
    assert record["step"] == update - 1, "the bad update is not applied"
    last = run_dir / "checkpoints" / "last.ckpt"
    if last.exists():  # written by a validation before the loss went bad: its weights are finite
        assert all(torch.isfinite(t).all() for t in _weights(run_dir).values() if t.is_floating_point())


def test_a_failing_multirun_job_is_recorded_and_the_others_run(tmp_path):
    sweep = tmp_path / "sweep"
    # job 1 fails after composition (model.d_model must be divisible by model.n_heads)
    proc = train(tmp_path, sweep, *TINY, *TINY_MODELS["transformer"], "model.n_heads=2,3,4",
                 multirun=True)
    assert proc.returncode == 1, proc.stderr[-3000:]
    records = {job: json.loads((sweep / job / "results.json").read_text()) for job in ("0", "1", "2")}
    assert records["0"]["status"] == records["2"]["status"] == "completed"
    assert records["1"]["status"] == "failed" and "model.n_heads" in records["1"]["error"]
    assert f"{sweep / '1'}: " in proc.stderr and "1 job(s) of the multirun failed" in proc.stderr
    from seqbench.report import write_report

    report = write_report([sweep], tmp_path / "report", n_samples=10).read_text()
    assert "## Runs that did not complete" in report and "| failed |" in report


def test_a_checkpoint_of_another_vocabulary_or_architecture_is_one_line(tmp_path, uninterrupted):
    checkpoint = uninterrupted / "checkpoints" / "last.ckpt"
    other_vocab = train(tmp_path, tmp_path / "vocab", *RESUMABLE, "data.vocab_size=280", f"ckpt_path={checkpoint}")
    other_model = train(tmp_path, tmp_path / "model", *TINY, *TINY_MODELS["rnn_bahdanau"], f"ckpt_path={checkpoint}")
    not_a_checkpoint = tmp_path / "notes.ckpt"
    not_a_checkpoint.write_text("not a checkpoint")
    garbage = train(tmp_path, tmp_path / "garbage", *RESUMABLE, f"ckpt_path={not_a_checkpoint}")
    for proc, words in ((other_vocab, "trained with another vocabulary"), (other_model, "a checkpoint of another model"),
                        (garbage, "not a")):
        assert proc.returncode == 2, proc.stderr[-3000:]
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: ckpt_path=") and words in lines[0], proc.stderr
