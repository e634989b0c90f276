"""Tuning effort as an axis (Dodge et al. 2019, "Show Your Work"): the expected best validation score a search finds
in k trials, so a ranking of models can be read with the tuning budget it took.

For n i.i.d. trials (a random search) with validation scores v_(1) <= ... <= v_(n), the expected maximum of k trials
drawn from the same distribution, estimated with the empirical distribution, is

    E[max of k] = sum_i v_(i) * ((i / n)^k - ((i - 1) / n)^k),

and its standard deviation follows from E[max^2] the same way. With k = 1 it is the mean trial; at k = n it
approaches (but stays below) the best trial, since k draws with replacement may repeat trials. Failed trials count
as the worst score a trial can reach (BLEU 0): a recipe that diverges is a trial the search spent.
"""
from __future__ import annotations

import math
from typing import Sequence


def expected_best(scores: Sequence[float], k: int) -> tuple[float, float]:
    """(E[max of k trials], its standard deviation) for the observed i.i.d. `scores`."""
    values = sorted(scores)
    n = len(values)
    if n == 0 or k < 1:
        raise ValueError(f"expected_best needs observed scores and k >= 1 (got {n} scores, k={k})")
    weights = [((i + 1) / n) ** k - (i / n) ** k for i in range(n)]
    mean = sum(w * v for w, v in zip(weights, values))
    second = sum(w * v * v for w, v in zip(weights, values))
    return mean, math.sqrt(max(0.0, second - mean * mean))


def expected_best_curve(scores: Sequence[float]) -> list[dict]:
    """[{"trials": k, "expected_best": E[max of k], "std"}] for k = 1 .. n."""
    return [{"trials": k, "expected_best": m, "std": s}
            for k in range(1, len(scores) + 1) for m, s in [expected_best(scores, k)]]
