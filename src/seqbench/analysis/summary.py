"""Per-model means and 95% confidence intervals over seeds, significance between models (over seeds, Holm-corrected
across a table's pairs; per seed-matched pair of runs over sentences), and the bucketed breakdowns (BLEU by length,
by structure) a run records: the numbers behind the report's tables and plots."""
from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations
from typing import Callable

from scipy import stats

from seqbench.analysis.seeds import compare_seeds, spread, with_holm
from seqbench.common.nested import get_path
from seqbench.common.text import bucket_start
from seqbench.rundir.reader import Run
from seqbench.scoring.metrics import paired_bootstrap

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
    """One row per model: {"label", "family", "seeds", "<key>": Spread (mean, 95% CI, n) for every column}."""
    rows = []
    for label, runs in groups.items():
        row = {"label": label, "family": runs[0].results["model"]["name"], "seeds": [r.seed for r in runs],
               "beam_size": get_path(runs[0].results, "decoding.beam.beam_size")}
        for key, _, path, scale in COLUMNS:
            values = [get_path(r.results, path.format(split=split)) for r in runs]
            row[key] = spread([None if v is None else v * scale for v in values])
        rows.append(row)
    return rows


def _pairs(a: list[Run], b: list[Run]) -> list[tuple[Run, Run]]:
    """Runs of two models paired by seed; seeds only one model has are paired in order among themselves."""
    by_seed = {r.seed: r for r in b}
    pairs = [(r, by_seed[r.seed]) for r in a if r.seed in by_seed]
    rest_a = [r for r in a if r.seed not in by_seed]
    rest_b = [r for r in b if r.seed not in {x.seed for x in a}]
    return pairs + list(zip(rest_a, rest_b))


def paired_runs(groups: dict[str, list[Run]]) -> int:
    """How many pairs of runs `significance` looks at (its progress steps)."""
    return sum(len(_pairs(groups[a], groups[b])) for a, b in combinations(groups, 2))


def significance(groups: dict[str, list[Run]], split: str = "test", n_samples: int = 1000,
                 advance: Callable[[int], None] = lambda n: None) -> dict:
    """Paired bootstrap resampling (sacreBLEU) between every two models, on each seed-matched pair of runs.

    Returns {(label_a, label_b): [{"seeds": (seed_a, seed_b), "p_value", "bleu_a", "bleu_b"}, ...]} for pairs
    whose runs decoded the same references; the first label is the better one in the groups' order. `advance(1)`
    is called after each pair of runs (`paired_runs` of them).
    """
    out = {}
    for label_a, label_b in combinations(groups, 2):
        tests = []
        for run_a, run_b in _pairs(groups[label_a], groups[label_b]):
            hyp_a, hyp_b = run_a.lines("hypotheses", split), run_b.lines("hypotheses", split)
            references = run_a.lines("references", split)
            if None not in (hyp_a, hyp_b, references) and references == run_b.lines("references", split):
                result = paired_bootstrap(hyp_a, hyp_b, references, n_samples)
                tests.append({"seeds": (run_a.seed, run_b.seed), "p_value": result["p_value"],
                              "bleu_a": result["baseline_bleu"], "bleu_b": result["bleu"]})
            # else no files, or different test sets: nothing to pair
            advance(1)
        if tests:
            out[(label_a, label_b)] = tests
    return out


def seed_significance(groups: dict[str, list[Run]], split: str = "test", metric: str = "bleu") -> dict:
    """Every two models compared over seeds (seqbench.analysis.seeds.compare_seeds on each run's corpus `metric`),
    with Holm's correction across all the pairs of the report: {(label_a, label_b): {SeedTest's fields, "holm_p"}}
    (the permutation p adjusted), the better label first; pairs where a model has fewer than two seeds are left
    out (one seed is no sample of a model's training runs)."""
    tests = {}
    for label_a, label_b in combinations(groups, 2):
        scores = [[v for r in groups[label] if (v := get_path(r.results, f"{split}.{metric}")) is not None]
                  for label in (label_a, label_b)]
        if min(map(len, scores)) >= 2:
            tests[(label_a, label_b)] = compare_seeds(*scores)._asdict()
    return with_holm(tests)


