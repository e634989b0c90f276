"""`seqbench bench --table1`'s tables and figure, from the record seqbench.measure.table1.run_table1 returns: the
measured exponents and crossovers beside Table 1's O(.), batch-1 latency by threads, training tokens/s by sentence
length, gradient reach against distance; and the body of a `<!-- headline: DIR --table1 -->` block."""
from __future__ import annotations

import json
from pathlib import Path

from seqbench.common.errors import InputError
from seqbench.common.io import atomic_write_text
from seqbench.measure.table1 import KINDS
from seqbench.report.markdown import markdown_rows

RECORD, TABLE, FIGURE = "table1.json", "table1.md", "table1.png"
NAMES = {"self-attention": "self-attention", "gru": "recurrent (GRU)", "lstm": "recurrent (LSTM)",
         "conv": "convolution (GLU, k={k})"}


def _name(kind: str, record: dict) -> str:
    return NAMES[kind].format(k=record["settings"]["kernel"])


def _fit(fit: dict | None) -> str:
    """An exponent with its interval: `1.97 [1.90, 2.04]`."""
    if fit is None:
        return "-"
    interval = fit.get("interval")
    return f"{fit['exponent']:.2f}" + (f" [{interval[0]:.2f}, {interval[1]:.2f}]" if interval else "")


def _median(summary: dict | None, digits: str = ",.0f", scale: float = 1.0) -> str:
    """A median over rounds with its 95% interval, or why there is none."""
    if summary is None or summary.get("median") is None:
        return "-"
    interval = summary.get("interval")
    text = f"{summary['median'] * scale:{digits}}"
    return text + (f" [{interval[0] * scale:{digits}}, {interval[1] * scale:{digits}}]" if interval else "")


def _within(value: float, fit: dict) -> bool:
    return fit.get("interval") is not None and fit["interval"][0] <= value <= fit["interval"][1]


def _compute_table(record: dict) -> list[str]:
    compute, table = record["compute"], record["table"]
    by_n, by_d = compute["exponents"]["n"], compute["exponents"]["d"]
    largest = {p["layer"]: p for p in compute["by_n"]["points"] if "skipped" not in p}  # the last: the longest n
    rows = []
    for kind in KINDS:
        fn, fd = by_n.get(kind, {}), by_d.get(kind, {})
        point = largest.get(kind)
        saved = f"{point['saved_mb'] / point['batch']:,.2f}" if point else "-"
        rows.append([_name(kind, record), table[kind]["complexity"], f"{table[kind]['n']}",
                     _fit(fn.get("flops")), _fit(fn.get("forward")), _fit(fn.get("forward_backward")),
                     f"{table[kind]['d']}", _fit(fd.get("flops")), _fit(fd.get("forward")),
                     _fit(fd.get("forward_backward")), saved])
    n_max = max(p["n"] for p in compute["by_n"]["points"])
    return [markdown_rows(["layer", "Table 1", "n: O(.)", "n: FLOPs", "n: forward", "n: fwd+bwd", "d: O(.)",
                           "d: FLOPs", "d: forward", "d: fwd+bwd", f"saved for backward at n={n_max:,} (MB/sentence)"],
                          rows)]


def _crossover_table(record: dict) -> list[str]:
    rows = []
    for kind, entry in record["compute"]["crossovers"].items():
        cells = [f"{entry['flops']['n']:,.0f}" if entry["flops"]["n"] else f"{entry['flops']['where']} the grid"]
        for mode in ("forward", "forward_backward"):
            found = entry[mode]
            cells.append(_median(found) if found["median"] is not None else
                         f"{' or '.join(found['outside'])} the grid in some rounds")
        rows.append([_name(kind, record), *cells])
    return [markdown_rows(["self-attention's cost passes", "FLOPs: n", "forward: n [95%]", "fwd+bwd: n [95%]"],
                          rows)]


def _latency_table(record: dict) -> list[str]:
    latency = record["sequential"]["latency"]
    counts, n_max = latency["threads"], max(p["n"] for p in latency["points"])
    at = {(p["layer"], p["threads"]): p["seconds"] for p in latency["points"] if p["n"] == n_max}
    fits = record["sequential"]["latency_exponents"]
    rows = []
    for kind in KINDS:
        speedup = at[(kind, counts[0])]["median"] / at[(kind, counts[-1])]["median"]
        rows.append([_name(kind, record), record["table"][kind]["sequential"],
                     *[_median(at[(kind, c)], ",.2f", 1e3) for c in counts], f"{speedup:.2f}x",
                     *[_fit(fits.get(str(c), {}).get(kind)) for c in (counts[0], counts[-1])]])
    header = ["layer", "Table 1", *[f"ms at n={n_max:,}, {c} thread{'s' * (c > 1)}" for c in counts],
              f"{counts[-1]} threads over {counts[0]}", f"exponent of n, {counts[0]} thread",
              f"exponent of n, {counts[-1]} threads"]
    return [markdown_rows(header, rows)]


