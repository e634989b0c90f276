"""The report of a sweep directory (`seqbench sweep`): BLEU and training tokens/s as functions of the
searched parameters, e.g. heads x layers x d_ff for sweeps/transformer_shape.yaml.

The axes are the sweep's searched parameters in the file's order, `seed` excepted: runs that differ only in their
seed are one configuration, shown as mean ± sample std (error bars). Figures: a heatmap over the first two axes
(mean over the other axes and seeds), lines over the third axis (one line per combination of the others), and
BLEU against tokens/s with the Pareto front (configurations no other one beats on both).
"""
from __future__ import annotations

import json
from pathlib import Path

from matplotlib.figure import Figure

from seqbench.analysis.plots import MARKERS, label_colours
from seqbench.analysis.runs import is_search_dir
from seqbench.analysis.summary import spread
from seqbench.common.errors import InputError
from seqbench.common.io import atomic_savefig, atomic_write_text
from seqbench.report.markdown import cell, markdown_rows
from seqbench.rundir.layout import RunDir
from seqbench.rundir.reader import Run
from seqbench.rundir.results import read_results

SEED_AXIS = "seed"
METRICS = {"bleu": "validation BLEU", "tokens_per_s": "training target tokens/s"}


def is_sweep_dir(path: str | Path) -> bool:
    """A W&B-style sweep's directory (`seqbench sweep SWEEP.yaml`); a successive-halving search's is reported as its
    chosen recipes (seqbench.report.write_report)."""
    return (Path(path) / "summary.json").is_file() and not is_search_dir(path)


def load_sweep(sweep_dir: str | Path) -> tuple[dict, list[dict]]:
    """(summary.json, finished trials) where each trial is {"params", "seed", "bleu", "tokens_per_s",
    "parameters"} read from its run directory's results.json."""
    summary = json.loads((Path(sweep_dir) / "summary.json").read_text())
    finished = []
    for trial in summary["trials"]:
        results_path = RunDir(trial_dir(sweep_dir, trial)).results
        if trial["state"] != "complete" or not results_path.is_file():
            continue
        run = Run(results_path.parent, read_results(results_path))
        finished.append({"params": trial["params"], "seed": run.seed, "bleu": run.results["valid"]["bleu"],
                         "tokens_per_s": run.results.get("throughput", {}).get("target_tokens_per_s"),
                         "parameters": run.results.get("parameters")})
    return summary, finished


def trial_dir(sweep_dir: str | Path, trial: dict) -> Path:
    """A trial's run directory: recorded relative to the sweep directory; a summary written before records named no
    machine's folders holds an absolute path, where the sweep ran it, or under the sweep directory's trials/ when the
    sweep was moved since (e.g. its results copied into the repository)."""
    recorded = Path(trial["run_dir"])
    if not recorded.is_absolute():
        return Path(sweep_dir) / recorded
    return recorded if recorded.is_dir() else Path(sweep_dir) / "trials" / recorded.name


def axes_of(summary: dict) -> list[str]:
    names = list(summary["trials"][0]["params"]) if summary["trials"] else []
    return [name for name in names if name != SEED_AXIS]


def configurations(trials: list[dict], axes: list[str]) -> list[dict]:
    """One row per distinct setting of the axes: {"key": values, "seeds", "<metric>": Spread (mean, 95% CI, n), ...}."""
    groups: dict[tuple, list[dict]] = {}
    for trial in trials:
        groups.setdefault(tuple(trial["params"][a] for a in axes), []).append(trial)
    rows = []
    for key, members in groups.items():
        row = {"key": key, "seeds": sorted(m["seed"] for m in members), "parameters": members[0]["parameters"]}
        for metric in METRICS:
            row[metric] = spread([m[metric] for m in members])
        rows.append(row)
    rows.sort(key=lambda r: -(r["bleu"][0] or 0.0))
    return rows


def pareto_front(rows: list[dict]) -> list[dict]:
    """Configurations that no other one beats on mean BLEU and mean tokens/s at once, by tokens/s."""
    points = [r for r in rows if r["bleu"][0] is not None and r["tokens_per_s"][0] is not None]
    front = [r for r in points
             if not any(o["bleu"][0] >= r["bleu"][0] and o["tokens_per_s"][0] >= r["tokens_per_s"][0]
                        and (o["bleu"][0], o["tokens_per_s"][0]) != (r["bleu"][0], r["tokens_per_s"][0])
                        for o in points)]
    return sorted(front, key=lambda r: r["tokens_per_s"][0])


