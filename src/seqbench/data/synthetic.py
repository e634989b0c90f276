"""The embedded synthetic language pair: a seeded source grammar and a deterministic translation of it.

Why a synthetic task: it needs no network, a perfect model scores 100 BLEU, and its difficulty is known by construction.
The target differs from the source in the ways that made fixed-context RNNs fail (Bahdanau et al. 2015):

- word order: clauses are verb-final (SOV, adjuncts before the object), adjectives and determiners follow the noun,
  prepositions become postpositions;
- a separate lexicon with one-to-many nouns (compounds), many-to-one phrases ("very ADJ" -> one word, "in front of"
  -> one postposition) and dropped words (the indefinite article);
- agreement morphology that depends on words far away: the clause-final verb agrees in gender and number with its
  subject, across relative clauses, objects and prepositional phrases; gender is a property of the *target* noun only,
  so the model has to look it up from the source noun however far back it is.

A monotone word-for-word dictionary translation (`dictionary_translate`) scores far below a real model; the tests
keep it at or under 25 BLEU.
"""
from __future__ import annotations

import hashlib
import json
import random
from dataclasses import asdict, dataclass, field

LENGTH_BUCKETS = ((1, 10), (11, 20), (21, 30), (31, 40), (41, 50), (51, 60), (61, 10_000))

_SRC_ONSETS = "b d f g k l m n p r t v br dr fl gr pl st tr".split()
_SRC_VOWELS = "a e i o u ea oo".split()
_SRC_CODAS = ["", "", "", "n", "m", "l", "r", "t", "ck", "nd"]
_TGT_ONSETS = "h j w x z q y ts kh ny sh zh".split()
_TGT_VOWELS = "a o u ei ao y ii".split()
_TGT_CODAS = ["", "", "", "ng", "x", "q"]

# Agreement suffixes indexed by (gender, plural). Adjectives and verbs use different sets.
_ADJ_AGREEMENT = {(0, False): "a", (1, False): "o", (2, False): "u", (0, True): "an", (1, True): "on", (2, True): "un"}
_VERB_AGREEMENT = {(0, False): "ek", (1, False): "ot", (2, False): "ul",
                   (0, True): "ekta", (1, True): "otta", (2, True): "ulla"}
_PLURAL_SUFFIX = "ri"
_INTENSIFIER_PREFIX = "zo"

# Source determiner -> (target particle or "" when dropped, forced number or None when free).
_DETERMINERS = {"the": ("na", None), "a": ("", False), "this": ("ki", False), "these": ("ki", True),
                "some": ("mo", True), "every": ("tau", False), "my": ("dai", None), "no": ("nul", None)}
_SINGLE_PREPOSITIONS = ["in", "on", "under", "near", "behind", "with", "without", "for", "from", "to", "over",
                        "across", "through", "beside", "against", "around"]
_MULTIWORD_PREPOSITIONS = [("in", "front", "of"), ("next", "to"), ("because", "of"), ("on", "top", "of"),
                           ("far", "from"), ("instead", "of")]
_FUNCTION_TRANSLATIONS = {"that": "ke", "and": "e", "but": "ma"}
_NP_CONJUNCTION = "ya"


@dataclass(frozen=True)
class GrammarConfig:
    """Everything that determines the generated corpus; its hash keys the on-disk cache."""

    seed: int = 1234
    n_nouns: int = 300  # each also has a plural form on the source side
    n_adjectives: int = 160
    n_transitive_verbs: int = 120  # each has a 3rd-person-singular form on the source side
    n_intransitive_verbs: int = 60
    compound_noun_rate: float = 0.15  # share of nouns translated by two target words
    train_size: int = 30_000
    valid_per_bucket: int = 40  # valid and test are stratified by source-length bucket
    test_per_bucket: int = 150
    max_words: int = 100
    # Probability of 1, 2, 3, ... coordinated clauses: a long tail of long sentences.
    clause_count_weights: tuple[float, ...] = (0.30, 0.25, 0.18, 0.11, 0.07, 0.05, 0.03, 0.01)
    p_adjective: float = 0.35
    p_very: float = 0.15
    p_noun_pp: float = 0.18
    p_relative_clause: float = 0.15
    p_adjunct_pp: float = 0.35
    p_np_coordination: float = 0.08
    max_depth: int = 2
    length_buckets: tuple[tuple[int, int], ...] = field(default=LENGTH_BUCKETS)

    def cache_key(self) -> str:
        return hashlib.sha1(json.dumps(asdict(self), sort_keys=True).encode()).hexdigest()[:12]