def _training_table(record: dict) -> list[str]:
    training = record["sequential"]["training"]
    words = sorted({p["words"] for p in training["points"]})
    cells = {(p["family"], p["words"]): p for p in training["points"]}
    rows = [[family, *[_median(cells[(family, w)]["target_tokens_per_s"]) for w in words]]
            for family in training["models"]]
    return [markdown_rows(["model (whole training step)", *[f"{w} words" for w in words]], rows)]


def _path_table(record: dict) -> list[str]:
    path = record["path"]
    n, depth = path["n"], path["depth"]
    rows = []
    for kind in KINDS:
        entry = path["layers"][kind]
        norms = entry["norms"][0]
        decay = entry["decay_log10_per_position"]
        decay_text = "-" if decay is None else f"{decay['slope']:.3f}" + (
            f" [{decay['interval'][0]:.3f}, {decay['interval'][1]:.3f}]" if decay["interval"] else "")
        far = f"{norms[n - 1] / norms[1]:.1e}" if norms[1] > 0 else "-"
        connects = entry["connects_at_depth"]
        trained = entry.get("trained")  # records before the trained measurement have none
        rows.append([_name(kind, record), record["table"][kind]["path"], f"{entry['reach'][0]}",
                     f"{entry['reach'][-1]}", f"{connects}" if connects else f"> {depth}", decay_text, far,
                     "-" if not trained else f"{trained['loss_first']:.2f} → {trained['loss_last']:.2f}",
                     "-" if not trained else _decay_text(trained["decay_log10_per_position"])])
    steps = next((path["layers"][k]["trained"]["steps"] for k in KINDS if path["layers"][k].get("trained")), None)
    return [markdown_rows(["layer", "Table 1", "reach of 1 layer", f"reach of {depth} layers",
                           f"layers to connect distance {n - 1}", "log10 gradient decay per position (1 layer) [95%]",
                           f"gradient at distance {n - 1} / at 1 (1 layer)",
                           f"trained {steps} steps to carry position 0 to {n - 1}: loss first → last",
                           "log10 decay per position (1 layer), trained"], rows)]


def _decay_text(decay: dict | None) -> str:
    if decay is None:
        return "-"
    return f"{decay['slope']:.3f}" + (f" [{decay['interval'][0]:.3f}, {decay['interval'][1]:.3f}]"
                                      if decay["interval"] else "")


def _readings(record: dict) -> list[str]:
    """What the measurements say about each column, in words generated from the numbers."""
    by_n, table = record["compute"]["exponents"]["n"], record["table"]
    lines = []
    for kind in KINDS:
        fit = by_n.get(kind, {}).get("forward_backward")
        if fit is None:
            continue
        verdict = ("too few points for an interval" if fit["interval"] is None
                   else "within the interval: Table 1's exponent holds" if _within(table[kind]["n"], fit)
                   else "its FLOPs' exponent over these n is within the interval, Table 1's is not"
                   if _within(by_n[kind]["flops"]["exponent"], fit)
                   else "neither Table 1's nor the FLOPs' exponent is within the interval")
        lines.append(f"- compute, {_name(kind, record)}: time per sentence grows as n^{_fit(fit)} over "
                     f"n = {fit['x'][0]:,}-{fit['x'][1]:,} (Table 1: n^{table[kind]['n']}; FLOPs: "
                     f"n^{by_n[kind]['flops']['exponent']:.2f}); {verdict}.")
    path = record["path"]
    lines.append(f"- path: one self-attention layer reaches distance {path['layers']['self-attention']['reach'][0]} "
                 f"of {path['n'] - 1}, one recurrent layer {path['layers']['gru']['reach'][0]} (through "
                 f"{path['n'] - 1} steps of its chain), one convolution {path['layers']['conv']['reach'][0]}; the "
                 f"convolution stack connects distance {path['n'] - 1} at depth "
                 f"{path['layers']['conv']['connects_at_depth'] or '> ' + str(path['depth'])}.")
    return lines


