"""The embedded synthetic language pair: a seeded source grammar and a deterministic translation of it.

Why a synthetic task: it needs no network, a perfect model scores 100 BLEU, and its difficulty is known by construction.
The target differs from the source in the ways that made fixed-context RNNs fail (Bahdanau et al. 2015):

- word order: clauses are verb-final (SOV), adjectives and determiners follow the noun, prepositions become
  postpositions;
- a separate lexicon with one-to-many words (some roots translate as two words), many-to-one phrases ("very ADJ" ->
  one word, "in front of" -> one postposition), dropped words (the indefinite article) and productive compounds
  (two noun roots written as one word, translated root by root, the head root deciding the gender);
- agreement morphology that depends on words far away: the clause-final verb agrees in gender and number with its
  subject, across relative clauses, objects and prepositional phrases; gender is a property of the *target* noun only
  and the source past tense (-ed) shows no number at all, so the model has to look the subject up however far back.

In the default task every agreement and reordering stays inside one clause, and long sentences are long because they
coordinate more clauses. The long-range options (GrammarConfig.p_long_subject, p_pronoun_subject, p_center_embedding,
p_clause_fronting and test_per_cell, all off by default; the preset data=synthetic_longrange) add dependencies whose
distance is set by construction: see seqbench.data.longrange. Every pair records its clause count, longest dependency
and agreement/reference dependencies (`SentenceGenerator.pair`), which `seqbench.scoring.targeted` scores by.

The lexicon is small in roots (about 140) but large in word types (compounds, plurals, tenses: about 3,500 source
types in the default training set), so a subword model can learn it in minutes on a CPU while a word-level
dictionary cannot cover it. A monotone word-for-word dictionary translation (`dictionary_translate`) scores about
2 BLEU; the tests keep it at or under 25.
"""
from __future__ import annotations

import hashlib
import json
import random
from dataclasses import asdict, dataclass, field

from seqbench.common.errors import ConfigError
from seqbench.common.text import DEFAULT_LENGTH_EDGES, bucket_index, length_buckets, word_count

# The valid/test strata: the BLEU-by-length buckets, the last one capped (a cap keeps the config hashable as ints)
LENGTH_BUCKETS = tuple((lo, hi or 10_000) for lo, hi in length_buckets(DEFAULT_LENGTH_EDGES))

# Agreement suffixes indexed by (gender, plural). Adjectives and verbs use different sets.
ADJ_AGREEMENT = {(0, False): "a", (1, False): "o", (2, False): "u", (0, True): "an", (1, True): "on", (2, True): "un"}
VERB_AGREEMENT = {(0, False): "ek", (1, False): "ot", (2, False): "ul",
                  (0, True): "ekta", (1, True): "otta", (2, True): "ulla"}
# The markers a targeted evaluation looks for, by dependency kind (the corpus's scoring.markers)
MARKERS = {"agreement": frozenset(VERB_AGREEMENT.values()), "reference": frozenset(ADJ_AGREEMENT.values())}


_SRC_ONSETS = "b d f g k l m n p r t v br dr fl gr pl st tr".split()
_SRC_VOWELS = "a e i o u ea oo".split()
_SRC_CODAS = ["", "", "", "n", "m", "l", "r", "t", "ck", "nd"]
_TGT_ONSETS = "h j w x z q y ts kh ny sh zh".split()
_TGT_VOWELS = "a o u ei ao y ii".split()
_TGT_CODAS = ["", "", "", "ng", "x", "q"]

