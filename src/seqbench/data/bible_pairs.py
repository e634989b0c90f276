"""Verse pairs of two cleaned Bible translations (seqbench.data.bible_cleaning), aligned by reference and filtered.

A pair is dropped when its chapter is misaligned (a psalm whose heading took verse 1 of its own, so every verse is one
off against the English), when a side is empty, or when its word-count ratio is extreme: the ratio second/first
language words is divided by its median over the language pair (Russian uses about 25% fewer words than English),
and a pair goes when that, or its inverse, exceeds `max_length_ratio` (misaligned verses, e.g. a translation that
moved words to the neighbouring verse).
"""
from __future__ import annotations

import statistics
from collections import Counter
from dataclasses import dataclass

from seqbench.common.text import word_count

Ref = tuple[int, int, int]  # (book, chapter, verse)
Row = tuple[Ref, str, str]  # (reference, first language's verse, second language's verse)


@dataclass
class Pairs:
    rows: list[Row]           # the pairs kept
    aligned: int              # references both translations have
    dropped: Counter          # reason -> pairs dropped
    ratio_dropped: list[Row]  # the pairs the length-ratio filter dropped
    typical_ratio: float      # median second/first word-count ratio, over the pairs the ratio filter saw


def pair_verses(first: dict[Ref, str], second: dict[Ref, str], misaligned: set[tuple[int, int]],
                max_length_ratio: float | None) -> Pairs:
    """Pairs of the verses both translations have, without misaligned chapters, empty sides and (unless
    `max_length_ratio` is None) extreme length ratios."""
    refs = sorted(set(first) & set(second))
    rows, dropped = [], Counter()
    for ref in refs:
        a, b = first[ref], second[ref]
        if ref[:2] in misaligned:
            dropped["misaligned_psalm_chapters"] += 1
        elif not a or not b:
            dropped["empty"] += 1
        else:
            rows.append((ref, a, b))
    typical = statistics.median([word_count(b) / word_count(a) for _, a, b in rows]) if rows else 1.0
    kept, ratio_dropped = rows, []
    if max_length_ratio is not None:
        kept = []
        for row in rows:
            ratio = word_count(row[2]) / word_count(row[1]) / typical
            (ratio_dropped if max(ratio, 1 / ratio) > max_length_ratio else kept).append(row)
    dropped["length_ratio"] = len(ratio_dropped)
    return Pairs(kept, len(refs), dropped, ratio_dropped, typical)
