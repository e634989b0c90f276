"""The embedded synthetic language pair: determinism, difficulty and the length distribution the issue asks for."""
from __future__ import annotations

import pytest
import sacrebleu

from seqbench.data.synthetic import (
    LENGTH_BUCKETS,
    GrammarConfig,
    Lexicon,
    SentenceGenerator,
    bucket_of,
    dictionary_translate,
    generate_splits,
)


@pytest.fixture(scope="module")
def default_splits():
    return generate_splits(GrammarConfig())


def test_deterministic_under_seed():
    small = GrammarConfig(train_size=200, valid_per_bucket=3, test_per_bucket=3)
    assert generate_splits(small) == generate_splits(small)
    other = generate_splits(GrammarConfig(seed=99, train_size=200, valid_per_bucket=3, test_per_bucket=3))
    assert other["train"] != generate_splits(small)["train"]


def test_test_split_meets_bucket_minimums_and_long_tail(default_splits):
    counts = [0] * len(LENGTH_BUCKETS)
    lengths = [len(r["src"].split()) for r in default_splits["test"]]
    for n in lengths:
        counts[bucket_of(n)] += 1
    assert min(counts) >= 100
    assert sum(n > 40 for n in lengths) / len(lengths) >= 0.10
    assert min(lengths) >= 3 and max(lengths) >= 80


def test_splits_are_disjoint(default_splits):
    sources = [set(r["src"] for r in default_splits[s]) for s in ("train", "valid", "test")]
    assert not (sources[0] & sources[1]) and not (sources[0] & sources[2]) and not (sources[1] & sources[2])


def test_vocabulary_size_and_lengths(default_splits):
    source_types = {w for r in default_splits["train"] for w in r["src"].rstrip(".").split()}
    assert len(source_types) >= 1000
    lengths = [len(r["src"].split()) for r in default_splits["train"]]
    assert min(lengths) >= 3 and max(lengths) >= 80


def test_dictionary_baseline_is_weak(default_splits):
    lexicon = Lexicon.build(GrammarConfig())
    hyps = [dictionary_translate(r["src"], lexicon) for r in default_splits["test"]]
    refs = [r["tgt"] for r in default_splits["test"]]
    assert 1 <= sacrebleu.corpus_bleu(hyps, [refs]).score <= 25  # measured: 2.2 (it knows every word, in order)
    assert sacrebleu.corpus_bleu(refs, [refs]).score == pytest.approx(100)  # a perfect model scores 100


def test_target_is_a_function_of_the_source(default_splits):
    seen = {}
    for split in default_splits.values():
        for r in split:
            assert seen.setdefault(r["src"], r["tgt"]) == r["tgt"]


def test_long_distance_agreement_and_reordering():
    """The main verb's suffix depends on the subject noun's target gender, however far apart they are."""
    import random

    cfg = GrammarConfig()
    lexicon = Lexicon.build(cfg)
    gen = SentenceGenerator(cfg, lexicon, random.Random(0))
    by_gender = {}
    for noun in lexicon.nouns:
        by_gender.setdefault(noun.gender, noun)
    verb_src, verb_tgt = lexicon.intransitive[0]
    endings = set()
    for gender, noun in by_gender.items():
        subject = gen.noun_phrase(0)
        while subject.plural:
            subject = gen.noun_phrase(0)
        subject.gender = gender
        subject.tgt[0] = noun.tgt[-1]
        predicate = gen.predicate(subject, depth=0)
        endings.add(predicate.tgt[-1][-2:])
    assert len(endings) == 3  # three genders, three verb endings


def test_unreachable_length_bucket_is_a_config_error():
    from seqbench.common.errors import ConfigError

    with pytest.raises(ConfigError, match="61-10000"):
        generate_splits(GrammarConfig(clause_count_weights=(1.0,), train_size=10, valid_per_bucket=1,
                                      test_per_bucket=1))


def test_default_splits_are_unchanged(default_splits):
    """Every default pair's texts, as generated before the long-range options existed (commit f041aef)."""
    import hashlib
    import json

    texts = {name: [(r["src"], r["tgt"]) for r in rows] for name, rows in default_splits.items()}
    digest = hashlib.sha1(json.dumps(texts, sort_keys=True).encode()).hexdigest()
    assert digest == "574405013174b935dd8988bb93085b42ae0ba737"
