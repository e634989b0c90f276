"""The report's figures. Each function returns a matplotlib Figure built without pyplot (no global state, no GUI
backend): `write_report` saves them as PNG with Agg, the notebook displays the same objects inline."""
from __future__ import annotations

import re

from matplotlib.figure import Figure
from matplotlib.ticker import NullFormatter

from seqbench.analysis.curves import curve_spreads, shortest_bucket
from seqbench.analysis.summary import BY_LENGTH, Breakdown, bucket_series, summary_rows
from seqbench.rundir.reader import Run

MARKERS = "os^Dvx*P"
MAX_HEADS = 8  # attention heads drawn per layer: more would make unreadable thumbnails (transformer_big has 16)


def label_colours(labels: list[str]) -> dict[str, str]:
    return {label: f"C{i % 10}" for i, label in enumerate(labels)}


def _draw_by_bucket(ax, groups: dict[str, list[Run]], split: str, breakdown: Breakdown) -> None:
    buckets, series = bucket_series(groups, split, breakdown)
    colours = label_colours(list(groups))
    for i, (label, stats) in enumerate(series.items()):
        xs = [x for x, stat in enumerate(stats) if stat.mean is not None]
        ax.errorbar(xs, [stats[x][0] for x in xs], yerr=[stats[x][1] or 0.0 for x in xs], label=label,
                    color=colours[label], marker=MARKERS[i % len(MARKERS)], capsize=3)
    ax.set_xticks(range(len(buckets)), buckets)
    ax.set_xlabel(breakdown.axis)
    ax.set_ylabel(f"{split} {breakdown.metric}")
    ax.grid(alpha=0.3)


def plot_by_bucket(groups: dict[str, list[Run]], split: str = "test", breakdown: Breakdown = BY_LENGTH) -> Figure:
    """A breakdown's score per bucket, one line per model with seed error bars; by source length this is Bahdanau
    et al. 2015, Fig. 2, by dependency distance the targeted accuracy of Linzen et al. 2016."""
    fig = Figure(figsize=(7, 4.5), layout="constrained")
    ax = fig.add_subplot()
    _draw_by_bucket(ax, groups, split, breakdown)
    ax.set_title(breakdown.title)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0))  # outside: lines cross the whole width
    return fig


def plot_length_distance(table: dict, kind: str, score: str) -> Figure:
    """seqbench.analysis.summary.length_distance_cells as small multiples, one panel per model: the score against
    dependency distance, one line per sentence-length bucket (distance read within a length)."""
    labels = list(table)
    fig = Figure(figsize=(3.6 * len(labels), 3.6), layout="constrained")
    axes = fig.subplots(1, len(labels), squeeze=False, sharey=True)[0]
    for ax, label in zip(axes, labels):
        entry = table[label]
        distances = entry["distances"]
        for i, length in enumerate(entry["lengths"]):
            xs = [x for x, d in enumerate(distances) if (length, d) in entry["cells"]
                  and entry["cells"][(length, d)].mean is not None]
            stats = [entry["cells"][(length, distances[x])] for x in xs]
            ax.errorbar(xs, [s.mean for s in stats], yerr=[s.ci or 0.0 for s in stats], marker=MARKERS[i % 8],
                        capsize=2, label=f"{length} words")
        ax.set_xticks(range(len(distances)), distances, rotation=45)
        ax.set_title(label, fontsize=10)
        ax.set_xlabel("subject-verb distance (words)" if kind == "agreement" else "distance (words)")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel(f"{kind} {score} (%)")
    axes[-1].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), title="sentence length")
    return fig


def _draw_curves(ax, groups: dict[str, list[Run]], x_of) -> None:
    """Validation BLEU against x_of(curve point), one line per seed, one colour per model; points without an x
    (runs of older versions lack training FLOPs) are left out."""
    colours = label_colours(list(groups))
    for label, runs in groups.items():
        for i, run in enumerate(runs):
            curve = [p for p in run.curve() if x_of(p) is not None]
            if curve:
                ax.plot([x_of(p) for p in curve], [p["bleu"] for p in curve], marker=".", color=colours[label],
                        label=label if i == 0 else None)  # one legend entry per model
    ax.grid(alpha=0.3, which="both")


