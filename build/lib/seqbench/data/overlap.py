"""How much of an evaluation split the training data already holds: word n-gram overlap, per side.

Holding out whole books (or any disjoint split) prevents verbatim overlap of sentences, not of phrases: parallel
passages (the synoptic gospels retell each other), formulas and quotations recur. The audit counts, for each split
against the training split, the share of its word n-gram occurrences that occur somewhere in training, and the share
of its items whose n-grams are mostly (over half) found there. Lower-cased, whitespace words.
"""
from __future__ import annotations

from typing import Iterable, Sequence

DEFAULT_ORDERS = (4, 8)


def _ngrams(text: str, n: int) -> list[tuple[str, ...]]:
    words = text.lower().split()
    return [tuple(words[i:i + n]) for i in range(len(words) - n + 1)]


def ngram_overlap(split: Sequence[str], train: Iterable[str], n: int) -> dict:
    """{"n", "ngrams" (occurrences in the split), "found_in_train" (percent of them), "items", "items_mostly_found"
    (percent of the split's items with n-grams whose share found in training exceeds one half)}."""
    seen = {gram for text in train for gram in _ngrams(text, n)}
    total = found = mostly = items = 0
    for text in split:
        grams = _ngrams(text, n)
        if not grams:
            continue
        hits = sum(gram in seen for gram in grams)
        total, found, items = total + len(grams), found + hits, items + 1
        mostly += hits * 2 > len(grams)
    return {"n": n, "ngrams": total, "found_in_train": round(100.0 * found / total, 2) if total else None,
            "items": items, "items_mostly_found": round(100.0 * mostly / items, 2) if items else None}


def overlap_audit(splits: dict[str, dict[str, Sequence[str]]], orders: Sequence[int] = DEFAULT_ORDERS) -> dict:
    """`splits`: {split: {"src": texts, "tgt": texts}} with a "train" entry; returns {split: {side: [ngram_overlap
    for each order]}} for every other split."""
    return {name: {side: [ngram_overlap(texts[side], splits["train"][side], n) for n in orders]
                   for side in ("src", "tgt")}
            for name, texts in splits.items() if name != "train"}