@dataclass
class _Noun:
    src: str
    tgt: list[str]  # one or two words; inflection goes on the last
    gender: int


@dataclass
class Lexicon:
    nouns: list[_Noun]
    adjectives: list[tuple[str, str]]
    transitive: list[tuple[str, str]]
    intransitive: list[tuple[str, str]]
    prepositions: list[tuple[tuple[str, ...], str]]

    @classmethod
    def build(cls, cfg: GrammarConfig) -> "Lexicon":
        rng = random.Random(cfg.seed)
        reserved = set(_DETERMINERS) | set(_SINGLE_PREPOSITIONS) | {w for p in _MULTIWORD_PREPOSITIONS for w in p}
        reserved |= set(_FUNCTION_TRANSLATIONS) | {"very"}
        src_words = _pseudo_words(rng, cfg.n_nouns + cfg.n_adjectives + cfg.n_transitive_verbs
                                  + cfg.n_intransitive_verbs, _SRC_ONSETS, _SRC_VOWELS, _SRC_CODAS, reserved)
        n_prepositions = len(_SINGLE_PREPOSITIONS) + len(_MULTIWORD_PREPOSITIONS)
        n_compounds = int(cfg.n_nouns * cfg.compound_noun_rate)
        tgt_words = _pseudo_words(rng, len(src_words) + n_compounds + n_prepositions, _TGT_ONSETS, _TGT_VOWELS,
                                  _TGT_CODAS, set(_FUNCTION_TRANSLATIONS.values()) | {"ya", "na", "ki", "mo"})
        src_iter, tgt_iter = iter(src_words), iter(tgt_words)
        nouns = []
        for i in range(cfg.n_nouns):
            tgt = [next(tgt_iter)] + ([next(tgt_iter)] if i < n_compounds else [])
            nouns.append(_Noun(next(src_iter), tgt, rng.randrange(3)))
        rng.shuffle(nouns)
        pair = lambda n: [(next(src_iter), next(tgt_iter)) for _ in range(n)]  # noqa: E731
        adjectives, transitive, intransitive = pair(cfg.n_adjectives), pair(cfg.n_transitive_verbs), \
            pair(cfg.n_intransitive_verbs)
        preps = [((p,), next(tgt_iter)) for p in _SINGLE_PREPOSITIONS]
        preps += [(p, next(tgt_iter)) for p in _MULTIWORD_PREPOSITIONS]
        return cls(nouns, adjectives, transitive, intransitive, preps)

    def source_types(self) -> set[str]:
        words = {n.src for n in self.nouns} | {n.src + "s" for n in self.nouns}
        words |= {a for a, _ in self.adjectives}
        for v, _ in self.transitive + self.intransitive:
            words |= {v, v + "s"}
        words |= {w for p, _ in self.prepositions for w in p} | set(_DETERMINERS) | set(_FUNCTION_TRANSLATIONS)
        return words | {"very"}


def _pseudo_words(rng, n, onsets, vowels, codas, reserved) -> list[str]:
    out, seen = [], set(reserved)
    while len(out) < n:
        word = "".join(rng.choice(onsets) + rng.choice(vowels) for _ in range(rng.choice((1, 2, 2))))
        word += rng.choice(codas)
        # Source words ending in "s" would collide with the plural/3sg forms.
        if word not in seen and len(word) > 2 and not word.endswith("s"):
            seen.add(word)
            out.append(word)
    return out


@dataclass
class _Phrase:
    src: list[str]
    tgt: list[str]
    gender: int = 0
    plural: bool = False