_PLURAL_SUFFIX = "ri"
_PAST_MARKER = "ta"
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
    n_noun_roots: int = 40  # two-syllable roots; nouns are roots or two-root compounds, each with a plural form
    n_adjectives: int = 30
    n_transitive_verbs: int = 30  # each has present (bare / 3sg -s) and past (-ed) forms on the source side
    n_intransitive_verbs: int = 15
    p_compound: float = 0.35  # share of nouns that are compounds of two roots ("doghouse" -> "house-dog" order kept)
    two_word_root_rate: float = 0.15  # share of roots translated by two target words (one-to-many)
    train_size: int = 30_000
    valid_per_bucket: int = 40  # valid and test are stratified by source-length bucket
    test_per_bucket: int = 150
    max_words: int = 100
    # Probability of 1, 2, 3, ... coordinated clauses: most sentences are short, with a long tail of long ones.
    clause_count_weights: tuple[float, ...] = (0.40, 0.25, 0.14, 0.09, 0.05, 0.04, 0.02, 0.01)
    p_past: float = 0.4
    p_adjective: float = 0.35
    p_very: float = 0.15
    p_noun_pp: float = 0.15
    p_relative_clause: float = 0.12
    p_adjunct_pp: float = 0.3
    p_np_coordination: float = 0.08
    max_depth: int = 1  # nesting of prepositional phrases / relative clauses inside noun phrases
    length_buckets: tuple[tuple[int, int], ...] = field(default=LENGTH_BUCKETS)
    # Long-range structure (seqbench.data.longrange; all off by default, the preset data=synthetic_longrange sets them):
    p_long_subject: float = 0.0  # per clause: the subject's head noun is separated from its verb by a chain of
    #                              prepositional phrases and relative clauses, 3 to max_subject_modifiers words
    max_subject_modifiers: int = 58  # the longest such chain (words): subject-verb distances up to 59
    p_pronoun_subject: float = 0.0  # per later clause: its subject is "it"/"they", referring to the first clause's
    #                                 subject (a reference dependency); its verb agrees with the pronoun
    p_center_embedding: float = 0.0  # per clause: its subject holds object relatives nested 2-3 deep
    p_clause_fronting: float = 0.0  # per sentence: a final "because/although" clause, put first in the target
    test_per_cell: int = 0  # > 0: the test split is a grid of sentence length x dependency distance, this many
    #                         sentences per cell, each with one probe clause (seqbench.data.longrange)

    def cache_key(self) -> str:
        options = asdict(self)
        for name in _LONG_RANGE_OPTIONS:  # left out while off, so the caches of the tasks without them keep their key
            if not has_long_range(self) or not options[name]:
                del options[name]
        return hashlib.sha1(json.dumps(options, sort_keys=True).encode()).hexdigest()[:12]


_LONG_RANGE_OPTIONS = ("p_long_subject", "max_subject_modifiers", "p_pronoun_subject", "p_center_embedding",
                       "p_clause_fronting", "test_per_cell")


def has_long_range(cfg: GrammarConfig) -> bool:
    return any(getattr(cfg, name) for name in _LONG_RANGE_OPTIONS if name != "max_subject_modifiers")


@dataclass
class _Noun:
    src: str
    tgt: list[str]  # one or two words; inflection goes on the last
    gender: int


@dataclass
class Lexicon:
    nouns: list[_Noun]  # roots; compounds are built from two of them at sampling time
    adjectives: list[tuple[str, str]]
    transitive: list[tuple[str, str]]
    intransitive: list[tuple[str, str]]
    prepositions: list[tuple[tuple[str, ...], str]]

    @classmethod
    def build(cls, cfg: GrammarConfig) -> Lexicon:
        rng = random.Random(cfg.seed)
        reserved = set(_DETERMINERS) | set(_SINGLE_PREPOSITIONS) | {w for p in _MULTIWORD_PREPOSITIONS for w in p}
        reserved |= set(_FUNCTION_TRANSLATIONS) | {"very"}
        # Roots are exactly two onset+vowel syllables, so a compound (four syllables) splits into roots one way only
        # and never equals another word: the translation stays a function of the source.
        roots = _pseudo_words(rng, cfg.n_noun_roots, _SRC_ONSETS, _SRC_VOWELS, [""], reserved, syllables=(2,))
        others = _pseudo_words(rng, cfg.n_adjectives + cfg.n_transitive_verbs + cfg.n_intransitive_verbs,
                               _SRC_ONSETS, _SRC_VOWELS, _SRC_CODAS, reserved | set(roots), syllables=(1, 2))
        n_prepositions = len(_SINGLE_PREPOSITIONS) + len(_MULTIWORD_PREPOSITIONS)
        n_two_word = int(cfg.n_noun_roots * cfg.two_word_root_rate)
        tgt_words = _pseudo_words(rng, len(roots) + len(others) + n_two_word + n_prepositions, _TGT_ONSETS,
                                  _TGT_VOWELS, _TGT_CODAS, set(_FUNCTION_TRANSLATIONS.values()) | {"ya", "na", "ki"},
                                  syllables=(1, 2))
        tgt_iter, other_iter = iter(tgt_words), iter(others)
        nouns = []
        for i, root in enumerate(roots):
            tgt = [next(tgt_iter)] + ([next(tgt_iter)] if i < n_two_word else [])
            nouns.append(_Noun(root, tgt, rng.randrange(3)))
        rng.shuffle(nouns)
        pair = lambda n: [(next(other_iter), next(tgt_iter)) for _ in range(n)]  # noqa: E731
        adjectives, transitive = pair(cfg.n_adjectives), pair(cfg.n_transitive_verbs)
        intransitive = pair(cfg.n_intransitive_verbs)
        preps = [((p,), next(tgt_iter)) for p in _SINGLE_PREPOSITIONS]
        preps += [(p, next(tgt_iter)) for p in _MULTIWORD_PREPOSITIONS]
        return cls(nouns, adjectives, transitive, intransitive, preps)

    def compound(self, modifier: _Noun, head: _Noun) -> _Noun:
        """Source "modifierhead" (one word) -> target "modifier'head'" (one word, bound forms: each root's last
        target word); the head decides the gender, as in German compounds."""
        return _Noun(modifier.src + head.src, [modifier.tgt[-1] + head.tgt[-1]], head.gender)


