"""seqbench.analysis.seeds: 95% confidence intervals over seeds, and the bootstrap over seeds and sentences, on
hand-computed values and hand-built runs."""
from __future__ import annotations

import math
import random

import pytest
import sacrebleu

from seqbench.analysis.seeds import p_text, seed_bootstrap, spread
from seqbench.scoring.metrics import bleu_from_statistics, bleu_statistics, paired_bootstrap

WORDS = "the a cat dog sat ran on under mat house big small red blue green slowly quickly".split()


def test_spread_is_the_mean_and_the_t_interval():
    s = spread([10.0, 12.0, 17.0])  # mean 13, sample std sqrt(13) = 3.6056; t(0.975, 2 df) = 4.3027
    assert s.mean == pytest.approx(13.0) and s.n == 3 and s.std == pytest.approx(math.sqrt(13))
    assert s.ci == pytest.approx(4.302653 * math.sqrt(13) / math.sqrt(3), rel=1e-6)
    assert spread([5.0, 7.0]).ci == pytest.approx(12.706205 * math.sqrt(2) / math.sqrt(2), rel=1e-6)
    assert spread([4.0]) == (4.0, None, 1, None) and spread([None, float("nan")]) == (None, None, 0, None)


def test_statistics_sum_to_sacrebleus_corpus_bleu():
    rng = random.Random(0)
    refs = [" ".join(rng.choices(WORDS, k=rng.randint(4, 15))) for _ in range(40)]
    hyps = [" ".join(w if rng.random() < 0.7 else "xyz" for w in r.split()) for r in refs]
    stats = bleu_statistics(hyps, refs)
    assert stats.shape == (40, 10)
    assert bleu_from_statistics(stats.sum(0)) == pytest.approx(sacrebleu.corpus_bleu(hyps, [refs]).score)
    assert bleu_from_statistics(stats[:10].sum(0)) == pytest.approx(sacrebleu.corpus_bleu(hyps[:10], [refs[:10]]).score)


def _system(refs: list[str], accuracy: float, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(w if rng.random() < accuracy else "xyz" for w in r.split()) for r in refs]


@pytest.fixture(scope="module")
def references() -> list[str]:
    rng = random.Random(1)
    return [" ".join(rng.choices(WORDS, k=rng.randint(5, 20))) for _ in range(150)]


def test_a_model_better_on_every_seed_is_significant(references):
    good = [(_system(references, 0.85, s), references) for s in (1, 2, 3)]
    bad = [(_system(references, 0.55, s), references) for s in (4, 5, 6)]
    result = seed_bootstrap(good, bad, n_samples=200)
    means = [sacrebleu.corpus_bleu(h, [references]).score for h, _ in good], \
        [sacrebleu.corpus_bleu(h, [references]).score for h, _ in bad]
    assert result["difference"] == pytest.approx(sum(means[0]) / 3 - sum(means[1]) / 3)
    assert result["p_value"] == pytest.approx(2 / 201) and result["ci"][0] > 0 and result["seeds"] == (3, 3)


def test_training_variance_can_undo_a_per_sentence_verdict(references):
    """Model A's seeds scatter widely (one far better than B, two about as good), B's do not: on the one seed pair
    where A's run is far better the per-sentence bootstrap is sure, over seeds the difference is not clear."""
    a = [(_system(references, acc, s), references) for acc, s in ((0.9, 1), (0.6, 2), (0.58, 3))]
    b = [(_system(references, 0.62, s), references) for s in (4, 5, 6)]
    one_pair = paired_bootstrap(b[0][0], a[0][0], references, n_samples=200)
    assert one_pair["p_value"] < 0.01
    over_seeds = seed_bootstrap(a, b, n_samples=200)
    assert over_seeds["p_value"] > 0.05 and over_seeds["ci"][0] < 0 < over_seeds["ci"][1]


def test_the_same_model_is_not_different(references):
    runs = [(_system(references, 0.7, s), references) for s in (1, 2, 3)]
    assert seed_bootstrap(runs, runs, n_samples=200)["p_value"] == 1.0  # every resampled difference is zero


def test_runs_on_other_test_sets_are_refused(references):
    a = [(_system(references, 0.7, 1), references)]
    b = [(_system(references[:-1], 0.7, 2), references[:-1])]
    with pytest.raises(ValueError, match="same test sentences"):
        seed_bootstrap(a, b, n_samples=10)


def test_p_at_the_floor_is_a_bound():
    assert p_text(1 / 1001, 1000) == "≤ 1/1001" and p_text(0.0123, 1000) == "0.012"
    assert p_text(2 / 201, 200) == "0.010"  # twice the one-sided floor is a value ...
    assert p_text(2 / 201, 200, sides=2) == "≤ 2/201"  # ... and the two-sided test's floor
