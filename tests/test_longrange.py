"""Long-range structure in the synthetic pair (issue 12 parts 1-2): the default task is unchanged, the recorded
dependencies are right on a hand-checked derivation, the long-range preset's dependencies grow with length, and
targeted accuracy / BLEU by group score what they claim."""
from __future__ import annotations

import random

import pytest
import sacrebleu

from seqbench.common.structure import ADJ_AGREEMENT, STRUCTURE_COLUMNS, VERB_AGREEMENT
from seqbench.common.text import word_count
from seqbench.data.synthetic import (
    GrammarConfig,
    Lexicon,
    SentenceGenerator,
    dictionary_translate,
    generate_splits,
)
from seqbench.scoring.metrics import bleu_by_group, bleu_by_length
from seqbench.scoring.targeted import DEFAULT_DISTANCE_EDGES, marker_found, structure_scores, targeted_accuracy

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


def test_recorded_dependencies_on_a_hand_checked_derivation():
    cfg = GrammarConfig(clause_count_weights=(0.0, 0.0, 1.0), p_cross_clause_reference=1.0, p_center_embedding=1.0,
                        p_clause_fronting=1.0)
    lex = Lexicon.build(cfg)
    row = SentenceGenerator(cfg, lex, _FirstChoice()).pair()
    noun, (trans_src, trans_tgt), (intr_src, intr_tgt) = lex.nouns[0], lex.transitive[0], lex.intransitive[0]
    n = noun.src
    # clause 1: a depth-2 centre-embedded subject; clauses 2, 3 and the fronted "because" clause: "it" = clause 1's
    # subject (the first "the N", position 1)
    assert row["src"].split() == [
        "the", n, "that", "the", n, "that", "the", n, trans_src + "s", trans_src + "s", intr_src + "s",  # 0-10
        "and", "it", intr_src + "s", "and", "it", intr_src + "s", "because", "it", intr_src + "s."]  # 11-19
    pairs = [(d["kind"], d["controller"], d["dependent"], d["distance"]) for d in row["dependencies"]]
    assert pairs == [("agreement", 7, 8, 1),     # the innermost "the N sees"
                     ("agreement", 4, 9, 5),     # the middle noun's verb, after the innermost clause
                     ("agreement", 1, 10, 9),    # the main verb, after both relatives
                     ("reference", 1, 12, 11), ("agreement", 1, 13, 12),
                     ("reference", 1, 15, 14), ("agreement", 1, 16, 15),
                     ("reference", 1, 18, 17), ("agreement", 1, 19, 18)]
    assert row["clauses"] == 6 and row["max_dependency"] == 18
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
    k = 3 + 3 * len(np_tgt) + 2  # the innermost verb's target position
    by_dependent = {d["dependent"]: d for d in row["dependencies"]}
    assert [(by_dependent[i]["tgt_index"], by_dependent[i]["occurrence"]) for i in (8, 9, 10, 18, 19)] == \
        [(k, 0), (k + 1, 1), (k + 2, 1), (0, 0), (1, 0)]
    assert marker_found(row["tgt"], by_dependent[9])


@pytest.fixture(scope="module")
def longrange():
    """A modest test split of the data=synthetic_longrange preset (its options read from the composed config)."""
    corpus = compose_train(["data=synthetic_longrange"]).data.corpus
    options = {k: v for k, v in corpus.items() if k.startswith("p_")}
    assert set(options) == {"p_cross_clause_reference", "p_center_embedding", "p_clause_fronting"}
    cfg = GrammarConfig(seed=corpus.seed, train_size=50, valid_per_bucket=1, test_per_bucket=40, **options)
    return cfg, generate_splits(cfg)["test"]


