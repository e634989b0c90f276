"""A multi-fidelity recipe search with the same draws and the same update budget for every family.

`seqbench sweep searches/recipe_halving.yaml` runs a search file (not a W&B sweep file: `search: successive_halving`):

    configurations: 64          # per family, from the shared Sobol draws (seqbench.sweep.space)
    rungs: [300, 900, 2400]     # updates; the last is the budget the recipe is used at
    keep: 3                     # the best 1/keep of a rung's configurations train on to the next rung
    confirm: {top: 5, seeds: [1, 2, 3]}   # the last rung's best train with these seeds; the best mean is the recipe
    shared: {name: dimension}   # drawn once, the same for every family
    families: {family: {overrides: {model: ...}, factors: {name: dimension}}}
    constants: {name: value}    # every job's fixed settings; `seed` is the search's seed

Successive halving (Jamieson & Talwalkar 2016), synchronous: every configuration trains to the first rung, the best
third of them on to the second, and so on; a rung's ranking waits until all its jobs are in. Every job trains with
the schedule of the last rung (scheduler.total_steps), so a promoted configuration resumes from its last.ckpt in its
own run directory and continues: at the last rung it is exactly a full-budget run. Each family spends the same
updates (`budget`), whatever it learns. Failed and diverged jobs rank last.

Then the last rung's `top` configurations train with the other `confirm.seeds` at the full budget (the search's own
seed is their search run), and the configuration with the best mean validation score over the seeds is the recipe.

Resuming is the runner's: the sweep directory's summary.json records every finished job; a rerun of the same command
runs only what is missing (a job cut off resumes from its last.ckpt), and refuses a directory of another search.
"""
from __future__ import annotations

import itertools
import json
import math
import statistics
import sys
import threading
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import yaml

from seqbench.analysis.seeds import spread
from seqbench.analysis.tuning import expected_best
from seqbench.common.errors import ConfigError
from seqbench.common.io import atomic_write_text
from seqbench.sweep import launcher, space
from seqbench.sweep.spec import SweepError

KIND = "successive_halving"
KEYS = {"search", "name", "program", "metric", "configurations", "rungs", "keep", "confirm", "shared", "families",
        "constants"}


def is_search_file(config: Any) -> bool:
    return isinstance(config, dict) and config.get("search") == KIND


def check(config: dict, where: str) -> None:
    """One line for the first thing wrong in a search file."""
    unknown = set(config) - KEYS
    if unknown:
        raise SweepError(f"{where}: unknown key {sorted(unknown)[0]!r} (a successive-halving search file has "
                         f"{', '.join(sorted(KEYS))})")
    for key in ("program", "configurations", "rungs", "shared", "families", "constants"):
        if key not in config:
            raise SweepError(f"{where}: set {key}")
    if config.get("metric", {}).get("name", "val/bleu") != "val/bleu" or config.get("metric", {}).get(
            "goal", "maximize") != "maximize":
        raise SweepError(f"{where}: metric: a search maximises val/bleu (results.json's valid BLEU)")
    n, rungs = config["configurations"], config["rungs"]
    if not (isinstance(n, int) and n > 0):
        raise SweepError(f"{where}: configurations={n!r}: a positive integer")
    if n & (n - 1):
        raise SweepError(f"{where}: configurations={n}: a power of two, so the Sobol draws split every dimension "
                         "evenly")
    if not (isinstance(rungs, list) and rungs and all(isinstance(r, int) and r > 0 for r in rungs)
            and rungs == sorted(set(rungs))):
        raise SweepError(f"{where}: rungs={rungs!r}: increasing positive update counts")
    keep = config.get("keep", 3)
    if not (isinstance(keep, int) and keep >= 2):
        raise SweepError(f"{where}: keep={keep!r}: an integer >= 2 (the best 1/keep go on)")
    confirm = config.get("confirm") or {}
    if confirm and (not isinstance(confirm.get("top"), int) or confirm["top"] < 1
                    or not isinstance(confirm.get("seeds"), list)
                    or config["constants"].get("seed") not in confirm["seeds"]):
        raise SweepError(f"{where}: confirm: {{top: N, seeds: [...]}} with the search's own seed "
                         f"(constants.seed={config['constants'].get('seed')}) among the seeds")
    for name, spec in config["shared"].items():
        space.check_dimension(name, spec, f"{where}: shared")
    if not isinstance(config["families"], dict) or not config["families"]:
        raise SweepError(f"{where}: families: a mapping of family names to their overrides and factors")
    for family, body in config["families"].items():
        body = body or {}
        for name, spec in (body.get("factors") or {}).items():
            space.check_dimension(name, spec, f"{where}: families.{family}.factors")
        clash = set(body.get("factors") or {}) & set(config["shared"])
        if clash:
            raise SweepError(f"{where}: families.{family}.factors.{sorted(clash)[0]}: also a shared dimension")


