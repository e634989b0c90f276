"""`seqbench report` on synthetic run directories: grouping, table, significance, plots, CLI."""
from __future__ import annotations

import math
import re
import shutil
import statistics

import pytest

from seqbench.analysis.runs import external_run, group_by_label
from seqbench.analysis.summary import significance, summary_rows
from seqbench.commands.report import main
from seqbench.common.errors import InputError
from seqbench.report import write_report
from seqbench.rundir.reader import Run, load_runs
from seqbench.scoring.evaluation import Evaluator

from conftest import seqbench_cli
from report_fixtures import MODELS, make_multirun


@pytest.fixture(scope="module")
def multirun(tmp_path_factory):
    return make_multirun(tmp_path_factory.mktemp("multirun"))


def test_runs_are_found_recursively_and_grouped_by_label(multirun):
    runs = load_runs([multirun])
    assert len(runs) == 9
    groups = group_by_label(runs)
    assert list(groups) == ["transformer", "rnnsearch", "rnnencdec"]  # best mean test BLEU first
    assert all([r.seed for r in members] == [1, 2, 3] for members in groups.values())
    assert len(load_runs([multirun / "0", multirun / "0" / "results.json"])) == 1  # no duplicates


def test_label_equals_dir_compares_runs_of_one_recorded_label_as_two_models(multirun, tmp_path, capsys):
    """Two recipes of one model record the same label: `LABEL=DIR` names each side; a folder whose own name has a
    `=` in it (Hydra's override-named job folders) stays a path."""
    runs = load_runs([f"hand={multirun / '0'}", f"hand={multirun / '1'}", f"searched={multirun / '2'}",
                      f"searched={multirun / '3'}"])
    assert {r.path.name: r.label for r in runs} == {"0": "hand", "1": "hand", "2": "searched", "3": "searched"}
    assert {r.results["label"] for r in runs} == {"transformer", "rnnsearch"}  # the records are not changed
    status, out, err = seqbench_cli(["report", f"hand={multirun / '0'}", f"hand={multirun / '1'}",
                                     f"searched={multirun / '2'}", "--split", "valid", "--out",
                                     str(tmp_path / "report")], capsys)
    assert status == 0, err
    table = (tmp_path / "report" / "report.md").read_text()
    assert "| hand | transformer | 2 |" in table and "| searched | transformer | 1 |" in table
    odd = tmp_path / "model=x"
    shutil.copytree(multirun / "4", odd / "4")
    assert [r.label for r in load_runs([odd])] == ["rnnsearch"]


def test_summary_rows_average_over_seeds(multirun):
    groups = group_by_label(load_runs([multirun]))
    rows = summary_rows(groups)
    transformer = rows[0]
    bleus = [r.results["test"]["bleu"] for r in groups["transformer"]]
    mean, ci, n, std = transformer["bleu"]
    assert n == 3 and mean == pytest.approx(sum(bleus) / 3)
    assert std == pytest.approx(statistics.stdev(bleus)) and ci == pytest.approx(4.302653 * std / math.sqrt(3))
    assert transformer["family"] == "transformer" and transformer["beam_size"] == 4
    assert transformer["mfu"][0] == pytest.approx(100 * sum(r.results["flops"]["mfu"] for r in groups["transformer"])
                                                  / 3)


def test_a_run_that_decoded_its_test_greedily_is_its_own_greedy_score(tmp_path):
    """module.test_greedy asks for greedy scores beside the beam's; a run whose tuned beam is 1 decoded greedily once
    and recorded no second score, so its test scores fill the greedy column (ConvS2S's in equal_compute_settled)
    instead of leaving it out. A run with a wider beam, or that did not ask, gets none."""
    def run(beam: int, asked: bool, bleu: float) -> Run:
        module = {"test_greedy": asked, "decoding": {"beam_size": beam}}
        return Run(tmp_path, {"label": "m", "model": {"name": "cnn"}, "seed": 1, "parameters": 10,
                              "test": {"bleu": bleu, "chrf": bleu}, "config": {"module": module}})

    greedy, beam, unasked = run(1, True, 90.0), run(4, True, 80.0), run(1, False, 70.0)
    assert greedy.results["test"]["greedy"] == {"bleu": 90.0, "chrf": 90.0}
    assert "greedy" not in beam.results["test"] and "greedy" not in unasked.results["test"]
    row = summary_rows({"greedy": [greedy, run(1, True, 92.0)]})[0]
    assert row["greedy_bleu"][0] == pytest.approx(91.0) == row["bleu"][0]


