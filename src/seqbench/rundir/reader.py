"""Finding and reading run directories: results.json, the test-set text files, the CSV log, attention maps."""
from __future__ import annotations

import csv
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from seqbench.common.errors import InputError
from seqbench.common.io import read_lines
from seqbench.common.nested import get_path
from seqbench.decoding.attention import load_attention
from seqbench.rundir.checkpoints import TORCH_LOAD_ERRORS, unreadable
from seqbench.rundir.layout import RESULTS_FILE, RunDir
from seqbench.rundir.results import SCORED, read_results
from seqbench.scoring.evaluation import LENGTH_METRIC


@dataclass
class Run:
    """One run directory, read lazily: results.json up front, the rest when a table or plot asks for it."""

    path: Path
    results: dict
    _cache: dict = field(default_factory=dict, repr=False)
    named: str | None = None  # a label given on the command line (`LABEL=DIR`), over the recorded one

    def __post_init__(self):
        # module.test_greedy asks for greedy scores beside the beam's, and a run whose beam is 1 decoded its test
        # greedily, once (the module decodes a second time only for a wider beam): its test scores are the greedy
        # ones, so a greedy column or table compares it with the others instead of leaving it out.
        test = self.results.get("test")
        if (isinstance(test, dict) and "greedy" not in test and get_path(self.results, "config.module.test_greedy")
                and get_path(self.results, "config.module.decoding.beam_size") == 1):
            test["greedy"] = dict(test)

    @property
    def label(self) -> str:
        return self.named or self.results.get("label") or self.results["model"]["name"]

    @property
    def seed(self):
        return self.results.get("seed")

    @property
    def status(self) -> str:
        """"completed", "cut_short" (scored, but the time guard stopped its training early), or why the run has no
        scores: "interrupted", "diverged", "failed" (seqbench.rundir.results)."""
        return self.results.get("status", "completed")  # records older than the status field are all completed

    def lines(self, name: str, split: str = "test") -> list[str] | None:
        """hypotheses / references / sources of a split, one sentence per line; None when the run has none."""
        key = f"{name}.{split}"
        if key not in self._cache:
            path = RunDir(self.path).text(name, split)
            self._cache[key] = read_lines(path) if path.is_file() else None
        return self._cache[key]

    def curve(self) -> list[dict]:
        """Validation points logged during training: [{"step", "bleu", "tokens_seen", "train_seconds",
        "train_flops", "bleu_by_length"}] ("train_flops" None for runs recorded before it was; "bleu_by_length"
        {bucket: BLEU}, or None where neither record holds it).

        From results.json's "curve" (written whatever the logger), or, for runs recorded before it existed, from the
        CSV logger's metrics.csv: rows carrying val/bleu together with val/tokens_seen (the final re-validation of
        the best checkpoint has no training progress and is left out). A curve recorded before it held BLEU by length
        takes it from metrics.csv's val/bleu_len_* columns where the run logged one, matched on tokens_seen (the CSV's
        step is one less than the curve's).
        """
        if "curve" not in self._cache:
            def logged() -> list[dict]:
                return next((_csv_curve(path) for path in sorted(self.path.glob("**/metrics.csv"))), [])

            if "curve" in self.results:
                points = [{key: p.get(key) for key in CURVE_KEYS} for p in self.results["curve"]]
                if any(p["bleu_by_length"] is None and p["bleu"] is not None for p in points):
                    by_tokens = {p["tokens_seen"]: p["bleu_by_length"] for p in logged()}
                    for point in points:
                        point["bleu_by_length"] = point["bleu_by_length"] or by_tokens.get(point["tokens_seen"])
            else:
                points = logged()
            points = [p for p in points if p["bleu"] is not None and p["tokens_seen"] is not None]
            self._cache["curve"] = sorted(points, key=lambda p: p["tokens_seen"])
        return self._cache["curve"]

    def attention(self) -> dict | None:
        """The run's saved attention maps; None when it has none. A damaged file is one line naming it."""
        if "attention" not in self._cache:
            path = RunDir(self.path).attention
            self._cache["attention"] = _read_attention(path) if path.is_file() else None
        return self._cache["attention"]


