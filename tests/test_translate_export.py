"""After training: a self-contained run directory, translate, checkpoint averaging, EMA weights, export, and the run
directories and exports written before the package moved (tests/fixtures/legacy).

Everything reads the session's shared tiny run (conftest.trained_run: EMA weights, two recent checkpoints kept) with
the data cache out of reach: everything here must work from the run directory alone.
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

from seqbench.rundir.checkpoints import read_checkpoint
from seqbench.rundir.layout import RunDir
from seqbench.rundir.loading import load_run
from seqbench.rundir.results import read_results

from conftest import TRAINED_RUN, compose_train, seqbench_cli

LEGACY = Path(__file__).resolve().parent / "fixtures" / "legacy"  # written by the layout before the package move


@pytest.fixture
def run_dir(trained_run) -> Path:
    return trained_run


def _env(tmp_path: Path) -> dict:
    """No cache, an empty home and no network: only the run directory is there to read."""
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    return dict(os.environ, HOME=str(home), SEQBENCH_CACHE_DIR=str(tmp_path / "no-cache"), HF_HUB_OFFLINE="1",
                OMP_NUM_THREADS="1")


def test_run_directory_holds_tokenizers_config_and_model_spec(run_dir):
    from seqbench.training.module import Seq2SeqModule

    spec = json.loads(RunDir(run_dir).model_file.read_text())
    results = read_results(run_dir)
    assert (spec["src_vocab_size"], spec["tgt_vocab_size"]) == (results["data"]["src_vocab_size"],
                                                                results["data"]["tgt_vocab_size"])
    assert spec["model"] == results["model"]["config"] and spec["decoding"]["beam_size"] == 2
    assert {p.name for p in (run_dir / "tokenizers").iterdir()} == {"src.json", "tgt.json"}
    assert "max_steps: -1" in RunDir(run_dir).config_file.read_text()
    checkpoints = sorted(RunDir(run_dir).checkpoints.glob("*.ckpt"))
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


@pytest.mark.integration
def test_moved_run_translates_stdin_line_by_line_without_cache(run_dir, tmp_path):
    moved = tmp_path / "elsewhere" / "run"
    shutil.copytree(run_dir, moved)
    sources = (run_dir / "sources.test.txt").read_text().splitlines()
    expected = (run_dir / "hypotheses.test.txt").read_text().splitlines()
    proc = subprocess.Popen([sys.executable, "-m", "seqbench", "translate", str(moved)], env=_env(tmp_path),
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


def test_a_line_longer_than_the_models_positions_is_cut_with_one_warning(run_dir, tmp_path, capsys):
    """A 5,000-word line beside two ordinary ones: one output line per input line, and one warning on stderr; the
    ordinary lines translate as they do alone."""
    from seqbench.commands.translate import main
    from seqbench.models.interface import family_of

    spec = json.loads(RunDir(run_dir).model_file.read_text())
    limit = family_of(spec["model"]).position_limit(spec["model"])
    assert limit is not None and limit < 5000
    short = (run_dir / "sources.test.txt").read_text().splitlines()[:2]
    source = tmp_path / "src.txt"
    source.write_text(f"{short[0]}\n{' '.join(['word'] * 5000)}\n{short[1]}\n")
    capsys.readouterr()
    main([str(run_dir), "--input", str(source), "--output", str(tmp_path / "out.txt"), "--beam", "1"])
    warnings = [line for line in capsys.readouterr().err.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1 and f"cut to their first {limit - 1} tokens" in warnings[0]
    lines = (tmp_path / "out.txt").read_text().split("\n")[:-1]
    assert len(lines) == 3
    alone = tmp_path / "short.txt"
    alone.write_text(f"{short[0]}\n{short[1]}\n")
    main([str(run_dir), "--input", str(alone), "--output", str(tmp_path / "alone.txt"), "--beam", "1"])
    assert (tmp_path / "alone.txt").read_text().split("\n")[:-1] == [lines[0], lines[2]]


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
    recent = [read_checkpoint(p) for p in sorted(RunDir(run_dir).checkpoints.glob("recent-step*.ckpt"))]
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

    run = tmp_path / "run"
    shutil.copytree(run_dir, run)
    (run / ".hydra").mkdir()  # what `seqbench train` leaves (in-process runs have no Hydra job directory)
    (run / ".hydra" / "overrides.yaml").write_text("- callbacks=ema\n- model.d_model=32\n")
    # as a resumed run records it: this process's fit was short, the training steps of every process were not
    recorded = json.loads((run / "results.json").read_text())
    recorded["train"]["wall_time_s"], recorded["throughput"]["train_seconds"] = 5.0, 1234.0
    (run / "results.json").write_text(json.dumps(recorded))
    out = tmp_path / "exported"
    export([str(run), str(out)])
    assert {p.name for p in out.iterdir()} == {"model.safetensors", "model.json", "tokenizers", "config.yaml",
                                               "results.json", "README.md"}
    assert load_file(str(out / "model.safetensors"))  # plain tensors, no pickle
    card = (out / "README.md").read_text()
    results = read_results(run_dir)
    assert results["test"]["bleu_signature"] in card and f"{results['parameters']:,}" in card
    assert "| 61+ |" in card and "seqbench train callbacks=ema model.d_model=32" in card
    assert "updates in 1234 s of training steps" in card
    translate([str(out), "--input", str(run_dir / "sources.test.txt"), "--output", str(tmp_path / "hyp.txt")])
    assert (tmp_path / "hyp.txt").read_text() == (run_dir / "hypotheses.test.txt").read_text()


def test_an_export_is_readable_as_the_umask_allows_and_its_card_carries_hub_metadata(run_dir, tmp_path):
    """safetensors writes 0600 files; the export's files get the modes the umask gives (0644 under 022) so others
    can read it on shared storage. The card's front matter is what huggingface_hub reads: license, tags, the test
    scores as a model-index (language only for natural languages: the synthetic pair has none)."""
    from huggingface_hub import ModelCard

    from seqbench.commands.export import main as export
    from seqbench.rundir.model_card import languages

    old = os.umask(0o022)
    try:
        export([str(run_dir), str(tmp_path / "exported"), "--license", "cc-by-4.0"])
    finally:
        os.umask(old)
    out = tmp_path / "exported"
    assert {oct(p.stat().st_mode & 0o777) for p in out.rglob("*") if p.is_file()} == {"0o644"}
    assert {oct(p.stat().st_mode & 0o777) for p in [out, *out.rglob("*")] if p.is_dir()} == {"0o755"}
    card = ModelCard.load(out / "README.md").data.to_dict()
    results = read_results(run_dir)
    assert card["license"] == "cc-by-4.0" and card["library_name"] == "seqbench" and "language" not in card
    assert card["tags"] == ["translation", "seqbench", results["model"]["name"]]
    metrics = card["model-index"][0]["results"][0]["metrics"]
    assert metrics[0] == {"type": "bleu", "name": "test BLEU", "value": round(results["test"]["bleu"], 2)}
    assert languages({"pair": "en-fr", "direction": "reverse"}) == ["fr", "en"]
    assert languages({"src_lang": "de", "tgt_lang": "en"}) == ["de", "en"]
    assert languages({"src_lang": "src", "tgt_lang": "tgt"}) == []  # the files corpus's placeholders


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
def test_foreign_checkpoint_is_one_line_error(run_dir, tmp_path, kind, message, capsys):
    path = _foreign_checkpoint(run_dir, tmp_path, kind)
    status, _, err = seqbench_cli(["translate", str(run_dir), "--checkpoint", str(path)], capsys)
    lines = err.strip().splitlines()
    assert status == 2 and len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], err


def test_train_false_with_a_foreign_checkpoint_is_one_line_error(run_dir, tmp_path, capsys):
    path = _foreign_checkpoint(run_dir, tmp_path, "architecture")
    status, _, err = seqbench_cli(["train", *TRAINED_RUN, "train=false", f"ckpt_path={path}",
                                   f"hydra.run.dir={tmp_path / 'run'}", f"paths.cache_dir={run_dir.parent / 'cache'}"],
                                  capsys)
    error = err.strip().splitlines()[-1]
    assert status == 2 and error.startswith("error: ") and "model.name='rnn' (expected 'transformer')" in error, err
    assert "Traceback" not in err and not RunDir(tmp_path / "run").checkpoints.exists()


def test_checkpoint_without_spec_reports_the_shape_that_differs():
    from seqbench.common.errors import InputError
    from seqbench.rundir.checkpoints import check_fits

    from conftest import build_tiny_model

    model = build_tiny_model("transformer")
    weights = build_tiny_model("transformer", tgt_vocab=50).state_dict()
    with pytest.raises(InputError, match=r"old\.ckpt: a checkpoint of another model: .*shape \[50, 32\]"):
        check_fits(model, weights, "old.ckpt", None, {"vocabulary": None})


def test_not_a_run_is_one_line_error(tmp_path, capsys):
    translate = seqbench_cli(["translate", str(tmp_path)], capsys)
    average = seqbench_cli(["average", str(tmp_path), "--output", str(tmp_path / "avg.ckpt")], capsys)
    assert translate[0] == average[0] == 2
    assert translate[2].startswith("error: ") and "no model.json" in translate[2] and translate[2].count("\n") == 1
    assert average[2].startswith("error: ") and "save_top_k" in average[2] and average[2].count("\n") == 1


@pytest.mark.parametrize("options, model_json, message", [
    (["--beam", "0"], {}, "--beam=0: must be an integer >= 1"),
    (["--length-penalty", "-1"], {}, "--length-penalty=-1.0: must be a number >= 0"),
    ([], {"max_len_b": -1}, "module.decoding.max_len_b=-1: must be an integer >= 0"),  # an edited model.json
    ([], {"min_len": 9, "max_len": 3}, "module.decoding.min_len=9: must not exceed module.decoding.max_len=3"),
])
def test_translates_decoding_settings_pass_the_configs_decoding_checks(run_dir, tmp_path, options, model_json,
                                                                       message, capsys):
    moved = tmp_path / "run"
    shutil.copytree(run_dir, moved)
    spec = json.loads(RunDir(moved).model_file.read_text())
    spec["decoding"].update(model_json)
    RunDir(moved).model_file.write_text(json.dumps(spec))
    status, out, err = seqbench_cli(["translate", str(moved), *options], capsys)
    assert status == 2 and out == "" and err == f"error: {message}\n"


def test_recent_checkpoints_are_off_by_default():
    cfg = compose_train()
    assert cfg.callbacks.recent_checkpoints.save_top_k == 0 and "ema" not in cfg.callbacks
    assert compose_train(["callbacks=ema"]).callbacks.ema._target_ == "seqbench.training.callbacks.EMAWeights"


@pytest.mark.parametrize("which", ["run", "export"])
def test_a_run_directory_and_an_export_written_before_the_package_moved_still_translate(which, tmp_path):
    """tests/fixtures/legacy: a tiny run directory (results.json, model.json, tokenizers, best checkpoint,
    hypotheses) and its export, written by the code before the package was split into layers."""
    from seqbench.commands.translate import main as translate

    legacy = tmp_path / which
    shutil.copytree(LEGACY / which, legacy)
    assert read_results(legacy)["schema_version"] == 1
    out = tmp_path / "hyp.txt"
    translate([str(legacy), "--input", str(LEGACY / "run" / "sources.test.txt"), "--output", str(out)])
    assert out.read_text() == (LEGACY / "run" / "hypotheses.test.txt").read_text()


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


def test_ctranslate2_not_installed_is_one_line_for_export_and_translate(run_dir, tmp_path, capsys, monkeypatch):
    """Without the ctranslate2 extra, `export --format ctranslate2` and `translate --engine ctranslate2` each say
    how to install it, in one line, and write nothing."""
    monkeypatch.setitem(sys.modules, "ctranslate2", None)  # `import ctranslate2` raises ImportError
    status, _, err = seqbench_cli(["export", str(run_dir), str(tmp_path / "out"), "--format", "ctranslate2"], capsys)
    assert status == 2 and err.strip().splitlines() == [
        "error: CTranslate2 is not installed: pip install 'seqbench[ctranslate2]'"]
    assert not (tmp_path / "out").exists()
    copy = tmp_path / "run"
    shutil.copytree(run_dir, copy)
    RunDir(copy).ctranslate2.mkdir()  # as an export with --format ctranslate2 leaves it
    status, out, err = seqbench_cli(["translate", str(copy), "--engine", "ctranslate2", "--input",
                                     str(copy / "sources.test.txt")], capsys)
    assert status == 2 and out == "" and err.strip().splitlines() == [
        "error: CTranslate2 is not installed: pip install 'seqbench[ctranslate2]'"]