def test_significance_pairs_seeds(multirun):
    groups = group_by_label(load_runs([multirun]))
    tests = significance(groups, n_samples=100)
    assert set(tests) == {("transformer", "rnnsearch"), ("transformer", "rnnencdec"), ("rnnsearch", "rnnencdec")}
    for pair in tests.values():
        assert [t["seeds"] for t in pair] == [(1, 1), (2, 2), (3, 3)]
        assert all(0 < t["p_value"] < 0.05 for t in pair)  # the fixture's models differ widely


def test_report_files(multirun, tmp_path):
    path = write_report([multirun], tmp_path / "out", n_samples=100)
    text = path.read_text()
    table = [line for line in text.splitlines() if line.startswith("| ")]
    header = table[0]
    assert "BLEU" in header and "p vs transformer" in header and "MFU %" in header and "beam sent/s" in header
    assert "greedy BLEU" not in header  # no run decoded greedily as well (module.test_greedy)
    rows = {line.split("|")[1].strip(): line for line in table[1:4]}
    assert set(rows) == set(MODELS)
    assert re.search(r"\d+\.\d\d ± \d+\.\d\d", rows["rnnsearch"])  # mean ± 95% CI over seeds
    # the fixture's models differ widely: their 3 vs 3 seeds never overlap, so the permutation p is at the design's
    # floor 0.10, times 3 by Holm's correction over the 3 pairs; the per-sentence bootstrap at its own floor
    assert re.search(r"\| -\d+\.\d\d \[-\d+\.\d\d, -\d+\.\d\d\] \| 0.3 \(floor 0.1\) \| ≤ 1/101 \|$", rows["rnnsearch"])
    assert rows["transformer"].endswith("| — | — | — |")
    assert "transformer − rnnsearch" in text  # the pair's difference in every length bucket
    assert "## BLEU by source sentence length" in text and "61+" in text
    pngs = {p.name for p in (tmp_path / "out").glob("*.png")}
    assert {"bleu_by_length.png", "learning_curves.png", "throughput.png"} <= pngs
    # attention maps for the models that have attention, none for RNNencdec (attention none)
    assert {"attention_transformer_0.png", "attention_rnnsearch_1.png"} <= pngs
    assert not any(name.startswith("attention_rnnencdec") for name in pngs)
    assert all((tmp_path / "out" / name).stat().st_size > 1000 for name in pngs)


def test_runs_without_common_test_set_are_not_paired(tmp_path):
    a = make_multirun(tmp_path / "a", labels=("transformer",), seeds=(1,), n_sentences=30)
    b = make_multirun(tmp_path / "b", labels=("rnnsearch",), seeds=(1,), n_sentences=40)
    groups = group_by_label(load_runs([a, b]))
    assert significance(groups, n_samples=50) == {}
    text = write_report([a, b], tmp_path / "out", n_samples=50).read_text()
    assert "| n/a |" in text


def test_cli_default_output_and_errors(multirun, tmp_path, capsys):
    single = multirun / "3"
    assert main([str(single), "--bootstrap", "50"]) == 0
    assert (single / "report" / "report.md").is_file()
    assert capsys.readouterr().out.strip().endswith("report.md")
    status, _, err = seqbench_cli(["report", str(tmp_path / "missing")], capsys)
    assert status == 2 and err.startswith("error: ") and "missing" in err


def test_runs_that_did_not_complete_are_listed_not_scored(tmp_path, capsys):
    from seqbench.rundir.results import write_status

    runs = make_multirun(tmp_path / "sweep", labels=("transformer",), seeds=(1, 2), n_sentences=30)
    write_status(runs / "9", "failed", ValueError("model.d_model=7: must be even"), label="transformer", seed=3,
                 phase="setup", step=None)
    write_status(runs / "10", "interrupted", "interrupted by SIGTERM during training", label="transformer", seed=4,
                 phase="training", step=120)
    assert [r.seed for r in load_runs([runs])] == [1, 2]  # only completed runs are scored
    assert {r.status for r in load_runs([runs], completed=False)} == {"completed", "failed", "interrupted"}
    text = write_report([runs], tmp_path / "out", n_samples=50).read_text()
    unfinished = text.split("## Runs that did not complete")[1]
    assert "| transformer | 3 | failed | setup | — | ValueError: model.d_model=7: must be even |" in unfinished
    assert "| transformer | 4 | interrupted | training | 120 |" in unfinished
    assert "2 runs, 1 models" in text
    only_failed = tmp_path / "failed"
    write_status(only_failed, "failed", "boom")
    status, _, err = seqbench_cli(["report", str(only_failed)], capsys)  # nothing to report: one line
    assert status == 2 and err.startswith("error: ") and err.count("\n") == 1


