"""The Bible's cleaning rules (seqbench.data.bible_cleaning) on hand-built verses: each step's result, what it
counts, and the psalm headings that need a verse's neighbours."""
from __future__ import annotations

from seqbench.data.bible_cleaning import (
    Casing,
    Cleaner,
    changed_verses,
    fix_drop_cap,
    strip_heading_sentences,
    strip_psalm_heading,
)
from seqbench.data.bible_source import JOB, PSALMS

ROMANS = 45


def clean(lang: str, verses: dict) -> tuple[dict, Cleaner]:
    cleaner = Cleaner(lang, verses)
    return cleaner.clean_all(), cleaner


def test_english_verse_steps_and_their_counts():
    cleaned, cleaner = clean("en", {
        (1, 1, 1): "God`s  Spirit\twas there.",
        (1, 1, 2): "As an offering of first -[fruits] you shall offer them, [even] an offering.",
        (1, 1, 3): "Dummy verse inserted by amos.",
        (1, 1, 4): "Unchanged verse.",
    })
    assert cleaned == {(1, 1, 1): "God's Spirit was there.",
                       (1, 1, 2): "As an offering of first-fruits you shall offer them, even an offering.",
                       (1, 1, 3): "", (1, 1, 4): "Unchanged verse."}
    assert {step: n for step, n in cleaner.counts.items() if n} == {
        "whitespace_normalized": 1, "backticks_to_apostrophes": 1, "supplied_word_brackets_removed": 1,
        "placeholder_verses": 1}
    assert cleaner.examples["backticks_to_apostrophes"] == ["God`s Spirit was there. => God's Spirit was there."]


def test_spanish_soft_hyphen_and_drop_cap():
    cleaned, cleaner = clean("es", {
        (1, 1, 1): "EN el principio crió Dios los cielos y la tierra.",
        (1, 1, 2): "Y dijo Dios: \xadSea la luz! y fué la luz.",
        (1, 1, 3): "Y vió Dios que la luz era buena: y apartó Dios la luz de las tinieblas.",
    })
    assert cleaned[(1, 1, 1)] == "En el principio crió Dios los cielos y la tierra."
    assert cleaned[(1, 1, 2)] == "Y dijo Dios: ¡Sea la luz! y fué la luz."
    assert cleaner.counts["drop_caps_recased"] == 1 and cleaner.counts["inverted_exclamation_restored"] == 1


def test_the_soft_hyphen_is_spanish_only():
    cleaned, cleaner = clean("it", {(1, 1, 1): "E Iddio disse: Sia la luce\xad."})
    assert cleaned[(1, 1, 1)] == "E Iddio disse: Sia la luce\xad."
    assert not cleaner.counts["inverted_exclamation_restored"]


def test_russian_editorial_note_and_numbering_markers():
    cleaned, cleaner = clean("ru", {
        (1, 2, 1): "(ADDED FROM KJV: Thus the heavens were finished. => Так совершены небо и земля.)",
        (1, 2, 2): "(2:2) И совершил Бог (2:3a) к седьмому дню дела Свои.",
    })
    assert cleaned == {(1, 2, 1): "Так совершены небо и земля.", (1, 2, 2): "И совершил Бог к седьмому дню дела Свои."}
    assert cleaner.counts["editorial_notes_resolved"] == 1 and cleaner.counts["numbering_markers_removed"] == 1


def test_english_psalm_headings_are_cut_from_the_previous_psalm():
    """The WEB glues psalm N+1's heading to the end of psalm N's last verse (psalm 1's to Job 42:17); a psalm
    number that is not the next psalm's stays."""
    cleaned, cleaner = clean("en", {
        (JOB, 42, 16): "After this Job lived one hundred forty years.",
        (JOB, 42, 17): "So Job died, being old and full of days. BOOK I Psalm 1",
        (PSALMS, 2, 1): "Why do the nations rage? Psalm 3 is not the next psalm's heading here.",
        (PSALMS, 2, 12): "Blessed are all those who take refuge in him. Psalm 3 A Psalm by David, when he fled.",
        (PSALMS, 3, 8): "Salvation belongs to Yahweh. Psalm 7 is named, but psalm 4 follows.",
    })
    assert cleaned[(JOB, 42, 17)] == "So Job died, being old and full of days."
    assert cleaned[(PSALMS, 2, 12)] == "Blessed are all those who take refuge in him."
    assert cleaned[(PSALMS, 2, 1)].endswith("heading here.") and cleaned[(PSALMS, 3, 8)].endswith("follows.")
    assert cleaner.psalm_headings == {1: "", 3: "A Psalm by David, when he fled."}
    assert cleaner.counts["psalm_headings_removed"] == 2


def test_psalm_119_acrostic_letters():
    cleaned, _ = clean("en", {(PSALMS, 119, 8): "I will observe your statutes. Don't utterly forsake me. BEIT",
                              (PSALMS, 119, 9): "How can a young man keep his way pure?"})
    assert cleaned[(PSALMS, 119, 8)] == "I will observe your statutes. Don't utterly forsake me."
    cleaned, _ = clean("es", {(PSALMS, 119, 9): "BETH. ¿Con qué limpiará el joven su camino?"})
    assert cleaned[(PSALMS, 119, 9)] == "¿Con qué limpiará el joven su camino?"


