"""Shared quasi-random draws: every family of a search gets the same points of one scrambled Sobol sequence.

A random search gives each family its own random stream, so two families with the same number of trials still try
different learning rates: one may be lucky. Here the dimensions all families share (learning rate, warm-up, ...) come
from one scrambled Sobol sequence (scipy.stats.qmc, seeded), identical for every family, and a family's own factors
(the Transformer's layer norm, an RNN's cell) from a second sequence of their own, so adding a factor to one family
never shifts the shared draws of any. Sobol points fill the cube evenly: 64 points put exactly 32 in each half of every
dimension, 16 in each quarter, so a two-valued factor splits 32/32.

A dimension is written in W&B's sweep vocabulary:
  {values: [a, b, ...]}                                   categorical, equal shares of [0, 1)
  {distribution: uniform, min, max}
  {distribution: log_uniform_values, min, max}            uniform in log space between the values
  {distribution: q_log_uniform_values, min, max, q}       the same, rounded to a multiple of q
  {distribution: int_uniform, min, max}                   integers min..max, both ends included
"""
from __future__ import annotations

import math
import warnings
import zlib
from typing import Any

import numpy as np
from scipy.stats import qmc

from seqbench.common.errors import ConfigError

DISTRIBUTIONS = ("uniform", "log_uniform_values", "q_log_uniform_values", "int_uniform")


def check_dimension(name: str, spec: Any, where: str) -> None:
    """One line for a dimension this module cannot draw."""
    if not isinstance(spec, dict):
        raise ConfigError(f"{where}.{name}: a dimension is a mapping ({{values: [...]}} or "
                          f"{{distribution: ..., min: ..., max: ...}}), not {spec!r}")
    if "values" in spec:
        if not isinstance(spec["values"], list) or not spec["values"]:
            raise ConfigError(f"{where}.{name}.values: a non-empty list")
        return
    distribution = spec.get("distribution")
    if distribution not in DISTRIBUTIONS:
        raise ConfigError(f"{where}.{name}: distribution {distribution!r} is not one of values, "
                          f"{', '.join(DISTRIBUTIONS)}")
    low, high = spec.get("min"), spec.get("max")
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (low, high)) or low >= high:
        raise ConfigError(f"{where}.{name}: min and max are numbers with min < max (got {low!r}, {high!r})")
    if "log" in distribution and low <= 0:
        raise ConfigError(f"{where}.{name}: a log-uniform range needs min > 0 (got {low})")
    if distribution == "q_log_uniform_values" and not (isinstance(spec.get("q"), (int, float)) and spec["q"] > 0):
        raise ConfigError(f"{where}.{name}: q_log_uniform_values needs a positive q")


def value_at(spec: dict, u: float) -> Any:
    """The dimension's value at the quantile u in [0, 1)."""
    if "values" in spec:
        values = spec["values"]
        return values[min(int(u * len(values)), len(values) - 1)]
    low, high, distribution = spec["min"], spec["max"], spec["distribution"]
    if distribution == "uniform":
        return _round(low + u * (high - low))
    if distribution == "int_uniform":
        return min(int(low + math.floor(u * (high - low + 1))), int(high))
    value = math.exp(math.log(low) + u * (math.log(high) - math.log(low)))
    if distribution == "q_log_uniform_values":
        q = spec["q"]
        value = min(max(round(value / q) * q, low), high)
        return int(value) if isinstance(q, int) and isinstance(low, int) else _round(value)
    return _round(value)


def _round(value: float) -> float:
    """Three significant digits: a recipe reads as lr 0.00231, not 0.0023107441."""
    return float(f"{value:.3g}")


def sobol(dimensions: int, n: int, seed: int | np.random.SeedSequence) -> np.ndarray:
    """n points of a scrambled Sobol sequence in [0, 1)^dimensions ([n, 0] when there are no dimensions). A count
    that is not a power of two loses the even split of each dimension; scipy warns, the search file's check says so."""
    if dimensions == 0:
        return np.zeros((n, 0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "balance properties ... require n to be a power of 2"
        return qmc.Sobol(dimensions, scramble=True, seed=np.random.default_rng(seed)).random(n)


def draws(space: dict[str, dict], n: int, seed: int | np.random.SeedSequence) -> list[dict[str, Any]]:
    """n configurations of `space` (name -> dimension), the k-th from the k-th Sobol point."""
    points = sobol(len(space), n, seed)
    return [{name: value_at(spec, float(u)) for (name, spec), u in zip(space.items(), point)} for point in points]


def family_seed(seed: int, family: str) -> np.random.SeedSequence:
    """The seed of a family's own factors: derived from the search seed and the family's name, so families can be
    added, removed or reordered without changing another family's draws."""
    return np.random.SeedSequence([seed, zlib.crc32(family.encode())])


def configurations(shared: dict[str, dict], factors: dict[str, dict], n: int, seed: int,
                   family: str) -> list[dict[str, Any]]:
    """A family's n configurations: the shared draws (the same for every family) with its own factors' draws."""
    own = draws(factors, n, family_seed(seed, family))
    return [{**common, **mine} for common, mine in zip(draws(shared, n, seed), own)]
