"""BLEU over source length as Bahdanau et al.'s Fig. 2 claims it: the slope of each run's BLEU by length, compared over
seeds, the per-bucket tests beside it, and a successive-halving search's chosen recipes as the models compared."""
from __future__ import annotations

import json
import random

import numpy as np
import pytest
from scipy import stats

from seqbench.analysis.runs import search_groups
from seqbench.analysis.seeds import compare_seeds
from seqbench.analysis.summary import length_slope, slope_significance
from seqbench.common.errors import InputError
from seqbench.rundir.reader import Run
from seqbench.rundir.results import read_results, write_results

from report_fixtures import _test_set, make_run

EDGES = [(1, 10), (11, 20), (21, 30), (31, 40), (41, 50), (51, 60), (61, None)]


def by_length(scores: list[float]) -> list[dict]:
    return [{"bucket": f"{lo}-{hi}" if hi else f"{lo}+", "min_words": lo, "max_words": hi, "sentences": 150,
             "bleu": score} for (lo, hi), score in zip(EDGES, scores)]


def run_with(scores: list[float], seed: int = 1, label: str = "m") -> Run:
    return Run(None, {"label": label, "seed": seed, "model": {"name": "rnn"},
                      "test": {"bleu_by_length": by_length(scores)}})


def test_a_runs_slope_is_scipys_least_squares_over_its_closed_buckets_per_ten_words():
    line = [100 - 0.5 * (lo + hi) / 2 for lo, hi in EDGES[:-1]]
    assert length_slope(run_with(line + [-1000.0])) == pytest.approx(-5.0)  # the open 61+ bucket is left out
    noisy = [99.0, 97.5, 95.0, 90.1, 84.0, 70.3, 20.0]
    midpoints = [(lo + hi) / 2 for lo, hi in EDGES[:-1]]
    assert length_slope(run_with(noisy)) == pytest.approx(10 * stats.linregress(midpoints, noisy[:-1]).slope)
    assert length_slope(run_with([90.0, 80.0])) is None  # two buckets: no line worth fitting


def test_the_slope_stays_within_the_lengths_the_run_trained_on():
    """Past data.train_max_len a fall is length extrapolation, not what a fixed-length context does to lengths it
    was trained on: those buckets are left out of the slope (the per-bucket tests still show them)."""
    scores = [99.0, 98.0, 97.0, 96.0, 95.0, 20.0, 5.0]  # flat up to 50 words, then a cliff past the training lengths
    run = run_with(scores)
    run.results["config"] = {"data": {"train_max_len": 50}}
    midpoints = [(lo + hi) / 2 for lo, hi in EDGES[:5]]
    assert length_slope(run) == pytest.approx(10 * stats.linregress(midpoints, scores[:5]).slope) == pytest.approx(-1.0)
    run.results["config"]["data"]["train_max_len"] = 20
    assert length_slope(run) is None  # two trained buckets
    run.results["config"]["data"]["train_max_len"] = None
    assert length_slope(run) < -10  # every length kept: every closed bucket counts


def test_the_slope_test_is_compare_seeds_on_the_per_seed_slopes():
    rng = np.random.default_rng(0)
    groups = {}
    for label, fall in (("flat", 0.05), ("steep", 0.6)):
        groups[label] = [run_with([100 - fall * (lo + (hi or lo + 9)) / 2 + rng.normal(0, 1) for lo, hi in EDGES],
                                  seed, label) for seed in range(1, 6)]
    (pair, test), = slope_significance(groups).items()
    slopes = [[length_slope(r) for r in groups[label]] for label in pair]
    expected = compare_seeds(*slopes)
    assert pair == ("flat", "steep") and test["slopes"] == tuple(slopes)
    assert test["difference"] == pytest.approx(expected.difference) and test["ci"] == pytest.approx(expected.ci)
    assert test["permutation_p"] == pytest.approx(expected.permutation_p) == pytest.approx(2 / 252)
    assert test["holm_p"] == test["permutation_p"]  # one pair: nothing to correct across


