"""Validation curves over training: BLEU by length at every validation, read from results.json or, for older
records, from metrics.csv; the --curve headline's cells and last-quarter gains, checked against scipy."""
from __future__ import annotations

import csv
import json
from types import SimpleNamespace

import pytest
import torch
from scipy import stats

from seqbench.analysis.curves import late_gain, late_start
from seqbench.common.errors import InputError
from seqbench.report.curve import curve_headline
from seqbench.report.headline import render
from seqbench.rundir.reader import load_runs
from seqbench.training.callbacks import LearningCurve

from report_fixtures import make_multirun

STEPS = [100, 200, 300, 400]
# seed -> overall validation BLEU at each step, and BLEU on 1-10 words
OVERALL = {1: [10.0, 20.0, 26.0, 29.0], 2: [12.0, 21.0, 27.0, 31.0], 3: [9.0, 18.0, 25.0, 26.5]}
SHORT = {1: [60.0, 80.0, 90.0, 90.5], 2: [62.0, 82.0, 91.0, 90.0], 3: [58.0, 79.0, 90.0, 91.0]}


def _curve(seed: int, by_length: bool) -> list[dict]:
    return [{"step": step, "bleu": OVERALL[seed][k], "nll": 2.0 - k / 10, "tokens_seen": 1e5 * (k + 1),
             "train_seconds": 10.0 * (k + 1), "train_flops": 1e12 * (k + 1),
             **({"bleu_by_length": {"11-20": 30.0 + k, "1-10": SHORT[seed][k]}} if by_length else {})}
            for k, step in enumerate(STEPS)]


@pytest.fixture
def runs_dir(tmp_path):
    """Three seeds of one model whose results.json curves hold BLEU by length."""
    root = make_multirun(tmp_path / "runs", labels=("rnnsearch",), seeds=(1, 2, 3), n_sentences=20)
    for path in root.rglob("results.json"):
        results = json.loads(path.read_text())
        results.update(curve=_curve(results["seed"], True), train={"steps": STEPS[-1]},
                       data={"corpus": "toy"}, config={"module": {"val_beam_size": 1}, "task_name": "toy"})
        path.write_text(json.dumps(results))
    return root


def test_learning_curve_records_bleu_by_length_at_each_validation():
    curve = LearningCurve()
    trainer = SimpleNamespace(state=SimpleNamespace(fn="fit"), sanity_checking=False, global_step=1100,
                              callback_metrics={"val/bleu": torch.tensor(20.0), "val/bleu_len_1-10": torch.tensor(90.5),
                                                "val/bleu_len_61+": torch.tensor(4.0), "val/chrf": torch.tensor(50.0)})
    curve.on_validation_end(trainer, None)
    assert curve.points == [{"step": 1100, "bleu": 20.0, "bleu_by_length": {"1-10": 90.5, "61+": 4.0}}]


def test_an_older_curve_takes_bleu_by_length_from_metrics_csv_matched_on_tokens(tmp_path):
    """A curve recorded before it held BLEU by length: the CSV log's val/bleu_len_* columns fill it, matched on
    tokens_seen because the CSV's step is one less than the curve's; a curve that holds its own is not overwritten."""
    root = make_multirun(tmp_path / "runs", labels=("rnnsearch",), seeds=(1,), n_sentences=20)
    run_dir = next(p.parent for p in root.rglob("results.json"))
    results = json.loads((run_dir / "results.json").read_text())
    results["curve"] = _curve(1, False)
    (run_dir / "results.json").write_text(json.dumps(results))
    with (run_dir / "csv" / "metrics.csv").open("w", newline="") as f:
        writer = csv.DictWriter(f, ["step", "val/bleu", "val/bleu_len_1-10", "val/bleu_len_11-20", "val/tokens_seen"])
        writer.writeheader()
        for k, step in enumerate(STEPS):
            writer.writerow({"step": step - 1, "val/bleu": OVERALL[1][k], "val/bleu_len_1-10": SHORT[1][k],
                             "val/bleu_len_11-20": "", "val/tokens_seen": 1e5 * (k + 1)})
        writer.writerow({"step": STEPS[-1], "val/bleu": OVERALL[1][-1], "val/bleu_len_1-10": 1.0})  # re-validation
    (run,) = load_runs([run_dir])
    assert [p["bleu_by_length"] for p in run.curve()] == [{"1-10": v} for v in SHORT[1]]

    results["curve"] = _curve(1, True)
    (run_dir / "results.json").write_text(json.dumps(results))
    (run,) = load_runs([run_dir])
    assert [p["bleu_by_length"]["11-20"] for p in run.curve()] == [30.0, 31.0, 32.0, 33.0]


