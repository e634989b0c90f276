"""After training: a self-contained run directory, translate, checkpoint averaging, EMA weights, export.

One tiny run is trained once for the whole module (EMA weights, two recent checkpoints kept) and its data cache is
deleted straight after: everything here must work from the run directory alone.
"""
from __future__ import annotations

import json
import os
import select
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from test_train_cli import ROOT, TINY, TINY_MODELS, train

from seqbench.rundir.checkpoints import read_checkpoint
from seqbench.rundir.layout import MODEL_FILE
from seqbench.rundir.loading import load_run

RUN_OVERRIDES = [
    *(o for o in TINY if not o.startswith("trainer.max_steps")), *TINY_MODELS["transformer"],
    "trainer.max_steps=-1",  # one whole epoch, so that a validation runs and writes a best checkpoint
    # EMA weights that lag far behind fast-moving raw weights: the run's test hypotheses come from the EMA weights
    # only if the final test really evaluates them
    "callbacks=ema", "callbacks.ema.decay=0.5", "scheduler=constant", "optimizer.lr=0.01",
    "callbacks.recent_checkpoints.every_n_train_steps=1", "callbacks.recent_checkpoints.save_top_k=2",
]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("trained")
    proc = train(tmp, *RUN_OVERRIDES)
    assert proc.returncode == 0, proc.stderr[-3000:]
    shutil.rmtree(tmp / "cache")  # a run directory must not need the data cache
    return tmp / "run"


def _env(tmp_path: Path) -> dict:
    """No cache, an empty home and no network: only the run directory is there to read."""
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    return dict(os.environ, HOME=str(home), SEQBENCH_CACHE_DIR=str(tmp_path / "no-cache"), HF_HUB_OFFLINE="1",
                OMP_NUM_THREADS="1")


def _translate(*args: str, env: dict, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "seqbench.commands.translate", *args], env=env, capture_output=True,
                          text=True, timeout=300, **kwargs)


def test_run_directory_holds_tokenizers_config_and_model_spec(run_dir):
    from seqbench.training.module import Seq2SeqModule

    spec = json.loads((run_dir / MODEL_FILE).read_text())
    results = json.loads((run_dir / "results.json").read_text())
    assert (spec["src_vocab_size"], spec["tgt_vocab_size"]) == (results["data"]["src_vocab_size"],
                                                                results["data"]["tgt_vocab_size"])
    assert spec["model"] == results["model"]["config"] and spec["decoding"]["beam_size"] == 2
    assert {p.name for p in (run_dir / "tokenizers").iterdir()} == {"src.json", "tgt.json"}
    assert "max_steps: -1" in (run_dir / "config.yaml").read_text()
    checkpoints = sorted((run_dir / "checkpoints").glob("*.ckpt"))
    assert len([p for p in checkpoints if p.name.startswith("recent-step")]) == 2
    for path in checkpoints:  # every checkpoint opens without unpickling arbitrary objects and names its model
        hparams = read_checkpoint(path)["hyper_parameters"]
        assert {k: hparams["model_spec"][k] for k in ("model", "vocabulary")} == \
            {k: spec[k] for k in ("model", "vocabulary")}
    # Lightning's own API rebuilds the module from the saved hyperparameters
    best = load_run(run_dir).weights
    module = Seq2SeqModule.load_from_checkpoint(best, map_location="cpu", weights_only=True)
    expected = read_checkpoint(best)["state_dict"]
    assert all(torch.equal(v, expected[k]) for k, v in module.state_dict().items())