class SentenceGenerator:
    """Samples (source, target) sentence pairs; the target is a deterministic function of the source's derivation."""

    def __init__(self, cfg: GrammarConfig, lexicon: Lexicon, rng: random.Random):
        self.cfg, self.lex, self.rng = cfg, lexicon, rng

    def sentence(self) -> tuple[str, str]:
        while True:
            n_clauses = self.rng.choices(range(1, len(self.cfg.clause_count_weights) + 1),
                                         self.cfg.clause_count_weights)[0]
            src, tgt = [], []
            for i in range(n_clauses):
                if i:
                    conj = self.rng.choice(("and", "but"))
                    src.append(conj)
                    tgt.append(_FUNCTION_TRANSLATIONS[conj])
                clause = self.clause()
                src += clause.src
                tgt += clause.tgt
            if len(src) <= self.cfg.max_words:
                return " ".join(src) + ".", " ".join(tgt) + "."

    def clause(self) -> _Phrase:
        subject = self.coordinated_np(0) if self.rng.random() < self.cfg.p_np_coordination else self.noun_phrase(0)
        predicate = self.predicate(subject, depth=0)
        return _Phrase(subject.src + predicate.src, subject.tgt + predicate.tgt)

    def predicate(self, subject: _Phrase, depth: int) -> _Phrase:
        """Source: VERB [OBJECT] [PP...]. Target: [PP...] [OBJECT] VERB-agreeing-with-subject."""
        transitive = self.rng.random() < 0.6
        verb_src, verb_tgt = self.rng.choice(self.lex.transitive if transitive else self.lex.intransitive)
        src = [verb_src if subject.plural else verb_src + "s"]
        obj = self.noun_phrase(depth + 1) if transitive else _Phrase([], [])
        pps = [self.prepositional_phrase(depth + 1) for _ in range(2) if self.rng.random() < self.cfg.p_adjunct_pp]
        tgt = [w for pp in pps for w in pp.tgt] + obj.tgt
        tgt.append(verb_tgt + _VERB_AGREEMENT[(subject.gender, subject.plural)])
        return _Phrase(src + obj.src + [w for pp in pps for w in pp.src], tgt)

    def coordinated_np(self, depth: int) -> _Phrase:
        first, second = self.noun_phrase(depth + 1), self.noun_phrase(depth + 1)
        return _Phrase(first.src + ["and"] + second.src, first.tgt + [_NP_CONJUNCTION] + second.tgt,
                       gender=first.gender, plural=True)

    def noun_phrase(self, depth: int) -> _Phrase:
        """Source: DET [very] ADJ* NOUN [PP] [REL]. Target: NOUN ADJ-agr* [DET] [PP] [REL]."""
        rng, cfg = self.rng, self.cfg
        det = rng.choice(list(_DETERMINERS))
        det_tgt, forced_plural = _DETERMINERS[det]
        plural = rng.random() < 0.4 if forced_plural is None else forced_plural
        noun = rng.choice(self.lex.nouns)
        agreement = _ADJ_AGREEMENT[(noun.gender, plural)]
        src, adj_tgt = [det], []
        while rng.random() < cfg.p_adjective and len(adj_tgt) < 3:
            adj_src, adj_lemma = rng.choice(self.lex.adjectives)
            if rng.random() < cfg.p_very:
                src += ["very", adj_src]
                adj_tgt.append(_INTENSIFIER_PREFIX + adj_lemma + agreement)
            else:
                src.append(adj_src)
                adj_tgt.append(adj_lemma + agreement)
        src.append(noun.src + "s" if plural else noun.src)
        tgt = noun.tgt[:-1] + [noun.tgt[-1] + (_PLURAL_SUFFIX if plural else "")] + adj_tgt
        tgt += [det_tgt] if det_tgt else []
        phrase = _Phrase(src, tgt, noun.gender, plural)
        if depth < cfg.max_depth and rng.random() < cfg.p_noun_pp:
            pp = self.prepositional_phrase(depth + 1)
            phrase.src += pp.src
            phrase.tgt += pp.tgt
        if depth < cfg.max_depth and rng.random() < cfg.p_relative_clause:
            rel = self.relative_clause(phrase, depth + 1)
            phrase.src += rel.src
            phrase.tgt += rel.tgt
        return phrase

    def relative_clause(self, head: _Phrase, depth: int) -> _Phrase:
        if self.rng.random() < 0.6:  # subject relative: the verb agrees with the head noun
            predicate = self.predicate(head, depth)
            return _Phrase(["that"] + predicate.src, ["ke"] + predicate.tgt)
        # object relative: "that the dogs see" -> "ke dog-PL na see-agree(dogs)"
        subject = self.noun_phrase(self.cfg.max_depth)
        verb_src, verb_tgt = self.rng.choice(self.lex.transitive)
        verb = verb_src if subject.plural else verb_src + "s"
        return _Phrase(["that"] + subject.src + [verb],
                       ["ke"] + subject.tgt + [verb_tgt + _VERB_AGREEMENT[(subject.gender, subject.plural)]])

    def prepositional_phrase(self, depth: int) -> _Phrase:
        prep_src, postposition = self.rng.choice(self.lex.prepositions)
        obj = self.noun_phrase(depth)
        return _Phrase(list(prep_src) + obj.src, obj.tgt + [postposition])


