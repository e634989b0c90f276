"""`python train.py` end to end on tiny settings: results.json, one-line config errors, resuming a killed run."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# conf/debug/limit.yaml cuts batches, decoding length and measurements; on top: a tiny corpus, 4 updates, beam 2.
TINY = ["debug=limit", "data.corpus.train_size=120", "data.corpus.valid_per_bucket=1",
        "data.corpus.test_per_bucket=1", "data.vocab_size=300", "data.max_tokens=1024", "trainer.max_steps=4",
        "module.decoding.beam_size=2", "callbacks.progress_bar=null", "threads=1"]
TINY_MODELS = {
    "transformer": ["model=transformer", "model.d_model=32", "model.n_heads=2", "model.d_ff=64",
                    "model.encoder_layers=1", "model.decoder_layers=1"],
    **{f"rnn_{attention}": ["model=rnn", f"model.attention={attention}", "model.embed_dim=32", "model.hidden_size=32"]
       for attention in ("none", "bahdanau", "luong_dot", "luong_general", "luong_concat")},
    # rotary positions have no table: max_positions far below the data's lengths passes the preflight and trains
    "transformer_rope": ["model=transformer", "model.d_model=32", "model.n_heads=2", "model.d_ff=64",
                         "model.encoder_layers=1", "model.decoder_layers=1", "model.positions=rope",
                         "model.max_positions=6"],
    "cnn": ["model=cnn", "model.embed_dim=32", "model.out_embed_dim=32", "model.encoder_layers=[[32,3]]",
            "model.decoder_layers=[[32,3]]"],
}


def train(tmp_path: Path, *overrides: str, run_dir: Path | None = None) -> subprocess.CompletedProcess:
    run_dir = run_dir or tmp_path / "run"
    env = dict(os.environ, OMP_NUM_THREADS="1", HYDRA_FULL_ERROR="0", WANDB_MODE="offline")
    args = [sys.executable, str(ROOT / "train.py"), f"paths.cache_dir={tmp_path / 'cache'}",
            f"hydra.run.dir={run_dir}", *overrides]
    return subprocess.run(args, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)


@pytest.mark.parametrize("model", sorted(TINY_MODELS))
def test_train_writes_results(tmp_path, model):
    proc = train(tmp_path, *TINY, *TINY_MODELS[model])
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    assert results["schema_version"] == 1 and results["model"]["name"] == model.split("_")[0]
    for split in ("valid", "test"):
        assert 0 <= results[split]["bleu"] <= 100 and "tok:13a" in results[split]["bleu_signature"]
    assert results["parameters"] > 0 and results["throughput"]["target_tokens_per_s"] > 0
    assert results["versions"]["torch"] and results["seed"] == 42
    assert (tmp_path / "run" / "checkpoints" / "last.ckpt").is_file()
    assert (tmp_path / "run" / "hypotheses.test.txt").read_text().count("\n") == results["test"]["n_sentences"]
    assert "test BLEU" in proc.stdout and "run directory" in proc.stdout
    assert not list(tmp_path.glob("*.ckpt")) and not (tmp_path / "lightning_logs").exists()


@pytest.mark.parametrize("override, key", [
    ("model.n_heads=3", "model.n_heads"),
    ("model._target_=seqbench.models.lstm.LSTM", "model._target_"),
    ("model=lstm", "model"),
    ("data.max_tokens=0", "data.max_tokens"),
    ("module.decoding.beam_size=0", "module.decoding.beam_size"),
])
def test_bad_config_is_one_line_error(tmp_path, override, key):
    proc = train(tmp_path, *TINY, override)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and key in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "cache").exists(), "validation must happen before any data is built"


def test_killed_run_resumes_from_last_checkpoint(tmp_path):
    run_dir = tmp_path / "run"
    # max_epochs high enough that the step limit, not the end of an epoch, is what stops both runs
    first = train(tmp_path, *TINY, *TINY_MODELS["transformer"], "trainer.max_steps=2", "trainer.max_epochs=50",
                  "test=false", run_dir=run_dir)
    assert first.returncode == 0, first.stderr[-3000:]
    # a rerun in the same run directory picks up last.ckpt and continues from step 2
    second = train(tmp_path, *TINY, *TINY_MODELS["transformer"], "trainer.max_steps=4", "trainer.max_epochs=50",
                   run_dir=run_dir)
    assert second.returncode == 0, second.stderr[-3000:]
    assert "Restoring states from the checkpoint path" in second.stdout + second.stderr
    assert json.loads((run_dir / "results.json").read_text())["train"]["steps"] == 4
    assert not list((run_dir / "checkpoints").glob(".*tmp*")), "no temporary checkpoint files left behind"


def test_train_false_evaluates_the_given_checkpoint(tmp_path):
    trained = train(tmp_path, *TINY, *TINY_MODELS["rnn_bahdanau"], run_dir=tmp_path / "trained")
    assert trained.returncode == 0, trained.stderr[-3000:]
    last = tmp_path / "trained" / "checkpoints" / "last.ckpt"  # the weights the trained run tested (no validation ran)
    evaluated = train(tmp_path, *TINY, *TINY_MODELS["rnn_bahdanau"], "train=false", f"ckpt_path={last}",
                      run_dir=tmp_path / "evaluated")
    assert evaluated.returncode == 0, evaluated.stderr[-3000:]
    # the same weights decode the same test hypotheses (an untrained model would not)
    assert ((tmp_path / "evaluated" / "hypotheses.test.txt").read_text()
            == (tmp_path / "trained" / "hypotheses.test.txt").read_text())
    assert json.loads((tmp_path / "evaluated" / "results.json").read_text())["train"]["best_checkpoint"] == str(last)


def test_train_false_without_a_checkpoint_is_one_line_error(tmp_path):
    proc = train(tmp_path, *TINY, *TINY_MODELS["transformer"], "train=false")
    assert proc.returncode == 2
    assert proc.stderr.strip().startswith("error: ") and "ckpt_path" in proc.stderr and "Traceback" not in proc.stderr


def test_wandb_logger_runs_offline_without_credentials(tmp_path):
    """No API key, no network: `logger=wandb` must neither hang nor fail, and leaves an offline run to sync later."""
    env_home = tmp_path / "home"
    env_home.mkdir()
    proc = subprocess.run(
        [sys.executable, str(ROOT / "train.py"), f"paths.cache_dir={tmp_path / 'cache'}",
         f"hydra.run.dir={tmp_path / 'run'}", "logger=wandb", *TINY, *TINY_MODELS["transformer"]],
        cwd=tmp_path, capture_output=True, text=True, timeout=600,
        env={k: v for k, v in os.environ.items() if not k.startswith("WANDB_")} | {"HOME": str(env_home),
                                                                                   "OMP_NUM_THREADS": "1"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert list((tmp_path / "run" / "wandb").glob("offline-run-*")), "expected an offline W&B run directory"


def test_ddp_on_two_cpu_processes_scores_the_whole_test_set(tmp_path):
    """Two DDP ranks each decode their share of the test batches; BLEU is computed on the gathered whole."""
    proc = train(tmp_path, *TINY, *TINY_MODELS["transformer"], "trainer.accelerator=cpu", "trainer.devices=2",
                 "+trainer.strategy=ddp", "measure.decode_sentences=4", "trainer.limit_test_batches=1.0")
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    assert results["test"]["n_sentences"] == results["data"]["sizes"]["test"]
    hypotheses = (tmp_path / "run" / "hypotheses.test.txt").read_text().splitlines()
    assert len(hypotheses) == results["data"]["sizes"]["test"]


def test_logger_none_trains_and_records_results(tmp_path):
    """`logger=none`: no logger, so the learning-rate monitor (which needs one) is left out and the run completes."""
    proc = train(tmp_path, *TINY, *TINY_MODELS["transformer"], "logger=none", "test=false")
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    assert results["train"]["steps"] == 4 and results["valid"]["bleu"] >= 0
    assert not (tmp_path / "run" / "csv").exists()


def test_a_run_that_stops_mid_epoch_validates_its_final_weights(tmp_path):
    """ValidateLastUpdate: 4 updates end inside the first epoch; the final weights are validated there, so they are
    the best checkpoint and the learning curve ends at update 4 (Lightning alone would validate nothing)."""
    proc = train(tmp_path, *TINY, *TINY_MODELS["transformer"], "test=false")
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    assert results["train"]["epochs"] < 1  # the premise: training stopped inside the first epoch
    assert [point["step"] for point in results["curve"]] == [4]
    assert Path(results["train"]["best_checkpoint"]).name == "best-epoch000.ckpt"


def test_early_stopping_ends_training_when_validation_bleu_stops_improving(tmp_path):
    """callbacks=early_stopping: with a gain of 100 BLEU required, the second validation (update 4) is no improvement
    and, with patience 1, ends training at update 4 of 40; the curve records training FLOPs at every validation, and
    the best checkpoint is chosen by validation BLEU."""
    proc = train(tmp_path, *TINY, *TINY_MODELS["transformer"], "test=false", "callbacks=early_stopping",
                 "callbacks.progress_bar=null", "callbacks.early_stopping.patience=1",
                 "callbacks.early_stopping.min_delta=100", "trainer.max_steps=40",
                 "trainer.check_val_every_n_epoch=null", "trainer.val_check_interval=2", "data.max_tokens=256")
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    assert results["train"]["steps"] == 4 and [point["step"] for point in results["curve"]] == [2, 4]
    flops = [point["train_flops"] for point in results["curve"]]
    assert 0 < flops[0] < flops[1] == pytest.approx(results["throughput"]["train_flops"])
    config = (tmp_path / "run" / ".hydra" / "config.yaml").read_text()
    assert "monitor: val/bleu" in config and "EarlyStopping" in config
