"""seqbench.analysis.seeds: 95% confidence intervals over seeds and the tests over seeds (Welch, permutation, Holm),
against scipy.stats, hand computation and simulation under a null."""
from __future__ import annotations

import itertools
import math
import random

import numpy as np
import pytest
import sacrebleu
from scipy import stats

from seqbench.analysis.seeds import compare_seeds, holm, p_text, seed_p_text, spread
from seqbench.scoring.metrics import bleu_from_statistics, bleu_statistics, paired_bootstrap

WORDS = "the a cat dog sat ran on under mat house big small red blue green slowly quickly".split()


def test_spread_is_the_mean_and_the_t_interval():
    s = spread([10.0, 12.0, 17.0])  # mean 13, sample std sqrt(13) = 3.6056; t(0.975, 2 df) = 4.3027
    assert s.mean == pytest.approx(13.0) and s.n == 3 and s.std == pytest.approx(math.sqrt(13))
    assert s.ci == pytest.approx(4.302653 * math.sqrt(13) / math.sqrt(3), rel=1e-6)
    assert spread([5.0, 7.0]).ci == pytest.approx(12.706205 * math.sqrt(2) / math.sqrt(2), rel=1e-6)
    assert spread([4.0]) == (4.0, None, 1, None) and spread([None, float("nan")]) == (None, None, 0, None)


def test_the_seed_interval_is_scipys_t_interval():
    values = [71.2, 68.9, 74.5, 70.1, 69.8]
    low, high = stats.t.interval(0.95, len(values) - 1, loc=np.mean(values), scale=stats.sem(values))
    s = spread(values)
    assert (s.mean - s.ci, s.mean + s.ci) == pytest.approx((low, high))


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


def test_welch_interval_and_p_are_scipys_and_the_hand_computed_ones():
    a, b = [30.0, 34.0, 35.0], [25.0, 26.0, 30.0]
    test = compare_seeds(a, b)
    welch = stats.ttest_ind(a, b, equal_var=False)
    assert test.welch_p == pytest.approx(welch.pvalue)
    # by hand: difference 6, standard error sqrt(7/3 + 7/3), Welch-Satterthwaite df = 4 (equal variances and sizes)
    se = math.sqrt(7 / 3 + 7 / 3)
    t = stats.t.ppf(0.975, 4)
    assert test.difference == pytest.approx(6.0)
    assert test.ci == pytest.approx((6 - t * se, 6 + t * se))
    assert test.welch_p == pytest.approx(2 * stats.t.sf(6 / se, 4))


def test_permutation_p_is_scipys_and_counts_the_splits_by_hand():
    a, b = [30.0, 34.0, 35.0], [25.0, 26.0, 30.0]
    test = compare_seeds(a, b)
    scipy_p = stats.permutation_test((a, b), lambda x, y: np.mean(x) - np.mean(y), permutation_type="independent",
                                     n_resamples=math.inf, alternative="two-sided").pvalue
    assert test.permutation_p == pytest.approx(scipy_p) and test.exact
    # by hand: the 20 ways to choose A's three scores; the observed split has the largest difference of means
    pooled = a + b
    diffs = [np.mean([pooled[i] for i in chosen]) - np.mean([pooled[i] for i in range(6) if i not in chosen])
             for chosen in itertools.combinations(range(6), 3)]
    one_sided = sum(d >= 6.0 - 1e-12 for d in diffs) / 20
    assert test.permutation_p == pytest.approx(min(1.0, 2 * one_sided))


@pytest.mark.parametrize("n, floor", [(3, 0.10), (5, 2 / 252)])
def test_seeds_that_never_overlap_give_the_designs_floor_whatever_the_effect(n, floor):
    for gap in (0.5, 50.0):
        test = compare_seeds([80.0 + gap + i for i in range(n)], [80.0 - i for i in range(n)])
        assert test.permutation_p == pytest.approx(floor) and test.p_floor == pytest.approx(floor)


def test_more_splits_than_the_enumeration_limit_are_sampled():
    rng = np.random.default_rng(0)
    test = compare_seeds(rng.normal(1, 1, 8), rng.normal(0, 1, 8), max_exact=500)
    assert not test.exact and test.p_floor == pytest.approx(2 / 501)
    assert compare_seeds([1.0, 2.0], [0.0, 0.5]).exact


def test_one_seed_is_no_sample_and_identical_seeds_have_no_interval():
    with pytest.raises(ValueError, match="two or more seeds"):
        compare_seeds([50.0], [40.0, 41.0, 42.0])
    test = compare_seeds([50.0, 50.0], [40.0, 40.0])
    assert test.ci is None and test.welch_p is None and test.permutation_p == pytest.approx(2 / 6)


