"""A length-stratified test set from a verse-aligned text: consecutive verses of one chapter joined into segments,
so every source-length bucket holds enough segments to score (Bahdanau et al. 2015, Fig. 2 needs long sentences,
and a Bible test split has few verses over 50 words). Joining whole aligned verses on both sides keeps the pair a
faithful translation; segments never share a verse, so each verse is scored once.

Selection is deterministic (seeded): the shortest bucket is filled first, as only verses that short can fill it,
then the longest down, as long segments need the most verses; within a bucket the candidate segments (every run of
consecutive verses whose source length falls in the bucket, at most `max_words` source words) are tried fewest
verses first (a verse long enough on its own is taken as it is), in a seeded random order among equals, and one is
taken if none of its verses is taken yet and the bucket is not full.
"""
from __future__ import annotations

import random
from collections.abc import Sequence

from seqbench.common.text import bucket_index, bucket_label, length_buckets, word_count

Verse = tuple[tuple[int, int, int], str, str]  # ((book, chapter, verse), source text, target text)


def _runs(verses: list[Verse]) -> list[list[Verse]]:
    """Maximal runs of consecutive verse numbers within one chapter (a dropped verse breaks a run)."""
    runs: list[list[Verse]] = []
    for verse in sorted(verses, key=lambda v: v[0]):
        (book, chapter, number), previous = verse[0], runs[-1][-1][0] if runs else None
        if previous is not None and previous[:2] == (book, chapter) and previous[2] + 1 == number:
            runs[-1].append(verse)
        else:
            runs.append([verse])
    return runs


def length_stratified_segments(verses: Sequence[Verse], per_bucket: int, edges: Sequence[int],
                               max_words: int, seed: int) -> tuple[list[list[Verse]], dict[str, int]]:
    """Up to `per_bucket` segments (lists of consecutive verses) per source-length bucket of `edges`, the open last
    bucket up to `max_words`; returns the segments in text order and the number found per bucket."""
    buckets = length_buckets(edges)
    candidates: list[list[tuple[int, int, int]]] = [[] for _ in buckets]  # per bucket: (run, start, end)
    runs = _runs(list(verses))
    for r, run in enumerate(runs):
        lengths = [word_count(src) for _, src, _ in run]
        for start in range(len(run)):
            words = 0
            for end in range(start, len(run)):
                words += lengths[end]
                if words > max_words:
                    break
                candidates[bucket_index(words, edges)].append((r, start, end + 1))
    rng = random.Random(seed)
    used: set[tuple[int, int]] = set()  # (run, verse position)
    chosen: list[tuple[int, int, int]] = []
    found = {}
    for b in [0, *reversed(range(1, len(buckets)))]:
        order = candidates[b][:]
        rng.shuffle(order)
        order.sort(key=lambda c: c[2] - c[1])  # stable: fewest verses first, random among equals
        taken = 0
        for r, start, end in order:
            if taken == per_bucket:
                break
            span = {(r, i) for i in range(start, end)}
            if span & used:
                continue
            used |= span
            chosen.append((r, start, end))
            taken += 1
        found[bucket_label(*buckets[b])] = taken
    segments = [runs[r][start:end] for r, start, end in sorted(chosen)]
    return segments, {label: found[label] for label in (bucket_label(*b) for b in buckets)}


def single_long_verses(verses: Sequence[Verse], segments: list[list[Verse]], min_words: int) -> list[list[Verse]]:
    """Every verse of at least `min_words` source words that no segment holds, as a one-verse segment: the long
    single verses a test set of joined segments would otherwise leave out, so that long *sentences* can be scored apart
    from long *passages*."""
    taken = {v[0] for segment in segments for v in segment}
    return [[v] for v in sorted(verses, key=lambda v: v[0]) if v[0] not in taken and word_count(v[1]) >= min_words]


def verses_per_segment(segments: list[list[Verse]], edges: Sequence[int]) -> dict[str, dict]:
    """Per source-length bucket: {"segments", "single_verse" (segments of one verse), "verses_mean", "verses_max"}:
    how much of a bucket's "length" is several verses joined."""
    out = {bucket_label(lo, hi): [] for lo, hi in length_buckets(edges)}
    labels = list(out)
    for segment in segments:
        out[labels[bucket_index(sum(word_count(v[1]) for v in segment), edges)]].append(len(segment))
    return {label: {"segments": len(counts), "single_verse": sum(c == 1 for c in counts),
                    "verses_mean": round(sum(counts) / len(counts), 2) if counts else None,
                    "verses_max": max(counts, default=None)} for label, counts in out.items()}


def join(segment: list[Verse]) -> tuple[str, str]:
    """The segment's source and target texts: its verses joined with a space."""
    return " ".join(v[1] for v in segment), " ".join(v[2] for v in segment)