def _name(axes: list[str], key: tuple) -> str:
    return ", ".join(f"{a.split('.')[-1]}={v}" for a, v in zip(axes, key))


def _sorted_values(trials: list[dict], axis: str) -> list:
    values = {t["params"][axis] for t in trials}
    return sorted(values, key=lambda v: (isinstance(v, str), v))


def plot_heatmap(trials: list[dict], rows_axis: str, cols_axis: str) -> Figure:
    """Mean BLEU and mean tokens/s for every (rows_axis, cols_axis) cell, over the other axes and seeds."""
    ys, xs = _sorted_values(trials, rows_axis), _sorted_values(trials, cols_axis)
    fig = Figure(figsize=(5.2 * len(METRICS), 0.5 * len(ys) + 2.6), layout="constrained")
    for ax, (metric, title) in zip(fig.subplots(1, len(METRICS), squeeze=False)[0], METRICS.items()):
        grid = [[spread([t[metric] for t in trials if t["params"][rows_axis] == y and t["params"][cols_axis] == x])
                 for x in xs] for y in ys]
        means = [[cell[0] if cell[0] is not None else float("nan") for cell in row] for row in grid]
        image = ax.imshow(means, cmap="viridis", aspect="auto")
        fig.colorbar(image, ax=ax, shrink=0.8)
        for i, row in enumerate(grid):
            for j, scores in enumerate(row):
                mean, n = scores.mean, scores.n
                if mean is not None:
                    text = f"{mean:.1f}" if metric == "bleu" else f"{mean:,.0f}"
                    bright = image.norm(mean) > 0.6  # viridis turns yellow: dark text there
                    ax.text(j, i, f"{text}\n(n={n})", ha="center", va="center", fontsize=8,
                            color="black" if bright else "white")
        ax.set_xticks(range(len(xs)), [str(x) for x in xs])
        ax.set_yticks(range(len(ys)), [str(y) for y in ys])
        ax.set_xlabel(cols_axis)
        ax.set_ylabel(rows_axis)
        ax.set_title(f"{title} (mean over other parameters and seeds)", fontsize=9)
    return fig


def plot_lines(rows: list[dict], axes: list[str], x_axis: str) -> Figure:
    """BLEU and tokens/s over x_axis, one line per setting of the other axes; error bars: 95% CI over seeds."""
    others = [a for a in axes if a != x_axis]
    x_index, other_index = axes.index(x_axis), [axes.index(a) for a in others]
    xs = sorted({r["key"][x_index] for r in rows}, key=lambda v: (isinstance(v, str), v))
    series: dict[tuple, dict] = {}
    for r in rows:
        series.setdefault(tuple(r["key"][i] for i in other_index), {})[r["key"][x_index]] = r
    series = dict(sorted(series.items(), key=lambda kv: tuple((isinstance(v, str), v) for v in kv[0])))
    colours = label_colours([str(k) for k in series])
    fig = Figure(figsize=(6 * len(METRICS), 4.5), layout="constrained")
    for ax, (metric, title) in zip(fig.subplots(1, len(METRICS), squeeze=False)[0], METRICS.items()):
        for k, (other_key, by_x) in enumerate(series.items()):
            points = [(xs.index(x), r[metric]) for x, r in by_x.items() if r[metric][0] is not None]
            points.sort()
            ax.errorbar([p for p, _ in points], [s[0] for _, s in points], yerr=[s[1] or 0.0 for _, s in points],
                        label=_name(others, other_key) or "all", color=colours[str(other_key)],
                        marker=MARKERS[k % len(MARKERS)], capsize=3)
        ax.set_xticks(range(len(xs)), [str(x) for x in xs])
        ax.set_xlabel(x_axis)
        ax.set_ylabel(title)
        ax.grid(alpha=0.3)
    fig.axes[-1].legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7)
    return fig