def test_a_heading_alone_in_verse_one_marks_the_chapter_misaligned():
    """French Psalm 13 gives its heading a verse of its own: verse 1 is empty once the heading goes, so the chapter
    is one off against the English; a heading followed by the verse proper is only cut."""
    cleaned, cleaner = clean("fr", {
        (PSALMS, 4, 1): "Au chef des chantres. Psaume de David. Quand je crie, réponds-moi!",
        (PSALMS, 4, 2): "Fils des hommes, jusques à quand ma gloire sera-t-elle outragée?",
        (PSALMS, 13, 1): "Au chef des chantres. Psaume de David.",
        (PSALMS, 13, 2): "Jusques à quand, Éternel! m'oublieras-tu sans cesse?",
    })
    assert cleaned[(PSALMS, 4, 1)] == "Quand je crie, réponds-moi!" and cleaned[(PSALMS, 13, 1)] == ""
    assert cleaner.misaligned_chapters == {(PSALMS, 13)}


def test_spanish_postscript_goes_from_the_last_verse_of_a_letter_only():
    cleaned, cleaner = clean("es", {
        (ROMANS, 16, 20): "La gracia de nuestro Señor Jesucristo sea con vosotros. Amén. Y el Dios de paz.",
        (ROMANS, 16, 27): "Al solo Dios sabio, sea gloria por Jesucristo para siempre. Amén. Escrita de Corinto.",
        (1, 50, 26): "Y murió José. Amén. Y lo embalsamaron.",
    })
    assert cleaned[(ROMANS, 16, 27)] == "Al solo Dios sabio, sea gloria por Jesucristo para siempre. Amén."
    assert cleaned[(ROMANS, 16, 20)].endswith("Y el Dios de paz.") and cleaned[(1, 50, 26)].endswith("embalsamaron.")
    assert cleaner.counts["epistle_postscripts_removed"] == 1


def test_drop_caps_and_headings():
    casing = Casing(["Y Abraham era viejo", "y fueron", "los cielos fueron hechos por Abraham"])
    assert fix_drop_cap("Y ABRAHAM era viejo", casing) == "Y Abraham era viejo"
    assert fix_drop_cap("Y FUERON acabados", casing) == "Y fueron acabados"
    assert fix_drop_cap("NELL’anno primo di Ciro", casing) == "Nell’anno primo di Ciro"
    assert fix_drop_cap("¿POR qué se amotinan?", casing) == "¿Por qué se amotinan?"
    assert fix_drop_cap("YO SOY EL QUE SOY", casing) == "YO SOY EL QUE SOY"
    assert strip_psalm_heading("fr", "(51:1) Au chef. (51:2) Lorsque Nathan vint. (51:3) O Dieu!", "(51:4) Lave-moi") \
        == "O Dieu!"
    assert strip_psalm_heading("ru", "Псалом Давида. (3:2) Господи!", "(3:3) многие") == "Господи!"
    assert strip_psalm_heading("ru", "(12:1) Начальнику хора. Псалом Давида.", "(12:2) Доколе") == ""
    assert strip_psalm_heading("it", "Salmo di Davide, dato al capo de’ Musici O SIGNORE, ascolta", None) \
        == "O SIGNORE, ascolta"


def test_heading_sentences_are_short():
    """Only a leading sentence of at most ten words that starts like a heading goes: a longer one is the verse."""
    assert strip_heading_sentences("Psaume de David. Cantique. Éternel, écoute!", "fr") == "Éternel, écoute!"
    long = "Psaume que David chanta devant tout le peuple au jour de la fête. Éternel!"
    assert strip_heading_sentences(long, "fr") == long
    assert strip_heading_sentences("Psaume de David. Éternel!", "en") == "Psaume de David. Éternel!"


def test_changed_verses_leaves_out_steps_that_changed_nothing():
    _, english = clean("en", {(1, 1, 1): "God`s word."})
    _, spanish = clean("es", {(1, 1, 1): "\tLa palabra de Dios."})
    assert changed_verses({"en": english, "es": spanish}) == {
        "backticks_to_apostrophes": {"en": 1}, "whitespace_normalized": {"es": 1}}


def test_examples_are_three_per_step_around_the_change():
    """Each step keeps three examples, from 40 characters before the first changed one."""
    before = {(1, 1, v): f"{'word ' * 20}God`s {v}" for v in range(1, 6)}
    _, cleaner = clean("en", before)
    examples = cleaner.examples["backticks_to_apostrophes"]
    assert len(examples) == 3 and cleaner.counts["backticks_to_apostrophes"] == 5
    shown = before[(1, 1, 1)][before[(1, 1, 1)].index("`") - 40:]
    assert examples[0] == "..." + shown + " => ..." + shown.replace("`", "'")
