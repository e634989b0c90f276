"""Words and length buckets: the unit of every length bucket, length filter and length statistic, in every layer."""
from __future__ import annotations

from typing import Sequence

# Upper edges (source words) of the BLEU-by-length buckets 1-10, 11-20, ..., 51-60, 61+: the range of Bahdanau et
# al.'s Fig. 2, which corpora may also stratify their evaluation splits by.
DEFAULT_LENGTH_EDGES = (10, 20, 30, 40, 50, 60)


def word_count(text: str) -> int:
    """Whitespace-separated words: the unit of every length bucket, length filter and length statistic."""
    return len(text.split())


def length_buckets(edges: Sequence[int] = DEFAULT_LENGTH_EDGES) -> list[tuple[int, int | None]]:
    """Upper edges [10, 20] -> [(1, 10), (11, 20), (21, None)]: the last bucket is open-ended."""
    edges = [int(e) for e in edges]
    if any(e < 1 for e in edges) or any(b <= a for a, b in zip(edges, edges[1:])):
        raise ValueError(f"length bucket edges {edges}: must be positive and strictly increasing")
    lows = [1] + [e + 1 for e in edges]
    return list(zip(lows, edges + [None]))


def bucket_label(lo: int, hi: int | None) -> str:
    return f"{lo}+" if hi is None else f"{lo}-{hi}"


def bucket_start(label: str) -> int:
    """The lower edge of a bucket_label: buckets sort by it."""
    return int(label.split("-")[0].rstrip("+"))


def bucket_index(n_words: int, edges: Sequence[int] = DEFAULT_LENGTH_EDGES) -> int:
    """Index of the bucket holding a sentence of n_words; 0 words (an empty line) counts in the first bucket."""
    for i, edge in enumerate(edges):
        if n_words <= edge:
            return i
    return len(edges)