def test_external_system_is_an_extra_row(multirun, tmp_path):
    first = load_runs([multirun])[0]
    references, sources = first.lines("references"), first.lines("sources")
    hyp = tmp_path / "fairseq.detok.txt"
    hyp.write_text("".join(r + "\n" for r in references), encoding="utf-8")  # a perfect system
    external = external_run("fairseq", hyp, first)
    assert external.results["test"] == Evaluator().score(references, references, sources)
    assert [b["bucket"] for b in external.results["test"]["bleu_by_length"]] == \
        [b["bucket"] for b in first.results["test"]["bleu_by_length"]]
    text = write_report([multirun], tmp_path / "out", n_samples=50, external={"fairseq": hyp}).read_text()
    table = [line for line in text.splitlines() if line.startswith("| fairseq |")]
    assert len(table) == 5  # main table, two significance matrices, BLEU by length, runs
    assert "| external |" in table[0] and "100.00" in table[0] and "p vs fairseq" in text  # the best row
    assert table[3].count("100.00") == len(first.results["test"]["bleu_by_length"])
    rnnsearch = [line for line in text.splitlines() if line.startswith("| rnnsearch | rnn |")][0]
    # far below the perfect external system over sentences; one external "seed" is no sample for a test over seeds
    assert rnnsearch.endswith("| n/a | n/a | ≤ 1/51 |")


@pytest.mark.parametrize("external, message", [
    ("fairseq", "NAME=HYP_FILE"),
    ("transformer={hyp}", "already has that label"),
    ("short={short}", "1 lines"),
    ("gone={missing}", "file not found"),
])
def test_external_errors_are_one_line(multirun, tmp_path, capsys, external, message):
    hyp, short = tmp_path / "hyp.txt", tmp_path / "short.txt"
    hyp.write_text("".join(r + "\n" for r in load_runs([multirun])[0].lines("references")), encoding="utf-8")
    short.write_text("one line\n", encoding="utf-8")
    item = external.format(hyp=hyp, short=short, missing=tmp_path / "missing.txt")
    status, _, err = seqbench_cli(["report", str(multirun), "--out", str(tmp_path / "out"), "--external", item], capsys)
    assert status == 2
    err = err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and message in err[0], err


def test_learning_curve_comes_from_results_json_without_any_logger_file(tmp_path):
    """A run logged only to W&B (or to nothing) has no metrics.csv: its curve is in results.json."""
    import json
    import shutil

    from seqbench.analysis.plots import plot_learning_curves

    multirun = make_multirun(tmp_path, labels=("transformer",), seeds=(1,), n_sentences=20)
    run_dir = next(p.parent for p in multirun.rglob("results.json"))
    shutil.rmtree(run_dir / "csv")
    results = json.loads((run_dir / "results.json").read_text())
    results["curve"] = [{"step": 20, "bleu": 30.0, "nll": 1.2, "tokens_seen": 2e5, "train_seconds": 40.0},
                        {"step": 10, "bleu": 10.0, "nll": 2.0, "tokens_seen": 1e5, "train_seconds": 20.0},
                        {"step": 30, "nll": 1.0, "tokens_seen": 3e5, "train_seconds": 60.0}]  # val_bleu off: no BLEU
    (run_dir / "results.json").write_text(json.dumps(results))
    (run,) = [r for r in load_runs([run_dir])]
    assert [(p["step"], p["bleu"]) for p in run.curve()] == [(10, 10.0), (20, 30.0)]
    fig = plot_learning_curves({run.label: [run]})
    assert [len(line.get_xdata()) for line in fig.axes[0].get_lines()] == [2]


def test_learning_curve_survives_the_final_validation_of_the_best_checkpoint():
    """LearningCurve's points come back from a checkpoint when training resumes, not when the final validate/test
    loads the best checkpoint (that would cut the curve back to the best step)."""
    from types import SimpleNamespace

    from seqbench.training.callbacks import LearningCurve

    curve = LearningCurve()
    curve.points = [{"step": 10}, {"step": 20}, {"step": 30}]
    best = {"callbacks": {curve.state_key: {"points": [{"step": 10}]}}}
    curve.on_load_checkpoint(SimpleNamespace(state=SimpleNamespace(fn="validate")), None, best)
    assert [p["step"] for p in curve.points] == [10, 20, 30]
    resumed = LearningCurve()
    resumed.on_load_checkpoint(SimpleNamespace(state=SimpleNamespace(fn="fit")), None, best)
    assert resumed.points == [{"step": 10}]