def test_longrange_dependencies_grow_with_length(longrange):
    _, test = longrange
    longest = [r for r in test if word_count(r["src"]) > 60]
    assert len(longest) == 40
    assert sum(r["max_dependency"] >= 40 for r in longest) / len(longest) >= 0.20
    for r in test:  # the recorded distances are consistent with the recorded positions and texts
        tgt = r["tgt"].rstrip(".").split()
        assert r["max_dependency"] == max(d["distance"] for d in r["dependencies"])
        for d in r["dependencies"]:
            assert d["distance"] == d["dependent"] - d["controller"] > 0
            assert tgt[d["tgt_index"]] == d["stem"] + d["marker"]
    kinds = {d["kind"] for r in test for d in r["dependencies"]}
    assert kinds == {"agreement", "reference"}


def test_longrange_dictionary_baseline_is_weak(longrange):
    cfg, test = longrange
    lexicon = Lexicon.build(cfg)
    hyps = [dictionary_translate(r["src"], lexicon) for r in test]
    assert sacrebleu.corpus_bleu(hyps, [[r["tgt"] for r in test]]).score <= 25


def test_targeted_accuracy_reads_hypotheses_not_references(longrange):
    _, test = longrange
    deps = [r["dependencies"] for r in test]
    refs = [r["tgt"] for r in test]
    perfect = targeted_accuracy(refs, deps)
    assert perfect["accuracy"] == 100.0 and perfect["dependencies"] == sum(map(len, deps))
    assert all(b["accuracy"] in (100.0, None) for b in perfect["by_distance"])
    assert len(perfect["by_distance"]) == len(DEFAULT_DISTANCE_EDGES) + 1
    # A hypothesis of the wrong length (a word inserted first, the final word split from its ".") scores the same.
    shifted = ["hmm " + r.replace(".", " .") for r in refs]
    assert targeted_accuracy(shifted, deps)["accuracy"] == 100.0
    # Corrupting one marker per sentence (the last dependency's word) loses exactly those dependencies.
    corrupted = []
    for ref, sentence in zip(refs, deps):
        words = ref.rstrip(".").split()
        d = sentence[-1]
        wrong = next(m for m in sorted(VERB_AGREEMENT.values() if d["kind"] == "agreement"
                                       else ADJ_AGREEMENT.values()) if m != d["marker"])
        words[d["tgt_index"]] = d["stem"] + wrong
        corrupted.append(" ".join(words) + ".")
    scored = targeted_accuracy(corrupted, deps)
    total = perfect["dependencies"]
    assert scored["accuracy"] == pytest.approx(100.0 * (total - len(test)) / total)
    # Dropping the marked words entirely misses them too; the monotone dictionary baseline is far from perfect.
    assert targeted_accuracy(["" for _ in refs], deps)["accuracy"] == 0.0
    assert targeted_accuracy(list(reversed(refs)), deps)["accuracy"] < 50


def test_bleu_by_group_agrees_with_bleu_by_length(longrange):
    _, test = longrange
    refs = [r["tgt"] for r in test]
    hyps = [" ".join(r.split()[:-2]) for r in refs]  # imperfect, so the buckets differ
    lengths = [word_count(r["src"]) for r in test]
    by_length = bleu_by_length(hyps, refs, lengths)
    by_group = bleu_by_group(hyps, refs, lengths, (10, 20, 30, 40, 50, 60))
    assert [(b["bucket"], b["min_words"], b["max_words"], b["sentences"], b["bleu"]) for b in by_length] == \
        [(b["bucket"], b["min"], b["max"], b["sentences"], b["bleu"]) for b in by_group]
    scores = structure_scores(hyps, refs, [r["clauses"] for r in test], [r["max_dependency"] for r in test],
                              [r["dependencies"] for r in test])
    assert sum(b["sentences"] for b in scores["bleu_by_clauses"]) == len(test)
    assert sum(b["sentences"] for b in scores["bleu_by_dependency"]) == len(test)
    assert scores["targeted"]["by_kind"]["reference"]["dependencies"] > 0


def test_corpus_and_datamodule_keep_the_structure_columns(tmp_path):
    from datasets import Dataset, DatasetDict

    from seqbench.data.corpus import SyntheticCorpus, save_atomically
    from seqbench.data.datamodule import Seq2SeqDataModule

    corpus = SyntheticCorpus(train_size=300, valid_per_bucket=2, test_per_bucket=3, p_cross_clause_reference=0.5)
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
