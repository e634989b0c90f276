"""The comparison table: per-model means and spreads over seeds, and paired bootstrap significance between models."""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from itertools import combinations

from seqbench.metrics import paired_bootstrap
from seqbench.nested import get_path
from seqbench.report.load import Run


def spread(values: list[float | None]) -> tuple[float | None, float | None, int]:
    """(mean, sample standard deviation or None for a single value, count) of the values that exist."""
    values = [v for v in values if v is not None and not math.isnan(v)]
    if not values:
        return None, None, 0
    return statistics.fmean(values), statistics.stdev(values) if len(values) > 1 else None, len(values)


# Table columns: (key, header, path in results.json, scale). Values are averaged over the seeds of a model.
COLUMNS = [
    ("params", "params", "parameters", 1.0),
    ("bleu", "BLEU", "{split}.bleu", 1.0),
    ("chrf", "chrF", "{split}.chrf", 1.0),
    ("greedy_bleu", "greedy BLEU", "{split}.greedy.bleu", 1.0),
    ("train_tok_s", "train tok/s", "throughput.target_tokens_per_s", 1.0),
    ("steps_s", "steps/s", "throughput.steps_per_s", 1.0),
    ("greedy_sent_s", "greedy sent/s", "decoding.greedy.sentences_per_s", 1.0),
    ("beam_sent_s", "beam sent/s", "decoding.beam.sentences_per_s", 1.0),
    ("mfu", "MFU %", "flops.mfu", 100.0),
    ("memory", "peak MB", "peak_memory_mb", 1.0),
]


def summary_rows(groups: dict[str, list[Run]], split: str = "test") -> list[dict]:
    """One row per model: {"label", "family", "seeds", "<key>": (mean, std, n) for every column}."""
    rows = []
    for label, runs in groups.items():
        row = {"label": label, "family": runs[0].results["model"]["name"], "seeds": [r.seed for r in runs],
               "beam_size": get_path(runs[0].results, "decoding.beam.beam_size")}
        for key, _, path, scale in COLUMNS:
            values = [get_path(r.results, path.format(split=split)) for r in runs]
            mean, std, n = spread([None if v is None else v * scale for v in values])
            row[key] = (mean, std, n)
        rows.append(row)
    return rows


def _pairs(a: list[Run], b: list[Run]) -> list[tuple[Run, Run]]:
    """Runs of two models paired by seed; seeds only one model has are paired in order among themselves."""
    by_seed = {r.seed: r for r in b}
    pairs = [(r, by_seed[r.seed]) for r in a if r.seed in by_seed]
    rest_a = [r for r in a if r.seed not in by_seed]
    rest_b = [r for r in b if r.seed not in {x.seed for x in a}]
    return pairs + list(zip(rest_a, rest_b))


def significance(groups: dict[str, list[Run]], split: str = "test", n_samples: int = 1000) -> dict:
    """Paired bootstrap resampling (sacreBLEU) between every two models, on each seed-matched pair of runs.

    Returns {(label_a, label_b): [{"seeds": (seed_a, seed_b), "p_value", "bleu_a", "bleu_b"}, ...]} for pairs
    whose runs decoded the same references; the first label is the better one in the groups' order.
    """
    out = {}
    for label_a, label_b in combinations(groups, 2):
        tests = []
        for run_a, run_b in _pairs(groups[label_a], groups[label_b]):
            hyp_a, hyp_b = run_a.lines("hypotheses", split), run_b.lines("hypotheses", split)
            references = run_a.lines("references", split)
            if None in (hyp_a, hyp_b, references) or references != run_b.lines("references", split):
                continue  # no files, or different test sets: nothing to pair
            result = paired_bootstrap(hyp_a, hyp_b, references, n_samples)
            tests.append({"seeds": (run_a.seed, run_b.seed), "p_value": result["p_value"],
                          "bleu_a": result["baseline_bleu"], "bleu_b": result["bleu"]})
        if tests:
            out[(label_a, label_b)] = tests
    return out


def max_p(tests: list[dict]) -> float:
    """The most conservative p-value over seed pairs: a difference counts only if every seed pair shows it."""
    return max(t["p_value"] for t in tests)


def _fmt(value, digits: int = 1, thousands: bool = False) -> str:
    if value is None:
        return "—"
    return f"{value:,.{digits}f}" if thousands else f"{value:.{digits}f}"


def _cell(stat: tuple, digits: int = 1, thousands: bool = False) -> str:
    mean, std, n = stat
    if mean is None:
        return "—"
    return _fmt(mean, digits, thousands) + (f" ± {_fmt(std, digits, thousands)}" if std is not None else "")


def _markdown(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in rows])


def markdown_table(rows: list[dict], tests: dict) -> str:
    """The main table: means ± sample std over seeds, and p of the paired bootstrap against the best model. A
    "greedy BLEU" column follows BLEU when some run decoded the test set greedily too (module.test_greedy)."""
    best = rows[0]["label"] if rows else None
    greedy = any(row["greedy_bleu"][0] is not None for row in rows)
    header = ["model", "family", "seeds", "params", "BLEU", *(["greedy BLEU"] * greedy), "chrF", "train tok/s",
              "steps/s", "greedy sent/s", "beam sent/s", "MFU %", "peak MB", f"p vs {best}"]
    body = []
    for row in rows:
        p = "—" if row["label"] == best else (
            f"{max_p(tests[(best, row['label'])]):.3f}" if (best, row["label"]) in tests else "n/a")
        beam = f" (k={row['beam_size']})" if row["beam_size"] else ""
        body.append([row["label"], row["family"], str(len(row["seeds"])), _fmt(row["params"][0], 0, True),
                     _cell(row["bleu"], 2), *([_cell(row["greedy_bleu"], 2)] * greedy), _cell(row["chrf"], 2),
                     _cell(row["train_tok_s"], 0, True), _cell(row["steps_s"], 2),
                     _cell(row["greedy_sent_s"], 1, True), _cell(row["beam_sent_s"], 1, True) + beam,
                     _cell(row["mfu"], 2), _cell(row["memory"], 0, True), p])
    return _markdown(header, body)