def plot_pareto(rows: list[dict], axes: list[str]) -> Figure:
    """Every configuration at (tokens/s, BLEU), seed std as error bars; the Pareto front joined and labelled."""
    fig = Figure(figsize=(7.5, 5), layout="constrained")
    ax = fig.add_subplot()
    points = [r for r in rows if r["bleu"][0] is not None and r["tokens_per_s"][0] is not None]
    ax.errorbar([r["tokens_per_s"][0] for r in points], [r["bleu"][0] for r in points],
                xerr=[r["tokens_per_s"][1] or 0.0 for r in points], yerr=[r["bleu"][1] or 0.0 for r in points],
                fmt="o", color="C0", alpha=0.6, capsize=2, label="configuration (mean ± seed std)")
    front = pareto_front(rows)
    ax.plot([r["tokens_per_s"][0] for r in front], [r["bleu"][0] for r in front], "-", color="C3", marker="D",
            label="Pareto front")
    for r in front:
        ax.annotate(_name(axes, r["key"]), (r["tokens_per_s"][0], r["bleu"][0]), fontsize=7,
                    xytext=(4, 4), textcoords="offset points")
    ax.set_xlabel(METRICS["tokens_per_s"])
    ax.set_ylabel(METRICS["bleu"])
    ax.set_title("BLEU vs training speed")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return fig


def _sharing_note(summary: dict) -> str:
    """Trials that ran side by side shared the machine: their tokens/s are not a speed on their own."""
    parallel = summary.get("parallel") or 1
    if parallel == 1:
        return ""
    return (f" Trials ran {parallel} at a time with {summary.get('threads_per_trial')} thread(s) each, sharing the "
            "machine: tokens/s (and the Pareto front) compare trials of this sweep, not speeds measured alone.")


def write_sweep_report(sweep_dir: str | Path, out: str | Path) -> Path:
    """report.md with the configurations table and the sweep's figures (PNG) in `out`; returns report.md's path."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    summary, trials = load_sweep(sweep_dir)
    if not trials:
        raise InputError(f"{sweep_dir}: no finished trial (results.json) in this sweep yet")
    axes = axes_of(summary)
    rows = configurations(trials, axes)
    figures = {}
    if len(axes) >= 2:
        figures["heatmap"] = plot_heatmap(trials, axes[0], axes[1])
    if axes:
        figures["lines"] = plot_lines(rows, axes, axes[2] if len(axes) >= 3 else axes[-1])
    figures["pareto"] = plot_pareto(rows, axes)
    for name, fig in figures.items():
        atomic_savefig(fig, out / f"{name}.png", dpi=110)

    front = {r["key"] for r in pareto_front(rows)}
    table = markdown_rows([*axes, "seeds", "params", "val BLEU", "train tok/s", "Pareto"],
                      [[*map(str, r["key"]), ", ".join(map(str, r["seeds"])), f"{r['parameters']:,}",
                        cell(r["bleu"]), cell(r["tokens_per_s"], 0, thousands=True),
                        "yes" if r["key"] in front else ""] for r in rows])
    states = {}
    for trial in summary["trials"]:
        states[trial["state"]] = states.get(trial["state"], 0) + 1
    lines = [f"# Sweep {summary['sweep'].get('name', '')} ({summary['method']} search)", "",
             f"{len(summary['trials'])} trials ({', '.join(f'{n} {s}' for s, n in states.items())}), "
             f"{len(rows)} configurations, wall time {summary['wall_seconds'] / 60:.1f} min. "
             "Values: mean ± 95% confidence interval over seeds; validation BLEU of the trial's final validation; "
             "training target tokens/s in the steady state." + _sharing_note(summary), "", table, ""]
    titles = {"heatmap": f"{' x '.join(axes[:2])}", "lines": "over the last parameter", "pareto": "Pareto front"}
    lines += [f"![{titles[name]}]({name}.png)" for name in figures] + [""]
    failed = [t for t in summary["trials"] if t["state"] != "complete"]
    if failed:
        lines += ["## Trials that did not complete", "", "| trial | state | parameters | last val BLEU | error |",
                  "|---|---|---|---|---|"]
        for t in failed:
            last = "—" if t["metric"] is None else f"{t['metric']:.2f}"
            lines.append(f"| {t['number']} | {t['state']} | {_name(list(t['params']), tuple(t['params'].values()))} "
                         f"| {last} | {t['error'] or ''} |")
        lines.append("")
    path = out / "report.md"
    atomic_write_text(path, "\n".join(lines))
    return path
