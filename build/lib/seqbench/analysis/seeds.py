"""Seeds as an axis: a model's score is a distribution over training runs, not one number.

- `Spread`: the mean over seeds with its 95% confidence interval (Student's t with n - 1 degrees of freedom: with
  three seeds the half-width is 2.48 standard deviations), what every table and error bar shows.
- `seed_bootstrap`: whether two models differ once training variance is counted. Each resample draws seeds with
  replacement for each model, and test sentences with replacement (the same draw for both: they share the test set),
  and recomputes each model's mean corpus BLEU over its drawn seeds from per-sentence sacreBLEU statistics. The
  per-sentence paired bootstrap (seqbench.scoring.metrics.paired_bootstrap) resamples sentences only: it says how
  sure one can be that *these two trained models* differ, not that the architectures do.
- `p_text`: a bootstrap p-value at its floor (1/(N+1) for sacreBLEU's paired bootstrap, 2/(N+1) for this two-sided
  one) is printed as a bound, not as a value.
"""
from __future__ import annotations

import math
import statistics
from typing import NamedTuple, Sequence

import numpy as np
from scipy import stats

from seqbench.scoring.metrics import bleu_from_statistics, bleu_statistics

CONFIDENCE = 0.95


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


def seed_bootstrap(a: Sequence[tuple[list[str], list[str]]], b: Sequence[tuple[list[str], list[str]]],
                   n_samples: int = 1000, seed: int = 12345) -> dict:
    """Model A against model B, over seeds and sentences (see the module docstring). `a`, `b`: one (hypotheses,
    references) pair per seed, every pair on the same test sentences.

    Returns {"difference": mean BLEU of A's seeds - B's, "ci": (low, high) its 95% bootstrap interval, "p_value":
    two-sided, "p_floor": the smallest p it can give (2/(n_samples + 1)), "n_samples", "seeds": (A's, B's)}."""
    references = a[0][1]
    if any(refs != references for _, refs in (*a, *b)):
        raise ValueError("seed_bootstrap needs every run on the same test sentences")
    stats_a = np.stack([bleu_statistics(hyps, references) for hyps, _ in a])  # [seeds, sentences, statistics]
    stats_b = np.stack([bleu_statistics(hyps, references) for hyps, _ in b])
    observed = (np.mean([bleu_from_statistics(s.sum(0)) for s in stats_a])
                - np.mean([bleu_from_statistics(s.sum(0)) for s in stats_b]))
    rng = np.random.default_rng(seed)
    n_sentences = stats_a.shape[1]
    differences = np.empty(n_samples)
    for k in range(n_samples):
        sentences = rng.integers(0, n_sentences, n_sentences)
        seeds_a, seeds_b = rng.integers(0, len(a), len(a)), rng.integers(0, len(b), len(b))
        mean_a = np.mean([bleu_from_statistics(stats_a[s][sentences].sum(0)) for s in seeds_a])
        mean_b = np.mean([bleu_from_statistics(stats_b[s][sentences].sum(0)) for s in seeds_b])
        differences[k] = mean_a - mean_b
    # the resamples on the other side of zero from the observed difference, counted as in sacreBLEU's (count+1)/(N+1)
    other_side = np.sum(differences <= 0) if observed > 0 else np.sum(differences >= 0)
    p_value = min(1.0, 2 * (other_side + 1) / (n_samples + 1))
    low, high = np.percentile(differences, [100 * (1 - CONFIDENCE) / 2, 100 * (1 + CONFIDENCE) / 2])
    return {"difference": float(observed), "ci": (float(low), float(high)), "p_value": float(p_value),
            "p_floor": 2 / (n_samples + 1), "n_samples": n_samples, "seeds": (len(a), len(b))}


def p_text(p_value: float, n_samples: int, sides: int = 1) -> str:
    """A bootstrap p-value as text, "≤ sides/(N+1)" at the floor, where more resamples would only lower it (`sides`:
    1 for sacreBLEU's paired bootstrap, 2 for seed_bootstrap's two-sided test)."""
    floor = sides / (n_samples + 1)
    return f"≤ {sides}/{n_samples + 1}" if p_value <= floor * (1 + 1e-9) else f"{p_value:.3f}"