def bucket_of(n_words: int, buckets=LENGTH_BUCKETS) -> int:
    for i, (lo, hi) in enumerate(buckets):
        if lo <= n_words <= hi:
            return i
    raise ValueError(f"length {n_words} is outside every bucket {buckets}")


def generate_splits(cfg: GrammarConfig) -> dict[str, list[dict]]:
    """Train is sampled from the natural length distribution; valid and test are stratified by length bucket.

    Splits never share a source sentence. Each split has its own random stream, so resizing one leaves the others as
    they were.
    """
    lexicon = Lexicon.build(cfg)
    seen: set[str] = set()
    splits = {}
    for offset, name in ((1, "test"), (2, "valid")):
        per_bucket = cfg.test_per_bucket if name == "test" else cfg.valid_per_bucket
        gen = SentenceGenerator(cfg, lexicon, random.Random(cfg.seed * 1000 + offset))
        counts = [0] * len(cfg.length_buckets)
        rows = []
        while min(counts) < per_bucket:
            src, tgt = gen.sentence()
            if src in seen:
                continue
            b = bucket_of(len(src.split()), cfg.length_buckets)
            if counts[b] < per_bucket:
                counts[b] += 1
                seen.add(src)
                rows.append({"src": src, "tgt": tgt})
        splits[name] = rows
    gen = SentenceGenerator(cfg, lexicon, random.Random(cfg.seed * 1000))
    train = []
    while len(train) < cfg.train_size:
        src, tgt = gen.sentence()
        if src not in seen:
            seen.add(src)
            train.append({"src": src, "tgt": tgt})
    splits["train"] = train
    return splits


def dictionary_translate(src: str, lexicon: Lexicon) -> str:
    """Monotone word-for-word baseline: each source word replaced by its dictionary entry, in source order.

    It knows the lexicon perfectly (including plural nouns and the default agreement forms) but cannot reorder and
    cannot see agreement partners, which is exactly what the task is built to require.
    """
    table = {n.src: " ".join(n.tgt) for n in lexicon.nouns}
    table |= {n.src + "s": " ".join(n.tgt) + _PLURAL_SUFFIX for n in lexicon.nouns}
    table |= {a: t + _ADJ_AGREEMENT[(0, False)] for a, t in lexicon.adjectives}
    for v, t in lexicon.transitive + lexicon.intransitive:
        table[v + "s"] = t + _VERB_AGREEMENT[(0, False)]
        table[v] = t + _VERB_AGREEMENT[(0, True)]
    table |= {p[0]: t for p, t in lexicon.prepositions if len(p) == 1}
    table |= {d: t for d, (t, _) in _DETERMINERS.items()}
    table |= _FUNCTION_TRANSLATIONS
    out = [table.get(w, "") for w in src.rstrip(".").split()]
    return " ".join(w for w in out if w) + "."
