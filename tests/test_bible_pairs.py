"""Verse pairs of two cleaned translations (seqbench.data.bible_pairs): alignment by reference, the pairs dropped and
why, and the length-ratio filter relative to the pair's median ratio."""
from __future__ import annotations

import pytest

from seqbench.data.bible_pairs import pair_verses

PSALMS = 19


def test_pairs_only_verses_both_have_and_says_what_it_drops():
    first = {(1, 1, 1): "a b", (1, 1, 2): "c d", (1, 1, 3): "", (PSALMS, 13, 1): "e f", (2, 1, 1): "only first"}
    second = {(1, 1, 1): "A B", (1, 1, 2): "C D", (1, 1, 3): "E F", (PSALMS, 13, 1): "G H", (3, 1, 1): "only second"}
    pairs = pair_verses(first, second, {(PSALMS, 13)}, max_length_ratio=None)
    assert pairs.rows == [((1, 1, 1), "a b", "A B"), ((1, 1, 2), "c d", "C D")]
    assert pairs.aligned == 4
    assert dict(pairs.dropped) == {"empty": 1, "misaligned_psalm_chapters": 1, "length_ratio": 0}


def test_the_length_ratio_is_relative_to_the_median_and_symmetric():
    """Second sides a third shorter are typical here (like Russian against English): only a pair far from that,
    either way, goes."""
    first = {(1, 1, v): "w " * 30 for v in range(1, 6)}
    second = {(1, 1, v): "x " * 20 for v in range(1, 4)}
    second[(1, 1, 4)] = "x " * 60  # 3x the typical ratio
    second[(1, 1, 5)] = "x " * 5   # 1/4 of it
    pairs = pair_verses(first, second, set(), max_length_ratio=2.5)
    assert pairs.typical_ratio == pytest.approx(20 / 30)
    assert [ref for ref, _, _ in pairs.rows] == [(1, 1, 1), (1, 1, 2), (1, 1, 3)]
    assert [ref for ref, _, _ in pairs.ratio_dropped] == [(1, 1, 4), (1, 1, 5)]
    assert pairs.dropped["length_ratio"] == 2
    assert len(pair_verses(first, second, set(), max_length_ratio=4.5).rows) == 5
    assert pair_verses(first, second, set(), max_length_ratio=None).ratio_dropped == []


def test_no_pairs_left():
    pairs = pair_verses({(1, 1, 1): ""}, {(1, 1, 1): "x"}, set(), max_length_ratio=2.5)
    assert pairs.rows == [] and pairs.typical_ratio == 1.0 and pairs.aligned == 1
