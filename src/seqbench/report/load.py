"""Finding and reading run directories: results.json, the test-set text files, the CSV log, attention maps."""
from __future__ import annotations

import csv
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from seqbench.attention_maps import load_attention
from seqbench.errors import InputError
from seqbench.evaluation import Evaluator, split_file
from seqbench.io import read_lines
from seqbench.metrics import DEFAULT_LENGTH_EDGES


@dataclass
class Run:
    """One run directory, read lazily: results.json up front, the rest when a table or plot asks for it."""

    path: Path
    results: dict
    _cache: dict = field(default_factory=dict, repr=False)

    @property
    def label(self) -> str:
        return self.results.get("label") or self.results["model"]["name"]

    @property
    def seed(self):
        return self.results.get("seed")

    @property
    def status(self) -> str:
        """"completed", or why the run has no scores: "interrupted", "diverged", "failed" (seqbench.results)."""
        return self.results.get("status", "completed")  # records older than the status field are all completed

    def lines(self, name: str, split: str = "test") -> list[str] | None:
        """hypotheses / references / sources of a split, one sentence per line; None when the run has none."""
        key = f"{name}.{split}"
        if key not in self._cache:
            path = split_file(self.path, name, split)
            self._cache[key] = read_lines(path) if path.is_file() else None
        return self._cache[key]

    def curve(self) -> list[dict]:
        """Validation points logged during training: [{"step", "bleu", "tokens_seen", "train_seconds",
        "train_flops"}] ("train_flops" None for runs recorded before it was).

        From results.json's "curve" (written whatever the logger), or, for runs recorded before it existed, from the
        CSV logger's metrics.csv: rows carrying val/bleu together with val/tokens_seen (the final re-validation of
        the best checkpoint has no training progress and is left out).
        """
        if "curve" not in self._cache:
            if "curve" in self.results:
                points = [{key: p.get(key) for key in ("step", "bleu", "tokens_seen", "train_seconds", "train_flops")}
                          for p in self.results["curve"]]
            else:
                points = next((_csv_curve(path) for path in sorted(self.path.glob("**/metrics.csv"))), [])
            points = [p for p in points if p["bleu"] is not None and p["tokens_seen"] is not None]
            self._cache["curve"] = sorted(points, key=lambda p: p["tokens_seen"])
        return self._cache["curve"]

    def attention(self) -> dict | None:
        if "attention" not in self._cache:
            path = self.path / "attention.pt"
            self._cache["attention"] = load_attention(path) if path.is_file() else None
        return self._cache["attention"]


def _csv_curve(path: Path) -> list[dict]:
    with path.open(newline="") as f:
        rows = [{k: _number(row.get(k)) for k in ("step", "val/bleu", "val/tokens_seen", "val/train_seconds",
                                                  "val/train_flops")}
                for row in csv.DictReader(f)]
    return [{"step": r["step"], "bleu": r["val/bleu"], "tokens_seen": r["val/tokens_seen"],
             "train_seconds": r["val/train_seconds"], "train_flops": r["val/train_flops"]} for r in rows]


def _number(text: str | None) -> float | None:
    if text in (None, ""):
        return None
    value = float(text)
    return None if math.isnan(value) else value


def find_results(paths: Iterable[str | Path]) -> list[Path]:
    """results.json files under the given run or multirun directories (or the files themselves), in path order."""
    found: list[Path] = []
    for path in map(Path, paths):
        if path.is_file() and path.name == "results.json":
            found.append(path)
        elif path.is_dir():
            found.extend(sorted(path.rglob("results.json")))
        else:
            raise FileNotFoundError(f"{path}: not a run directory or results.json")
    return list(dict.fromkeys(p.resolve() for p in found))


def load_runs(paths: Iterable[str | Path], completed: bool = True) -> list[Run]:
    """The runs under `paths`: only the completed ones (those with scores), or all with `completed=False`."""
    paths = list(paths)
    runs = [Run(p.parent, json.loads(p.read_text())) for p in find_results(paths)]
    if not runs:
        raise FileNotFoundError(f"no results.json under {', '.join(map(str, paths))}")
    if not completed:
        return runs
    done = [r for r in runs if r.status == "completed"]
    if not done:
        raise FileNotFoundError(f"no completed run under {', '.join(map(str, paths))} ({len(runs)} did not "
                                f"complete: {', '.join(sorted({r.status for r in runs}))})")
    return done


def group_by_label(runs: list[Run], split: str = "test") -> dict[str, list[Run]]:
    """label -> its runs (seeds) sorted by seed; labels ordered by mean BLEU on `split`, best first."""
    groups: dict[str, list[Run]] = {}
    for run in runs:
        groups.setdefault(run.label, []).append(run)
    for members in groups.values():
        members.sort(key=lambda r: (r.seed is None, r.seed if r.seed is not None else 0, str(r.path)))

    def mean_bleu(label: str) -> float:
        scores = [r.results[split]["bleu"] for r in groups[label] if split in r.results]
        return sum(scores) / len(scores) if scores else -math.inf

    return {label: groups[label] for label in sorted(groups, key=mean_bleu, reverse=True)}


def external_run(name: str, hypotheses: str | Path, reference: Run, split: str = "test",
                 bootstrap_samples: int = 1000) -> Run:
    """Another toolkit's output (fairseq, OpenNMT-py, Joey NMT, ...) as a report row: its hypotheses of `reference`'s
    sentences, scored by the Evaluator against that run's references and sources, in the same length buckets.

    It has no seed, training log, attention maps or measurements: those cells of the report stay empty."""
    references, sources = reference.lines("references", split), reference.lines("sources", split)
    if references is None or sources is None:
        raise InputError(f"{reference.path}: no references.{split}.txt / sources.{split}.txt to score "
                         f"--external {name} against (runs before seqbench wrote them cannot be used)")
    lines = read_lines(hypotheses)
    if len(lines) != len(references):
        raise InputError(f"--external {name}={hypotheses}: {len(lines)} lines, but the {split} set of "
                         f"{reference.path} has {len(references)} sentences")
    buckets = reference.results.get(split, {}).get("bleu_by_length")
    edges = [b["max_words"] for b in buckets if b["max_words"] is not None] if buckets else DEFAULT_LENGTH_EDGES
    scores = Evaluator(edges, bootstrap_samples).score(lines, references, sources)
    results = {"label": name, "model": {"name": "external", "class": None, "config": {}, "param_budget": None},
               "parameters": None, "seed": None, split: scores}
    cache = {f"hypotheses.{split}": lines, f"references.{split}": references, f"sources.{split}": sources,
             "curve": [], "attention": None}
    return Run(Path(hypotheses), results, cache)
