"""A fourth architecture defined only in tests/ (toy_family.py + configs/model/toy.yaml) trains through `seqbench
train`, is validated, scored, sized to a parameter budget and reported, with no edit under src/ (in-process: tests/ is
on sys.path, as PYTHONPATH=tests puts it for a user's own family)."""
from __future__ import annotations

import torch

from conftest import TESTS, TINY, random_batch, seqbench_cli, train_in_process
from toy_family import MeanContextGRU

TOY = [f"hydra.searchpath=[file://{TESTS / 'configs'}]", "model=toy"]


def test_toy_family_keeps_the_contract():
    torch.manual_seed(0)
    model = MeanContextGRU(40, 45, hidden_size=8).eval()
    src, mask, tgt = random_batch()
    enc = model.encode(src, mask)
    full, state = model.decode(tgt, enc), model.init_state(enc)
    for t in range(tgt.size(1)):
        step, attention = model.decode(tgt[:, t:t + 1], enc, state, return_attention=True)
        torch.testing.assert_close(step, full[:, t:t + 1], atol=1e-5, rtol=1e-5)
        assert attention is None


def test_toy_family_trains_sizes_and_reports(tmp_path, capsys):
    run_dir = tmp_path / "run"
    results = train_in_process(run_dir, [*TOY, *TINY, "compare.param_budget=60000"])
    assert results["model"]["class"] == "toy_family.MeanContextGRU"
    assert abs(results["parameters"] - 60000) <= 6000  # sized by the family's own width knob
    hidden = results["model"]["config"]["hidden_size"]
    assert hidden != 32 and results["label"] == "toy-h32"  # the label words the preset's config, as composed
    assert [b["bucket"] for b in results["test"]["bleu_by_length"]][-1] == "61+"
    status, _, err = seqbench_cli(["report", str(run_dir), "--out", str(tmp_path / "report")], capsys)
    assert status == 0, err[-3000:]
    assert "toy-h32" in (tmp_path / "report" / "report.md").read_text()


def test_toy_family_validates_its_own_keys(tmp_path, capsys):
    status, _, err = seqbench_cli(["train", *TOY, *TINY, f"paths.cache_dir={tmp_path / 'cache'}",
                                   f"hydra.run.dir={tmp_path / 'run'}", "model.hidden_size=0"], capsys)
    assert status == 2 and err.strip().splitlines() == ["error: model.hidden_size=0: must be an integer >= 1"]