def test_structured_corpus_gets_clause_dependency_and_targeted_sections(tmp_path):
    """A corpus that records structure adds BLEU by clauses, BLEU by longest dependency and the targeted coverage
    and accuracy by distance to the report (tables and plots), and runs that decoded greedily too add greedy BLEU
    (a column and by length); runs with neither get only BLEU by length (test_report_files)."""
    from seqbench.analysis.summary import BREAKDOWNS, present_breakdowns
    from seqbench.report.markdown import markdown_by_bucket

    from report_fixtures import make_structured_multirun

    groups = group_by_label(load_runs([make_structured_multirun(tmp_path / "runs")]))
    assert present_breakdowns(groups) == list(BREAKDOWNS)
    coverage, accuracy = BREAKDOWNS[-2:]
    for breakdown in (coverage, accuracy):
        table = markdown_by_bucket(groups, "test", breakdown).splitlines()
        oracle = next(line for line in table if line.startswith("| oracle"))
        filled = [cell.strip() for cell in oracle.split("|")[2:-1] if cell.strip() != "—"]
        assert filled and all(cell == "100.00 ± 0.00" for cell in filled)  # the references carry every marker
        counts = [int(h.rsplit("(", 1)[1].rstrip(") ")) for h in table[0].split("|")[2:-1]]
        assert sum(counts) == groups["oracle"][0].results["test"]["targeted"]["dependencies"]
    dropper = next(line for line in markdown_by_bucket(groups, "test", coverage).splitlines()
                   if line.startswith("| dropper"))
    assert "100.00" not in dropper.split("|", 2)[2]  # dropped words lose coverage in every bucket

    text = write_report([tmp_path / "runs"], tmp_path / "out", n_samples=50).read_text()
    header = next(line for line in text.splitlines() if line.startswith("| model | family"))
    assert "| BLEU | greedy BLEU | chrF |" in header  # module.test_greedy's score next to the beam's
    for breakdown in present_breakdowns(groups):
        assert f"## {breakdown.title}" in text
        assert (tmp_path / "out" / f"{breakdown.name}.png").stat().st_size > 1000
    # every dependency counts in the length x distance table when the corpus has no probes (data.longrange has)
    assert "## Agreement by distance within sentence length" in text and "n: every dependency" in text
    assert (tmp_path / "out" / "length_distance_agreement.png").stat().st_size > 1000
    plain = group_by_label(load_runs([make_multirun(tmp_path / "plain", seeds=(1,))]))
    assert [b.name for b in present_breakdowns(plain)] == ["bleu_by_length"]


def test_length_distance_cells_order_buckets_and_keep_coverage_apart(tmp_path):
    """The length x distance table sorts lengths and distances by bucket, whatever order the runs list them in, and
    the accuracy and coverage tables share the cells; markdown shows "accuracy (coverage; n)"."""
    from seqbench.analysis.summary import length_distance_cells
    from seqbench.report.markdown import markdown_length_distance

    def cell(length, distance, accuracy, coverage):
        return {"kind": "agreement", "length": length, "distance": distance, "probes": True, "dependencies": 4,
                "covered": 4, "accuracy": accuracy, "coverage": coverage}

    cells = [cell("21-30", "11-20", 50.0, 100.0), cell("11-20", "1-2", 100.0, 75.0), cell("11-20", "3-5", 75.0, 50.0),
             cell("21-30", "1-2", 100.0, 100.0)]
    groups = {"m": [Run(tmp_path, {"test": {"targeted": {"by_length_distance": cells}}})]}
    accuracy = length_distance_cells(groups, "test", "agreement", "accuracy")["m"]
    coverage = length_distance_cells(groups, "test", "agreement", "coverage")["m"]
    assert accuracy["lengths"] == ["11-20", "21-30"] and accuracy["distances"] == ["1-2", "3-5", "11-20"]
    assert length_distance_cells(groups, "test", "reference", "accuracy") == {}
    table = markdown_length_distance((accuracy, coverage)).splitlines()
    assert table[0].split("|")[2:-1] == [" 1-2 ", " 3-5 ", " 11-20 "]
    row = table[2].split("|")  # 11-20 words: no 11-20 distance in it
    assert row[2].strip().startswith("100.0 ") and "(75.0;" in row[2] and "n=4" in row[2] and row[4].strip() == ""


def _with_curve(run_dir, curve):
    import json

    results = json.loads((run_dir / "results.json").read_text())
    results["curve"] = curve
    (run_dir / "results.json").write_text(json.dumps(results))