def markdown_pairwise(labels: list[str], tests: dict) -> str:
    """Matrix of the largest p-value over seed pairs for every two models (upper triangle)."""
    body = []
    for i, a in enumerate(labels):
        cells = []
        for j, b in enumerate(labels):
            key = (a, b) if (a, b) in tests else (b, a)
            cells.append("" if j <= i else f"{max_p(tests[key]):.3f}" if key in tests else "n/a")
        body.append([a] + cells)
    return _markdown([""] + labels, body)


@dataclass(frozen=True)
class Breakdown:
    """One bucketed score of a split, as results.json records it: a list of {"bucket", <value>, <count>} at `key`."""
    key: str     # dotted path inside a split's scores
    value: str   # the score of a bucket
    count: str   # what a bucket holds
    title: str
    axis: str    # what the buckets measure (x axis)
    metric: str  # what the score is (y axis)
    note: str    # the report's sentence on what a bucket holds

    @property
    def name(self) -> str:  # file stem and W&B key
        return self.key.replace(".", "_")

    def entries(self, run: Run, split: str) -> list[dict]:
        return get_path(run.results, f"{split}.{self.key}") or []


BY_LENGTH = Breakdown("bleu_by_length", "bleu", "sentences", "BLEU by source sentence length",
                      "source sentence length (words)", "BLEU",
                      "Bucket (sentences): corpus BLEU of the sentences in each bucket.")
# The structural axes of a corpus that records them (seqbench.targeted): present only in such runs.
BY_STRUCTURE = (
    Breakdown("bleu_by_clauses", "bleu", "sentences", "BLEU by clause count", "clauses in the source sentence",
              "BLEU", "Bucket (sentences): corpus BLEU of the sentences with that many clauses (finite verbs, "
                      "relative clauses included)."),
    Breakdown("bleu_by_dependency", "bleu", "sentences", "BLEU by longest dependency",
              "longest dependency in the source sentence (words)", "BLEU",
              "Bucket (sentences): corpus BLEU of the sentences whose longest agreement/reference dependency spans "
              "that many source words."),
    Breakdown("targeted.by_distance", "accuracy", "dependencies", "Targeted accuracy by dependency distance",
              "controller-to-dependent distance (source words)", "marker accuracy (%)",
              "Bucket (dependencies): share of agreement/reference dependencies whose marker the hypothesis carries, "
              "by controller-to-dependent distance in source words; read from the hypotheses only "
              "(seqbench.targeted)."),
)
# The same with greedy decoding (module.test_greedy), next to the beam's: a decoding artefact shows up here.
GREEDY_BY_LENGTH = Breakdown("greedy.bleu_by_length", "bleu", "sentences",
                             "Greedy BLEU by source sentence length", "source sentence length (words)",
                             "BLEU, greedy decoding",
                             "Bucket (sentences): the same test sentences decoded greedily (module.test_greedy) "
                             "instead of with the beam, so a beam-search artefact cannot pass for an architecture "
                             "effect.")
BREAKDOWNS = (BY_LENGTH, GREEDY_BY_LENGTH, *BY_STRUCTURE)


def present_breakdowns(groups: dict[str, list[Run]], split: str = "test") -> list[Breakdown]:
    """The breakdowns some run of `groups` recorded for `split`, in BREAKDOWNS order."""
    runs = [r for members in groups.values() for r in members]
    return [b for b in BREAKDOWNS if any(b.entries(r, split) for r in runs)]


def markdown_by_bucket(groups: dict[str, list[Run]], split: str = "test", breakdown: Breakdown = BY_LENGTH) -> str:
    """The breakdown's score per bucket, mean ± std over seeds, with each bucket's size (sentences or
    dependencies) in the header."""
    buckets, series = bucket_series(groups, split, breakdown)
    body = [[label] + [_cell(stat, 2) for stat in stats] for label, stats in series.items()]
    counts = _bucket_counts(groups, split, breakdown)
    return _markdown(["model"] + [f"{b} ({counts.get(b, 0)})" for b in buckets], body)


def _bucket_names(groups: dict[str, list[Run]], split: str, breakdown: Breakdown) -> list[str]:
    names: list[str] = []
    for runs in groups.values():
        for run in runs:
            for bucket in breakdown.entries(run, split):
                if bucket["bucket"] not in names:
                    names.append(bucket["bucket"])
    return names


def _bucket_counts(groups: dict[str, list[Run]], split: str, breakdown: Breakdown) -> dict[str, int]:
    for runs in groups.values():
        for run in runs:
            entries = breakdown.entries(run, split)
            if entries:
                return {b["bucket"]: b[breakdown.count] for b in entries}
    return {}


def _bucket_value(run: Run, split: str, name: str, breakdown: Breakdown) -> float | None:
    for bucket in breakdown.entries(run, split):
        if bucket["bucket"] == name:
            return bucket[breakdown.value]
    return None


def bucket_series(groups: dict[str, list[Run]], split: str = "test",
                  breakdown: Breakdown = BY_LENGTH) -> tuple[list[str], dict[str, list[tuple]]]:
    """Bucket names and, per model, the (mean, std, n) score of every bucket: the data of a breakdown's plot."""
    buckets = _bucket_names(groups, split, breakdown)
    return buckets, {label: [spread([_bucket_value(r, split, b, breakdown) for r in runs]) for b in buckets]
                     for label, runs in groups.items()}