def test_moved_run_translates_stdin_line_by_line_without_cache(run_dir, tmp_path):
    moved = tmp_path / "elsewhere" / "run"
    shutil.copytree(run_dir, moved)
    sources = (run_dir / "sources.test.txt").read_text().splitlines()
    expected = (run_dir / "hypotheses.test.txt").read_text().splitlines()
    proc = subprocess.Popen([sys.executable, "-m", "seqbench.commands.translate", str(moved)], env=_env(tmp_path),
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        # interactive: the first translation arrives while stdin is still open
        proc.stdin.write(sources[0] + "\n")
        proc.stdin.flush()
        ready, _, _ = select.select([proc.stdout], [], [], 240)
        assert ready, "no translation came back before stdin was closed"
        first = proc.stdout.readline().rstrip("\n")
        rest, err = proc.communicate("".join(s + "\n" for s in sources[1:]) + "\n", timeout=240)
    finally:
        proc.kill()
    assert proc.returncode == 0, err[-3000:]
    # the run's own test hypotheses (decoded by the best checkpoint's EMA weights at test time), and an empty line
    # for the empty one
    assert [first, *rest.split("\n")[:-1]] == expected + [""]


def test_translate_file_in_batches_with_attention_maps(run_dir, tmp_path):
    from seqbench.commands.translate import main

    out = tmp_path / "hyp.txt"
    main([str(run_dir), "--input", str(run_dir / "sources.test.txt"), "--output", str(out), "--max-tokens", "64",
          "--attention", str(tmp_path / "attention")])
    assert out.read_text() == (run_dir / "hypotheses.test.txt").read_text()
    pngs = sorted((tmp_path / "attention").glob("*.png"))
    assert len(pngs) == len(out.read_text().splitlines()) and pngs[0].name == "000001.png"
    assert all(p.read_bytes()[:4] == b"\x89PNG" for p in pngs)
    # decoding options override the run's: greedy with at most 1 token per sentence
    main([str(run_dir), "--checkpoint", "last", "--input", str(run_dir / "sources.test.txt"), "--output", str(out),
          "--beam", "1", "--max-len-a", "0", "--max-len-b", "1"])
    assert all(len(line.split()) <= 1 for line in out.read_text().splitlines())


def test_averaging_identical_checkpoints_is_the_identity(run_dir, tmp_path):
    from seqbench.commands.average import main

    best = load_run(run_dir).weights
    copies = [shutil.copyfile(best, tmp_path / name) for name in ("a.ckpt", "b.ckpt")]
    main([*map(str, copies), "--output", str(tmp_path / "avg.ckpt")])
    original, averaged = read_checkpoint(best)["state_dict"], read_checkpoint(tmp_path / "avg.ckpt")["state_dict"]
    assert original.keys() == averaged.keys()
    assert all(torch.equal(original[k], averaged[k]) for k in original)


def test_average_of_a_run_directory_takes_its_last_recent_checkpoints(run_dir, tmp_path):
    from seqbench.commands.average import main

    main([str(run_dir), "--last", "2", "--output", str(tmp_path / "avg.ckpt")])
    recent = [read_checkpoint(p) for p in sorted((run_dir / "checkpoints").glob("recent-step*.ckpt"))]
    averaged = read_checkpoint(tmp_path / "avg.ckpt")
    assert [a["global_step"] for a in averaged["averaged_from"]] == sorted(c["global_step"] for c in recent)
    for key, value in averaged["state_dict"].items():
        mean = (recent[0]["state_dict"][key].double() + recent[1]["state_dict"][key].double()) / 2
        assert torch.allclose(value.double(), mean, atol=1e-7), key
    # the average is a checkpoint like any other: translate loads it
    assert load_run(run_dir, str(tmp_path / "avg.ckpt")).weights == tmp_path / "avg.ckpt"


def test_export_round_trips_through_translate(run_dir, tmp_path):
    from safetensors.torch import load_file

    from seqbench.commands.export import main as export
    from seqbench.commands.translate import main as translate

    out = tmp_path / "exported"
    export([str(run_dir), str(out)])
    assert {p.name for p in out.iterdir()} == {"model.safetensors", "model.json", "tokenizers", "config.yaml",
                                               "results.json", "README.md"}
    assert load_file(str(out / "model.safetensors"))  # plain tensors, no pickle
    card = (out / "README.md").read_text()
    results = json.loads((run_dir / "results.json").read_text())
    assert results["test"]["bleu_signature"] in card and f"{results['parameters']:,}" in card
    assert "| 61+ |" in card and "python train.py paths.cache_dir=" in card and "callbacks=ema" in card
    translate([str(out), "--input", str(run_dir / "sources.test.txt"), "--output", str(tmp_path / "hyp.txt")])
    assert (tmp_path / "hyp.txt").read_text() == (run_dir / "hypotheses.test.txt").read_text()


def _foreign_checkpoint(run_dir: Path, tmp_path: Path, kind: str) -> Path:
    """A checkpoint of this run made to look like one of another architecture or another vocabulary."""
    from conftest import MODEL_CASES, build_tiny_model

    checkpoint = read_checkpoint(load_run(run_dir).weights)
    spec = checkpoint["hyper_parameters"]["model_spec"]
    if kind == "vocabulary":  # same sizes, so same shapes: only the fingerprint tells
        spec["vocabulary"] = "0" * 16
    else:
        model = build_tiny_model("rnn_bahdanau", spec["src_vocab_size"], spec["tgt_vocab_size"])
        checkpoint["state_dict"] = {f"model.{k}": v for k, v in model.state_dict().items()}
        spec["model"] = {"name": "rnn", **MODEL_CASES["rnn_bahdanau"]}
    path = tmp_path / f"{kind}.ckpt"
    torch.save(checkpoint, path)
    return path


@pytest.mark.parametrize("kind, message", [("vocabulary", "another vocabulary"), ("architecture", "another model")])
def test_foreign_checkpoint_is_one_line_error(run_dir, tmp_path, kind, message):
    path = _foreign_checkpoint(run_dir, tmp_path, kind)
    proc = _translate(str(run_dir), "--checkpoint", str(path), env=_env(tmp_path), input="a b c\n")
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], proc.stderr


