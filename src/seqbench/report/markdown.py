"""The report's markdown tables, from the numbers of seqbench.analysis."""
from __future__ import annotations

from seqbench.analysis.seeds import p_text, seed_p_text
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


def _pair_p(tests: dict, a: str, b: str, n_samples: int) -> str:
    """The largest per-sentence paired-bootstrap p over the seed-matched pairs of runs of a and b."""
    key = (a, b) if (a, b) in tests else (b, a)
    return p_text(max_p(tests[key]), n_samples) if key in tests else "n/a"


def seed_test(tests: dict, a: str, b: str) -> dict | None:
    """The seed-level test of a against b (difference a - b), whichever order it was stored in."""
    if (a, b) in tests:
        return tests[(a, b)]
    if (b, a) not in tests:
        return None
    test = dict(tests[(b, a)])
    test["difference"] = -test["difference"]
    if test["ci"] is not None:
        test["ci"] = (-test["ci"][1], -test["ci"][0])
    return test


def difference_text(test: dict | None, digits: int = 2) -> str:
    """"+6.10 [2.31, 9.89]": the difference of seed means with Welch's 95% interval."""
    if test is None:
        return "n/a"
    interval = f" [{test['ci'][0]:.{digits}f}, {test['ci'][1]:.{digits}f}]" if test["ci"] is not None else ""
    return f"{test['difference']:+.{digits}f}{interval}"


def holm_text(test: dict | None) -> str:
    """The Holm-adjusted permutation p over seeds with the design's floor."""
    return "n/a" if test is None else seed_p_text(test["holm_p"], test["p_floor"])


def markdown_table(rows: list[dict], tests: dict, seed_tests: dict, n_samples: int) -> str:
    """The main table: means ± 95% CI over seeds; against the best model, the difference of seed means with Welch's
    interval, the permutation p over seeds (Holm-adjusted across the report's pairs, with its floor) and the largest
    of the per-sentence paired bootstraps of seed-matched runs. A "greedy BLEU" column follows BLEU when some run
    decoded the test set greedily too (module.test_greedy)."""
    best = rows[0]["label"] if rows else None
    greedy = any(row["greedy_bleu"][0] is not None for row in rows)
    header = ["model", "family", "seeds", "params", "BLEU", *(["greedy BLEU"] * greedy), "chrF", "train tok/s",
              "steps/s", "greedy sent/s", "beam sent/s", "MFU %", "peak MB", f"Δ BLEU vs {best} [Welch 95% CI]",
              f"p vs {best} (seeds, Holm)", f"p vs {best} (run pairs)"]
    body = []
    for row in rows:
        label = row["label"]
        test = seed_test(seed_tests, label, best)
        p = ["—", "—", "—"] if label == best else [difference_text(test), holm_text(test),
                                                   _pair_p(tests, best, label, n_samples)]
        beam = f" (k={row['beam_size']})" if row["beam_size"] else ""
        body.append([row["label"], row["family"], str(len(row["seeds"])), fmt(row["params"][0], 0, True),
                     cell(row["bleu"], 2), *([cell(row["greedy_bleu"], 2)] * greedy), cell(row["chrf"], 2),
                     cell(row["train_tok_s"], 0, True), cell(row["steps_s"], 2),
                     cell(row["greedy_sent_s"], 1, True), cell(row["beam_sent_s"], 1, True) + beam,
                     cell(row["mfu"], 2), cell(row["memory"], 0, True), *p])
    return markdown_rows(header, body)


def markdown_pairwise(labels: list[str], tests: dict, n_samples: int, per_pair: bool = True) -> str:
    """Matrix for every two models (upper triangle, row minus column): over seeds (`per_pair=False`,
    seed_significance's tests: the difference with Welch's interval and the Holm-adjusted permutation p), or the
    largest per-sentence paired-bootstrap p over seed-matched pairs of runs."""
    def entry(a: str, b: str) -> str:
        if per_pair:
            return _pair_p(tests, a, b, n_samples)
        test = seed_test(tests, a, b)
        return "n/a" if test is None else f"{difference_text(test)}; p {holm_text(test)}"

    body = [[a] + ["" if j <= i else entry(a, b) for j, b in enumerate(labels)] for i, a in enumerate(labels)]
    return markdown_rows([""] + labels, body)


def markdown_bucket_tests(tests: dict, buckets: list[str]) -> str:
    """One row per pair of models, one column per bucket: the difference of seed means (first minus second) with
    Welch's interval and the permutation p over seeds, Holm-adjusted across the pair's buckets."""
    body = [[f"{a} − {b}"] + [f"{difference_text(t)}; p {holm_text(t)}" if (t := pair.get(bucket)) else "n/a"
                              for bucket in buckets] for (a, b), pair in tests.items()]
    return markdown_rows(["pair"] + buckets, body)


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