def _pseudo_words(rng, n, onsets, vowels, codas, reserved, syllables=(1, 2)) -> list[str]:
    out, seen = [], set(reserved)
    while len(out) < n:
        word = "".join(rng.choice(onsets) + rng.choice(vowels) for _ in range(rng.choice(syllables)))
        word += rng.choice(codas)
        # Words ending in "s" or "ed" would collide with the plural / 3sg / past forms.
        if word not in seen and len(word) > 2 and not word.endswith(("s", "e")):
            seen.add(word)
            out.append(word)
    return out


# Placeholders for a dependency's controller while the phrase holding it is being built: the subject of the
# predicate (known to the clause or noun phrase that attaches it), or the sentence topic (the first clause's subject,
# which a later pronoun refers back to; known only to the sentence).
_SUBJECT, _TOPIC = "subject", "topic"


@dataclass
class _Dependency:
    """A target word whose marker (agreement suffix) is decided by a source noun: what targeted accuracy checks.

    Positions are word indices within the phrase being built, shifted as phrases are combined; in a finished pair
    they are indices into `src.split()` / `tgt.split()`."""

    kind: str  # "agreement" (a verb's suffix agrees with its subject) or "reference" (a pronoun marks its antecedent)
    controller: int | str  # source position of the noun that decides the marker, or _SUBJECT / _TOPIC until known
    dependent: int  # source position of the verb / pronoun
    tgt_index: int  # target position of the marked word
    stem: str  # the marked target word without its marker
    marker: str  # the expected suffix (VERB_AGREEMENT or ADJ_AGREEMENT value)
    probe: bool = False  # the dependency a length x distance test sentence was built around (seqbench.data.longrange)

    def shifted(self, src_offset: int, tgt_offset: int) -> _Dependency:
        controller = self.controller + src_offset if isinstance(self.controller, int) else self.controller
        return _Dependency(self.kind, controller, self.dependent + src_offset, self.tgt_index + tgt_offset,
                           self.stem, self.marker, self.probe)


@dataclass
class _Phrase:
    src: list[str]
    tgt: list[str]
    gender: int = 0
    plural: bool = False
    head: int | str | None = None  # source position of the head noun (agreement controller); _TOPIC for a pronoun
    deps: list[_Dependency] = field(default_factory=list)


def _assemble(src_order: list, tgt_order: list, like: _Phrase | None = None, subject: _Phrase | None = None) -> _Phrase:
    """Concatenates parts (phrases, or literal words as str) in source order and in target order; every phrase must
    appear once in each. The phrases' dependencies move with them. `like`: the phrase whose gender, number and head the
    result keeps (a noun phrase extended by a PP, a clause keeping its subject's); `subject`: resolves the _SUBJECT
    controllers of the parts (a predicate's verb) to that phrase's head."""
    def place(order, attr):
        words, offsets = [], {}
        for part in order:
            if isinstance(part, str):
                words.append(part)
            else:
                offsets[id(part)] = len(words)
                words += getattr(part, attr)
        return words, offsets

    src, src_at = place(src_order, "src")
    tgt, tgt_at = place(tgt_order, "tgt")
    phrases = [p for p in src_order if not isinstance(p, str)]
    deps = [d.shifted(src_at[id(p)], tgt_at[id(p)]) for p in phrases for d in p.deps]
    if subject is not None:
        controller = subject.head + src_at[id(subject)] if isinstance(subject.head, int) else subject.head
        for d in deps:
            if d.controller == _SUBJECT:
                d.controller = controller
    phrase = _Phrase(src, tgt, deps=deps)
    if like is not None:
        phrase.gender, phrase.plural = like.gender, like.plural
        phrase.head = like.head + src_at[id(like)] if isinstance(like.head, int) else like.head
    return phrase


