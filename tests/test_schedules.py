import math

import pytest
import torch

from seqbench.training.schedules import schedule


def _lrs(kind, steps, **kwargs):
    opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=2.0)
    sched = schedule(opt, kind, **kwargs)
    out = []
    for _ in range(steps):
        out.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    return out


def test_inverse_sqrt_warmup_and_peak():
    lrs = _lrs("inverse_sqrt", 400, warmup_steps=100)
    assert lrs[0] == pytest.approx(2.0 / 100)  # first update already non-zero
    assert max(lrs) == pytest.approx(2.0) and lrs.index(max(lrs)) == 99  # peak = base lr at the end of warm-up
    assert all(a < b for a, b in zip(lrs[:99], lrs[1:100]))  # linear rise
    assert lrs[399] == pytest.approx(2.0 * math.sqrt(100 / 400))  # then 1/sqrt decay


def test_inverse_sqrt_equals_paper_formula():
    d_model, warmup = 512, 4000
    base = d_model ** -0.5 * warmup ** -0.5
    opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=base)
    sched = schedule(opt, "inverse_sqrt", warmup_steps=warmup)
    for step in range(1, 9001):
        paper = d_model ** -0.5 * min(step ** -0.5, step * warmup ** -1.5)
        if step in (1, 100, 4000, 9000):
            assert opt.param_groups[0]["lr"] == pytest.approx(paper)
        opt.step()
        sched.step()


def test_constant_and_cosine():
    assert _lrs("constant", 3) == [2.0, 2.0, 2.0]
    lrs = _lrs("cosine", 110, warmup_steps=10, total_steps=110)
    assert lrs[9] == pytest.approx(2.0) and lrs[-1] < 0.01
    # a run shorter than the warm-up (a smoke run of a recipe with warm-up 100) ends during it: the lr only rises
    assert _lrs("cosine", 4, warmup_steps=100, total_steps=4) == pytest.approx([0.02, 0.04, 0.06, 0.08])