def test_train_false_with_a_foreign_checkpoint_is_one_line_error(run_dir, tmp_path):
    path = _foreign_checkpoint(run_dir, tmp_path, "architecture")
    proc = train(tmp_path, *RUN_OVERRIDES, "train=false", f"ckpt_path={path}")
    assert proc.returncode == 2
    # (the lines before it are the data cache being built: the check needs the vocabulary)
    error = proc.stderr.strip().splitlines()[-1]
    assert error.startswith("error: ") and "model.name='rnn' (expected 'transformer')" in error, proc.stderr
    assert "Traceback" not in proc.stderr and not (tmp_path / "run" / "checkpoints").exists()


def test_checkpoint_without_spec_reports_the_shape_that_differs():
    from conftest import build_tiny_model

    from seqbench.common.errors import InputError
    from seqbench.rundir.checkpoints import check_fits

    model = build_tiny_model("transformer")
    weights = build_tiny_model("transformer", tgt_vocab=50).state_dict()
    with pytest.raises(InputError, match=r"old\.ckpt: a checkpoint of another model: .*shape \[50, 32\]"):
        check_fits(model, weights, "old.ckpt", None, {"vocabulary": None})


def test_not_a_run_is_one_line_error(tmp_path, capsys):
    from seqbench.commands.average import main as average
    from seqbench.commands.cli import run_tool
    from seqbench.commands.translate import main as translate

    assert run_tool(translate, [str(tmp_path)]) == 2
    assert run_tool(average, [str(tmp_path), "--output", str(tmp_path / "avg.ckpt")]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 2 and "no model.json" in lines[0] and "save_top_k" in lines[1]


def test_recent_checkpoints_are_off_by_default():
    from hydra import compose, initialize_config_dir

    from seqbench.config.resolvers import register_resolvers

    register_resolvers()
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        cfg = compose("train")
        assert cfg.callbacks.recent_checkpoints.save_top_k == 0 and "ema" not in cfg.callbacks
        assert compose("train", ["callbacks=ema"]).callbacks.ema._target_ == "seqbench.training.callbacks.EMAWeights"


def test_ema_callback_evaluates_the_average_in_validate_and_test(tmp_path):
    """Lightning's EMAWeightAveraging restored the raw weights for trainer.test(ckpt_path=best) after fit; ours
    evaluates the checkpoint's (averaged) state_dict in both validate and test."""
    import lightning as L
    from lightning.pytorch.callbacks import ModelCheckpoint
    from torch.utils.data import DataLoader, TensorDataset

    from seqbench.training.callbacks import EMAWeights

    class Tiny(L.LightningModule):
        def __init__(self):
            super().__init__()
            self.layer = torch.nn.Linear(2, 1)
            self.seen = {}

        def training_step(self, batch, batch_idx):
            return ((self.layer(batch[0]) - batch[1]) ** 2).mean()

        def validation_step(self, batch, batch_idx):
            self.log("val_loss", self.training_step(batch, batch_idx))
            self.seen[self.trainer.state.fn.value] = {k: v.clone() for k, v in self.state_dict().items()}

        def test_step(self, batch, batch_idx):
            self.seen["test"] = {k: v.clone() for k, v in self.state_dict().items()}

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.5)

        def _loader(self):
            g = torch.Generator().manual_seed(0)
            return DataLoader(TensorDataset(torch.randn(8, 2, generator=g), torch.randn(8, 1, generator=g)),
                              batch_size=2)

        train_dataloader = val_dataloader = test_dataloader = _loader

    torch.manual_seed(0)
    module = Tiny()
    trainer = L.Trainer(max_epochs=2, accelerator="cpu", logger=False, enable_progress_bar=False,
                        enable_model_summary=False, default_root_dir=tmp_path,
                        callbacks=[EMAWeights(decay=0.5), ModelCheckpoint(dirpath=tmp_path, monitor="val_loss")])
    trainer.fit(module)
    best = trainer.checkpoint_callback.best_model_path
    trainer.validate(module, ckpt_path=best, verbose=False)
    trainer.test(module, ckpt_path=best, verbose=False)
    checkpoint = torch.load(best, weights_only=True)
    averaged, raw = checkpoint["state_dict"], checkpoint["current_model_state"]
    assert not torch.equal(averaged["layer.weight"], raw["layer.weight"])
    for stage in ("validate", "test"):
        assert all(torch.equal(module.seen[stage][k], averaged[k]) for k in averaged), stage