def bucket_significance(groups: dict[str, list[Run]], split: str, breakdown: Breakdown) -> dict:
    """Each pair of models compared over seeds in every bucket of a breakdown, Holm-corrected across the buckets of
    the pair (a claim such as "apart at every length" rests on all of them): {(label_a, label_b): {bucket: {SeedTest's
    fields, "holm_p"}}}."""
    buckets = _bucket_names(groups, split, breakdown)
    out = {}
    for label_a, label_b in combinations(groups, 2):
        tests = {}
        for bucket in buckets:
            scores = [[v for r in groups[label] if (v := _bucket_value(r, split, bucket, breakdown)) is not None]
                      for label in (label_a, label_b)]
            if min(map(len, scores)) >= 2:
                tests[bucket] = compare_seeds(*scores)._asdict()
        with_holm(tests)
        if tests:
            out[(label_a, label_b)] = tests
    return out


def trained_length(run: Run) -> int | None:
    """The longest training pair the run kept (data.train_max_len), None when every length was kept."""
    return ((run.results.get("config") or {}).get("data") or {}).get("train_max_len")


def length_slope(run: Run, split: str = "test", within: int | None = None) -> float | None:
    """How fast a run's BLEU falls with source length on the lengths it trained on: the least-squares slope
    (scipy.stats.linregress) of its bucket BLEU over the bucket midpoints, in BLEU per 10 words, over the closed
    buckets that lie within data.train_max_len (and within `within` words, when given). Past it the slope would mix
    in length extrapolation, a different question, which the per-bucket tests answer (bucket_significance); an open
    last bucket (61+) has no midpoint. None with fewer than three such buckets."""
    limit = min((n for n in (trained_length(run), within) if n is not None), default=None)
    points = [((b["min_words"] + b["max_words"]) / 2, b["bleu"]) for b in BY_LENGTH.entries(run, split)
              if b.get("max_words") is not None and b.get("bleu") is not None
              and (limit is None or b["max_words"] <= limit)]
    if len(points) < 3:
        return None
    lengths, scores = zip(*points)
    return 10 * float(stats.linregress(lengths, scores).slope)


def slope_significance(groups: dict[str, list[Run]], split: str = "test") -> dict:
    """Every two models' length slopes (`length_slope`, one per seed) compared over seeds, Holm-corrected across the
    pairs: {(label_a, label_b): {SeedTest's fields, "holm_p", "slopes": (A's per seed, B's per seed), "within": the
    longest words both trained on, or None}}. Both slopes of a pair are fitted on the same buckets, those within both
    models' training lengths: a -30 model's slope over 1-30 words against a -50's over 1-50 would differ by the range
    alone wherever BLEU does not fall in a straight line. The claim of Bahdanau et al.'s Fig. 2 is this one: that one
    model's BLEU falls faster with length than the other's."""
    tests = {}
    for label_a, label_b in combinations(groups, 2):
        limits = [n for label in (label_a, label_b) for r in groups[label] if (n := trained_length(r)) is not None]
        within = min(limits, default=None)
        slopes = [[v for r in groups[label] if (v := length_slope(r, split, within)) is not None]
                  for label in (label_a, label_b)]
        if min(map(len, slopes)) >= 2:
            tests[(label_a, label_b)] = {**compare_seeds(*slopes)._asdict(), "slopes": tuple(slopes),
                                         "within": within}
    return with_holm(tests)


def max_p(tests: list[dict]) -> float:
    """The most conservative p-value over seed pairs: a difference counts only if every seed pair shows it."""
    return max(t["p_value"] for t in tests)


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
        return self.key.replace(".", "_") + ("" if self.value == "bleu" else f"_{self.value}")

    def entries(self, run: Run, split: str) -> list[dict]:
        return get_path(run.results, f"{split}.{self.key}") or []


BY_LENGTH = Breakdown("bleu_by_length", "bleu", "sentences", "BLEU by source sentence length",
                      "source sentence length (words)", "BLEU",
                      "Bucket (sentences): corpus BLEU of the sentences in each bucket.")
