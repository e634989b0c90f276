"""Comparison reports over finished runs: `seqbench report RUN_DIR... [--out DIR]`.

Run directories (or multirun directories: results.json files are found recursively) are grouped by their label
(`compare.label`; runs sharing one are seeds of one model). The report is a markdown table of means ± 95% confidence
intervals over seeds with two significance tests (over seeds, Holm-corrected; per seed-matched pair of runs), BLEU by
source length, and PNG plots; the notebooks (notebooks/*.ipynb) show the same through the same functions.
Everything is read from the run directories: results.json (learning curves included; runs recorded before it had
them fall back to csv/metrics.csv), {hypotheses,references,sources}.test.txt and attention.pt. Other toolkits'
outputs join as extra rows (`--external NAME=HYP_FILE`), scored against the first run's references and sources
(seqbench.analysis.runs.external_run).
"""
from __future__ import annotations

import os
from pathlib import Path

from seqbench.analysis.compute import DEFAULT_TARGETS, compute_to_target, has_compute_curves
from seqbench.analysis.plateau import capped_before_plateau, trained_to_plateau
from seqbench.analysis.plots import (
    attention_figures,
    plot_bleu_vs_flops,
    plot_budget_curves,
    plot_by_bucket,
    plot_headline,
    plot_learning_curves,
    plot_length_distance,
    plot_throughput,
)
from seqbench.analysis.runs import (
    check_one_budget_per_model,
    external_run,
    group_by_label,
    is_search_dir,
    runs_of,
    timed_while_shared,
)
from seqbench.analysis.summary import (
    bucket_significance,
    length_distance_cells,
    paired_runs,
    present_breakdowns,
    seed_significance,
    significance,
    summary_rows,
)
from seqbench.common.errors import InputError
from seqbench.common.io import atomic_savefig, atomic_write_text
from seqbench.common.progress import progress_bar
from seqbench.report.curve import GAIN_NOTE, curve_table, has_curves
from seqbench.report.markdown import (
    markdown_bucket_tests,
    markdown_by_bucket,
    markdown_compute_to_target,
    markdown_length_distance,
    markdown_pairwise,
    markdown_table,
)
from seqbench.rundir.reader import load_runs
from seqbench.rundir.results import SCORED


def _from(out: Path, run_path: Path) -> str:
    """A run directory as a link from the report's folder: a committed report (docs/results/) stays valid anywhere."""
    return os.path.relpath(run_path, out)


def _cut_short(run) -> bool:
    """The run stopped on its wall-clock guard (trainer.max_time) before its update budget (unless that time was its
    budget: time_budget=true)."""
    return (run.results.get("train", {}).get("stopped_by") == "max_time"
            and not (run.results.get("config") or {}).get("time_budget"))


def _updates(run) -> str:
    train = run.results.get("train", {})
    if train.get("steps") is None:
        return "—"
    if _cut_short(run):
        return f"{train['steps']:,} of {train['max_steps']:,} (max_time)"
    if capped_before_plateau(run.results):
        return f"{train['steps']:,} (the cap, before its plateau)"
    return f"{train['steps']:,}" + (" (plateau)" if trained_to_plateau(run.results) else "")


def _capped_warning(runs, out: Path) -> list[str]:
    capped = [run for run in runs if capped_before_plateau(run.results) and not _cut_short(run)]
    if not capped:
        return []
    return [f"**Warning: {len(capped)} run{'s' * (len(capped) != 1)} trained to the plateau reached the update cap "
            f"first ({', '.join(_from(out, run.path) for run in capped)}): their scores are at the cap, not at a "
            "plateau; a higher trainer.max_steps resumes each from its last.ckpt.**", ""]


def _shared_timing_warning(runs, out: Path) -> list[str]:
    shared = [run for run in runs if timed_while_shared(run)]
    if not shared:
        return []
    where = ", ".join(f"{_from(out, run.path)} (load {run.results['throughput']['load_average_max']:.1f}, "
                      f"{run.results['threads']} thread{'s' * (run.results['threads'] != 1)})" for run in shared)
    return [f"**Timings: {len(shared)} run{'s' * (len(shared) != 1)} trained while other work shared the CPU (the "
            f"1-minute load average rose above the run's own threads: {where}). Their tokens/s, steps/s, MFU and "
            "minutes are not measurements of the model alone; BLEU under the update budget is unaffected.**", ""]


def _cut_short_warning(runs, out: Path) -> list[str]:
    cut = [run for run in runs if _cut_short(run)]
    if not cut:
        return []
    where = ", ".join(_from(out, run.path) for run in cut)
    return [f"**Warning: {len(cut)} run{'s' * (len(cut) != 1)} stopped on the wall-clock guard (trainer.max_time) "
            f"before the update budget ({where}): their scores are not at the budget the others had. Resume each "
            "with a looser guard (`hydra.run.dir=<directory> trainer.max_time=...`) to finish its updates.**", ""]


