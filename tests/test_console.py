"""What a person reads while a run goes (issue 72): each line once on the console and in the run's log, progress lines
at the set interval and per validation, the summary in the log and one JSON line on stdout, a cut-short run that
says so, plain progress lines without a terminal, the MFU line in plain words. No assertion times anything."""
from __future__ import annotations

import json
import logging
import os
import re
import subprocess
import sys
import warnings
from types import SimpleNamespace

import pytest

from seqbench.rundir.results import read_results

from conftest import ROOT, TINY, TINY_MODELS, seqbench_cli, train_in_process

EVERY_2 = ["callbacks.progress_log.every_n_steps=2", "callbacks.progress_log.every_seconds=null"]
PREFIX = re.compile(r"^(\[[^\]]*\])+ ?(- )?|^(INFO|WARNING): ")  # the console's and Lightning's own prefixes


def _messages(text: str) -> list[str]:
    """The logged lines of a console or log text, without their prefixes (tables and others' bars aside)."""
    return [m for line in text.splitlines() if PREFIX.match(line) and (m := PREFIX.sub("", line).strip())]


def _train(tmp_path, capsys, *overrides):
    return seqbench_cli(["train", *TINY, *TINY_MODELS["transformer"], *EVERY_2, f"hydra.run.dir={tmp_path / 'run'}",
                         f"paths.cache_dir={tmp_path / 'cache'}", *overrides], capsys)


