"""Fixed subsets of an ordered collection that keep its composition."""
from __future__ import annotations

import math


def fixed_subset(n_total: int, n: int | None) -> list[int]:
    """n indices spread evenly over range(n_total) (all of them when n is None or >= n_total): a subset that keeps
    the composition of a test set stored in any order (e.g. by length stratum)."""
    if n is None or n >= n_total:
        return list(range(n_total))
    return sorted({math.floor(i * n_total / n) for i in range(n)})