def _log_flops_axis(ax) -> None:
    ax.set_xscale("log")
    ax.xaxis.set_minor_formatter(NullFormatter())  # minor labels (2e12, 3e12, ...) overlap within one decade
    ax.set_xlabel("training FLOPs (analytic, cumulative)")


def _minutes(point: dict) -> float:
    return point["train_seconds"] / 60


def _flops(point: dict) -> float | None:
    return point.get("train_flops") or None


def plot_learning_curves(groups: dict[str, list[Run]]) -> Figure:
    """Validation BLEU against training time (validation excluded) and against target tokens seen; one line per
    seed, one colour per model."""
    fig = Figure(figsize=(11, 4.2), layout="constrained")
    axes = fig.subplots(1, 2, sharey=True)
    _draw_curves(axes[0], groups, _minutes)
    _draw_curves(axes[1], groups, lambda p: p["tokens_seen"] / 1e6)
    axes[0].set_xlabel("training time (minutes, validation excluded)")
    axes[1].set_xlabel("target tokens seen (millions)")
    axes[0].set_ylabel("validation BLEU")
    if axes[0].get_legend_handles_labels()[0]:
        axes[1].legend(loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.suptitle("Validation BLEU during training")
    return fig


def plot_budget_curves(groups: dict[str, list[Run]]) -> Figure:
    """Validation BLEU against updates, overall and on the shortest source-length bucket (where the runs recorded
    it): each model's mean over seeds with its 95% interval, so whether a model levelled off within its budget reads
    off the right-hand end."""
    runs = [run for members in groups.values() for run in members]
    bucket = shortest_bucket(runs)
    scores = [(None, "validation BLEU"), *([(bucket, f"validation BLEU, {bucket} source words")] if bucket else [])]
    fig = Figure(figsize=(5.5 * len(scores), 4.2), layout="constrained")
    axes = fig.subplots(1, len(scores), squeeze=False)[0]
    colours = label_colours(list(groups))
    for ax, (key, name) in zip(axes, scores):
        for i, (label, members) in enumerate(groups.items()):
            at = {step: stat for step, stat in curve_spreads(members, key).items() if stat.mean is not None}
            ax.errorbar(list(at), [s.mean for s in at.values()], yerr=[s.ci or 0.0 for s in at.values()],
                        color=colours[label], marker=MARKERS[i % len(MARKERS)], capsize=3,
                        label=f"{label} ({len(members)} seeds)")
        ax.set_xlabel("updates")
        ax.set_ylabel(name)
        ax.grid(alpha=0.3)
    axes[-1].legend(loc="lower right", fontsize=8)
    fig.suptitle("Validation BLEU by update (means over seeds, 95% CI)")
    return fig


def plot_bleu_vs_flops(groups: dict[str, list[Run]], targets=()) -> Figure:
    """Validation BLEU against cumulative training FLOPs (log scale) for every model on one axis, one line per seed,
    with the target BLEUs of the compute-to-target table as dashed lines."""
    fig = Figure(figsize=(7.5, 4.5), layout="constrained")
    ax = fig.add_subplot()
    _draw_curves(ax, groups, _flops)
    for target in targets:
        ax.axhline(target, color="grey", linestyle="--", linewidth=0.8)
    _log_flops_axis(ax)
    ax.set_ylabel("validation BLEU")
    ax.set_title("Validation BLEU against training compute")
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc="lower right")
    return fig


def plot_headline(groups: dict[str, list[Run]], split: str = "test") -> Figure:
    """The comparison in one figure, the three axes a reader weighs architectures on: validation BLEU per training
    FLOP (machine-independent) and per training minute (this machine), one line per seed, and the split's BLEU by
    source length (mean ± 95% CI over seeds)."""
    fig = Figure(figsize=(15, 4.2), layout="constrained")
    per_flop, per_minute, per_length = fig.subplots(1, 3)
    _draw_curves(per_flop, groups, _flops)
    _log_flops_axis(per_flop)
    _draw_curves(per_minute, groups, _minutes)
    per_minute.set_xlabel("training minutes (validation excluded)")
    for ax in (per_flop, per_minute):
        ax.set_ylabel("validation BLEU")
    _draw_by_bucket(per_length, groups, split, BY_LENGTH)
    per_flop.set_title("per FLOP")
    per_minute.set_title("per minute")
    per_length.set_title("per sentence length")
    if per_length.get_legend_handles_labels()[0]:
        per_length.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return fig