def test_compute_to_target_reads_the_first_validation_at_or_above_each_target(tmp_path, capsys):
    """FLOPs, minutes and updates to a target BLEU come from the first validation at or above it; seeds that never
    get there are counted, not averaged; the report gets the table and the BLEU-vs-FLOPs plot, and runs without
    training FLOPs in their curve (older versions) get neither."""
    from seqbench.analysis.compute import compute_to_target
    from seqbench.analysis.plots import plot_bleu_vs_flops, plot_headline
    from seqbench.report.markdown import markdown_compute_to_target

    multirun = make_multirun(tmp_path / "runs", labels=("transformer", "rnnsearch"), seeds=(1, 2), n_sentences=20)
    before = write_report([multirun], tmp_path / "before", n_samples=10)
    assert "Compute to a target BLEU" not in before.read_text()
    assert not (tmp_path / "before" / "bleu_vs_flops.png").exists()
    assert not (tmp_path / "before" / "headline.png").exists()

    def curve(bleus, flops_per_step, seconds_per_step):
        return [{"step": 100 * (i + 1), "bleu": b, "nll": 1.0, "tokens_seen": 1e5 * (i + 1),
                 "train_seconds": seconds_per_step * 100 * (i + 1), "train_flops": flops_per_step * 100 * (i + 1)}
                for i, b in enumerate(bleus)]

    curves = {("transformer", 1): curve([40, 70, 85, 91, 90], 1e10, 0.3),
              ("transformer", 2): curve([50, 80, 88, 92, 93], 1e10, 0.3),
              ("rnnsearch", 1): curve([60, 82, 86, 86.1, 86.2], 2e10, 0.6),
              ("rnnsearch", 2): curve([55, 79, 79.5, 79.9, 79.8], 2e10, 0.6)}
    for results in multirun.rglob("results.json"):
        run = load_runs([results.parent])[0]
        _with_curve(results.parent, curves[(run.label, run.seed)])
    groups = group_by_label(load_runs([multirun]))
    rows = {r["label"]: r for r in compute_to_target(groups, (80, 90))}
    transformer, rnn = rows["transformer"], rows["rnnsearch"]
    best = transformer["best_bleu"]  # 91 and 93: std sqrt(2), 95% CI t(0.975, 1 df) x sqrt(2) / sqrt(2) = 12.706
    assert transformer["seeds"] == 2 and best.mean == 92.0 and best.std == pytest.approx(math.sqrt(2))
    assert best.ci == pytest.approx(12.706205)
    assert transformer["targets"][80]["updates"][0] == 250  # updates 300 (85 >= 80) and 200 (exactly 80)
    assert transformer["targets"][80]["train_flops"][0] == pytest.approx(2.5e12)
    assert transformer["targets"][90]["updates"][:2] == (400, 0.0) and transformer["targets"][90]["reached"] == 2
    assert transformer["targets"][80]["train_minutes"][0] == pytest.approx(250 * 0.3 / 60)
    assert rnn["targets"][80]["reached"] == 1 and rnn["targets"][80]["updates"] == (200, None, 1, None)
    assert rnn["targets"][90]["reached"] == 0 and rnn["targets"][90]["train_flops"][0] is None
    assert rnn["updates"][0] == 500 and rnn["train_flops"][0] == pytest.approx(1e13)

    table = markdown_compute_to_target(list(rows.values())).splitlines()
    rnn_row = next(line for line in table if line.startswith("| rnnsearch"))
    assert "| 1/2 |" in rnn_row and "| 0/2 | — | — | — |" in rnn_row
    fig = plot_bleu_vs_flops(groups, (80, 90))
    assert fig.axes[0].get_xscale() == "log" and len(fig.axes[0].get_lines()) == 4 + 2  # 4 runs, 2 target lines
    per_flop, per_minute, per_length = plot_headline(groups).axes
    assert per_flop.get_xscale() == "log" and len(per_flop.get_lines()) == 4
    rnn_seed_2 = [line for line in per_minute.get_lines() if line.get_color() == "C1"][-1]
    assert list(rnn_seed_2.get_xdata()) == pytest.approx([0.6 * 100 * (i + 1) / 60 for i in range(5)])
    assert list(rnn_seed_2.get_ydata()) == [55, 79, 79.5, 79.9, 79.8]
    assert sorted(per_length.get_legend_handles_labels()[1]) == ["rnnsearch", "transformer"]

    assert main([str(multirun), "--out", str(tmp_path / "after"), "--bootstrap", "10", "--target-bleu", "85"]) == 0
    text = (tmp_path / "after" / "report.md").read_text()
    assert "## Compute to a target BLEU" in text and "FLOPs to 85" in text and "FLOPs to 90" not in text
    assert (tmp_path / "after" / "bleu_vs_flops.png").stat().st_size > 1000
    assert (tmp_path / "after" / "headline.png").stat().st_size > 1000 and "(headline.png)" in text
    assert "| ../runs/" in text and str(tmp_path) not in text  # run directories relative to the report's folder


def test_a_run_cut_short_by_its_wall_clock_guard_is_flagged(tmp_path):
    """A run that stopped on trainer.max_time before its update budget completed, but not at the budget the others
    had: the report warns above the table and marks its updates in the Runs table; runs at their budget are not."""
    from seqbench.rundir.results import read_results, write_results

    runs = make_multirun(tmp_path / "sweep", labels=("transformer",), seeds=(1, 2), n_sentences=30)
    for run_dir, steps, stopped_by in ((runs / "0", 1509, "max_time"), (runs / "1", 2200, "max_steps")):
        record = read_results(run_dir)
        record["train"] = {"steps": steps, "max_steps": 2200, "stopped_by": stopped_by}
        write_results(record, run_dir)
    text = write_report([runs], tmp_path / "out", n_samples=50).read_text()
    warning = next(line for line in text.splitlines() if line.startswith("**Warning"))
    assert "1 run stopped on the wall-clock guard" in warning and "../sweep/0" in warning
    assert "../sweep/1" not in warning
    assert "| transformer | 1 | 1,509 of 2,200 (max_time) |" in text and "| transformer | 2 | 2,200 |" in text


