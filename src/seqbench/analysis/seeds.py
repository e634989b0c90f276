"""Seeds as an axis: a model's score is a distribution over training runs, not one number.

- `Spread`: the mean over seeds with its 95% confidence interval (Student's t with n - 1 degrees of freedom: with
  three seeds the half-width is 2.48 standard deviations), what every table and error bar shows.
- `compare_seeds`: whether two models differ, with seeds as the unit of inference: the difference of the seed means
  with Welch's t 95% interval, and an exact permutation test over seeds (scipy.stats.ttest_ind(equal_var=False) and
  scipy.stats.permutation_test). A permutation test cannot go below 2 / C(n_a + n_b, n_a): 0.10 with 3 vs 3 seeds,
  2/252 = 0.0079 with 5 vs 5, whatever the effect; the record carries that floor so every report prints it.
- `holm`: Holm's correction across the comparisons of one table (or the buckets one claim rests on).
- The per-sentence paired bootstrap (seqbench.scoring.metrics.paired_bootstrap) resamples test sentences only: it
  says whether *two trained models* differ, not whether two families (architectures with their training) do.
  `p_text` prints its p at its floor (1/(N+1)) as a bound.
"""
from __future__ import annotations

import math
import statistics
import warnings
from typing import NamedTuple, Sequence

import numpy as np
from scipy import stats

CONFIDENCE = 0.95
MAX_EXACT = 10_000  # permutation tests enumerate every split up to this many (7 vs 7 seeds: 3,432), sample beyond


class Spread(NamedTuple):
    """Values over seeds: mean, 95% confidence-interval half-width (None for a single value), count, sample std."""

    mean: float | None
    ci: float | None
    n: int
    std: float | None = None


def spread(values: Sequence[float | None]) -> Spread:
    """The mean and 95% confidence interval of the values that exist (None and NaN are left out)."""
    values = [v for v in values if v is not None and not math.isnan(v)]
    if not values:
        return Spread(None, None, 0)
    if len(values) == 1:
        return Spread(values[0], None, 1)
    std = statistics.stdev(values)
    t = float(stats.t.ppf(0.5 + CONFIDENCE / 2, len(values) - 1))
    return Spread(statistics.fmean(values), t * std / math.sqrt(len(values)), len(values), std)


class SeedTest(NamedTuple):
    """Two models compared over their seeds: each seed's score is one observation of the model."""

    difference: float                     # mean of A's seeds - mean of B's
    ci: tuple[float, float] | None        # Welch's t 95% interval of the difference (None: no spread at all)
    welch_p: float | None                 # Welch's t test, two-sided (None: no spread at all)
    permutation_p: float                  # permutation test of the difference of means over seeds, two-sided
    p_floor: float                        # the smallest permutation p this design can give (3 vs 3 seeds: 0.10)
    exact: bool                           # every split of the seeds enumerated (else sampled)
    seeds: tuple[int, int]


def split_count(n_a: int, n_b: int) -> int:
    """The ways to split n_a + n_b seeds into groups of n_a and n_b: the permutation test's null distribution."""
    return math.comb(n_a + n_b, n_a)


def compare_seeds(a: Sequence[float], b: Sequence[float], max_exact: int = MAX_EXACT, seed: int = 0) -> SeedTest:
    """Model A against model B over seeds (`a`, `b`: one score per seed), with scipy's Welch t test and permutation
    test (every split enumerated when there are at most `max_exact`, otherwise that many sampled)."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if len(a) < 2 or len(b) < 2:
        raise ValueError(f"compare_seeds needs two or more seeds per model (got {len(a)} and {len(b)})")
    difference = float(a.mean() - b.mean())
    ci = welch_p = None
    if a.var() > 0 or b.var() > 0:  # identical seeds on both sides: no spread to test against
        with warnings.catch_warnings():
            # scipy flags a side whose seeds are all equal (100, 100, 100: a model at the ceiling) as "nearly
            # identical"; Welch's interval then rests on the other side's variance alone, which is what it should do
            warnings.filterwarnings("ignore", "Precision loss occurred in moment calculation", RuntimeWarning)
            welch = stats.ttest_ind(a, b, equal_var=False)
        interval = welch.confidence_interval(CONFIDENCE)
        ci, welch_p = (float(interval.low), float(interval.high)), float(welch.pvalue)
    splits = split_count(len(a), len(b))
    exact = splits <= max_exact
    permutation = stats.permutation_test((a, b), _difference_of_means, permutation_type="independent",
                                         vectorized=True, n_resamples=max_exact, alternative="two-sided",
                                         rng=np.random.default_rng(seed))
    # scipy's two-sided p is twice the smaller one-sided p: 2/splits at best when enumerated, 2/(N + 1) when sampled
    floor = min(1.0, 2 / splits if exact else 2 / (max_exact + 1))
    return SeedTest(difference, ci, welch_p, float(permutation.pvalue), floor, exact, (len(a), len(b)))


def _difference_of_means(x, y, axis):
    return np.mean(x, axis=axis) - np.mean(y, axis=axis)


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjustment of a family of p-values (Holm 1979), in the input order: the k-th smallest is
    multiplied by (m - k + 1), then made non-decreasing and capped at 1. Eight lines rather than statsmodels as a
    dependency for one function (scipy has Benjamini-Hochberg, not Holm); tests/test_seeds.py checks it against
    statsmodels' multipletests(method="holm")."""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted, running = [0.0] * m, 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted


def with_holm(tests: dict) -> dict:
    """The seed tests of one table or claim ({key: SeedTest._asdict()}) with "holm_p" added to each: its permutation
    p, Holm-adjusted across all of them. Returns `tests`."""
    for test, adjusted in zip(tests.values(), holm([t["permutation_p"] for t in tests.values()])):
        test["holm_p"] = adjusted
    return tests


def p_text(p_value: float, n_samples: int) -> str:
    """sacreBLEU's paired-bootstrap p-value as text, "≤ 1/(N+1)" at its floor, where more resamples would only lower
    it."""
    floor = 1 / (n_samples + 1)
    return f"≤ 1/{n_samples + 1}" if p_value <= floor * (1 + 1e-9) else f"{p_value:.3f}"


def seed_p_text(p_value: float, floor: float) -> str:
    """A permutation p-value over seeds with the design's floor beside it: "0.10 (floor 0.10)"."""
    return f"{p_value:.3g} (floor {floor:.2g})"
