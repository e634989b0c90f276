"""seqbench.data.segments: length-stratified segments of consecutive verses (the real-text Fig. 2 test set)."""
from __future__ import annotations

import random

from seqbench.common.text import bucket_index, word_count
from seqbench.data.segments import join, length_stratified_segments

EDGES = (10, 20, 30)


def _verses(seed: int = 0, chapters: int = 30, per_chapter: int = 25, skip=()) -> list:
    rng = random.Random(seed)
    verses = []
    for chapter in range(1, chapters + 1):
        for number in range(1, per_chapter + 1):
            if (chapter, number) in skip:
                continue  # a verse the cleaning dropped
            n = rng.randint(3, 14)
            verses.append(((7, chapter, number), " ".join(f"s{chapter}.{number}.{i}" for i in range(n)),
                           " ".join(f"t{chapter}.{number}.{i}" for i in range(n + 1))))
    return verses


def test_segments_fill_every_bucket_with_disjoint_runs_of_consecutive_verses():
    verses = _verses()
    segments, found = length_stratified_segments(verses, per_bucket=40, edges=EDGES, max_words=45, seed=3)
    assert found == {"1-10": 40, "11-20": 40, "21-30": 40, "31+": 40}
    counts = [0] * 4
    seen = set()
    for segment in segments:
        refs = [v[0] for v in segment]
        assert all(b[:2] == a[:2] and b[2] == a[2] + 1 for a, b in zip(refs, refs[1:])), "consecutive, one chapter"
        assert not seen & set(refs), "no verse in two segments"
        seen |= set(refs)
        src, tgt = join(segment)
        assert src == " ".join(v[1] for v in segment) and tgt == " ".join(v[2] for v in segment)
        assert word_count(src) <= 45
        counts[bucket_index(word_count(src), EDGES)] += 1
    assert counts == [40, 40, 40, 40]
    assert [s[0][0] for s in segments] == sorted(s[0][0] for s in segments), "in text order"


def test_a_dropped_verse_breaks_segments_and_selection_is_seeded():
    verses = _verses(skip={(c, 10) for c in range(1, 31)})
    segments, _ = length_stratified_segments(verses, 30, EDGES, 45, seed=1)
    for segment in segments:
        numbers = [v[0][2] for v in segment]
        assert not (min(numbers) < 10 < max(numbers)), "a segment spans the missing verse 10"
    again, _ = length_stratified_segments(verses, 30, EDGES, 45, seed=1)
    other, _ = length_stratified_segments(verses, 30, EDGES, 45, seed=2)
    assert again == segments and other != segments


def test_a_small_text_fills_the_shortest_bucket_then_the_longest_first():
    verses = _verses(chapters=1, per_chapter=8)  # about 70 source words in all
    short = sum(word_count(v[1]) <= 10 for v in verses)
    segments, found = length_stratified_segments(verses, 10, EDGES, 45, seed=0)
    assert found["1-10"] == short, "every verse short enough for the first bucket is kept for it"
    assert sum(found.values()) == len(segments) and sum(len(s) for s in segments) <= 8
    # four 12-word verses: the open bucket (31+) takes three of them before 11-20 takes what is left
    twelve = [((1, 1, n), " ".join(["w"] * 12), "t") for n in range(1, 5)]
    segments, found = length_stratified_segments(twelve, 10, EDGES, 45, seed=0)
    assert found == {"1-10": 0, "11-20": 1, "21-30": 0, "31+": 1}
    assert sorted(len(s) for s in segments) == [1, 3]
