"""Recipe searches side by side (`seqbench report SWEEP_DIR SWEEP_DIR ...`): for each search (one per model family,
with the same number of trials and update budget), its best recipe, and the expected best validation BLEU against
the number of trials (seqbench.analysis.tuning), so a ranking of families can be read with its tuning effort."""
from __future__ import annotations

import json
from pathlib import Path

from matplotlib.figure import Figure

from seqbench.analysis.plots import MARKERS, label_colours
from seqbench.analysis.tuning import expected_best, expected_best_curve
from seqbench.common.errors import InputError
from seqbench.common.io import atomic_savefig, atomic_write_text
from seqbench.report.markdown import markdown_rows

CHECKPOINTS = (1, 2, 4, 8, 16)  # trial counts of the table's E[best] columns (those a search reached)


def load_search(sweep_dir: str | Path) -> dict:
    """{"name", "trials" (all, in order), "scores" (validation BLEU per trial, failed and stopped ones as 0), "best"
    (the best complete trial)} of one sweep directory."""
    path = Path(sweep_dir) / "summary.json"
    if not path.is_file():
        raise InputError(f"{sweep_dir}: not a sweep directory (no summary.json)")
    summary = json.loads(path.read_text())
    trials = summary["trials"]
    complete = [t for t in trials if t["state"] == "complete" and t["metric"] is not None]
    if not complete:
        raise InputError(f"{sweep_dir}: no complete trial yet")
    return {"name": summary["sweep"].get("name", Path(sweep_dir).name), "trials": trials,
            "scores": [t["metric"] if t["state"] == "complete" and t["metric"] is not None else 0.0 for t in trials],
            "best": max(complete, key=lambda t: t["metric"]), "method": summary["method"]}


def plot_expected_best(searches: list[dict]) -> Figure:
    fig = Figure(figsize=(7, 4.2), layout="constrained")
    ax = fig.subplots()
    colours = label_colours([s["name"] for s in searches])
    for i, search in enumerate(searches):
        curve = expected_best_curve(search["scores"])
        ks = [p["trials"] for p in curve]
        means = [p["expected_best"] for p in curve]
        stds = [p["std"] for p in curve]
        colour = colours[search["name"]]
        ax.plot(ks, means, marker=MARKERS[i % len(MARKERS)], color=colour, label=search["name"])
        ax.fill_between(ks, [m - s for m, s in zip(means, stds)], [m + s for m, s in zip(means, stds)],
                        color=colour, alpha=0.15)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("trials of the recipe search (k)")
    ax.set_ylabel("expected best validation BLEU")
    ax.set_title("Expected best validation BLEU after k trials (Dodge et al. 2019), ± 1 std")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return fig


def write_tuning_report(sweep_dirs: list[str | Path], out: str | Path) -> Path:
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    searches = [load_search(d) for d in sweep_dirs]
    atomic_savefig(plot_expected_best(searches), out / "expected_best.png", dpi=110)
    n = max(len(s["scores"]) for s in searches)
    ks = [k for k in CHECKPOINTS if k < n] + [n]
    header = ["search", "trials", "failed", "best val BLEU", *(f"E[best of {k}]" for k in ks), "best recipe"]
    rows = []
    for s in searches:
        failed = sum(t["state"] != "complete" for t in s["trials"])
        best = s["best"]
        cells = [f"{expected_best(s['scores'], k)[0]:.2f}" if k <= len(s["scores"]) else "—" for k in ks]
        recipe = ", ".join(f"{name}={value:.3g}" if isinstance(value, float) else f"{name}={value}"
                           for name, value in best["params"].items())
        rows.append([s["name"], str(len(s["trials"])), str(failed), f"{best['metric']:.2f} (trial {best['number']})",
                     *cells, recipe])
    lines = ["# Recipe searches", "",
             f"{len(searches)} searches ({', '.join(s['method'] for s in searches)} search). E[best of k]: the "
             "expected best validation BLEU of k trials drawn from each search's trials (Dodge et al. 2019; failed "
             "trials count as 0), so the families compare at equal tuning effort.", "",
             markdown_rows(header, rows), "", "![Expected best validation BLEU](expected_best.png)", ""]
    path = out / "report.md"
    atomic_write_text(path, "\n".join(lines))
    return path
