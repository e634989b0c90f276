"""Runs as models and seeds: grouping finished runs by label, and another toolkit's output as one more run."""
from __future__ import annotations

import json
import math
from pathlib import Path

from seqbench.common.errors import InputError
from seqbench.common.io import read_lines
from seqbench.common.text import DEFAULT_LENGTH_EDGES
from seqbench.rundir.reader import Run, load_runs, named_path
from seqbench.scoring.evaluation import Evaluator


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


def is_search_dir(path: str | Path) -> bool:
    """A successive-halving search's directory (`seqbench sweep SEARCH.yaml`): its summary.json names the search."""
    summary = Path(path) / "summary.json"
    return summary.is_file() and json.loads(summary.read_text(encoding="utf-8")).get("search", {}).get(
        "search") == "successive_halving"


def search_groups(search_dir: str | Path, label: str = "{family}") -> dict[str, list[Run]]:
    """A search's result as models and seeds: per family, the runs of the recipe it chose (the search's own run at the
    last rung and the confirmation's seeds), {label: runs by seed}, best mean test BLEU first; `label` names each
    family's model ("{family}-50": rnnenc-50, ...). Only families whose confirmation is complete: a family still
    searching has no recipe to show."""
    if "{family}" not in label:
        raise InputError(f"{label}={search_dir}: a search's label names each of its families: put {{family}} in it, "
                         f"e.g. {{family}}-50={search_dir}")
    search_dir = Path(search_dir)
    summary = json.loads((search_dir / "summary.json").read_text(encoding="utf-8"))
    jobs = {job["key"]: job for job in summary["jobs"]}
    own, last = summary["search"]["constants"]["seed"], summary["search"]["rungs"][-1]
    seeds = (summary["search"].get("confirm") or {"seeds": [own]})["seeds"]  # no confirmation: the search's run
    runs = []
    for family, state in summary["families"].items():
        if state["chosen"] is None:
            continue
        index = state["chosen"]["index"]
        keys = [f"{family}/{'search' if s == own else 'confirm'}/{index}/{last}/{s}" for s in seeds]
        name = label.replace("{family}", family)
        runs += [run for key in keys for run in load_runs([f"{name}={search_dir / jobs[key]['run_dir']}"])]
    if not runs:
        raise InputError(f"{search_dir}: no family's search has chosen its recipe yet (see its summary.md)")
    return group_by_label(runs)


def runs_of(paths: list[str | Path]) -> list[Run]:
    """The completed runs a report or headline compares: those under each path or, for a successive-halving search's
    directory, its families' chosen recipes over their seeds (`search_groups`), labelled by family (`LABEL=DIR` with
    {family} in LABEL names them otherwise); so a search's models can share a table with runs trained from its
    recipes (another data limit, say)."""
    runs = []
    for path in paths:
        label, directory = named_path(path)
        if is_search_dir(directory):
            runs += [run for members in search_groups(directory, label or "{family}").values() for run in members]
        elif label and "{family}" in label:
            raise InputError(f"{path}: {{family}} names a search's families, and {directory} is not a search's "
                             f"directory (no summary.json of `seqbench sweep SEARCH.yaml`)")
        else:
            runs += load_runs([path])
    return list({run.path: run for run in runs}.values())


def check_one_budget_per_model(groups: dict[str, list[Run]]) -> None:
    """Runs of one label are seeds of one model only if they trained for the same budget (trainer.max_steps): a
    budget sweep's runs beside another preset's would otherwise pass for extra seeds."""
    mixed = [label for label, runs in groups.items()
             if len({(r.results.get("train") or {}).get("max_steps") for r in runs}) > 1]
    if mixed:
        raise InputError(f"{', '.join(mixed)}: runs of one model with different update budgets (trainer.max_steps) "
                         "are not seeds of one model; compare them by budget: seqbench report DIR... --by-budget")


# The 1-minute load average a timed run may reach beyond its own torch threads before its timings count as shared:
# a run's Python and Lightning work adds a little, another training process at least one thread's worth.
SHARED_LOAD_MARGIN = 0.75


def timed_while_shared(run: Run) -> bool:
    """Whether other work shared the CPU while the run's training steps were timed (its highest 1-minute load average
    then passed its own threads by more than SHARED_LOAD_MARGIN): its tokens/s, MFU and minutes are not the model's."""
    load, threads = run.results.get("throughput", {}).get("load_average_max"), run.results.get("threads")
    return load is not None and threads is not None and load > threads + SHARED_LOAD_MARGIN


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