def test_timings_taken_while_other_work_shared_the_cpu_are_flagged(tmp_path):
    """A run whose 1-minute load average rose above its own threads (plus a margin) was timed on a shared CPU: the
    report says its timings are not the model's. A run at its own threads' load, and one that recorded no load
    (an OS without a load average), are not flagged."""
    from seqbench.rundir.results import read_results, write_results

    runs = make_multirun(tmp_path / "sweep", labels=("transformer",), seeds=(1, 2, 3), n_sentences=30)
    for job, load in (("0", 3.1), ("1", 2.3), ("2", None)):
        record = read_results(runs / job)
        record["threads"], record["throughput"]["load_average_max"] = 2, load
        write_results(record, runs / job)
    text = write_report([runs], tmp_path / "out", n_samples=50).read_text()
    warning = next(line for line in text.splitlines() if line.startswith("**Timings"))
    assert "1 run trained while other work shared the CPU" in warning and "../sweep/0 (load 3.1, 2 threads)" in warning
    assert "../sweep/1" not in warning and "../sweep/2" not in warning


def test_a_headline_gives_no_training_speed_for_a_model_timed_on_a_shared_cpu(tmp_path):
    """The headline's train tok/s: a number for a model whose runs all trained alone, "shared CPU" for one with a run
    timed beside other work, and the footer says why."""
    from seqbench.report.headline import headline
    from seqbench.rundir.results import read_results, write_results

    runs = make_multirun(tmp_path / "sweep", labels=("transformer", "rnnsearch"), seeds=(1, 2), n_sentences=30)
    for job in ("0", "1", "2", "3"):
        record = read_results(runs / job)
        record["threads"], record["throughput"]["load_average_max"] = 2, 3.1 if job == "1" else 2.2
        record["train"], record["data"] = {"steps": 100}, {"corpus": "synthetic-x"}
        record["config"] = {"task_name": "arch_comparison"}
        write_results(record, runs / job)
    rows = {line.split(" | ")[0].strip("| "): line for line in headline(runs).splitlines() if line.startswith("| ")}
    assert rows["transformer"].endswith("| shared CPU |")
    assert "shared" not in rows["rnnsearch"] and rows["rnnsearch"].split(" | ")[-1].strip(" |")[0].isdigit()
    assert "train tok/s is not given where a run trained while other work shared the CPU" in headline(runs)


def test_a_headline_over_two_directories_tests_their_models_in_one_table(tmp_path):
    """`<!-- headline: A B -->`: B's models (e.g. another recipe of a family, run with overrides) join A's rows, Holm
    across every pair of the joint table; the footer names A's preset and B's recorded commands."""
    from seqbench.report.headline import headline, render
    from seqbench.rundir.results import read_results, write_results

    preset = make_multirun(tmp_path / "a", labels=("transformer", "rnnsearch"), seeds=(1, 2, 3), n_sentences=30)
    probe = make_multirun(tmp_path / "b", labels=("rnnencdec",), seeds=(1, 2, 3), n_sentences=30)
    for run_dir in [*preset.glob("[0-9]*"), *probe.glob("[0-9]*")]:
        record = read_results(run_dir)
        record["train"], record["data"] = {"steps": 100}, {"corpus": "synthetic-x"}
        record["config"] = {"task_name": "arch_comparison"}
        write_results(record, run_dir)
        if run_dir.parent == probe:
            (run_dir / "command.txt").write_text(f"python train.py -m model=rnn seed={record['seed']}\n")
    block = render("<!-- headline: a b -->\n<!-- /headline -->", tmp_path)
    assert block.split("\n", 1)[1].rsplit("<!--", 1)[0] == headline([preset, probe], shown=["a", "b"])
    rows = [line.split(" | ")[0].strip("| ") for line in block.splitlines() if line.startswith("| ")][1:]
    assert sorted(rows) == ["rnnencdec", "rnnsearch", "transformer"]
    assert "Holm-adjusted across the 3 pairs" in block  # 3 models: 3 pairs, not A's 1
    assert ("Commands and records: `a`: `python train.py -m experiment=arch_comparison`; `b`: each run's "
            "command.txt;") in block
    assert "Command: `python train.py -m experiment=arch_comparison`; records: `a`;" in headline(preset, shown=["a"])
    for run_dir in preset.glob("[0-9]*"):  # runs of train.yaml with overrides, from before command.txt
        record = read_results(run_dir)
        record["config"] = {"task_name": "train"}
        write_results(record, run_dir)
    assert ("Command: unknown (the runs recorded no command.txt, and their task `train` is no experiment preset); "
            "records: `a`;") in headline(preset, shown=["a"])