# The structural axes of a corpus that records them (seqbench.scoring.targeted): present only in such runs.
BY_STRUCTURE = (
    Breakdown("bleu_by_clauses", "bleu", "sentences", "BLEU by clause count", "clauses in the source sentence",
              "BLEU", "Bucket (sentences): corpus BLEU of the sentences with that many clauses (finite verbs, "
                      "relative clauses included)."),
    Breakdown("bleu_by_dependency", "bleu", "sentences", "BLEU by longest dependency",
              "longest dependency in the source sentence (words)", "BLEU",
              "Bucket (sentences): corpus BLEU of the sentences whose longest agreement/reference dependency spans "
              "that many source words."),
    Breakdown("targeted.by_distance", "coverage", "dependencies", "Coverage of the dependent words by distance",
              "controller-to-dependent distance (source words)", "coverage (%)",
              "Bucket (dependencies): share of agreement/reference dependencies whose marked word the hypothesis has "
              "(the word aligned to the reference's is built on its stem), by controller-to-dependent distance in "
              "source words (seqbench.scoring.targeted)."),
    Breakdown("targeted.by_distance", "accuracy", "dependencies", "Marker accuracy by dependency distance",
              "controller-to-dependent distance (source words)", "marker accuracy when covered (%)",
              "Bucket (dependencies): of the dependencies whose word the hypothesis has, the share with the marker "
              "the source decides; a missing word counts against coverage, not here (seqbench.scoring.targeted). "
              "Distance and sentence length go together here: see the length x distance table."),
)
# The same with greedy decoding (module.test_greedy), next to the beam's: a decoding artefact shows up here.
GREEDY_BY_LENGTH = Breakdown("greedy.bleu_by_length", "bleu", "sentences",
                             "Greedy BLEU by source sentence length", "source sentence length (words)",
                             "BLEU, greedy decoding",
                             "Bucket (sentences): the same test sentences decoded greedily (module.test_greedy) "
                             "instead of with the beam, so a beam-search artefact cannot pass for an architecture "
                             "effect.")
BREAKDOWNS = (BY_LENGTH, GREEDY_BY_LENGTH, *BY_STRUCTURE)


def declared_breakdowns(runs: list[Run], split: str) -> list[Breakdown]:
    """The BLEU-by-length subsets the runs' corpus declared (results.json's "breakdowns", written from the corpus's
    scoring.subsets), as breakdowns of the report: their titles and notes are the corpus's own."""
    seen: dict[str, dict] = {}
    for run in runs:
        for entry in get_path(run.results, f"{split}.breakdowns") or []:
            seen.setdefault(entry["key"], entry)
    return [Breakdown(e["key"], "bleu", "sentences", e["title"], "source sentence length (words)", "BLEU", e["note"])
            for e in seen.values()]


def present_breakdowns(groups: dict[str, list[Run]], split: str = "test") -> list[Breakdown]:
    """The breakdowns some run of `groups` recorded for `split`, in BREAKDOWNS order."""
    runs = [r for members in groups.values() for r in members]
    return [b for b in (*BREAKDOWNS, *declared_breakdowns(runs, split)) if any(b.entries(r, split) for r in runs)]


def _bucket_names(groups: dict[str, list[Run]], split: str, breakdown: Breakdown) -> list[str]:
    names: list[str] = []
    for runs in groups.values():
        for run in runs:
            for bucket in breakdown.entries(run, split):
                if bucket["bucket"] not in names:
                    names.append(bucket["bucket"])
    return names


def bucket_counts(groups: dict[str, list[Run]], split: str, breakdown: Breakdown) -> dict[str, int]:
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


def length_distance_cells(groups: dict[str, list[Run]], split: str, kind: str, score: str) -> dict:
    """The length-controlled targeted table (targeted.by_length_distance) of every model that recorded one: {label:
    {"lengths": [...], "distances": [...], "cells": {(length, distance): Spread of `score` over seeds},
    "dependencies": {(length, distance): count in the first seed}, "probes": bool}}."""
    out = {}
    for label, runs in groups.items():
        per_run = [[c for c in get_path(r.results, f"{split}.targeted.by_length_distance") or [] if c["kind"] == kind]
                   for r in runs]
        per_run = [cells for cells in per_run if cells]
        if not per_run:
            continue
        keys = list(dict.fromkeys((c["length"], c["distance"]) for cells in per_run for c in cells))
        values = {key: [next((c[score] for c in cells if (c["length"], c["distance"]) == key), None)
                        for cells in per_run] for key in keys}
        out[label] = {"lengths": sorted({k[0] for k in keys}, key=bucket_start),
                      "distances": sorted({k[1] for k in keys}, key=bucket_start),
                      "cells": {key: spread(v) for key, v in values.items()},
                      "dependencies": {(c["length"], c["distance"]): c["dependencies"] for c in per_run[0]},
                      "probes": per_run[0][0]["probes"]}
    return out

