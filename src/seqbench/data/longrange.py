"""Long-range structure on the synthetic pair (data=synthetic_longrange): dependencies whose distance is set by
construction, so that "a long dependency" does not simply mean "a long sentence" or "a pronoun".

- Long subjects (GrammarConfig.p_long_subject): a clause's subject carries a chain of post-modifiers (prepositional
  phrases and subject relative clauses) between its head noun and its verb, 3 to max_subject_modifiers words. The
  target verb, clause-final, agrees in gender (a property of the target noun only) and number with that head noun
  across all of them: ordinary subject-verb agreement at distances up to 59 words.
- Pronoun subjects (p_pronoun_subject): a later clause's subject is "it"/"they", referring to the first clause's
  subject. The target pronoun marks that noun's (target-only) gender: a `reference` dependency from the antecedent
  to the pronoun, however far back. The clause's verb agrees with the pronoun next to it (an `agreement` dependency
  of distance 1): pronoun copying is its own kind, not long agreement.
- Centre embedding (p_center_embedding): a subject with object relatives nested 2-3 deep, each verb after every
  deeper clause; clause fronting (p_clause_fronting): a final "because"/"although" clause that the target puts first.
- The length x distance test split (test_per_cell > 0): for every source-length bucket and every distance bucket
  that fits in it, test_per_cell sentences of that length, each built around one probe clause whose subject-verb
  distance falls in that distance bucket, the rest of the sentence ordinary clauses. Each probe dependency is marked
  (`"probe": true`; every dependency records it), one per sentence, so accuracy by distance can be read within a
  length bucket and from independent items (seqbench.scoring.targeted's length x distance table).
"""
from __future__ import annotations

from seqbench.common.errors import ConfigError
from seqbench.common.structure import DISTANCE_EDGES
from seqbench.common.text import length_buckets, word_count
from seqbench.data.synthetic import (
    _TOPIC,
    ADJ_AGREEMENT,
    GrammarConfig,
    SentenceGenerator,
    _assemble,
    _Dependency,
    _Phrase,
    coordinate,
    finish,
    generate_splits,
)

# Source words of the long-range options, and their target words. No generated lexicon word can equal one of them:
# source words start with an onset from _SRC_ONSETS, target words with one from _TGT_ONSETS (none is p, k or m).
PRONOUN_STEM = "ph"  # target pronoun: "ph" + the adjective agreement suffix of its antecedent ("pha", "phon", ...)
SUBORDINATORS = {"because": "kau", "although": "mei"}  # clause-final in the (head-final) target
MIN_MODIFIERS = 3  # the shortest post-modifier: a prepositional phrase "near the dog"
_ATTEMPTS = 500  # tries to build one grid sentence of the requested length and distance