def write_report(paths: list[str | Path], out: str | Path, split: str = "test", n_samples: int = 1000,
                 external: dict[str, str | Path] | None = None, targets=DEFAULT_TARGETS) -> Path:
    """Writes report.md and the PNGs into `out`; returns the path of report.md. `external`: {name: hypothesis file}
    of other systems, scored against the first run's references and sources of `split`. `targets`: the validation
    BLEUs of the compute-to-target table (runs that recorded training FLOPs only). A successive-halving search's
    directory is reported as its families' chosen recipes over their confirmation seeds."""
    search = any(is_search_dir(path) for path in paths)  # its other jobs are not the table's runs
    runs = runs_of(paths)
    for name, hypotheses in (external or {}).items():
        if name in {r.label for r in runs}:
            raise InputError(f"--external {name}: a run already has that label; choose another name")
        runs.append(external_run(name, hypotheses, runs[0], split, n_samples))
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    groups = group_by_label(runs, split)
    check_one_budget_per_model(groups)
    # The long steps, each pair of runs' bootstrap and each figure, with a bar on a terminal (seqbench.common.progress)
    with progress_bar("paired bootstrap", total=paired_runs(groups), unit="pairs of runs") as advance:
        tests = significance(groups, split, n_samples, advance)
    breakdowns = present_breakdowns(groups, split)
    figures = _figures(groups, split, breakdowns, targets)
    with progress_bar("figures", total=len(figures), unit="figures") as advance:
        for name, fig in figures.items():
            atomic_savefig(fig, out / f"{name}.png", dpi=120)
            advance(1)
    lines = [*_overview(runs, groups, split, tests, n_samples, out), *_breakdown_sections(groups, split, breakdowns),
             *_length_distance_sections(groups, split, out), *_training_sections(groups, targets, figures),
             *_run_tables(groups, runs if search else load_runs(paths, completed=False), split, out)]
    path = out / "report.md"
    atomic_write_text(path, "\n".join(lines) + "\n")
    return path


def _figures(groups, split: str, breakdowns, targets) -> dict:
    """Every figure the report shows, by file name (without .png)."""
    return {**{b.name: plot_by_bucket(groups, split, b) for b in breakdowns},
            "learning_curves": plot_learning_curves(groups), "throughput": plot_throughput(groups, split),
            **({"budget_curves": plot_budget_curves(groups)} if has_curves(groups) else {}),
            **({"bleu_vs_flops": plot_bleu_vs_flops(groups, targets), "headline": plot_headline(groups, split)}
               if has_compute_curves(groups) else {}),
            **dict(attention_figures(groups))}


def _overview(runs, groups, split: str, tests: dict, n_samples: int, out: Path) -> list[str]:
    """The title, the summary table with its tests (`tests`: seqbench.analysis.summary.significance's), the warnings
    about the runs, and every pair's significance."""
    rows = summary_rows(groups, split)
    seed_tests = seed_significance(groups, split)
    best = rows[0]["label"]
    signature = next((r.results[split].get("bleu_signature") for r in runs if split in r.results), "—")
    return [
        f"# seqbench comparison ({split} set)", "",
        f"{len(runs)} runs, {len(groups)} models: "
        + ", ".join(f"{r['label']} ({len(r['seeds'])} seed{'s' * (len(r['seeds']) != 1)})" for r in rows) + ".", "",
        markdown_table(rows, tests, seed_tests, n_samples), "",
        *_cut_short_warning(runs, out),
        *_capped_warning(runs, out),
        *_shared_timing_warning(runs, out),
        f"Values are means ± the 95% confidence interval over seeds (Student's t; one seed: the value alone). BLEU "
        f"and chrF are sacreBLEU ({signature}). Seeds are the unit of inference: `Δ BLEU vs {best}` is the "
        f"difference of the seed means with Welch's t 95% interval, and `p vs {best} (seeds, Holm)` a two-sided "
        "permutation test of that difference over seeds (every split enumerated; scipy.stats), Holm-adjusted "
        "across all the pairs of this report, with the smallest p the design can reach beside it (3 vs 3 seeds: "
        "0.10; 5 vs 5: 0.0079), so a p at its floor says the seeds did not overlap, not that the difference is "
        f"large (seqbench.analysis.seeds). `p vs {best} (run pairs)`: sacreBLEU's paired bootstrap (paired-bs, "
        f"{n_samples} resamples) on each seed-matched pair of runs, the largest p over the pairs: whether those "
        f"trained models differ on this test set, not whether the families do; `≤ 1/{n_samples + 1}` is its floor. "
        "Throughput: training target tokens/s and steps/s in the steady state; decoding sentences/s over a fixed "
        "test subset, greedy and with the configured beam (k); MFU: achieved training FLOP/s (3x the model's "
        "analytic forward FLOPs) over the machine's cached matrix-product peak (seqbench.measure.peaks).", "",
        "## Significance between every two models", "",
        "Over seeds (row minus column: difference of seed means [Welch 95% CI]; permutation p, Holm-adjusted, with "
        "its floor; n/a: a model without scores):", "",
        markdown_pairwise([r["label"] for r in rows], seed_tests, n_samples, per_pair=False), "",
        "Largest per-sentence paired-bootstrap p-value over seed-matched pairs of runs (trained models, not "
        "families):", "",
        markdown_pairwise([r["label"] for r in rows], tests, n_samples), "",
    ]


