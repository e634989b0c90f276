"""Long-range structure in the synthetic pair (issue 12 parts 1-2): the default task is unchanged, the recorded
dependencies are right on a hand-checked derivation, the long-range preset's dependencies grow with length, and
targeted accuracy / BLEU by group score what they claim."""
from __future__ import annotations

import random

import pytest
import sacrebleu

from seqbench.common.structure import DISTANCE_EDGES, STRUCTURE_COLUMNS
from seqbench.common.text import DEFAULT_LENGTH_EDGES, bucket_index, word_count
from seqbench.data.longrange import LongRangeGenerator, generate_long_range_splits, grid_cells
from seqbench.data.synthetic import (
    ADJ_AGREEMENT,
    MARKERS,
    VERB_AGREEMENT,
    GrammarConfig,
    Lexicon,
    SentenceGenerator,
    _assemble,
    dictionary_translate,
)
from seqbench.scoring.metrics import bleu_by_group, bleu_by_length
from seqbench.scoring.targeted import align, marker_of, structure_scores, targeted_scores

from conftest import compose_train


def test_default_task_is_unchanged():
    """The first pairs of the default train and test streams and the cache key, as generated before the long-range
    options existed (commit f041aef)."""
    cfg = GrammarConfig()
    assert cfg.cache_key() == "1efb594911fb"
    lexicon = Lexicon.build(cfg)
    train = SentenceGenerator(cfg, lexicon, random.Random(cfg.seed * 1000))
    assert [train.sentence() for _ in range(2)] == [
        ("my gealuvoomu lanucks some bribas in the broopugroosto.",
         "nyuxutsiiq dai yaozori mo zynyongkheiyung na nya shuot."),
        ("these difir gustem plooflifegoos voo because of a lutro and every lutrogragroo groneamed the lutrogragroos "
         "next to these plutrus.",
         "zheishongzhaowaori khiijyon xeiqon ki zhiix xeihy tsiingotta e zhiixzhei tau zhiixzheiri na jiiwaori ki "
         "hunyy wukhyngtaot.")]
    test = SentenceGenerator(cfg, lexicon, random.Random(cfg.seed * 1000 + 1))
    test.sentence()
    assert test.sentence() == ("a trera rools near these flatrigroovis and my kun ploofoo vooed.",
                               "shyshii xaonyiiheingri ki qazuq waoul e shiizhii hiiu dai tsiingtaul.")


class _FirstChoice:
    """A stand-in random stream that always takes the first option and answers 0.99 to every coin flip, so only
    the options set to 1.0 fire: a fixed derivation to check the recorded positions by hand."""

    def random(self) -> float:
        return 0.99

    def choice(self, options):
        return options[0]

    def choices(self, population, weights):
        return [population[max(range(len(weights)), key=weights.__getitem__)]]

    def randint(self, low, high):
        return low


def test_recorded_dependencies_on_a_hand_checked_derivation():
    """Three clauses and a fronted one: a centre-embedded subject, then pronoun subjects ("it" = clause 1's
    subject), whose verbs agree with the pronoun next to them (distance 1) while the pronoun refers back."""
    cfg = GrammarConfig(clause_count_weights=(0.0, 0.0, 1.0), p_pronoun_subject=1.0, p_center_embedding=1.0,
                        p_clause_fronting=1.0)
    lex = Lexicon.build(cfg)
    row = LongRangeGenerator(cfg, lex, _FirstChoice()).pair()
    noun, (trans_src, trans_tgt), (intr_src, intr_tgt) = lex.nouns[0], lex.transitive[0], lex.intransitive[0]
    n = noun.src
    assert row["src"].split() == [
        "the", n, "that", "the", n, "that", "the", n, trans_src + "s", trans_src + "s", intr_src + "s",  # 0-10
        "and", "it", intr_src + "s", "and", "it", intr_src + "s", "because", "it", intr_src + "s."]  # 11-19
    pairs = [(d["kind"], d["controller"], d["dependent"], d["distance"]) for d in row["dependencies"]]
    assert pairs == [("agreement", 7, 8, 1),     # the innermost "the N sees"
                     ("agreement", 4, 9, 5),     # the middle noun's verb, after the innermost clause
                     ("agreement", 1, 10, 9),    # the main verb, after both relatives
                     ("reference", 1, 12, 11), ("agreement", 12, 13, 1),  # "it" refers back; its verb agrees with it
                     ("reference", 1, 15, 14), ("agreement", 15, 16, 1),
                     ("reference", 1, 18, 17), ("agreement", 18, 19, 1)]
    assert row["clauses"] == 6 and row["max_dependency"] == 17 and not any(d["probe"] for d in row["dependencies"])
    # target: the fronted clause first ("ph-marker verb kau"), then clause 1 with its verbs stacked innermost first
    agree, pron = VERB_AGREEMENT[(noun.gender, False)], "ph" + ADJ_AGREEMENT[(noun.gender, False)]
    np_tgt = noun.tgt + ["na"]
    assert row["tgt"].rstrip(".").split() == (
        [pron, intr_tgt + agree, "kau"] + np_tgt + ["ke"] + np_tgt + ["ke"] + np_tgt
        + [trans_tgt + agree, trans_tgt + agree, intr_tgt + agree, "e", pron, intr_tgt + agree, "e", pron,
           intr_tgt + agree])
    tgt = row["tgt"].rstrip(".").split()
    for d in row["dependencies"]:
        assert tgt[d["tgt_index"]] == d["stem"] + d["marker"]