def test_the_last_quarter_gain_is_each_seeds_difference_with_a_t_interval(runs_dir):
    runs = load_runs([runs_dir])
    start, gain = late_gain(runs)
    assert start == 300
    differences = [OVERALL[s][3] - OVERALL[s][2] for s in (1, 2, 3)]
    low, high = stats.t.interval(0.95, 2, loc=sum(differences) / 3, scale=stats.sem(differences))
    assert gain.mean == pytest.approx(sum(differences) / 3)
    assert gain.mean - gain.ci == pytest.approx(low) and gain.mean + gain.ci == pytest.approx(high)
    _, short = late_gain(runs, "1-10")
    assert short.mean == pytest.approx(sum(SHORT[s][3] - SHORT[s][2] for s in (1, 2, 3)) / 3)
    assert late_start([1100 * k for k in range(1, 9)]) == 6600  # the last quarter of 8,800 updates
    assert late_start([100, 250, 400]) == 250
    with pytest.raises(InputError, match="two validations"):
        late_start([400])


def test_curve_headline_rows_cells_and_gains(runs_dir):
    text = curve_headline([runs_dir], ["runs"])
    lines = text.splitlines()
    assert lines[0] == ("| model | seeds | score | 100 | 200 | 300 | 400 | gain over the last quarter |")
    overall = next(line for line in lines if "| val BLEU |" in line).split(" | ")
    short = next(line for line in lines if "| val BLEU, 1-10 words |" in line).split(" | ")
    mean_100 = sum(OVERALL[s][0] for s in (1, 2, 3)) / 3
    assert overall[3].startswith(f"{mean_100:.2f} ± ")
    assert short[-1].startswith(f"+{sum(SHORT[s][3] - SHORT[s][2] for s in (1, 2, 3)) / 3:.2f} ± ")
    assert short[-1].endswith("(300 → 400) |")
    assert "Seeds: 1, 2, 3." in text and "Budget: 400 updates." in text and "(beam 1)" in text
    (run, *_) = load_runs([runs_dir])
    count = next(b["sentences"] for b in run.results["valid"]["bleu_by_length"] if b["bucket"] == "1-10")
    assert f"1-10 words: the {count} validation sentences of 1-10 source words" in text


def test_curve_block_renders_with_a_label_and_names_runs_without_a_curve(runs_dir, tmp_path):
    doc = "<!-- headline: early=runs --curve -->\nold\n<!-- /headline -->\n"
    out = render(doc, root=runs_dir.parent)
    assert "| early | 3 | val BLEU |" in out and "old" not in out
    for path in runs_dir.rglob("results.json"):
        results = json.loads(path.read_text())
        results["curve"] = results["curve"][:1]
        path.write_text(json.dumps(results))
    with pytest.raises(InputError, match="fewer than two validations"):
        curve_headline([runs_dir])


def test_the_report_shows_the_curve_table_when_every_model_validated_twice(runs_dir, tmp_path):
    from seqbench.report import write_report

    text = write_report([runs_dir], tmp_path / "report", n_samples=20).read_text()
    assert "| rnnsearch | 3 | val BLEU, 1-10 words |" in text
    assert "(budget_curves.png)" in text and (tmp_path / "report" / "budget_curves.png").is_file()
    for path in runs_dir.rglob("results.json"):
        results = json.loads(path.read_text())
        results["curve"] = results["curve"][:1]
        path.write_text(json.dumps(results))
    assert "val BLEU, 1-10 words" not in write_report([runs_dir], tmp_path / "again", n_samples=20).read_text()


def test_the_budget_curve_figure_draws_each_models_seed_means_by_update(runs_dir):
    from seqbench.analysis.plots import plot_budget_curves
    from seqbench.analysis.runs import group_by_label

    fig = plot_budget_curves(group_by_label(load_runs([runs_dir])))
    overall, short = fig.axes
    (line,) = overall.get_lines()[:1]
    assert list(line.get_xdata()) == STEPS
    assert list(line.get_ydata()) == pytest.approx([sum(OVERALL[s][k] for s in (1, 2, 3)) / 3 for k in range(4)])
    assert list(short.get_lines()[0].get_ydata()) == pytest.approx(
        [sum(SHORT[s][k] for s in (1, 2, 3)) / 3 for k in range(4)])
    assert "1-10" in short.get_ylabel()


def test_every_run_block_keeps_a_label_given_to_its_directory(runs_dir):
    """`LABEL=DIR` in a block means the same under any root, in the default table as in --curve and --by-budget."""
    out = render("<!-- headline: early=runs -->\n<!-- /headline -->\n", root=runs_dir.parent)
    assert "| early | 3 |" in out