def test_the_budget_headline_compares_each_budgets_models_over_the_seeds_every_budget_has(tmp_path):
    """`--by-budget`: one column pair per update budget; seeds only some budgets have are left out; each model is
    tested against its budget's best with scipy's Welch and permutation tests, Holm-adjusted across the table."""
    from seqbench.analysis.seeds import compare_seeds, holm
    from seqbench.report.headline import render
    from seqbench.rundir.results import write_results

    bleu = {(1200, "rnn"): [90.0, 91.0, 92.0], (1200, "transformer"): [80.0, 82.0, 81.0],
            (2400, "rnn"): [95.0, 96.0, 94.0, 99.0], (2400, "transformer"): [97.0, 98.0, 96.5, 20.0]}
    for (steps, label), scores in bleu.items():
        for seed, score in zip((4, 5, 6, 7), scores):  # seed 7 only at 2,400: left out
            results = {"label": label, "seed": seed, "model": {"name": label}, "parameters": 1_000_000,
                       "test": {"bleu": score}, "train": {"steps": steps},
                       "config": {"task_name": "budget_sweep" if steps == 1200 else "equal_compute"},
                       "data": {"corpus": "synthetic-x"}}
            write_results(results, tmp_path / f"d{steps}" / f"{label}-seed{seed}")
    text = "<!-- headline: d1200 d2400 --by-budget -->\n<!-- /headline -->"
    out = render(text, tmp_path)
    rows = {line.split(" | ")[0].strip("| "): line for line in out.splitlines() if line.startswith("| rnn")
            or line.startswith("| transformer")}
    assert list(rows) == ["transformer", "rnn"]  # ordered by the largest budget's mean
    first = compare_seeds([80.0, 82.0, 81.0], [90.0, 91.0, 92.0])
    second = compare_seeds([95.0, 96.0, 94.0], [97.0, 98.0, 96.5])
    adjusted = holm([first.permutation_p, second.permutation_p])
    assert f"{first.difference:+.2f} [{first.ci[0]:.2f}, {first.ci[1]:.2f}]; {adjusted[0]:.3g} (floor 0.1)" \
        in rows["transformer"]
    assert f"{second.difference:+.2f} [{second.ci[0]:.2f}, {second.ci[1]:.2f}]; {adjusted[1]:.3g}" in rows["rnn"]
    assert "97.17 ±" in rows["transformer"] and "| best |" in rows["rnn"] and "| best" in rows["transformer"]
    assert "Seeds: 4, 5, 6 (those every model has at every budget)" in out
    assert "Budget: 1,200, 2,400 updates" in out and "across the table's 2 comparisons" in out
    assert "`python train.py -m experiment=budget_sweep`, `python train.py -m experiment=equal_compute`" in out



def test_runs_of_one_model_at_different_budgets_are_compared_by_budget_not_as_seeds(tmp_path, capsys):
    """The report and the headline refuse a label whose runs trained for different trainer.max_steps (they are not
    seeds of one model) and name --by-budget, which writes the budget table."""
    from seqbench.report.headline import headline
    from seqbench.rundir.results import write_results

    from conftest import seqbench_cli

    for steps, seeds in ((1200, (4, 5)), (2400, (4, 5))):
        for label, base in (("rnn", 90.0), ("transformer", 80.0)):
            for seed in seeds:
                write_results({"label": label, "seed": seed, "model": {"name": label}, "parameters": 1_000_000,
                               "test": {"bleu": base + seed + steps / 1000}, "config": {"task_name": "budget_sweep"},
                               "train": {"steps": steps, "max_steps": steps}, "data": {"corpus": "synthetic-x"}},
                              tmp_path / f"d{steps}" / f"{label}-seed{seed}")
    with pytest.raises(InputError, match="different update budgets .* --by-budget"):
        write_report([tmp_path / "d1200", tmp_path / "d2400"], tmp_path / "out")
    with pytest.raises(InputError, match="--by-budget"):
        headline(tmp_path)
    status, out, err = seqbench_cli(["report", str(tmp_path / "d1200"), str(tmp_path / "d2400"), "--by-budget",
                                     "--out", str(tmp_path / "out")], capsys)
    assert status == 0, err
    table = (tmp_path / "out" / "budget.md").read_text()
    assert "| 1,200 updates: test BLEU |" in table and "| 2,400 updates: test BLEU |" in table


