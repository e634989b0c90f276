"""Length statistics shared by the corpora's reports and `seqbench data describe`.

Lengths are whitespace-separated words, the unit the data module's length filters use, bucketed like the synthetic
corpus's valid/test stratification (1-10, 11-20, ..., 51-60, 61+).
"""
from __future__ import annotations

import math
import statistics
from typing import Iterable

from seqbench.common.text import DEFAULT_LENGTH_EDGES, bucket_index, bucket_label, length_buckets, word_count

BUCKET_LABELS = tuple(bucket_label(lo, hi) for lo, hi in length_buckets(DEFAULT_LENGTH_EDGES))


def length_histogram(texts: Iterable[str]) -> dict[str, int]:
    """Sentences per length bucket, every bucket present (0 included). Empty strings count in the first bucket."""
    return count_histogram(word_count(text) for text in texts)


def count_histogram(word_counts: Iterable[int]) -> dict[str, int]:
    """`length_histogram` of sentences given by their word counts."""
    counts = dict.fromkeys(BUCKET_LABELS, 0)
    for n in word_counts:
        counts[BUCKET_LABELS[bucket_index(n)]] += 1
    return counts


def percentile(sorted_values: list[int], q: float) -> int:
    """Nearest-rank percentile of an ascending list (q in [0, 100])."""
    if not sorted_values:
        return 0
    rank = max(1, math.ceil(q / 100 * len(sorted_values)))
    return sorted_values[rank - 1]


def length_summary(texts: Iterable[str]) -> dict[str, float]:
    return count_summary(word_count(t) for t in texts)


def count_summary(word_counts: Iterable[int]) -> dict[str, float]:
    """Sentences, mean, median, 95th percentile and maximum of sentences' word counts."""
    lengths = sorted(word_counts)
    if not lengths:
        return {"sentences": 0, "mean": 0.0, "median": 0, "p95": 0, "max": 0}
    return {"sentences": len(lengths), "mean": round(sum(lengths) / len(lengths), 2),
            "median": statistics.median(lengths), "p95": percentile(lengths, 95), "max": lengths[-1]}