class SentenceGenerator:
    """Samples (source, target) sentence pairs; the target is a deterministic function of the source's derivation."""

    def __init__(self, cfg: GrammarConfig, lexicon: Lexicon, rng: random.Random):
        self.cfg, self.lex, self.rng = cfg, lexicon, rng

    def sentence(self) -> tuple[str, str]:
        row = self.pair()
        return row["src"], row["tgt"]

    def pair(self) -> dict:
        """One pair with its structure: {"src", "tgt", "clauses" (finite verbs: main, coordinated, subordinate and
        relative clauses), "max_dependency" (the longest dependency, in source words), "dependencies" (one dict per
        agreement/reference dependency: kind, controller, dependent, distance, tgt_index, stem, marker, occurrence,
        probe (see seqbench.data.longrange), sentence_length (source words))}.
        """
        cfg, rng = self.cfg, self.rng
        while True:
            n_clauses = rng.choices(range(1, len(cfg.clause_count_weights) + 1), cfg.clause_count_weights)[0]
            parts: list = []
            topic = None  # the first clause: its subject is what a later "it"/"they" refers to
            for i in range(n_clauses):
                if i:
                    parts.append(rng.choice(("and", "but")))
                parts.append(self.clause(topic))
                if topic is None:
                    topic = parts[0]
            sentence = self.extend(coordinate(parts), topic)
            if len(sentence.src) <= cfg.max_words:
                return finish(sentence, topic)

    def extend(self, sentence: _Phrase, topic: _Phrase) -> _Phrase:
        """The sentence around the coordinated clauses (seqbench.data.longrange fronts a subordinate clause)."""
        return sentence

    def clause(self, topic: _Phrase | None = None) -> _Phrase:
        """SUBJECT PREDICATE; the clause keeps its subject's gender, number and head (a topic for later clauses)."""
        subject = self.subject(topic)
        predicate = self.predicate(subject, depth=0)
        return _assemble([subject, predicate], [subject, predicate], like=subject, subject=subject)

    def subject(self, topic: _Phrase | None) -> _Phrase:
        """A clause's subject: a noun phrase, sometimes two coordinated (`topic`: the first clause's subject, which
        seqbench.data.longrange's pronouns refer back to)."""
        return self.coordinated_np(0) if self.rng.random() < self.cfg.p_np_coordination else self.noun_phrase(0)

    def verb(self, subject: _Phrase, transitive: bool) -> _Phrase:
        """Source: present agrees in number only (-s for singular), the past (-ed) not at all.
        Target: lemma [+ past marker] + suffix agreeing in gender and number with the subject."""
        verb_src, verb_tgt = self.rng.choice(self.lex.transitive if transitive else self.lex.intransitive)
        agreement = VERB_AGREEMENT[(subject.gender, subject.plural)]
        if self.rng.random() < self.cfg.p_past:
            verb_src, verb_tgt = verb_src + "ed", verb_tgt + _PAST_MARKER
        elif not subject.plural:
            verb_src += "s"
        return _Phrase([verb_src], [verb_tgt + agreement],
                       deps=[_Dependency("agreement", _SUBJECT, 0, 0, verb_tgt, agreement)])

    def predicate(self, subject: _Phrase, depth: int) -> _Phrase:
        """Source: VERB [OBJECT] [PP...]. Target: [OBJECT] [PP...] VERB-agreeing-with-subject (verb-final).
        The verb's dependency is left for the caller to attach to the subject (_SUBJECT)."""
        transitive = self.rng.random() < 0.6
        verb = self.verb(subject, transitive)
        obj = self.noun_phrase(depth + 1) if transitive else _Phrase([], [])
        pps = [self.prepositional_phrase(depth + 1) for _ in range(2) if self.rng.random() < self.cfg.p_adjunct_pp]
        return _assemble([verb, obj, *pps], [obj, *pps, verb])

    def coordinated_np(self, depth: int) -> _Phrase:
        first, second = self.noun_phrase(depth + 1), self.noun_phrase(depth + 1)
        phrase = _assemble([first, "and", second], [first, _NP_CONJUNCTION, second], like=first)
        phrase.plural = True  # the gender is the first conjunct's
        return phrase

    def noun(self) -> _Noun:
        if self.rng.random() < self.cfg.p_compound:
            return self.lex.compound(self.rng.choice(self.lex.nouns), self.rng.choice(self.lex.nouns))
        return self.rng.choice(self.lex.nouns)

    def noun_phrase(self, depth: int) -> _Phrase:
        """Source: DET [very] ADJ* NOUN [PP] [REL]. Target: NOUN ADJ-agr* [DET] [PP] [REL]."""
        rng, cfg = self.rng, self.cfg
        det = rng.choice(list(_DETERMINERS))
        det_tgt, forced_plural = _DETERMINERS[det]
        plural = rng.random() < 0.4 if forced_plural is None else forced_plural
        noun = self.noun()
        agreement = ADJ_AGREEMENT[(noun.gender, plural)]
        src, adj_tgt = [det], []
        while rng.random() < cfg.p_adjective and len(adj_tgt) < 3:
            adj_src, adj_lemma = rng.choice(self.lex.adjectives)
            if rng.random() < cfg.p_very:
                src += ["very", adj_src]
                adj_tgt.append(_INTENSIFIER_PREFIX + adj_lemma + agreement)
            else:
                src.append(adj_src)
                adj_tgt.append(adj_lemma + agreement)
        head = len(src)
        src.append(noun.src + "s" if plural else noun.src)
        tgt = noun.tgt[:-1] + [noun.tgt[-1] + (_PLURAL_SUFFIX if plural else "")] + adj_tgt
        tgt += [det_tgt] if det_tgt else []
        phrase = _Phrase(src, tgt, noun.gender, plural, head)
        if depth < cfg.max_depth and rng.random() < cfg.p_noun_pp:
            pp = self.prepositional_phrase(depth + 1)
            phrase = _assemble([phrase, pp], [phrase, pp], like=phrase)
        if depth < cfg.max_depth and rng.random() < cfg.p_relative_clause:
            rel = self.relative_clause(phrase, depth + 1)
            phrase = _assemble([phrase, rel], [phrase, rel], like=phrase, subject=phrase)
        return phrase

    def relative_clause(self, head: _Phrase, depth: int) -> _Phrase:
        """A subject relative leaves its verb's controller open (_SUBJECT: the head noun, attached by the caller)."""
        if self.rng.random() < 0.6:  # subject relative: the verb agrees with the head noun
            predicate = self.predicate(head, depth)
            return _assemble(["that", predicate], ["ke", predicate])
        # object relative: "that the dogs see" -> "ke dog-PL na see-agree(dogs)"
        return self.object_relative(self.noun_phrase(self.cfg.max_depth))

    def object_relative(self, subject: _Phrase) -> _Phrase:
        verb = self.verb(subject, transitive=True)
        return _assemble(["that", subject, verb], ["ke", subject, verb], subject=subject)

    def prepositional_phrase(self, depth: int) -> _Phrase:
        prep_src, postposition = self.rng.choice(self.lex.prepositions)
        obj = self.noun_phrase(depth)
        return _assemble([*prep_src, obj], [obj, postposition])