def test_a_run_logs_each_line_once_with_progress_validation_and_its_summary(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    status, out, err = _train(tmp_path, capsys)
    assert status == 0, err[-3000:]
    log = (tmp_path / "run" / "train.log").read_text()
    updates = re.findall(r"update (\d+)/4, epoch 0, loss [\d.]+, lr [\d.e-]+, [\d,]+ target tokens/s, elapsed", log)
    assert updates == ["2", "4"]  # every_n_steps=2 of max_steps=4
    assert re.search(r"validation at update 4: BLEU [\d.]+ \(best [\d.]+\), NLL [\d.]+ \(best [\d.]+\)", log)
    assert "seqbench: transformer" in log and "test BLEU" in log and "run directory:" in log  # the summary
    for text in (log, out):
        messages = _messages(text)
        assert len(messages) == len(set(messages)), text
        assert not re.search(r"Tip:|already configured with model summary|=1\.0\)` was configured", text)
    assert "update 2/4" in out and "[INFO]" not in err  # no bar here: progress on the console too; stderr: errors
    assert out.count("seqbench: transformer") == 1
    summary = json.loads(out.strip().splitlines()[-1])
    assert summary["status"] == "completed" and summary["steps"] == 4 and summary["run_dir"] == str(tmp_path / "run")


def test_quiet_leaves_only_the_json_summary_on_stdout(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    status, out, err = _train(tmp_path, capsys, "quiet=true")
    assert status == 0, err[-3000:]
    (line,) = out.strip().splitlines()
    assert json.loads(line)["test_bleu"] == read_results(tmp_path / "run")["test"]["bleu"]
    assert "[INFO]" not in err + out
    assert "update 4/4" in (tmp_path / "run" / "train.log").read_text()  # the log keeps everything


def test_a_run_cut_short_by_the_time_guard_says_so_and_exits_3(tmp_path, capsys, monkeypatch):
    """trainer.max_time ends training far short of the update budget: status cut_short wherever it is read."""
    monkeypatch.chdir(tmp_path)
    status, out, err = _train(tmp_path, capsys, "test=false", "trainer.max_steps=100000", "trainer.max_epochs=-1",
                              "trainer.max_time=00:00:00:01")
    record = read_results(tmp_path / "run")
    assert status == 3 and record["status"] == "cut_short" and record["train"]["stopped_by"] == "max_time"
    said = f"stopped by the time guard at {record['train']['steps']:,} of 100,000 updates"
    assert said in out and said in err and said in (tmp_path / "run" / "train.log").read_text()
    assert json.loads(out.strip().splitlines()[-1])["status"] == "cut_short"


def test_with_time_budget_the_time_guard_ends_a_completed_run(tmp_path):
    # debug=limit (in TINY) comes after the budget group: its epoch and step limits are lifted again here
    record = train_in_process(tmp_path / "run", [*TINY, *TINY_MODELS["transformer"], "test=false", "budget=time",
                                                 "trainer.max_steps=-1", "trainer.max_epochs=-1",
                                                 "trainer.max_time=00:00:00:01"])
    assert record["status"] == "completed" and record["train"]["stopped_by"] == "max_time"


def test_cut_short_runs_are_scored_runs_for_the_readers(tmp_path):
    from seqbench.report import _cut_short
    from seqbench.rundir.reader import load_runs
    from seqbench.rundir.results import write_results

    for name, status in (("cut", "cut_short"), ("done", "completed"), ("stopped", "interrupted")):
        write_results({"status": status, "label": name, "model": {"name": name}, "test": {"bleu": 1.0},
                       "train": {"steps": 8, "max_steps": 20, "stopped_by": "max_time"}}, tmp_path / name)
    runs = load_runs([tmp_path], completed=True)
    assert sorted(r.status for r in runs) == ["completed", "cut_short"]
    assert all(_cut_short(r) for r in runs)  # both stopped on the guard: the report warns about each


def test_lightning_notices_that_say_nothing_about_the_run_are_dropped():
    from seqbench.common.logs import LightningNotices

    def kept(message: str, name: str = "lightning.pytorch.utilities.rank_zero") -> bool:
        return LightningNotices().filter(logging.LogRecord(name, logging.INFO, "", 0, message, None, None))

    assert not kept("💡 Tip: For seamless cloud logging and experiment tracking, try installing [litlogger](...)")
    assert not kept("Trainer already configured with model summary callbacks: [...]. Skipping ...")
    assert not kept("`Trainer(limit_val_batches=1.0)` was configured so 100% of the batches will be used..")
    assert not kept("`Trainer(val_check_interval=1.0)` was configured so validation will run at the end ...")
    assert kept("`Trainer(limit_train_batches=1)` was configured so 1 batch per epoch will be used.")
    assert kept("GPU available: False, used: False") and kept("`Trainer.fit` stopped: `max_steps=4` reached.")
    assert kept("💡 Tip: ours", name="seqbench.training.run")


def test_third_party_deprecation_warnings_are_filtered_in_one_place():
    from seqbench.common.third_party import KNOWN, silence_known_warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        silence_known_warnings()
        for _, category, _, _ in KNOWN:
            warnings.warn_explicit("`isinstance(treespec, LeafSpec)` is deprecated, use ...", category, "_pytree.py",
                                   21, module="lightning.pytorch.utilities._pytree")
        warnings.warn_explicit("`isinstance(treespec, LeafSpec)` is deprecated", FutureWarning, "ours.py", 1,
                               module="seqbench.ours")  # the same words elsewhere still warn
    assert [str(w.message) for w in caught] == ["`isinstance(treespec, LeafSpec)` is deprecated"]


def test_the_bar_counts_updates_toward_max_steps():
    from seqbench.training.progress import UpdatesProgressBar

    bar = UpdatesProgressBar()
    bar._trainer = SimpleNamespace(max_steps=20, max_epochs=50, num_training_batches=7)
    assert bar.total_train_batches == 20 and bar._get_train_description(3) == "Updates (epoch 3)"
    bar._trainer = SimpleNamespace(max_steps=-1, max_epochs=50, num_training_batches=7)
    assert bar.total_train_batches == 7 and bar._get_train_description(3).startswith("Epoch 3/49")


def test_without_a_terminal_long_steps_log_plain_lines(caplog):
    from seqbench.common.progress import progress_bar, stage

    caplog.set_level(logging.INFO, logger="seqbench")
    with stage("training the BPE tokenizer"):
        pass
    with progress_bar("tokenising train", total=120, unit="pairs") as advance:
        advance(60)
        advance(60)
    lines = [r.getMessage() for r in caplog.records]
    assert lines[:2] == ["training the BPE tokenizer ...", "training the BPE tokenizer: done in 0:00:00"]
    assert lines[2] == "tokenising train: 0 of 120 pairs" and lines[-1].startswith("tokenising train: 120 pairs in ")


def test_the_mfu_line_says_the_peak_and_only_when_it_matters_how_it_was_measured():
    from seqbench.measure.peaks import mfu_text

    flops = {"mfu": 0.198, "peak_dtype": "float32", "peak_flops_per_s": {"float32": 1.8e11}, "peak_source": "cached",
             "peak_provenance": {"float32": {}}, "mfu_note": None}
    assert mfu_text(flops) == "19.8% of this machine's float32 matmul peak (0.18 TFLOP/s)"
    unfit = {**flops, "peak_source": "measured now", "mfu_note": "against a peak measured unfit (...)",
             "peak_provenance": {"float32": {"unfit": ["other work was running on the cores"]}}}
    assert mfu_text(unfit) == ("19.8% of this machine's float32 matmul peak (0.18 TFLOP/s); that peak was measured "
                               "now under load, so the share is rough: see `seqbench bench --measure-peak --force`")


def _no_terminal_env(tmp_path) -> dict:
    return {**os.environ, "PYTHONPATH": str(ROOT / "src"), "SEQBENCH_CACHE_DIR": str(tmp_path / "cache"),
            "COLUMNS": "120"}


@pytest.mark.integration
def test_a_cluster_job_s_log_holds_progress_validation_and_the_summary(tmp_path):
    """`python train.py` with its output in files, as a SLURM or nohup job runs: the run's log holds progress lines at
    the set interval, a validation line and the summary; stderr holds no third-party warning or Lightning notice."""
    with_bar = [o for o in TINY if not o.startswith("callbacks.progress_bar")]  # the default bar: off without a tty
    done = subprocess.run([sys.executable, "train.py", *with_bar, *TINY_MODELS["transformer"], *EVERY_2,
                           f"hydra.run.dir={tmp_path / 'run'}"], cwd=ROOT, env=_no_terminal_env(tmp_path),
                          capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    log = (tmp_path / "run" / "train.log").read_text()
    assert re.findall(r"update (\d+)/4, epoch", log) == ["2", "4"] and "validation at update 4: BLEU" in log
    assert "seqbench: transformer" in log and "test BLEU" in log
    assert not re.search(r"Warning|deprecated|Tip:|already configured|was configured so", done.stderr), done.stderr
    assert not re.search(r"Updates \(epoch|it/s|Validation ━", done.stdout + done.stderr)  # no bar without a tty
    messages = _messages(done.stdout)
    assert len(messages) == len(set(messages)) and "update 2/4" in done.stdout
    assert json.loads(done.stdout.strip().splitlines()[-1])["status"] == "completed"


@pytest.mark.integration
def test_data_prepare_without_a_terminal_logs_its_stages(tmp_path):
    done = subprocess.run([sys.executable, "-m", "seqbench", "data", "prepare", "data.corpus.train_size=120",
                           "data.corpus.valid_per_bucket=1", "data.corpus.test_per_bucket=1", "data.vocab_size=300"],
                          cwd=ROOT, env=_no_terminal_env(tmp_path), capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    for line in ("training the source BPE tokenizer (300 types) ...", "tokenising train: 0 of 120 pairs",
                 "tokenising train: 120 pairs in ", "tokenising test: 7 pairs in "):
        assert line in done.stderr, done.stderr