def test_a_terminal_gets_bars_over_the_bootstraps_and_figures_and_a_log_none(multirun, tmp_path, capsys,
                                                                            monkeypatch):
    write_report([multirun], tmp_path / "quiet", n_samples=20)
    assert capsys.readouterr().err == ""  # stderr is not a terminal here: no bar, no control characters
    monkeypatch.setattr("seqbench.common.progress.enabled", lambda: True)  # as on a terminal
    write_report([multirun], tmp_path / "out", n_samples=20)
    err = capsys.readouterr().err
    figures = len(list((tmp_path / "out").glob("*.png")))  # no length-distance maps for this corpus
    assert "paired bootstrap" in err and "9/9 pairs of runs" in err  # 3 model pairs x 3 seed-matched runs
    assert "figures" in err and f"{figures}/{figures} figures" in err


def test_runs_trained_to_a_plateau_say_which_reached_it_and_which_the_cap_stopped(tmp_path):
    """budget=plateau records: the report's Runs table marks each run's updates "(plateau)" or "(the cap, before its
    plateau)" and warns above the table about the latter; the headline's Budget names the rule, the range of updates
    and the capped run; runs of two plateau rules are not one table."""
    from seqbench.report.headline import headline
    from seqbench.rundir.results import read_results, write_results

    runs = make_multirun(tmp_path / "sweep", labels=("transformer",), seeds=(1, 2), n_sentences=30)
    rule = {"monitor": "val/bleu", "window": 0.25, "min_gain": 0.3, "min_steps": 2400}
    for job, steps, stopped_by in (("0", 5200, "plateau"), ("1", 12000, "max_steps")):
        record = read_results(runs / job)
        k = int(job) + 1
        reached = {"step": steps // 2, "train_flops": 1e12 * k, "train_cpu_seconds": 600.0 * k}
        plateau = {"level": 99.0, "level_step": steps - 200, "window_gain": 0.1 * k,
                   "reached": {"90%": reached, "95%": reached, "99%": reached}}
        record["train"] = {"steps": steps, "max_steps": 12000, "stopped_by": stopped_by, "plateau_rule": rule,
                           "plateau": plateau}
        record["data"], record["config"] = {"corpus": "synthetic-x"}, {"task_name": "equal_compute_plateau"}
        write_results(record, runs / job)
    text = write_report([runs], tmp_path / "out", n_samples=50).read_text()
    warning = next(line for line in text.splitlines() if line.startswith("**Warning"))
    assert "1 run trained to the plateau reached the update cap first (../sweep/1)" in warning
    assert "| transformer | 1 | 5,200 (plateau) |" in text
    assert "| transformer | 2 | 12,000 (the cap, before its plateau) |" in text
    block = headline(runs)
    assert ("Budget: each run to its plateau (its best greedy validation BLEU rose by less than 0.3 over the last 25% "
            "of its updates; at least 2,400, at most 12,000 updates): 5,200-12,000 updates, 1 of 2 runs stopped by "
            "the cap before their plateau (transformer seed 2).") in block
    row = next(line for line in headline(runs, plateau=True).splitlines() if line.startswith("| transformer |"))
    # level at 5,000 and 11,800 (mean 8,400), 1e12 and 2e12 FLOPs (1.50e12), 10 and 20 CPU minutes, gains 0.1, 0.2
    assert "| 8,400 ± " in row and "| 1.50e+12 |" in row and "| 15.0 ± " in row and "| 0.15 ± " in row
    assert "gain over last quarter" in headline(runs, plateau=True)
    record = read_results(runs / "1")
    record["train"]["plateau_rule"] = {**rule, "min_gain": 0.5}
    write_results(record, runs / "1")
    with pytest.raises(InputError, match="different rules"):
        headline(runs)


def test_a_report_killed_while_writing_a_figure_leaves_no_partial_file(tmp_path, monkeypatch):
    """Each figure and report.md are written atomically: a killed report leaves the files it finished, nothing
    half written (a 0-byte PNG)."""
    from matplotlib.figure import Figure

    runs = make_multirun(tmp_path / "sweep", labels=("transformer",), seeds=(1, 2), n_sentences=30)

    def killed(self, target, *args, **kwargs):
        open(target, "wb").close()  # the file begun, then the signal
        raise KeyboardInterrupt

    monkeypatch.setattr(Figure, "savefig", killed)
    with pytest.raises(KeyboardInterrupt):
        write_report([runs], tmp_path / "out", n_samples=50)
    assert list((tmp_path / "out").iterdir()) == []
    monkeypatch.undo()
    path = write_report([runs], tmp_path / "out", n_samples=50)
    assert path.read_text().startswith("#") and all(p.stat().st_size > 0 for p in path.parent.glob("*.png"))