def _breakdown_sections(groups, split: str, breakdowns) -> list[str]:
    """One section per breakdown the corpus declares (BLEU by length, ...), with per-bucket tests over seeds."""
    lines = []
    for b in breakdowns:
        lines += [f"## {b.title}", "", b.note, "", markdown_by_bucket(groups, split, b), "",
                  f"![{b.title}]({b.name}.png)", ""]
        bucket_tests = bucket_significance(groups, split, b)
        if bucket_tests:
            lines += ["Every two models in every bucket, over seeds (difference of seed means [Welch 95% CI]; "
                      "permutation p, Holm-adjusted across the pair's buckets, with its floor):", "",
                      markdown_bucket_tests(bucket_tests, list(dict.fromkeys(
                          bucket for pair in bucket_tests.values() for bucket in pair))), ""]
    return lines


def _length_distance_sections(groups, split: str, out: Path) -> list[str]:
    """Marker accuracy by dependency distance within sentence length (corpora with dependency markers only)."""
    lines = []
    for kind in ("agreement", "reference"):
        accuracy = length_distance_cells(groups, split, kind, "accuracy")
        if not accuracy:
            continue
        coverage = length_distance_cells(groups, split, kind, "coverage")
        name = f"length_distance_{kind}"
        atomic_savefig(plot_length_distance(accuracy, kind, "accuracy"), out / f"{name}.png", dpi=120)
        counted = "probe dependencies (one per sentence)" if next(iter(accuracy.values()))["probes"] else \
            "every dependency"
        lines += [f"## {kind.capitalize()} by distance within sentence length", "",
                  f"Cells: marker accuracy when the word is there (coverage in brackets; n: {counted} in the cell), "
                  "mean ± 95% CI over seeds. Distance varies within each row, so a fall along a row is distance, "
                  "not length (seqbench.scoring.targeted).", ""]
        for label in accuracy:
            lines += [f"**{label}**", "", markdown_length_distance((accuracy[label], coverage[label])), ""]
        lines += [f"![{kind} by distance within length]({name}.png)", ""]
    return lines


def _training_sections(groups, targets, figures: dict) -> list[str]:
    """Learning curves and throughput; compute to a target BLEU where runs recorded FLOPs; attention maps."""
    lines = [
        "## Training", "",
        "![Validation BLEU during training](learning_curves.png)", "",
        "![Throughput, MFU and memory](throughput.png)", "",
    ]
    if has_curves(groups):
        table, _ = curve_table(groups)
        lines += [f"Validation BLEU at every validation during training, means ± 95% CI over seeds; {GAIN_NOTE}:", "",
                  table, "", "![Validation BLEU by update](budget_curves.png)", ""]
    if "bleu_vs_flops" in figures:
        lines += [
            "## Compute to a target BLEU", "",
            "Training each model needed before its validation BLEU first reached each target (Vaswani et al. 2017, "
            "Table 2's comparison: cost to a quality, not quality at a fixed time). FLOPs are analytic (3x the "
            "model's forward FLOPs per target token at each batch's mean lengths, summed over training), so they do "
            "not depend on the machine; minutes are training time with validation excluded. The first validation at "
            "or above the target counts, so the resolution is the validation interval; means are over the seeds "
            "that reached the target (`seeds ≥`).", "",
            markdown_compute_to_target(compute_to_target(groups, targets)), "",
            "![Validation BLEU against training FLOPs](bleu_vs_flops.png)", "",
            "Per FLOP, per minute and per sentence length in one figure:", "",
            "![BLEU per training FLOP, per training minute and by sentence length](headline.png)", "",
        ]
    attention = [name for name in figures if name.startswith("attention_")]
    if attention:
        lines += ["## Attention", ""] + [f"![{name}]({name}.png)" for name in attention] + [""]
    return lines


def _run_tables(groups, every_run, split: str, out: Path) -> list[str]:
    """Every run of the tables with its directory, then the runs left out because they did not complete."""
    lines = ["## Runs", "", "| model | seed | updates | test BLEU | directory |", "|---|---|---|---|---|"]
    for label, members in groups.items():
        for run in members:
            bleu = run.results.get(split, {}).get("bleu")
            seed = "—" if run.seed is None else run.seed
            lines.append(f"| {label} | {seed} | {_updates(run)} | {'—' if bleu is None else f'{bleu:.2f}'} | "
                         f"{_from(out, run.path)} |")
    unfinished = [r for r in every_run if r.status not in SCORED]
    if unfinished:
        lines += ["", "## Runs that did not complete", "",
                  "Left out of every table and plot above. `interrupted`: rerun with `hydra.run.dir=<directory>` to "
                  "resume.", "", "| model | seed | status | during | update | reason | directory |",
                  "|---|---|---|---|---|---|---|"]
        for run in unfinished:
            r = run.results
            reason = str(r.get("error", "")).replace("|", "\\|")
            lines.append(f"| {r.get('label', '—')} | {run.seed} | {run.status} | {r.get('phase', '—')} | "
                         f"{'—' if r.get('step') is None else r['step']} | {reason} | {_from(out, run.path)} |")
    return lines
