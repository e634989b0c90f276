"""The report's markdown tables, from the numbers of seqbench.analysis."""
from __future__ import annotations

from seqbench.analysis.seeds import p_text
from seqbench.analysis.summary import BY_LENGTH, Breakdown, bucket_counts, bucket_series, max_p
from seqbench.rundir.reader import Run


def fmt(value, digits: int = 1, thousands: bool = False) -> str:
    if value is None:
        return "—"
    return f"{value:,.{digits}f}" if thousands else f"{value:.{digits}f}"


def cell(stat: tuple, digits: int = 1, thousands: bool = False) -> str:
    """"mean ± 95% CI" of a seqbench.analysis.seeds.Spread (the mean alone for one value)."""
    mean, ci = stat[0], stat[1]
    if mean is None:
        return "—"
    return fmt(mean, digits, thousands) + (f" ± {fmt(ci, digits, thousands)}" if ci is not None else "")


def markdown_rows(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in rows])


def _p(tests: dict, a: str, b: str, n_samples: int, per_pair: bool) -> str:
    key = (a, b) if (a, b) in tests else (b, a)
    if key not in tests:
        return "n/a"
    return p_text(max_p(tests[key]), n_samples) if per_pair else p_text(tests[key]["p_value"], n_samples, sides=2)


def markdown_table(rows: list[dict], tests: dict, seed_tests: dict, n_samples: int) -> str:
    """The main table: means ± 95% CI over seeds, and two p-values against the best model: over seeds and sentences
    (training variance included), and the largest of the per-sentence paired bootstraps of seed-matched runs. A
    "greedy BLEU" column follows BLEU when some run decoded the test set greedily too (module.test_greedy)."""
    best = rows[0]["label"] if rows else None
    greedy = any(row["greedy_bleu"][0] is not None for row in rows)
    header = ["model", "family", "seeds", "params", "BLEU", *(["greedy BLEU"] * greedy), "chrF", "train tok/s",
              "steps/s", "greedy sent/s", "beam sent/s", "MFU %", "peak MB", f"p vs {best} (seeds)",
              f"p vs {best} (run pairs)"]
    body = []
    for row in rows:
        label = row["label"]
        p = ["—", "—"] if label == best else [_p(seed_tests, best, label, n_samples, False),
                                              _p(tests, best, label, n_samples, True)]
        beam = f" (k={row['beam_size']})" if row["beam_size"] else ""
        body.append([row["label"], row["family"], str(len(row["seeds"])), fmt(row["params"][0], 0, True),
                     cell(row["bleu"], 2), *([cell(row["greedy_bleu"], 2)] * greedy), cell(row["chrf"], 2),
                     cell(row["train_tok_s"], 0, True), cell(row["steps_s"], 2),
                     cell(row["greedy_sent_s"], 1, True), cell(row["beam_sent_s"], 1, True) + beam,
                     cell(row["mfu"], 2), cell(row["memory"], 0, True), *p])
    return markdown_rows(header, body)


def markdown_pairwise(labels: list[str], tests: dict, n_samples: int, per_pair: bool = True) -> str:
    """Matrix of p-values for every two models (upper triangle): the seed-and-sentence bootstrap's
    (`per_pair=False`, seed_significance's tests) or the largest per-sentence bootstrap over seed pairs."""
    body = [[a] + ["" if j <= i else _p(tests, a, b, n_samples, per_pair) for j, b in enumerate(labels)]
            for i, a in enumerate(labels)]
    return markdown_rows([""] + labels, body)


def markdown_by_bucket(groups: dict[str, list[Run]], split: str = "test", breakdown: Breakdown = BY_LENGTH) -> str:
    """The breakdown's score per bucket, mean ± 95% CI over seeds, with each bucket's size (sentences or
    dependencies) in the header."""
    buckets, series = bucket_series(groups, split, breakdown)
    body = [[label] + [cell(stat, 2) for stat in stats] for label, stats in series.items()]
    counts = bucket_counts(groups, split, breakdown)
    return markdown_rows(["model"] + [f"{b} ({counts.get(b, 0)})" for b in buckets], body)


def _flops(stat: tuple) -> str:
    mean, std = stat.mean, stat.ci
    if mean is None:
        return "—"
    return f"{mean:.2e}" + (f" ± {std:.1e}" if std is not None else "")


def markdown_compute_to_target(rows: list[dict]) -> str:
    """One row per model: best validation BLEU and the training it took, then for each target the FLOPs, minutes
    and updates to first reach it (means over the seeds that did; "k/n" says how many did)."""
    targets = list(rows[0]["targets"]) if rows else []
    header = ["model", "best valid BLEU", "updates", "training FLOPs", "minutes"]
    for target in targets:
        header += [f"seeds ≥ {target:g}", f"FLOPs to {target:g}", f"minutes to {target:g}", f"updates to {target:g}"]
    body = []
    for row in rows:
        cells = [row["label"], cell(row["best_bleu"], 2), cell(row["updates"], 0, True), _flops(row["train_flops"]),
                 cell(row["train_minutes"], 1)]
        for target in targets:
            hit = row["targets"][target]
            cells += [f"{hit['reached']}/{row['seeds']}", _flops(hit["train_flops"]), cell(hit["train_minutes"], 1),
                      cell(hit["updates"], 0, True)]
        body.append(cells)
    return markdown_rows(header, body)


def markdown_length_distance(entry: dict) -> str:
    """One model's length x distance table (seqbench.analysis.summary.length_distance_cells, with conditional
    accuracy and coverage): rows are sentence lengths, columns distances, cells "accuracy (coverage)" means over seeds
    with the number of dependencies."""
    accuracy, coverage = entry
    header = ["length \\ distance", *accuracy["distances"]]
    body = []
    for length in accuracy["lengths"]:
        row = [length]
        for distance in accuracy["distances"]:
            key = (length, distance)
            if key not in accuracy["cells"]:
                row.append("")
                continue
            row.append(f"{cell(accuracy['cells'][key])} ({cell(coverage['cells'][key])}; "
                       f"n={accuracy['dependencies'][key]})")
        body.append(row)
    return markdown_rows(header, body)