class LongRangeGenerator(SentenceGenerator):
    """The synthetic grammar plus the long-range options (see the module docstring)."""

    def subject(self, topic: _Phrase | None) -> _Phrase:
        cfg, rng = self.cfg, self.rng
        if topic is not None and cfg.p_pronoun_subject and rng.random() < cfg.p_pronoun_subject:
            return self.pronoun(topic)
        if cfg.p_center_embedding and rng.random() < cfg.p_center_embedding:
            return self.center_embedded_np(rng.choice((2, 3)))
        if cfg.p_long_subject and rng.random() < cfg.p_long_subject:
            return self.long_subject(rng.randint(MIN_MODIFIERS, cfg.max_subject_modifiers))
        return super().subject(topic)

    def extend(self, sentence: _Phrase, topic: _Phrase) -> _Phrase:
        if self.cfg.p_clause_fronting and self.rng.random() < self.cfg.p_clause_fronting:
            # "MAIN because SUB" -> "SUB' kau MAIN'": the subordinate clause crosses every main clause.
            conjunction = self.rng.choice(list(SUBORDINATORS))
            sub = self.clause(topic)
            sentence = _assemble([sentence, conjunction, sub], [sub, SUBORDINATORS[conjunction], sentence])
        return sentence

    def long_subject(self, modifier_words: int) -> _Phrase:
        """A noun phrase whose head noun is followed by about `modifier_words` words of post-modifiers (it stops at the
        first modifier that reaches the count): prepositional phrases ("near the big dogs") and subject relative clauses
        ("that sees a cat", whose verb agrees with the head noun too). Source: DET ADJ* NOUN MOD MOD ...; target:
        NOUN ADJ* [DET] MOD' MOD' ... as in the base grammar."""
        phrase = self.noun_phrase(self.cfg.max_depth)  # determiner, adjectives and noun, no modifiers of its own
        while len(phrase.src) - phrase.head - 1 < modifier_words:
            if self.rng.random() < 0.6:
                modifier = self.prepositional_phrase(self.cfg.max_depth)
                phrase = _assemble([phrase, modifier], [phrase, modifier], like=phrase)
            else:
                relative = self._subject_relative(phrase)
                phrase = _assemble([phrase, relative], [phrase, relative], like=phrase, subject=phrase)
        return phrase

    def _subject_relative(self, head: _Phrase) -> _Phrase:
        """"that VERB OBJECT": the verb agrees with the head noun (attached by the caller, _SUBJECT)."""
        verb = self.verb(head, transitive=True)
        obj = self.noun_phrase(self.cfg.max_depth)
        return _assemble(["that", verb, obj], ["ke", obj, verb])

    def center_embedded_np(self, depth: int) -> _Phrase:
        """Object relatives nested `depth` deep, each inside the subject of the one before:
        "the dog that the cat that the boy sees chases" -> "dog na ke cat na ke boy na see(boy) chase(cat)".
        As the clause's subject, the main verb follows the innermost clause's verbs, so each noun is separated from
        its verb by every deeper clause (Gibson 1998's centre-embedding)."""
        noun = self.noun_phrase(self.cfg.max_depth)  # no PP or relative clause of its own
        if depth == 0:
            return noun
        rel = self.object_relative(self.center_embedded_np(depth - 1))
        return _assemble([noun, rel], [noun, rel], like=noun)

    def pronoun(self, antecedent: _Phrase) -> _Phrase:
        """"it"/"they" (number only) -> "ph" + the antecedent's gender and number: only the antecedent's target
        gender decides the marker, and the antecedent is the first clause's subject, however far back. The pronoun
        is its clause's subject: the verb agrees with it."""
        marker = ADJ_AGREEMENT[(antecedent.gender, antecedent.plural)]
        return _Phrase(["they" if antecedent.plural else "it"], [PRONOUN_STEM + marker], antecedent.gender,
                       antecedent.plural, 0, [_Dependency("reference", _TOPIC, 0, 0, PRONOUN_STEM, marker)])

    def probe_clause(self, low: int, high: int) -> _Phrase | None:
        """A clause whose subject-verb distance (source words from the head noun to its verb) is in [low, high], its
        main verb's dependency marked as the probe; None when a draw misses the range (the caller retries)."""
        modifiers = self.rng.randint(max(0, low - 1), high - 1)
        subject = self.long_subject(modifiers) if modifiers >= MIN_MODIFIERS else self.noun_phrase(self.cfg.max_depth)
        predicate = self.predicate(subject, depth=0)
        predicate.deps[0].probe = True  # the predicate's first dependency is its verb's (SentenceGenerator.predicate)
        distance = len(subject.src) - subject.head
        if not low <= distance <= high:
            return None
        return _assemble([subject, predicate], [subject, predicate], like=subject, subject=subject)

    def grid_sentence(self, length: tuple[int, int], distance: tuple[int, int]) -> dict | None:
        """A sentence of `length` (min, max) source words around one probe clause of subject-verb `distance`; other
        clauses join before it (no pronouns: nothing to refer back to) or after it. None after _ATTEMPTS misses."""
        for _ in range(_ATTEMPTS):
            probe = self.probe_clause(*distance)
            if probe is None:
                continue
            parts, topic = [probe], probe
            while sum(1 if isinstance(p, str) else len(p.src) for p in parts) + 1 < length[0]:  # +1: the final "."
                conjunction = self.rng.choice(("and", "but"))
                if self.rng.random() < 0.5:
                    topic = self.clause(None)
                    parts = [topic, conjunction, *parts]
                else:
                    parts += [conjunction, self.clause(topic)]
            sentence = coordinate(parts)
            if word_count(" ".join(sentence.src) + ".") <= length[1]:
                return finish(sentence, topic)
        return None


def grid_cells(cfg: GrammarConfig) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """The (length bucket, distance bucket) cells of the test grid: every distance bucket up to the last closed one
    (41-60) whose shortest distance leaves room for the verb and the final word in the length bucket."""
    lengths = [(lo, min(hi, cfg.max_words)) for lo, hi in cfg.length_buckets]
    distances = [(lo, hi) for lo, hi in length_buckets(DISTANCE_EDGES) if hi is not None]
    return [(length, (lo, min(hi, length[1] - 2))) for length in lengths for lo, hi in distances
            if lo <= length[1] - 2]


def grid_test_split(generator: LongRangeGenerator, seen: set[str]) -> list[dict]:
    """test_per_cell sentences per grid cell, none seen before (`seen` is updated)."""
    rows = []
    for length, distance in grid_cells(generator.cfg):
        found = 0
        for _ in range(20 * generator.cfg.test_per_cell):
            row = generator.grid_sentence(length, distance)
            if row is None:
                break
            if row["src"] in seen:
                continue
            seen.add(row["src"])
            rows.append(row)
            found += 1
            if found == generator.cfg.test_per_cell:
                break
        if found < generator.cfg.test_per_cell:
            raise ConfigError(f"data.corpus: this grammar cannot produce {generator.cfg.test_per_cell} test sentences "
                              f"of {length[0]}-{length[1]} words with a subject-verb distance of "
                              f"{distance[0]}-{distance[1]} (raise max_subject_modifiers or lower test_per_cell)")
    return rows


def generate_long_range_splits(cfg: GrammarConfig) -> dict[str, list[dict]]:
    """seqbench.data.synthetic.generate_splits with the long-range grammar, and the length x distance test grid when
    cfg.test_per_cell > 0."""
    return generate_splits(cfg, LongRangeGenerator, grid_test_split if cfg.test_per_cell else None)