def markdown(record: dict) -> str:
    machine, settings = record["machine"], record["settings"]
    by_n, by_d = record["compute"]["by_n"], record["compute"]["by_d"]
    lines = [f"device: {machine['device']} ({machine['device_type']}), {machine['threads']} threads, "
             f"{machine['dtype']}, torch {machine['torch']}; seqbench {record.get('seqbench_commit') or 'unknown'}; "
             f"{settings['rounds']} rounds, every round timing every point once (order reversed every other "
             "round); medians with their 95% order-statistic intervals", "",
             f"Compute per layer: time per sentence (a batch's time over its sentences) against n at d = {by_n['d']} "
             f"and {by_n['tokens']:,} tokens per batch, and against d at n = {by_d['n']}; exponents fitted on log-log "
             "axes (least squares, 95% t interval) over the upper half of the n grid and the whole d grid, beside "
             "those of the analytic FLOPs over the same points; forward: no autograd (inference), fwd+bwd: a "
             "training step's forward and backward with the input's gradient", "", *_compute_table(record), "",
             "Where self-attention's time passes the other layer's (n, per round, median over rounds):", "",
             *_crossover_table(record), "",
             f"Sequential steps: one layer's forward on one sentence (batch 1), d = "
             f"{record['sequential']['latency']['d']}:", "", *_latency_table(record), "",
             f"Whole training step, target tokens/s, at {record['sequential']['training']['max_tokens']:,} tokens "
             "per batch, as sentences grow (the bench's reference models):", "", *_training_table(record), "",
             f"Path length: causal stacks of {record['path']['depth']} layers, d = {record['path']['d']}, "
             f"{record['path']['n']} positions, {record['path']['dtype']}, at initialisation; ||dy_i/dx_j|| of the "
             "last position i against the distance i - j (reach: the farthest j whose gradient is not exactly "
             "zero); then the same stacks trained with Adam (lr 1e-3, fresh random inputs) to output at the last "
             "position the input at the first, the mean squared error at the first and last step (about 1: nothing "
             "carried) and the decay measured again:", "", *_path_table(record), "", *_readings(record)]
    return "\n".join(lines)


def figure(record: dict):
    """Three panels: time per sentence (fwd+bwd) against n; batch-1 latency against n by threads; the gradient norm
    against distance (one layer solid, the whole stack dashed)."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(15, 4.5), layout="constrained")
    cost, latency, path = fig.subplots(1, 3)
    colours = {kind: f"C{i}" for i, kind in enumerate(KINDS)}
    for kind in KINDS:
        points = [p for p in record["compute"]["by_n"]["points"] if p["layer"] == kind and "skipped" not in p]
        medians = [p["forward_backward"]["median"] / p["batch"] for p in points]
        cost.plot([p["n"] for p in points], [1e3 * m for m in medians], "o-", color=colours[kind],
                  label=_name(kind, record))
    counts = record["sequential"]["latency"]["threads"]
    for kind in KINDS:
        for style, count in zip(("-", "--", ":"), counts):
            points = [p for p in record["sequential"]["latency"]["points"] if p["layer"] == kind
                      and p["threads"] == count]
            latency.plot([p["n"] for p in points], [1e3 * p["seconds"]["median"] for p in points], style,
                         marker="o", markersize=3, color=colours[kind], label=f"{kind}, {count} thr.")
    for kind in KINDS:
        norms = record["path"]["layers"][kind]["norms"]
        for style, row in (("-", norms[0]), ("--", norms[-1])):
            shown = [(distance, v) for distance, v in enumerate(row) if v > 0]
            path.plot(*zip(*shown), style, color=colours[kind], label=kind if style == "-" else None)
    for ax, title, ylabel in ((cost, "compute per layer (fwd+bwd)", "ms per sentence"),
                              (latency, "sequential steps: batch 1 forward", "ms"),
                              (path, f"path: gradient norm (solid 1 layer, dashed {record['path']['depth']})",
                               "||dy_i / dx_j||")):
        ax.set_xscale("log" if ax is not path else "linear")
        ax.set_yscale("log")
        ax.set_title(title)
        ax.set_xlabel("n" if ax is not path else "distance i - j")
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    return fig


def write_table1(out: Path, record: dict) -> str:
    """table1.json (with the commit and library versions, as results.json names them), table1.md and table1.png
    into the folder `out`; returns the tables, then where they went."""
    from seqbench.rundir.results import library_versions

    versions = library_versions()
    record = {**record, "seqbench_commit": versions["seqbench_commit"], "versions": versions}
    text = markdown(record)
    atomic_write_text(out / RECORD, json.dumps(record, indent=2, default=str) + "\n")
    atomic_write_text(out / TABLE, text + "\n")
    figure(record).savefig(out / FIGURE, dpi=110)
    return f"{text}\n\nresults: {out}/ ({RECORD}, {TABLE}, {FIGURE})"


def table1_headline(directory: str | Path, shown: str) -> str:
    """The body of a `<!-- headline: DIR --table1 -->` block: the record's tables and the command that made it;
    while DIR holds no record yet, the command that makes it (the block then says the record is pending)."""
    path = Path(directory) / RECORD
    if not path.is_file():
        if Path(directory).exists():
            raise InputError(f"{shown}: no {RECORD} in it; a --table1 headline names a `seqbench bench --table1` "
                             "folder")
        return (f"Record pending: `{shown}` does not exist yet. Make it on an idle machine with "
                f"`seqbench bench --table1 --device cpu --out {shown}`, then regenerate this block with "
                "`seqbench report --headline FILE`.\n")
    record = json.loads(path.read_text(encoding="utf-8"))
    return (f"{markdown(record)}\n\nCommand: `{record['command']}` ({record['wall_time_s'] / 60:.1f} min); record: "
            f"`{shown}`; generated by `seqbench report --headline FILE`.\n")
