"""seqbench.data.overlap on hand-built splits: the counts are checked by hand."""
from __future__ import annotations

from seqbench.data.overlap import ngram_overlap, overlap_audit

TRAIN = ["the man saw the dog in the house", "a cat sat on the mat"]


def test_ngram_overlap_counts_occurrences_and_mostly_found_items():
    split = ["the man saw the dog", "a cat sat on a hat", "hello"]
    # 2-grams: item 1 has 4, all in training; item 2 has 5 ("a cat", "cat sat", "sat on" found; "on a", "a hat" not);
    # "hello" has none and is not an item
    result = ngram_overlap(split, TRAIN, 2)
    assert result == {"n": 2, "ngrams": 9, "found_in_train": round(100 * 7 / 9, 2), "items": 2,
                      "items_mostly_found": 100.0}
    # 4-grams: item 1 has 2 (both found), item 2 has 3 ("a cat sat on" found): 1 of 2 items mostly found
    assert ngram_overlap(split, TRAIN, 4) == {"n": 4, "ngrams": 5, "found_in_train": 60.0, "items": 2,
                                              "items_mostly_found": 50.0}


def test_overlap_is_case_blind_and_empty_splits_score_none():
    assert ngram_overlap(["The Man Saw"], TRAIN, 3)["found_in_train"] == 100.0
    assert ngram_overlap(["short"], TRAIN, 4) == {"n": 4, "ngrams": 0, "found_in_train": None, "items": 0,
                                                  "items_mostly_found": None}


def test_audit_covers_every_split_but_train_and_both_sides():
    splits = {"train": {"src": TRAIN, "tgt": TRAIN}, "test": {"src": ["the man saw"], "tgt": ["no overlap here"]}}
    audit = overlap_audit(splits, orders=(3,))
    assert list(audit) == ["test"]
    assert audit["test"]["src"][0]["found_in_train"] == 100.0
    assert audit["test"]["tgt"][0]["found_in_train"] == 0.0