def test_a_long_subject_separates_its_head_noun_from_its_verb():
    cfg = GrammarConfig(p_long_subject=1.0, clause_count_weights=(1.0,))
    gen = LongRangeGenerator(cfg, Lexicon.build(cfg), random.Random(3))
    for modifiers in (3, 12, 30, 58):
        subject = gen.long_subject(modifiers)
        after_head = len(subject.src) - subject.head - 1
        assert modifiers <= after_head <= modifiers + 12  # stops at the first modifier that reaches the count
        main = gen.predicate(subject, 0)
        clause = _assemble([subject, main], [subject, main], like=subject, subject=subject)
        verb = next(d for d in clause.deps if d.dependent == len(subject.src))
        assert verb.controller == subject.head and verb.dependent - verb.controller == after_head + 1


@pytest.fixture(scope="module")
def longrange():
    """A modest test split of the data=synthetic_longrange preset (its options read from the composed config)."""
    corpus = compose_train(["data=synthetic_longrange"]).data.corpus
    options = {k: v for k, v in corpus.items() if k.startswith("p_")}
    assert set(options) == {"p_long_subject", "p_pronoun_subject", "p_center_embedding", "p_clause_fronting"}
    assert corpus.test_per_cell == 30
    cfg = GrammarConfig(seed=corpus.seed, train_size=50, valid_per_bucket=1, test_per_cell=8, **options)
    return cfg, generate_long_range_splits(cfg)["test"]


def test_every_distance_bucket_holds_ordinary_agreement_and_distance_varies_within_length(longrange):
    """Up to 41-60 words, every distance bucket has subject-verb agreement that is not a pronoun's (no pronoun next
    to the verb), and within every length bucket from 21-30 words up the probes span at least four distance
    buckets: distance and length can be read apart."""
    cfg, test = longrange
    pronoun_verbs = {(i, d["dependent"]) for i, r in enumerate(test) for d in r["dependencies"]
                     if d["kind"] == "agreement" and r["src"].split()[d["controller"]] in ("it", "they")}
    ordinary = [bucket_index(d["distance"], DISTANCE_EDGES) for i, r in enumerate(test) for d in r["dependencies"]
                if d["kind"] == "agreement" and (i, d["dependent"]) not in pronoun_verbs]
    assert set(range(6)) <= set(ordinary)  # 1-5, 6-10, 11-20, 21-30, 31-40, 41-60
    probes = [(bucket_index(word_count(r["src"]), DEFAULT_LENGTH_EDGES), bucket_index(d["distance"], DISTANCE_EDGES))
              for r in test for d in r["dependencies"] if d["probe"]]
    assert len(probes) == len(test) == len(grid_cells(cfg)) * 8  # one probe a sentence, 8 sentences a cell
    for length in range(2, 7):
        assert len({distance for bucket, distance in probes if bucket == length}) >= 4, length
    for r in test:  # the recorded distances are consistent with the recorded positions and texts
        tgt = r["tgt"].rstrip(".").split()
        assert r["max_dependency"] == max(d["distance"] for d in r["dependencies"])
        for d in r["dependencies"]:
            assert d["distance"] == abs(d["dependent"] - d["controller"]) > 0
            assert tgt[d["tgt_index"]] == d["stem"] + d["marker"]


