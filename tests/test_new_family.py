"""A fourth architecture defined only in tests/ (toy_family.py + configs/model/toy.yaml) trains through train.py, is
validated, scored, sized to a parameter budget and reported, with no edit under src/."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import torch
from test_train_cli import ROOT, TINY
from toy_family import MeanContextGRU

TESTS = Path(__file__).resolve().parent
TOY = [f"hydra.searchpath=[file://{TESTS / 'configs'}]", "model=toy"]


def _run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, OMP_NUM_THREADS="1", HYDRA_FULL_ERROR="0", WANDB_MODE="offline",
               PYTHONPATH=os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, *args], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=600)


def test_toy_family_keeps_the_contract():
    from conftest import random_batch

    torch.manual_seed(0)
    model = MeanContextGRU(40, 45, hidden_size=8).eval()
    src, mask, tgt = random_batch()
    enc = model.encode(src, mask)
    full, state = model.decode(tgt, enc), model.init_state(enc)
    for t in range(tgt.size(1)):
        step, state, attention = model.decode_step(tgt[:, t], enc, state)
        torch.testing.assert_close(step, full[:, t], atol=1e-5, rtol=1e-5)
        assert attention is None


def test_toy_family_trains_sizes_and_reports(tmp_path):
    run_dir = tmp_path / "run"
    proc = _run(tmp_path, str(ROOT / "train.py"), *TOY, *TINY, f"paths.cache_dir={tmp_path / 'cache'}",
                f"hydra.run.dir={run_dir}", "compare.param_budget=60000")
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads((run_dir / "results.json").read_text())
    assert results["model"]["class"] == "toy_family.MeanContextGRU"
    assert abs(results["parameters"] - 60000) <= 6000  # sized by the family's own width knob
    hidden = results["model"]["config"]["hidden_size"]
    assert hidden != 32 and results["label"] == "toy-h32"  # the label words the preset's config, as composed
    assert 0 <= results["test"]["bleu"] <= 100 and results["test"]["bleu_by_length"]
    report = _run(tmp_path, "-m", "seqbench.report", str(run_dir), "--out", str(tmp_path / "report"))
    assert report.returncode == 0, report.stderr[-3000:]
    assert "toy-h32" in (tmp_path / "report" / "report.md").read_text()


def test_toy_family_validates_its_own_keys(tmp_path):
    proc = _run(tmp_path, str(ROOT / "train.py"), *TOY, *TINY, f"paths.cache_dir={tmp_path / 'cache'}",
                f"hydra.run.dir={tmp_path / 'run'}", "model.hidden_size=0")
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == ["error: model.hidden_size=0: must be a positive integer"]