def test_a_pair_trained_on_different_lengths_has_its_slopes_fitted_on_the_lengths_both_trained_on():
    """A -30 model's slope over 1-30 words against a -50's over 1-50 words differs by the range alone when BLEU falls
    along a curve: two models with the same curve would differ. Both are fitted within 30 words instead."""
    curve = [100 - 0.02 * ((lo + (hi or lo + 9)) / 2) ** 2 for lo, hi in EDGES]  # the same falling curve for both
    groups = {}
    for label, limit in (("m-30", 30), ("m-50", 50)):
        groups[label] = [run_with([b + 0.1 * seed for b in curve], seed, label) for seed in (1, 2, 3)]
        for run in groups[label]:
            run.results["config"] = {"data": {"train_max_len": limit}}
    assert length_slope(groups["m-30"][0]) != pytest.approx(length_slope(groups["m-50"][0]), abs=1)  # own ranges
    test = slope_significance(groups)[("m-30", "m-50")]
    assert test["within"] == 30 and test["slopes"][0] == pytest.approx(test["slopes"][1])
    assert test["difference"] == pytest.approx(0, abs=1e-9)


def test_the_slope_test_rejects_at_its_level_under_the_null():
    """Two models with the same expected slope, 5 seeds each: the permutation p is below 0.05 about 5% of the time
    (exact test: at most 5% in expectation), over 300 simulated comparisons."""
    rng = np.random.default_rng(1)
    rejections = 0
    for _ in range(300):
        groups = {label: [run_with([100 - 0.3 * (lo + (hi or lo + 9)) / 2 + rng.normal(0, 2) for lo, hi in EDGES],
                                   seed, label) for seed in range(1, 6)] for label in ("a", "b")}
        rejections += next(iter(slope_significance(groups).values()))["permutation_p"] < 0.05
    assert rejections / 300 < 0.09  # binomial(300, 0.05): above 0.09 with probability < 0.002


def make_search(root, chosen: dict) -> None:
    """A successive-halving search directory whose families chose `chosen` ({family: configuration or None}): two
    configurations, one rung of 100 updates, the chosen one confirmed with seeds 1-3 (1 is the search's own)."""
    sources, references = _test_set(40, random.Random(0))
    config = {"search": "successive_halving", "rungs": [100], "confirm": {"top": 1, "seeds": [1, 2, 3]},
              "constants": {"seed": 1}}
    jobs, families = [], {}
    for family, label in zip(chosen, ("rnnsearch", "rnnencdec")):
        for index in (0, 1):
            for seed in (1, 2, 3) if index == chosen[family] else (1,):
                stage = "search" if seed == 1 else "confirm"
                run_dir = f"{family}/{index:03d}" if seed == 1 else f"{family}/confirm/{index:03d}-seed{seed}"
                make_run(root / run_dir, label, seed, sources, references)
                record = read_results(root / run_dir)
                lengths = by_length([100 - (index + 1) * (30 if family == "enc" else 5) * k / 6 for k in range(7)])
                record["test"]["bleu_by_length"] = lengths
                record.update(train={"steps": 100, "max_steps": 100}, data={"corpus": "synthetic-x"},
                              config={"task_name": "search"})
                write_results(record, root / run_dir)
                jobs.append({"key": f"{family}/{stage}/{index}/100/{seed}", "state": "complete", "metric": 50.0,
                             "updates": 100, "seconds": 1.0, "run_dir": run_dir})
        families[family] = {"chosen": None if chosen[family] is None else {"index": chosen[family]}}
    (root / "summary.json").write_text(json.dumps({"search": config, "seed": 0, "families": families,
                                                   "jobs": jobs}))