def test_longrange_dictionary_baseline_is_weak_but_not_empty(longrange):
    """A monotone word-for-word dictionary knows every word but cannot reorder or agree: a few BLEU, and the marked
    words it does produce carry the default marker (about one in six right by chance)."""
    cfg, test = longrange
    lexicon = Lexicon.build(cfg)
    hyps = [dictionary_translate(r["src"], lexicon) for r in test]
    refs, sources = [r["tgt"] for r in test], [r["src"] for r in test]
    assert 0.5 <= sacrebleu.corpus_bleu(hyps, [refs]).score <= 10
    scores = targeted_scores(hyps, refs, sources, [r["dependencies"] for r in test], MARKERS)
    assert 5 <= scores["coverage"] <= 40 and 5 <= scores["accuracy"] <= 40


# A hand-built sentence: three verbs built on the same stem ("qeit"), agreeing with different subjects.
HAND_REFERENCE = "zhao na qeitek e zhii ki qeitotta e qeitaul."
HAND_DEPS = [{"kind": "agreement", "distance": 2, "tgt_index": 2, "stem": "qeit", "marker": "ek"},
             {"kind": "agreement", "distance": 2, "tgt_index": 6, "stem": "qeit", "marker": "otta"},
             {"kind": "agreement", "distance": 3, "tgt_index": 8, "stem": "qeit", "marker": "ul"}]


@pytest.mark.parametrize("hypothesis, covered, correct", [
    (HAND_REFERENCE, 3, 3),
    ("zhao na qeitek e zhii ki qeitotta e qeittaul.", 3, 3),  # a tense marker added: not an agreement error
    ("zhao na qeitot e zhii ki qeitotta e qeitaul.", 3, 2),  # the first verb's marker wrong
    ("zhao na e zhii ki qeitotta e qeitaul.", 2, 2),  # the first verb dropped: coverage, not accuracy
    # the first verb dropped and the third verb's word right where the first stood, with the first's marker: an
    # occurrence count would take it for the first verb; the alignment keeps it where it belongs
    ("zhao na e zhii ki qeitotta e qeitek.", 2, 1),
    ("xaoq ywu.", 0, 0),
])
def test_coverage_and_conditional_accuracy_on_hand_built_hypotheses(hypothesis, covered, correct):
    scores = targeted_scores([hypothesis], [HAND_REFERENCE], ["a b c d e f g h i j"], [HAND_DEPS], MARKERS)
    assert scores["dependencies"] == 3 and scores["covered"] == covered
    assert scores["coverage"] == pytest.approx(100 * covered / 3)
    assert scores["accuracy"] == (pytest.approx(100 * correct / covered) if covered else None)


def test_the_alignment_pairs_reference_words_with_hypothesis_words():
    assert align(["a", "b", "c"], ["a", "b", "c"]) == [0, 1, 2]
    assert align(["a", "c"], ["a", "b", "c"]) == [0, None, 1]  # b deleted
    assert align(["x", "a", "b"], ["a", "b"]) == [1, 2]  # an insertion before
    assert align(["a", "z", "c"], ["a", "b", "c"]) == [0, 1, 2]  # a substitution keeps the pairing
    marker = lambda word: marker_of(word, "qeit", "agreement", MARKERS)  # noqa: E731
    assert marker("qeittaotta") == "otta" and marker("qeitot") == "ot"
    assert marker("zhao") is None and marker("qeit") is None


def test_targeted_scores_of_the_references_and_of_a_corruption(longrange):
    _, test = longrange
    deps, refs, sources = [r["dependencies"] for r in test], [r["tgt"] for r in test], [r["src"] for r in test]
    perfect = targeted_scores(refs, refs, sources, deps, MARKERS)
    total = sum(map(len, deps))
    assert (perfect["coverage"], perfect["accuracy"], perfect["dependencies"]) == (100.0, 100.0, total)
    assert len(perfect["by_distance"]) == len(DISTANCE_EDGES) + 1
    cells = perfect["by_length_distance"]
    assert {c["kind"] for c in cells} == {"agreement"} and all(c["probes"] for c in cells)  # probes: agreement only
    assert sum(c["dependencies"] for c in cells) == len(test)
    # A word inserted first and the final word split from its ".": the same scores.
    hmm = ["hmm " + r.replace(".", " .") for r in refs]
    assert targeted_scores(hmm, refs, sources, deps, MARKERS)["accuracy"] == 100.0
    # The probe's marker corrupted in every sentence: exactly the probes are wrong, still covered.
    corrupted = []
    for ref, sentence in zip(refs, deps):
        words = ref.rstrip(".").split()
        d = next(d for d in sentence if d["probe"])
        wrong = next(m for m in sorted(VERB_AGREEMENT.values()) if m != d["marker"] and not m.endswith(d["marker"]))
        words[d["tgt_index"]] = d["stem"] + wrong
        corrupted.append(" ".join(words) + ".")
    scored = targeted_scores(corrupted, refs, sources, deps, MARKERS)
    assert scored["coverage"] == 100.0 and scored["accuracy"] == pytest.approx(100.0 * (total - len(test)) / total)
    assert all(c["accuracy"] == 0.0 for c in scored["by_length_distance"])
    empty = targeted_scores(["" for _ in refs], refs, sources, deps, MARKERS)
    assert empty["coverage"] == 0.0 and empty["accuracy"] is None