def coordinate(parts: list) -> _Phrase:
    """Clauses joined by their (source) conjunctions, in the same order on both sides."""
    return _assemble(parts, [_FUNCTION_TRANSLATIONS.get(p, p) if isinstance(p, str) else p for p in parts])


def finish(sentence: _Phrase, topic: _Phrase) -> dict:
    """The dataset row: the texts and the structure targeted evaluation needs (see SentenceGenerator.pair)."""
    deps = []
    seen: dict[str, int] = {}
    for d in sorted(sentence.deps, key=lambda d: d.tgt_index):
        controller = topic.head if d.controller == _TOPIC else d.controller
        assert isinstance(controller, int), d  # every _SUBJECT was attached by its clause
        # occurrence: how many marked words on the same stem come before this one in the target, so a scorer can find
        # "the second verb built on this lemma" in a hypothesis whatever else it inserted or dropped.
        occurrence = seen.get(d.stem, 0)
        seen[d.stem] = occurrence + 1
        deps.append({"kind": d.kind, "controller": controller, "dependent": d.dependent,
                     "distance": abs(d.dependent - controller), "tgt_index": d.tgt_index, "stem": d.stem,
                     "marker": d.marker, "occurrence": occurrence, "probe": d.probe,
                     "sentence_length": len(sentence.src)})
    deps.sort(key=lambda d: d["dependent"])
    return {"src": " ".join(sentence.src) + ".", "tgt": " ".join(sentence.tgt) + ".",
            "clauses": sum(d["kind"] == "agreement" for d in deps),
            "max_dependency": max((d["distance"] for d in deps), default=0), "dependencies": deps}