def test_a_search_shows_each_familys_chosen_recipe_over_its_seeds(tmp_path):
    from seqbench.report.headline import headline, render

    make_search(tmp_path / "s", {"att": 1, "enc": 0})
    groups = search_groups(tmp_path / "s")
    assert {label: sorted(r.seed for r in runs) for label, runs in groups.items()} == {"att": [1, 2, 3],
                                                                                       "enc": [1, 2, 3]}
    assert all(f"/{'001' if label == 'att' else '000'}" in str(r.path) for label, runs in groups.items() for r in runs)
    block = render("<!-- headline: s --length-tests -->\n<!-- /headline -->", tmp_path)
    assert "Command: `seqbench sweep s/sweep.yaml --out s --seed 0`" in block
    assert "| att − enc |" in block or "| enc − att |" in block
    # enc's chosen configuration falls 5 BLEU a bucket (-5 per 10 words), att's 10/6 a bucket
    assert "-5.00 / -5.00 / -5.00" in block and "-1.67 / -1.67 / -1.67" in block
    assert block.split("\n", 1)[1].rsplit("<!--", 1)[0] == headline(tmp_path / "s", shown=["s"], length_tests=True)


def test_a_search_without_a_chosen_recipe_has_nothing_to_show(tmp_path):
    make_search(tmp_path / "s", {"att": None, "enc": 0})
    assert list(search_groups(tmp_path / "s")) == ["enc"]
    make_search(tmp_path / "t", {"att": None, "enc": None})
    with pytest.raises(InputError, match="no family's search has chosen its recipe yet"):
        search_groups(tmp_path / "t")


def test_seqbench_report_on_a_search_reports_its_chosen_recipes(tmp_path):
    from seqbench.commands.report import main

    make_search(tmp_path / "s", {"att": 1, "enc": 0})
    assert main([str(tmp_path / "s"), "--out", str(tmp_path / "r"), "--bootstrap", "10"]) == 0
    report = (tmp_path / "r" / "report.md").read_text()
    assert "| att |" in report and "| enc |" in report and "rnnsearch" not in report.split("##")[1]


def test_a_search_and_runs_trained_from_its_recipes_share_one_table(tmp_path):
    """Fig. 2's -30 models train from the recipes a search chose for the -50: the search's directory beside their
    multirun gives one table of both, the search expanded to its chosen runs only (not its other configurations), and
    each directory named with its own command."""
    from seqbench.analysis.runs import runs_of
    from seqbench.report.headline import render

    make_search(tmp_path / "s", {"att": 1, "enc": 0})
    sources, references = _test_set(40, random.Random(0))
    for seed in (1, 2, 3):
        run_dir = tmp_path / "m" / str(seed)
        make_run(run_dir, "rnnsearch", seed, sources, references)
        record = read_results(run_dir)
        record.update(label="att-30", train={"steps": 100, "max_steps": 100}, data={"corpus": "synthetic-x"},
                      config={"task_name": "position_extrapolation"})  # a preset that exists
        write_results(record, run_dir)
    runs = runs_of([tmp_path / "s", tmp_path / "m"])
    assert sorted((r.label, r.seed) for r in runs) == sorted((label, seed) for label in ("att", "enc", "att-30")
                                                             for seed in (1, 2, 3))
    block = render("<!-- headline: s m -->\n<!-- /headline -->", tmp_path)
    assert "| att-30 | 3 |" in block and "| enc | 3 |" in block
    assert ("Commands and records: `s`: `seqbench sweep s/sweep.yaml --out s --seed 0` (each run's command.txt); "
            "`m`: `python train.py -m experiment=position_extrapolation`") in block
    # the search's models named as the -50 models: {family} in a LABEL=DIR label, in the table and the footer's command
    labelled = render("<!-- headline: {family}-50=s m -->\n<!-- /headline -->", tmp_path)
    assert "| att-50 | 3 |" in labelled and "| enc-50 | 3 |" in labelled and "| att-30 | 3 |" in labelled
    assert "`s`: `seqbench sweep s/sweep.yaml --out s --seed 0`" in labelled
    with pytest.raises(InputError, match=r"put \{family\} in it"):
        runs_of([f"fifty={tmp_path / 's'}"])
    with pytest.raises(InputError, match="is not a search's directory"):
        runs_of([f"{{family}}-30={tmp_path / 'm'}"])