def plot_throughput(groups: dict[str, list[Run]], split: str = "test") -> Figure:
    """Bars (mean, seed std) of training tokens/s, decoding sentences/s (greedy and beam), MFU and peak memory."""
    rows = summary_rows(groups, split)
    labels = [r["label"] for r in rows]
    colours = label_colours(labels)
    panels = [("train_tok_s", "training target tokens/s"), (("greedy_sent_s", "beam_sent_s"), "decoding sentences/s"),
              ("mfu", "MFU (% of measured matmul peak)"), ("memory", "peak memory (MB)")]
    fig = Figure(figsize=(4 * len(panels), 4), layout="constrained")
    axes = fig.subplots(1, len(panels))
    xs = range(len(labels))
    for ax, (keys, title) in zip(axes, panels):
        if isinstance(keys, tuple):  # greedy and beam side by side
            width = 0.4
            for offset, key, hatch in ((-width / 2, keys[0], ""), (width / 2, keys[1], "//")):
                ax.bar([x + offset for x in xs], [r[key][0] or 0.0 for r in rows], width,
                       yerr=[r[key][1] or 0.0 for r in rows], color=[colours[label] for label in labels],
                       hatch=hatch, edgecolor="black", capsize=3, label=key.split("_")[0])
            ax.legend()
        else:
            ax.bar(xs, [r[keys][0] or 0.0 for r in rows], yerr=[r[keys][1] or 0.0 for r in rows],
                   color=[colours[label] for label in labels], edgecolor="black", capsize=3)
        ax.set_xticks(list(xs), labels, rotation=30, ha="right")
        ax.set_title(title)
        ax.grid(axis="y", alpha=0.3)
    return fig


def plot_attention(example: dict, title: str) -> Figure | None:
    """One heatmap per layer (rows) and head (columns) of an attention.pt example: output tokens down, source
    tokens across. None for a model without attention."""
    attention = example["attention"]
    if attention is None:
        return None
    layers, heads = attention.shape[0], min(attention.shape[1], MAX_HEADS)
    src, tgt = example["src_tokens"], example["tgt_tokens"]
    # one row per layer and a column per head; single-head models (RNN, ConvS2S) put their layers side by side
    rows, cols = (1, layers) if heads == 1 else (layers, heads)
    cell = 0.18  # inches per token
    fig = Figure(figsize=(max(3.0, cols * (len(src) * cell + 1.0)), max(3.0, rows * (len(tgt) * cell + 0.8))),
                 layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False)
    for layer in range(layers):
        for head in range(heads):
            ax = axes[0][layer] if heads == 1 else axes[layer][head]
            ax.imshow(attention[layer, head].numpy(), cmap="gray_r", vmin=0.0, vmax=1.0, aspect="auto")
            ax.set_xticks(range(len(src)), src, rotation=90, fontsize=6)
            ax.set_yticks(range(len(tgt)), tgt, fontsize=6)
            if layers > 1 or heads > 1:
                ax.set_title(f"layer {layer + 1}" + (f", head {head + 1}" if attention.shape[1] > 1 else ""),
                             fontsize=8)
    shown = f" (first {heads} of {attention.shape[1]} heads)" if attention.shape[1] > heads else ""
    fig.suptitle(title + shown, fontsize=9)
    return fig


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_") or "model"


def attention_figures(groups: dict[str, list[Run]]):
    """(file stem, figure) for every saved attention example of the first seed of each model with attention."""
    for label, runs in groups.items():
        saved = next((r.attention() for r in runs if r.attention() is not None), None)
        if saved is None:
            continue
        for k, example in enumerate(saved["examples"]):
            fig = plot_attention(example, f"{label}: test sentence {example['index']}")
            if fig is not None:
                yield f"attention_{_slug(label)}_{k}", fig