def test_bleu_by_group_agrees_with_bleu_by_length(longrange):
    _, test = longrange
    refs = [r["tgt"] for r in test]
    hyps = [" ".join(r.split()[:-2]) for r in refs]  # imperfect, so the buckets differ
    lengths = [word_count(r["src"]) for r in test]
    by_length = bleu_by_length(hyps, refs, lengths)
    by_group = bleu_by_group(hyps, refs, lengths, (10, 20, 30, 40, 50, 60))
    assert [(b["bucket"], b["min_words"], b["max_words"], b["sentences"], b["bleu"]) for b in by_length] == \
        [(b["bucket"], b["min"], b["max"], b["sentences"], b["bleu"]) for b in by_group]
    scores = structure_scores(hyps, refs, [r["src"] for r in test], [r["clauses"] for r in test],
                              [r["max_dependency"] for r in test], [r["dependencies"] for r in test], MARKERS)
    assert sum(b["sentences"] for b in scores["bleu_by_clauses"]) == len(test)
    assert sum(b["sentences"] for b in scores["bleu_by_dependency"]) == len(test)
    assert scores["targeted"]["by_kind"]["reference"]["dependencies"] > 0


def test_corpus_and_datamodule_keep_the_structure_columns(tmp_path):
    from datasets import Dataset, DatasetDict

    from seqbench.data.corpus import SyntheticCorpus, save_atomically
    from seqbench.data.datamodule import Seq2SeqDataModule

    corpus = SyntheticCorpus(train_size=300, valid_per_bucket=2, test_per_bucket=3, p_pronoun_subject=0.5)
    # a cache written before the columns existed is regenerated with them
    stale = DatasetDict({s: Dataset.from_list([{"src": "a b.", "tgt": "c d."}]) for s in ("train", "valid", "test")})
    save_atomically(stale, tmp_path / corpus.name / "dataset")
    assert set(STRUCTURE_COLUMNS) <= set(corpus.load(tmp_path)["test"].column_names)
    data = Seq2SeqDataModule(corpus, str(tmp_path), vocab_size=300, max_src_len=40)
    data.setup()
    test = data.evaluation("test")
    columns = test.metadata
    assert set(columns) == set(STRUCTURE_COLUMNS)
    assert len(columns["clauses"]) == len(test.sources) == 4 * 3  # the 41+ buckets are filtered out
    assert all(sum(d["kind"] == "agreement" for d in deps) == c  # one agreeing verb per clause
               for deps, c in zip(columns["dependencies"], columns["clauses"]))
    for src, deps in zip(test.sources, columns["dependencies"]):
        assert all(d["dependent"] < word_count(src) for d in deps)


def test_the_length_of_a_length_distance_cell_is_the_sources():
    """A 9-word source (bucket 1-10) whose reference has 12 words (bucket 11-20): its dependency is counted in the
    1-10 row, the source's length, which is what the test grid holds fixed."""
    reference = "ka mo li su qeitot ne ra to pi wa zu ho"
    source = "one two three four five six seven eight nine"
    dependency = {"kind": "agreement", "distance": 3, "tgt_index": 4, "stem": "qeit", "marker": "ot", "probe": True}
    scored = targeted_scores([reference], [reference], [source], [[dependency]], MARKERS)
    assert [(c["length"], c["distance"], c["dependencies"]) for c in scored["by_length_distance"]] == \
        [("1-10", "1-5", 1)]