@pytest.mark.parametrize("n", [3, 5])
def test_under_a_null_the_false_positive_rate_at_005_is_005(n):
    """3 vs 3 and 5 vs 5 seeds drawn from one distribution: neither test rejects at alpha = 0.05 more often than 5%
    beyond Monte Carlo error. The permutation test with 3 vs 3 never can (its floor is 0.10); with 5 vs 5 it rejects
    12/252 of the time, as its exact null says; Welch's t with so few seeds is a little conservative (about 3.5% at
    3 vs 3)."""
    rng = np.random.default_rng(12345)
    trials = 2000
    permutation, welch = 0, 0
    for _ in range(trials):
        a, b = rng.normal(70, 5, n), rng.normal(70, 5, n)
        test = compare_seeds(a, b)
        permutation += test.permutation_p <= 0.05
        welch += test.welch_p <= 0.05
    error = 3 * math.sqrt(0.05 * 0.95 / trials)  # three Monte Carlo standard errors
    assert permutation / trials <= 0.05 + error
    assert 0.02 <= welch / trials <= 0.05 + error
    if n == 5:  # 2/252 granularity: P(p <= 0.05) is 12/252 = 0.048 exactly under exchangeability
        assert abs(permutation / trials - 12 / 252) <= error


def test_holm_adjusts_a_family_as_worked_out_by_hand():
    # sorted: 0.005 x 4 = 0.02, 0.01 x 3 = 0.03, 0.03 x 2 = 0.06, 0.04 x 1 = 0.04 -> raised to 0.06
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([0.5, 0.6]) == pytest.approx([1.0, 1.0]) and holm([]) == []


def test_holm_keeps_the_family_wise_error_rate_under_a_null():
    """Three pairwise comparisons of 5 vs 5 seeds of three identical models: P(any adjusted p <= 0.05) <= 0.05."""
    rng = np.random.default_rng(7)
    trials, any_rejected = 600, 0
    for _ in range(trials):
        seeds = [rng.normal(70, 5, 5) for _ in range(3)]
        ps = [compare_seeds(seeds[i], seeds[j]).permutation_p for i, j in ((0, 1), (0, 2), (1, 2))]
        any_rejected += min(holm(ps)) <= 0.05
    assert any_rejected / trials <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / trials)


def test_the_per_sentence_bootstrap_can_be_sure_where_the_seeds_are_not():
    """Model A's seeds scatter widely (one far better than B, two about as good), B's do not: on the one seed pair
    where A's run is far better the per-sentence bootstrap is sure about those two trained models; over seeds the
    families' difference is not clear."""
    rng = random.Random(1)
    references = [" ".join(rng.choices(WORDS, k=rng.randint(5, 20))) for _ in range(150)]
    a = [_system(references, acc, s) for acc, s in ((0.9, 1), (0.6, 2), (0.58, 3))]
    b = [_system(references, 0.62, s) for s in (4, 5, 6)]
    assert paired_bootstrap(b[0], a[0], references, n_samples=200)["p_value"] < 0.01
    bleu = [[sacrebleu.corpus_bleu(h, [references]).score for h in side] for side in (a, b)]
    over_seeds = compare_seeds(*bleu)
    assert over_seeds.permutation_p > 0.05 and over_seeds.ci[0] < 0 < over_seeds.ci[1]


def test_p_at_the_floor_is_a_bound():
    assert p_text(1 / 1001, 1000) == "≤ 1/1001" and p_text(0.0123, 1000) == "0.012"
    assert p_text(2 / 201, 200) == "0.010"  # twice the floor is a value
    assert seed_p_text(0.1, 0.1) == "0.1 (floor 0.1)" and seed_p_text(2 / 252, 2 / 252) == "0.00794 (floor 0.0079)"


def test_with_holm_adds_each_tests_holm_adjusted_permutation_p():
    from seqbench.analysis.seeds import holm, with_holm

    tests = {"a": {"permutation_p": 0.01}, "b": {"permutation_p": 0.04}, "c": {"permutation_p": 0.03}}
    assert with_holm(tests) is tests
    assert [t["holm_p"] for t in tests.values()] == holm([0.01, 0.04, 0.03]) == [0.03, 0.06, 0.06]


def test_a_model_at_the_ceiling_on_every_seed_is_compared_without_a_warning():
    """All seeds at 100 BLEU: scipy warns of precision loss, yet Welch's interval is its own (the other side's
    variance alone); the comparison returns scipy's numbers and prints no warning into reports and notebooks."""
    import warnings

    from scipy import stats

    from seqbench.analysis.seeds import compare_seeds

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        test = compare_seeds([100.0, 100.0, 100.0], [95.0, 96.1, 94.8])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        interval = stats.ttest_ind([100.0] * 3, [95.0, 96.1, 94.8], equal_var=False).confidence_interval(0.95)
    assert test.ci == pytest.approx((interval.low, interval.high))


def test_holm_equals_statsmodels_multipletests():
    """seqbench's eight-line Holm against statsmodels' (the library a reader would reach for), on random families
    with ties and values near 1."""
    multitest = pytest.importorskip("statsmodels.stats.multitest")
    rng = np.random.default_rng(0)
    for size in (1, 2, 3, 7, 20):
        for _ in range(50):
            p = np.round(rng.uniform(0, 1, size) ** 3, 3)  # rounding makes ties
            expected = multitest.multipletests(p, method="holm")[1]
            assert np.allclose(holm(list(p)), expected), p
