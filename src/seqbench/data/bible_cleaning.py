"""Cleaning rules for the Bible's verses, one translation at a time (seqbench.data.bible_source reads them).

Each step's count lands in `cleaning_report.json` next to the cached dataset, and in the log:

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
  recorded in `Cleaner.misaligned_chapters` for the pairing to drop whole (seqbench.data.bible_pairs);
- Reina-Valera: KJV-style postscripts after the last "Amén." of Paul's letters are cut.
"""
from __future__ import annotations

import re
from collections import Counter

from seqbench.data.bible_source import JOB, PSALMS

CLEANING_VERSION = 1  # bump when cleaning changes: it keys the cache

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
        """`after`, counted (and kept as one of three examples) under `step` if it differs from `before`."""
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
        """Every verse cleaned; fills `counts`, `examples`, `psalm_headings` and `misaligned_chapters`."""
        texts = dict(self.raw)
        if self.lang == "en":
            self._english_psalms(texts)
        else:
            self._psalm_headings(texts)
        if self.lang == "es":
            self._postscripts(texts)
        return {ref: self.clean(text) for ref, text in texts.items()}

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

    def clean(self, text: str) -> str:
        """One verse through the steps every verse takes (the psalm and postscript steps need their neighbours)."""
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


def changed_verses(cleaners: dict[str, Cleaner]) -> dict[str, dict[str, int]]:
    """Verses each step changed: step -> language -> count, steps and languages that changed nothing left out."""
    steps: dict[str, dict[str, int]] = {}
    for lang, cleaner in cleaners.items():
        for step, n in cleaner.counts.items():
            if n:
                steps.setdefault(step, {})[lang] = n
    return steps