def bucket_of(n_words: int, buckets=LENGTH_BUCKETS) -> int:
    """Index of the (contiguous, ascending) bucket holding n_words; an error outside them all."""
    if not buckets[0][0] <= n_words <= buckets[-1][1]:
        raise ValueError(f"length {n_words} is outside every bucket {buckets}")
    return bucket_index(n_words, [hi for _, hi in buckets[:-1]])


_MAX_ATTEMPTS_PER_SENTENCE = 2000  # the long-tail buckets fill slowly; past this a bucket is out of reach


def generate_splits(cfg: GrammarConfig, generator: type[SentenceGenerator] = SentenceGenerator,
                    test_split=None) -> dict[str, list[dict]]:
    """Train is sampled from the natural length distribution; valid and test are stratified by length bucket (or
    the test split is `test_split(generator, seen)`'s, seqbench.data.longrange's length x distance grid).

    Splits never share a source sentence. Each split has its own random stream, so resizing one leaves the others as
    they were.
    """
    lexicon = Lexicon.build(cfg)
    seen: set[str] = set()
    splits = {}
    for offset, name in ((1, "test"), (2, "valid")):
        per_bucket = cfg.test_per_bucket if name == "test" else cfg.valid_per_bucket
        gen = generator(cfg, lexicon, random.Random(cfg.seed * 1000 + offset))
        if name == "test" and test_split is not None:
            splits[name] = test_split(gen, seen)
            continue
        counts = [0] * len(cfg.length_buckets)
        rows = []
        for _ in range(_MAX_ATTEMPTS_PER_SENTENCE * per_bucket * len(counts)):
            if min(counts) >= per_bucket:
                break
            row = gen.pair()
            if row["src"] in seen:
                continue
            b = bucket_of(word_count(row["src"]), cfg.length_buckets)
            if counts[b] < per_bucket:
                counts[b] += 1
                seen.add(row["src"])
                rows.append(row)
        else:
            short = [f"{lo}-{hi}" for (lo, hi), n in zip(cfg.length_buckets, counts) if n < per_bucket]
            raise ConfigError(f"data.corpus: this grammar (clause_count_weights, max_words) cannot produce "
                              f"{per_bucket} {name} sentences in the length bucket(s) {', '.join(short)}")
        splits[name] = rows
    gen = generator(cfg, lexicon, random.Random(cfg.seed * 1000))
    train = []
    while len(train) < cfg.train_size:
        row = gen.pair()
        if row["src"] not in seen:
            seen.add(row["src"])
            train.append(row)
    splits["train"] = train
    return splits


def dictionary_translate(src: str, lexicon: Lexicon) -> str:
    """Monotone word-for-word baseline: each source word replaced by its dictionary entry, in source order.

    It knows the lexicon perfectly (plural nouns, compounds, tenses, default agreement forms) but cannot reorder and
    cannot see agreement partners, which is exactly what the task is built to require.
    """
    roots = {n.src: n for n in lexicon.nouns}
    table = {a: t + ADJ_AGREEMENT[(0, False)] for a, t in lexicon.adjectives}
    for v, t in lexicon.transitive + lexicon.intransitive:
        table[v + "s"] = t + VERB_AGREEMENT[(0, False)]
        table[v] = t + VERB_AGREEMENT[(0, True)]
        table[v + "ed"] = t + _PAST_MARKER + VERB_AGREEMENT[(0, False)]
    table |= {p[0]: t for p, t in lexicon.prepositions if len(p) == 1}
    table |= {d: t for d, (t, _) in _DETERMINERS.items()}
    table |= _FUNCTION_TRANSLATIONS

    def noun(word: str) -> str | None:
        plural = word.endswith("s") and word[:-1] not in table
        stem = word[:-1] if plural else word
        entry = roots.get(stem)
        if entry is None:  # a compound: the first root that leaves a root behind
            entry = next((lexicon.compound(roots[stem[:i]], roots[stem[i:]]) for i in range(1, len(stem))
                          if stem[:i] in roots and stem[i:] in roots), None)
        return None if entry is None else " ".join(entry.tgt) + (_PLURAL_SUFFIX if plural else "")

    out = [table.get(w) or noun(w) or "" for w in src.rstrip(".").split()]
    return " ".join(w for w in out if w) + "."