def load(path: str | Path) -> dict:
    config = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    if not is_search_file(config):
        raise SweepError(f"{path}: not a successive-halving search file (search: {KIND})")
    try:
        check(config, str(path))
    except ConfigError as error:
        raise SweepError(str(error)) from None
    return config


def keep_counts(config: dict) -> list[int]:
    """How many configurations train at each rung: 64, 21, 7 for 64 configurations, three rungs and keep 3."""
    counts = [config["configurations"]]
    for _ in config["rungs"][1:]:
        counts.append(max(1, counts[-1] // config.get("keep", 3)))
    return counts


def budget(config: dict) -> dict[str, int]:
    """The updates each family is given: the search's rungs and the confirmation's extra seeds."""
    rungs, counts = config["rungs"], keep_counts(config)
    search = sum(count * (steps - before) for count, steps, before in zip(counts, rungs, [0, *rungs]))
    confirm = config.get("confirm") or {}
    extra_seeds = len(confirm.get("seeds", [])) - 1 if confirm else 0
    return {"search": search, "confirm": min(confirm.get("top", 0), counts[-1]) * extra_seeds * rungs[-1]}


@dataclass(frozen=True)
class Job:
    family: str
    stage: str      # "search" (a rung) or "confirm" (another seed at the full budget)
    index: int      # the configuration
    steps: int      # the update count it trains to
    seed: int

    @property
    def key(self) -> str:
        return f"{self.family}/{self.stage}/{self.index}/{self.steps}/{self.seed}"

    def run_dir(self, sweep_dir: Path) -> Path:
        name = f"{self.index:03d}" if self.stage == "search" else f"confirm/{self.index:03d}-seed{self.seed}"
        return (sweep_dir / self.family / name).resolve()


@dataclass
class Record:
    key: str
    state: str                  # complete | diverged | failed
    metric: float | None        # validation BLEU of the job's checkpoint with the lowest validation NLL
    updates: int | None         # updates the run directory holds after the job
    seconds: float
    run_dir: str
    error: str | None = None


def family_configurations(config: dict, seed: int) -> dict[str, list[dict]]:
    """Each family's configurations: the shared draws (identical across families) with its own factors."""
    return {family: space.configurations(config["shared"], (body or {}).get("factors") or {},
                                         config["configurations"], seed, family)
            for family, body in config["families"].items()}


def _score(record: Record | None) -> float:
    return record.metric if record is not None and record.state == "complete" and record.metric is not None \
        else -math.inf


def progress(config: dict, family: str, records: dict[str, Record]) -> dict:
    """Where a family's search stands: {"rungs": [{"steps", "configurations", "complete"}], "pending": [Job],
    "finalists": [index] (None until the last rung is in), "chosen": {"index", "scores", "mean"} or None}."""
    seed = config["constants"]["seed"]
    rungs, keep = config["rungs"], config.get("keep", 3)
    alive = list(range(config["configurations"]))
    out = {"rungs": [], "pending": [], "finalists": None, "chosen": None}
    for r, steps in enumerate(rungs):
        jobs = [Job(family, "search", i, steps, seed) for i in alive]
        missing = [job for job in jobs if job.key not in records]
        out["rungs"].append({"steps": steps, "configurations": alive, "complete": not missing})
        if missing:
            out["pending"] = missing
            return out
        ranked = sorted(alive, key=lambda i: (-_score(records[Job(family, "search", i, steps, seed).key]), i))
        alive = ranked[:max(1, len(alive) // keep)] if r + 1 < len(rungs) else ranked
    confirm = config.get("confirm") or {"top": 1, "seeds": [seed]}
    finalists = alive[:confirm["top"]]
    out["finalists"] = finalists
    last = rungs[-1]
    runs = {i: [Job(family, "search" if s == seed else "confirm", i, last, s) for s in confirm["seeds"]]
            for i in finalists}
    out["pending"] = [job for jobs in runs.values() for job in jobs if job.key not in records]
    if not out["pending"]:
        scores = {i: [max(_score(records[job.key]), 0.0) for job in jobs] for i, jobs in runs.items()}
        best = max(finalists, key=lambda i: (sum(scores[i]) / len(scores[i]), -i))
        out["chosen"] = {"index": best, "scores": scores[best], "mean": sum(scores[best]) / len(scores[best]),
                         "finalists": {str(i): scores[i] for i in finalists}}
    return out


def pending(config: dict, records: dict[str, Record]) -> list[Job]:
    """Every job that can run now, the families interleaved, so a search cut short has advanced them alike."""
    lists = [progress(config, family, records)["pending"] for family in config["families"]]
    return [job for group in itertools.zip_longest(*lists) for job in group if job is not None]


def next_job(config: dict, records: dict[str, Record], running: list[Job]) -> Job | None:
    """The job to start next: a ready one of the family with the fewest jobs running, then the fewest finished (the
    file's order breaks ties), so no family waits while the others run."""
    busy = {job.key for job in running}
    ready = [job for job in pending(config, records) if job.key not in busy]
    load = {family: sum(job.family == family for job in running) for family in config["families"]}
    done = {family: sum(key.startswith(f"{family}/") for key in records) for family in config["families"]}
    return min(ready, key=lambda job: (load[job.family], done[job.family], ready.index(job)), default=None)


def _override(name: str, value: Any) -> str:
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif value is None:
        text = "null"
    elif isinstance(value, list):
        text = "[" + ",".join(_override("", v)[1:] for v in value) + "]"
    else:
        text = str(value)
    return f"{name}={text}"


def job_overrides(config: dict, params: dict, job: Job) -> list[str]:
    """The Hydra overrides of one job: the family's, the constants, the configuration's values, the update count
    and the schedule's horizon (the last rung: a promoted job continues the same schedule)."""
    settings = {**(config["families"][job.family] or {}).get("overrides", {}), **config["constants"], **params,
                "seed": job.seed, "trainer.max_steps": job.steps, "scheduler.total_steps": config["rungs"][-1]}
    return [_override(name, value) for name, value in settings.items()]


def run_job(config: dict, params: dict, job: Job, sweep_dir: Path, env: dict[str, str],
            stopping: threading.Event) -> Record:
    """Trains one job to its update count (launcher.launch); one that stops short of it failed."""
    command = [sys.executable, str(config["program"]), *job_overrides(config, params, job)]
    outcome = launcher.launch(job.key, command, job.run_dir(sweep_dir), sweep_dir, env, stopping, updates=job.steps)
    results = outcome.results  # a completed record counts its updates in train.steps, another in step
    updates = results.get("train", {}).get("steps", results.get("step"))
    return Record(job.key, outcome.state, outcome.metric, updates, outcome.seconds, outcome.run_dir, outcome.error)


def recorded(sweep_dir: Path, config: dict, seed: int) -> tuple[dict[str, Record], float]:
    path = sweep_dir / "summary.json"
    if not path.is_file():
        return {}, 0.0
    summary = json.loads(path.read_text(encoding="utf-8"))
    if summary.get("search") != config or summary.get("seed") != seed:
        raise SweepError(f"{sweep_dir}: holds another search (its file or --seed differ); resume it with its own "
                         "file and --seed, or choose another --out")
    return {r["key"]: Record(**r) for r in summary["jobs"]}, float(summary.get("wall_seconds", 0.0))


def run_search(path: str | Path, out: str | Path, seed: int = 0, parallel: int = 1,
               env: dict[str, str] | None = None) -> Path:
    """Runs (or resumes) the search file's jobs, `parallel` at a time, each with 1/parallel of the cores; writes the
    summary after every job. Returns the sweep directory."""
    config = load(path)
    program = Path(str(config["program"]))
    if not program.is_file():
        raise SweepError(f"program {program}: not found in {Path.cwd()} (run the search from the repository root)")
    sweep_dir = Path(out)
    sweep_dir.mkdir(parents=True, exist_ok=True)
    records, previous_seconds = recorded(sweep_dir, config, seed)
    atomic_write_text(sweep_dir / "sweep.yaml", Path(path).read_text(encoding="utf-8"))
    configurations = family_configurations(config, seed)
    env, running_info = launcher.trial_environment(env, parallel)
    given = budget(config)
    print(f"{config.get('name', 'search')}: {len(config['families'])} families, {config['configurations']} "
          f"configurations each, rungs {config['rungs']} ({keep_counts(config)} configurations), "
          f"{given['search']:,} updates per family in the search and {given['confirm']:,} in the confirmation; "
          f"{len(records)} jobs recorded in {sweep_dir}", flush=True)

    started = time.perf_counter() - previous_seconds
    lock, stopping, running = threading.Lock(), threading.Event(), {}

    def job_done(job: Job, record: Record) -> None:
        with lock:
            records[job.key] = record
            write_summary(sweep_dir, config, seed, configurations, records, time.perf_counter() - started,
                          running_info)

    with ThreadPoolExecutor(max_workers=parallel) as pool, launcher.interrupted_by_sigterm():
        try:
            while True:
                while len(running) < parallel and (job := next_job(config, records, list(running.values()))):
                    params = configurations[job.family][job.index]
                    running[pool.submit(run_job, config, params, job, sweep_dir, env, stopping)] = job
                if not running:
                    break
                finished, _ = wait(running, return_when=FIRST_COMPLETED)
                for future in finished:
                    job_done(running.pop(future), future.result())
        except BaseException:  # Ctrl-C, SIGTERM or an error: the job threads stop their trainings (last.ckpt kept)
            stopping.set()
            raise
    write_summary(sweep_dir, config, seed, configurations, records, time.perf_counter() - started, running_info)
    return sweep_dir


def recipe_yaml(params: dict[str, Any]) -> str:
    """A configuration as a recipe file (conf/recipe/): dotted keys nested under `# @package _global_`."""
    nested: dict = {}
    for name, value in params.items():
        *parents, leaf = name.split(".")
        node = nested
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = value
    return "# @package _global_\n" + yaml.safe_dump(nested, sort_keys=False)


def write_summary(sweep_dir: Path, config: dict, seed: int, configurations: dict[str, list[dict]],
                  records: dict[str, Record], seconds: float, running: dict) -> None:
    """summary.json (the search, every configuration and job), summary.md (per family: each rung's best, the
    finalists over seeds, the chosen recipe) and recipes/<family>.yaml once a family is chosen."""
    families = {}
    for family in config["families"]:
        state = progress(config, family, records)
        jobs = [asdict(r) for key, r in records.items() if key.startswith(f"{family}/")]
        families[family] = {"configurations": [{"index": i, "params": p} for i, p in enumerate(configurations[family])],
                            "rungs": state["rungs"], "finalists": state["finalists"], "chosen": state["chosen"],
                            "levelling": levelling(config, family, records),
                            "updates_spent": sum(_spent(config, r) for r in records.values()
                                                 if r.key.startswith(f"{family}/")),
                            "jobs": jobs}
        if state["chosen"] is not None:
            params = configurations[family][state["chosen"]["index"]]
            atomic_write_text(sweep_dir / "recipes" / f"{family}.yaml", recipe_yaml(params))
    summary = {"search": config, "seed": seed, "wall_seconds": round(seconds, 1), **running, "budget": budget(config),
               "families": families, "jobs": [asdict(r) for r in records.values()]}
    # the trial list a rerun resumes from: a write cut short (a full disk) must leave the previous one whole
    atomic_write_text(sweep_dir / "summary.json", json.dumps(summary, indent=2) + "\n")
    atomic_write_text(sweep_dir / "summary.md", summary_markdown(summary))


def _spent(config: dict, record: Record) -> int:
    """The updates a job was given: its rung's share (from the previous rung) or a confirmation's full run."""
    family, stage, index, steps, seed = record.key.split("/")
    rungs = config["rungs"]
    steps = int(steps)
    return steps - max([0, *(r for r in rungs if r < steps)]) if stage == "search" else steps


def levelling(config: dict, family: str, records: dict[str, Record]) -> list[dict]:
    """Whether each finished rung of a family's search levelled off (Dodge et al. 2019, by updates): per rung, the
    updates the search had spent when the rung was complete and the expected best validation score of k of the
    rung's configurations (k = 1, a quarter, a half, all; failed jobs score 0), so E[best of n/2] close to
    E[best of n] says more configurations at that rung would have found little more. From the second rung on,
    `rank_correlation`: Spearman's rho between the promoted configurations' scores at the previous rung and at this
    one, how well the cheaper rung ranked what it promoted (among the promoted only: a restricted range)."""
    from scipy.stats import spearmanr

    out, spent, previous = [], 0, {}
    seed = config["constants"]["seed"]
    for rung in progress(config, family, records)["rungs"]:
        if not rung["complete"]:
            break
        keys = {i: Job(family, "search", i, rung["steps"], seed).key for i in rung["configurations"]}
        spent += sum(_spent(config, records[key]) for key in keys.values())
        scores = {i: max(_score(records[key]), 0.0) for i, key in keys.items()}
        n = len(scores)
        ks = sorted({1, max(1, n // 4), max(1, n // 2), n})
        row = {"steps": rung["steps"], "updates_spent": spent, "configurations": n,
               "expected_best": {k: expected_best(list(scores.values()), k)[0] for k in ks},
               "best": max(scores.values())}
        if previous and n >= 3:
            rho = spearmanr([previous[i] for i in scores], list(scores.values())).statistic
            row["rank_correlation"] = None if math.isnan(rho) else float(rho)
        out.append(row)
        previous = scores
    return out


def summary_markdown(summary: dict) -> str:
    config = summary["search"]
    lines = [f"# Search {config.get('name', '')}: successive halving, the same draws for every family", "",
             f"{config['configurations']} configurations per family, rungs {config['rungs']} updates "
             f"({' → '.join(map(str, keep_counts(config)))} configurations), Sobol seed {summary['seed']}; budget per "
             f"family: {summary['budget']['search']:,} updates in the search, {summary['budget']['confirm']:,} in "
             f"the confirmation. Wall time {summary['wall_seconds'] / 60:.1f} min, {summary['parallel']} job(s) at "
             "a time" + (f", {summary['threads_per_trial']} thread(s) each" if summary["threads_per_trial"] else "")
             + ". Validation BLEU (greedy unless the file sets the decoding).", ""]
    for family, state in summary["families"].items():
        lines += [f"## {family}", "", f"Updates spent: {state['updates_spent']:,}.", "",
                  "| rung (updates) | configurations | complete | median val BLEU | best (configuration) | promoted: "
                  "the lowest's score |", "|---|---|---|---|---|---|"]
        lines += _rung_rows(summary, family, state)
        lines += _levelling_table(state.get("levelling", []))
        if state["chosen"]:
            seeds = (config.get("confirm") or {"seeds": [config["constants"]["seed"]]})["seeds"]  # optional
            lines += ["", "| finalist | " + " | ".join(f"seed {s}" for s in seeds)
                      + " | mean ± 95% CI | recipe |", "|---|" + "---|" * (len(seeds) + 2)]
            for index, scores in state["chosen"]["finalists"].items():
                s = spread(scores)
                params = state["configurations"][int(index)]["params"]
                mark = " **chosen**" if int(index) == state["chosen"]["index"] else ""
                lines.append(f"| {index}{mark} | " + " | ".join(f"{v:.2f}" for v in scores)
                             + (f" | {s.mean:.2f} ± {s.ci:.2f} | " if s.ci is not None else f" | {s.mean:.2f} | ")
                             + ", ".join(f"{k}={v}" for k, v in params.items()) + " |")
        lines.append("")
    return "\n".join(lines)


def _rung_rows(summary: dict, family: str, state: dict) -> list[str]:
    """One row per rung: how many of its jobs are in, the median (failed jobs 0) and best score, and how many went on
    (to the next rung, or to the confirmation from the last) with the lowest score among them, so a reader sees
    whether a promotion rested on scores near zero."""
    config, by_key = summary["search"], {r["key"]: Record(**r) for r in summary["jobs"]}
    seed = config["constants"]["seed"]
    rows, rungs = [], state["rungs"]
    for r, rung in enumerate(rungs):
        jobs = {i: by_key[key] for i in rung["configurations"]
                for key in [f"{family}/search/{i}/{rung['steps']}/{seed}"] if key in by_key}
        scores = {i: max(_score(job), 0.0) for i, job in jobs.items()}  # as levelling scores them
        top = min(scores.items(), key=lambda pair: (-pair[1], pair[0])) if scores else None  # the promotion's order
        median = f"{statistics.median(scores.values()):.2f}" if len(scores) == len(rung["configurations"]) else "—"
        went_on = rungs[r + 1]["configurations"] if r + 1 < len(rungs) else state.get("finalists")
        promoted = f"{len(went_on)}: {min(scores[i] for i in went_on):.2f}" if went_on and scores else "—"
        rows.append(f"| {rung['steps']:,} | {len(rung['configurations'])} | {len(jobs)} | {median} | "
                    f"{f'{top[1]:.2f} ({top[0]})' if top else '—'} | {promoted} |")
    return rows


def _levelling_table(rungs: list[dict]) -> list[str]:
    if not rungs:
        return []
    lines = ["", "Did the search level off? Expected best validation BLEU of k of a rung's configurations (Dodge et "
             "al. 2019; failed jobs 0), with the updates spent when the rung was complete:", "",
             "| rung (updates) | updates spent | E[best of k] (k = 1, n/4, n/2, n) | best | rank correlation with the "
             "previous rung (Spearman, promoted only) |", "|---|---|---|---|---|"]
    for rung in rungs:
        cells = ", ".join(f"{k}: {value:.2f}" for k, value in rung["expected_best"].items())
        rho = rung.get("rank_correlation")
        lines.append(f"| {rung['steps']:,} | {rung['updates_spent']:,} | {cells} | {rung['best']:.2f} | "
                     f"{'—' if rho is None else f'{rho:.2f}'} |")
    return lines
