"""seqbench.sweep.space: the shared Sobol draws are scipy's, the same for every family, and fill each dimension
evenly."""
from __future__ import annotations

import collections

import numpy as np
import pytest
from scipy.stats import qmc

from seqbench.common.errors import ConfigError
from seqbench.sweep import space

SHARED = {
    "optimizer.lr": {"distribution": "log_uniform_values", "min": 2e-4, "max": 1e-2},
    "scheduler.kind": {"values": ["inverse_sqrt", "cosine"]},
    "scheduler.warmup_steps": {"distribution": "q_log_uniform_values", "min": 30, "max": 1000, "q": 10},
    "model.dropout": {"distribution": "uniform", "min": 0.0, "max": 0.3},
}


def test_every_family_gets_the_same_shared_draws_whatever_its_own_factors():
    plain = space.configurations(SHARED, {}, 64, 0, "cnn")
    with_factor = space.configurations(SHARED, {"model.norm_first": {"values": [False, True]}}, 64, 0, "transformer")
    two_factors = space.configurations(SHARED, {"model.cell": {"values": ["gru", "lstm"]},
                                                "model.bidirectional": {"values": [True, False]}}, 64, 0, "rnn")
    for a, b, c in zip(plain, with_factor, two_factors):
        assert a == {k: b[k] for k in SHARED} == {k: c[k] for k in SHARED}
    assert space.configurations(SHARED, {}, 64, 1, "cnn") != plain  # another seed, other draws


def test_the_draws_are_scipys_scrambled_sobol_points_mapped_through_each_dimension():
    points = qmc.Sobol(len(SHARED), scramble=True, seed=np.random.default_rng(3)).random(16)
    drawn = space.draws(SHARED, 16, 3)
    for point, values in zip(points, drawn):
        u_lr, u_kind, u_warmup, u_dropout = point
        assert values["optimizer.lr"] == pytest.approx(2e-4 * 50 ** u_lr, rel=5e-3)  # three significant digits
        assert values["scheduler.kind"] == ("inverse_sqrt" if u_kind < 0.5 else "cosine")
        assert values["scheduler.warmup_steps"] == round(30 * (1000 / 30) ** u_warmup / 10) * 10
        assert values["model.dropout"] == pytest.approx(0.3 * u_dropout, abs=5e-4)


def test_64_points_split_every_dimension_evenly():
    drawn = space.draws(SHARED, 64, 0)
    assert collections.Counter(d["scheduler.kind"] for d in drawn) == {"inverse_sqrt": 32, "cosine": 32}
    points = space.sobol(len(SHARED), 64, 0)  # before rounding to three digits, which may nudge a value over a line
    for column in points.T:
        assert sorted(collections.Counter((column * 4).astype(int)).values()) == [16, 16, 16, 16]
    lrs = np.log([d["optimizer.lr"] for d in drawn])
    halves = np.sum(lrs < (np.log(2e-4) + np.log(1e-2)) / 2)
    assert halves == 32
    factor = space.configurations({}, {"model.norm_first": {"values": [False, True]}}, 64, 0, "transformer")
    assert collections.Counter(c["model.norm_first"] for c in factor) == {False: 32, True: 32}


def test_values_at_the_ends_of_each_distribution():
    assert space.value_at({"values": ["a", "b", "c"]}, 0.999) == "c"
    assert space.value_at({"distribution": "int_uniform", "min": 1, "max": 3}, 0.0) == 1
    assert space.value_at({"distribution": "int_uniform", "min": 1, "max": 3}, 0.999) == 3
    warmup = {"distribution": "q_log_uniform_values", "min": 30, "max": 1000, "q": 10}
    assert space.value_at(warmup, 0.0) == 30 and space.value_at(warmup, 0.9999) == 1000
    assert isinstance(space.value_at(warmup, 0.5), int)
    assert space.value_at({"distribution": "log_uniform_values", "min": 1e-4, "max": 1e-2}, 0.5) == pytest.approx(1e-3)


@pytest.mark.parametrize("spec, message", [
    ({"distribution": "normal", "min": 0, "max": 1}, "is not one of"),
    ({"distribution": "uniform", "min": 1, "max": 1}, "min < max"),
    ({"distribution": "log_uniform_values", "min": 0, "max": 1}, "min > 0"),
    ({"distribution": "q_log_uniform_values", "min": 1, "max": 10}, "positive q"),
    ({"values": []}, "non-empty list"),
    (0.5, "a dimension is a mapping"),
])
def test_a_dimension_it_cannot_draw_is_one_line(spec, message):
    with pytest.raises(ConfigError, match=message):
        space.check_dimension("optimizer.lr", spec, "shared")