def _read_attention(path: Path) -> dict:
    try:
        return load_attention(path)
    except TORCH_LOAD_ERRORS as error:
        raise InputError(f"{path}: not a readable attention file, cut short or damaged ({unreadable(error)}); delete "
                         f"it to report the run without its attention maps") from None


CURVE_KEYS = ("step", "bleu", "tokens_seen", "train_seconds", "train_flops", "bleu_by_length")
BY_LENGTH_COLUMN = f"val/{LENGTH_METRIC}_"


def _csv_curve(path: Path) -> list[dict]:
    with path.open(newline="") as f:
        rows = list(csv.DictReader(f))
    points = []
    for row in rows:
        by_length = {key[len(BY_LENGTH_COLUMN):]: _number(value) for key, value in row.items()
                     if key and key.startswith(BY_LENGTH_COLUMN) and _number(value) is not None}
        points.append({"step": _number(row.get("step")), "bleu": _number(row.get("val/bleu")),
                       "tokens_seen": _number(row.get("val/tokens_seen")),
                       "train_seconds": _number(row.get("val/train_seconds")),
                       "train_flops": _number(row.get("val/train_flops")), "bleu_by_length": by_length or None})
    return points


def _number(text: str | None) -> float | None:
    if text in (None, ""):
        return None
    value = float(text)
    return None if math.isnan(value) else value


def find_results(paths: Iterable[str | Path]) -> list[Path]:
    """results.json files under the given run or multirun directories (or the files themselves), in path order."""
    found: list[Path] = []
    for path in map(Path, paths):
        if path.is_file() and path.name == RESULTS_FILE:
            found.append(path)
        elif path.is_dir():
            found.extend(sorted(path.rglob(RESULTS_FILE)))
        else:
            raise InputError(f"{path}: not a run directory or {RESULTS_FILE}")
    return list(dict.fromkeys(p.resolve() for p in found))


# `LABEL=DIR`: the runs under DIR compared as the model LABEL (two recipes of one model recorded under one label, say);
# for a search's directory, {family} in LABEL stands for each family's name (seqbench.analysis.runs.search_groups)
NAMED_PATH = re.compile(r"(?P<label>(?:[A-Za-z]|\{family\})[\w.+{}-]*)=(?P<path>.+)")


def named_path(text: str | Path) -> tuple[str | None, Path]:
    """(label, directory) of a `LABEL=DIR` argument; (None, path) for a plain path, and for one that exists as
    written even if it has a `=` in it (Hydra's override-named folders)."""
    match = NAMED_PATH.fullmatch(str(text))
    if match and not Path(text).exists():
        return match["label"], Path(match["path"])
    return None, Path(text)


def load_runs(paths: Iterable[str | Path], completed: bool = True) -> list[Run]:
    """The runs under `paths` (each a directory, a results.json, or `LABEL=` either of them to compare its runs under
    that label): only the completed ones (those with scores), or all with `completed=False`."""
    paths = list(paths)
    labels: dict[Path, str | None] = {}
    for label, path in map(named_path, paths):
        for found in find_results([path]):
            labels.setdefault(found, label)
    runs = [Run(p.parent, read_results(p), named=label) for p, label in labels.items()]
    if not runs:
        raise InputError(f"no {RESULTS_FILE} under {', '.join(map(str, paths))}")
    if not completed:
        return runs
    done = [r for r in runs if r.status in SCORED]  # cut_short runs too: the report warns about them
    if not done:
        raise InputError(f"no completed run under {', '.join(map(str, paths))} ({len(runs)} did not "
                                f"complete: {', '.join(sorted({r.status for r in runs}))})")
    return done
