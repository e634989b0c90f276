"""Runs a sweep file's trials locally: Optuna proposes, `train.py` runs as a subprocess, the metric goes back.

Each trial is the command `wandb agent` would start, run by seqbench.sweep.launcher (as a successive-halving search's
jobs are) in its run directory <sweep dir>/trials/<n>, inside the sweep directory. While a trial runs, the
validation BLEU points its CSV logger writes are reported to Optuna as intermediate values, so a hyperband pruner can
stop it (SIGTERM, as the agent does). A trial that does not complete is recorded as failed (or diverged) with its
one-line error, and the sweep goes on. With `parallel` N, N trials run at once (Optuna's n_jobs), each with an equal
share of this process's cores (OMP_NUM_THREADS, which `threads: null` follows), and the summary says so. A sweep
directory that already holds trials of the same sweep (same parameters, method and seed) is resumed: its trials are
replayed into the study, each proposal checked against the recorded one, so the sweep goes on with exactly the
proposals an uninterrupted run would have made; raising run_cap (or --count) extends a finished search the same way.
A trial that was still running when the sweep stopped left no record: it runs again with the same proposal in its
own run directory, where train.py resumes it from its last.ckpt.
The trials are replayed from the sweep directory's own records rather than kept in Optuna's RDB storage: those
records are what is committed and reported, so a second copy of the study in SQLite could only disagree with them.
"""
from __future__ import annotations

import csv
import io
import json
import os
import threading
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from seqbench.common.io import atomic_write_text
from seqbench.rundir.reader import Run
from seqbench.sweep import launcher, spec

METRIC = "val/bleu"  # the one metric a local sweep reads back from a trial's run directory


@dataclass
class Trial:
    number: int
    state: str                       # complete | diverged | failed | stopped (early termination)
    params: dict[str, Any]           # the searched parameters only
    metric: float | None             # final val/bleu (complete), last reported one (stopped), None (failed)
    intermediate: list[float] = field(default_factory=list)  # val/bleu at every validation during training
    seconds: float = 0.0
    parameters: int | None = None    # model parameters
    train_tokens_per_s: float | None = None
    steps: int | None = None
    run_dir: str = ""
    command: list[str] = field(default_factory=list)
    error: str | None = None


def default_sweep_dir(config: dict) -> Path:
    root = Path(os.environ.get("SEQBENCH_LOG_DIR", "logs"))
    return root / "sweeps" / config.get("name", "sweep") / datetime.now().strftime("%Y-%m-%d_%H-%M-%S")


def _validation_points(run_dir: Path) -> list[float]:
    """val/bleu of every validation during training so far, in order (the report's reader of csv/metrics.csv)."""
    return [point["bleu"] for point in Run(run_dir, {}).curve()]


def run_trial(trial, config: dict, number: int, sweep_dir: Path, env: dict[str, str], params: dict,
              stopping: threading.Event | None = None) -> Trial:
    """Runs the trial's command with the proposed params, reporting each validation to Optuna, which may stop it
    (early termination); `stopping` set (the sweep was interrupted) stops it unrecorded (launcher.SweepStopped)."""
    searched = {name: params[name] for name in spec.searched(config)}
    run_dir = (sweep_dir / "trials" / f"{number:03d}").resolve()
    run_dir.mkdir(parents=True, exist_ok=True)  # before the command: a ${args_json_file} is written there
    command = spec.command(config, params, run_dir / "args.json")
    print(f"trial {number}: {' '.join(f'{k}={v}' for k, v in searched.items())}", flush=True)
    reported: list[float] = []

    def pruned() -> float | None:  # the validations written since the last poll go to Optuna, which may stop the trial
        stop = False
        for value in _validation_points(run_dir)[len(reported):]:
            reported.append(value)
            trial.report(value, step=len(reported))
            stop = stop or trial.should_prune()
        return reported[-1] if stop else None

    outcome = launcher.launch(f"trial {number}", command, run_dir, sweep_dir, env, stopping, pruned)
    results = outcome.results if outcome.state == "complete" else {}
    return Trial(number=number, state=outcome.state, params=searched, metric=outcome.metric, intermediate=reported,
                 seconds=outcome.seconds, parameters=results.get("parameters"),
                 train_tokens_per_s=results.get("throughput", {}).get("target_tokens_per_s"),
                 steps=results.get("train", {}).get("steps"), run_dir=outcome.run_dir, command=outcome.command,
                 error=outcome.error)


def _target_reached(config: dict, value: float | None) -> bool:
    target = config.get("metric", {}).get("target")
    if target is None or value is None:
        return False
    return value >= target if spec.direction(config) == "maximize" else value <= target


def run_sweep(path: str | Path, count: int | None = None, out: str | Path | None = None, seed: int | None = 0,
              env: dict[str, str] | None = None, parallel: int = 1) -> Path:
    """Runs up to min(count, run_cap, grid size) trials, `parallel` at a time; writes the summary after every trial.
    Returns the sweep dir."""
    from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait

    config, total = _checked_sweep(path, count)
    sweep_dir = Path(out) if out else default_sweep_dir(config)
    sweep_dir.mkdir(parents=True, exist_ok=True)
    previous, previous_seconds = recorded_trials(sweep_dir, config, seed)
    atomic_write_text(sweep_dir / "sweep.yaml", Path(path).read_text(encoding="utf-8"))
    study = _study(config, seed, total)
    env, running = launcher.trial_environment(env, parallel)
    trials, unfinished = _replayed(study, config, previous)
    started = time.perf_counter() - previous_seconds
    if trials or unfinished:
        print(f"resuming: {len(trials)} trials recorded in {sweep_dir}, {len(unfinished)} to finish, "
              f"{max(0, total - len(trials) - len(unfinished))} to run", flush=True)

    def run(trial, params: dict) -> Trial:
        record = run_trial(trial, config, trial.number, sweep_dir, env, params, stopping)
        with lock:
            trials.append(record)
            trials.sort(key=lambda t: t.number)
            write_summary(sweep_dir, config, trials, time.perf_counter() - started, seed, running)
        return record

    def tell(futures) -> bool:
        """Tells the study the finished trials; True when the metric's target was reached."""
        reached = False
        for future in futures:
            trial, record = running_trials.pop(future), future.result()
            _tell(study, trial, record)
            reached |= _target_reached(config, record.metric)
        return reached

    # Optuna's own n_jobs reseeds the sampler for every trial, so a parallel search would propose differently on
    # every run. Here the main thread asks and draws each trial's parameters in trial order (a random search
    # proposes exactly what a sequential or resumed one does) and threads only run and watch the trial processes.
    lock, running_trials, reached, stopping = threading.Lock(), {}, False, threading.Event()
    with ThreadPoolExecutor(max_workers=parallel) as pool, launcher.interrupted_by_sigterm():
        try:
            for index in range(max(len(unfinished), total - len(trials))):
                if len(running_trials) >= parallel:
                    finished, _ = wait(running_trials, return_when=FIRST_COMPLETED)
                    reached = tell(finished) or reached
                if reached:
                    break
                if index < len(unfinished):
                    trial, params = unfinished[index]
                else:
                    trial = study.ask()
                    params = spec.suggest(trial, config)
                running_trials[pool.submit(run, trial, params)] = trial
            reached = tell(wait(running_trials)[0]) or reached
        except BaseException:  # Ctrl-C, SIGTERM or an error: the trial threads stop their trainings before the pool
            stopping.set()     # is left, so no training runs on behind the sweep; the cut trials stay gaps
            raise
    if reached:
        print(f"metric target {config['metric']['target']} reached: sweep finished", flush=True)
    return sweep_dir


def _checked_sweep(path: str | Path, count: int | None) -> tuple[dict, int]:
    """The sweep file, checked before anything runs, and the number of trials to run."""
    config = spec.load(path)
    spec.searched(config)  # every parameter translatable
    if "program" not in config:
        raise spec.SweepError(f"{path}: set program (e.g. train.py): the script every trial runs")
    program = Path(str(config["program"]))
    if not program.is_file():
        raise spec.SweepError(f"program {program}: not found in {Path.cwd()} (run the sweep where `wandb agent` "
                              "would run it: the repository root)")
    metric = config.get("metric", {}).get("name")
    if metric != METRIC:
        raise spec.SweepError(f"metric.name={metric!r}: local sweeps optimise {METRIC} (results.json's valid BLEU, "
                              "with csv/metrics.csv's validations for early termination)")
    limits = [n for n in (count, config.get("run_cap"), spec.grid_size(config)) if n is not None]
    if not limits:
        raise spec.SweepError(f"{path}: set run_cap in the file or pass --count (a {config['method']} search over "
                              "continuous values never ends by itself)")
    return config, min(limits)


def _study(config: dict, seed: int | None, total: int):
    """The Optuna study that proposes the trials (a grid enqueued in order)."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.ERROR)  # the runner prints its own line per trial
    study = optuna.create_study(direction=spec.direction(config), sampler=spec.sampler(config, seed),
                                pruner=spec.pruner(config), study_name=config.get("name"))
    if config["method"] == "grid":
        for point in spec.grid_points(config)[:total]:
            study.enqueue_trial(point)
    return study


def _replayed(study, config: dict, previous: list[Trial]) -> tuple[list[Trial], list]:
    """A resumed sweep: the recorded trials told to the study in order, and the gaps (trials still running when the
    sweep stopped) asked again in order, as (trial, params), so the study proposes what an uninterrupted one would."""
    trials, unfinished = [], []
    by_number = {t.number: t for t in previous}
    for number in range(max(by_number, default=-1) + 1):
        if number in by_number:
            trials.append(replay(study, config, by_number[number]))
        else:
            trial = study.ask()
            unfinished.append((trial, spec.suggest(trial, config)))
    return trials, unfinished


def recorded_trials(sweep_dir: Path, config: dict, seed: int | None) -> tuple[list[Trial], float]:
    """The trials a sweep directory already holds, and the wall seconds they took; nothing for a new directory.
    A directory of another sweep (other parameters, method or seed) is refused in one line."""
    path = sweep_dir / "summary.json"
    if not path.is_file():
        return [], 0.0
    summary = json.loads(path.read_text())
    recorded = summary["sweep"]
    if (recorded.get("parameters"), recorded.get("method"), summary.get("seed")) != \
            (config.get("parameters"), config.get("method"), seed):
        raise spec.SweepError(f"{sweep_dir}: holds another sweep (its parameters, method or seed differ); resume it "
                              "with its own file and --seed, or choose another --out")
    return [Trial(**t) for t in summary["trials"]], float(summary.get("wall_seconds", 0.0))


def replay(study, config: dict, record: Trial) -> Trial:
    """Tells the study a recorded trial, after checking that the sampler proposes its parameters again. Returns the
    record."""
    trial = study.ask()
    params = {name: value for name, value in spec.suggest(trial, config).items() if name in spec.searched(config)}
    if trial.number != record.number or params != record.params:
        raise spec.SweepError(f"trial {record.number}: the sampler now proposes {params}, the sweep directory "
                              f"recorded {record.params} (another Optuna version or an edited summary.json?)")
    for step, value in enumerate(record.intermediate, start=1):
        trial.report(value, step=step)
    _tell(study, trial, record)
    return record


def _tell(study, trial, record: Trial) -> None:
    """Tells the study how a trial ended: its metric when complete, pruned when stopped early, else failed."""
    import optuna

    states = {"complete": optuna.trial.TrialState.COMPLETE, "stopped": optuna.trial.TrialState.PRUNED}
    study.tell(trial, record.metric if record.state == "complete" else None,
               state=states.get(record.state, optuna.trial.TrialState.FAIL))


def _fmt(value) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):  # a learning rate keeps its digits: 3 significant ones below 0.1
        return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.3g}" if 0 < abs(value) < 0.1 else f"{value:.2f}"
    return f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else str(value)


def write_summary(sweep_dir: Path, config: dict, trials: list[Trial], seconds: float, seed: int | None,
                  running: dict | None = None) -> None:
    """summary.json (everything), summary.csv (one row per trial) and summary.md (best first). `running`:
    {"parallel": trials at once, "threads_per_trial": their OMP_NUM_THREADS, None if not set}."""
    metric = config["metric"]["name"]
    names = list(spec.searched(config))
    running = running or {"parallel": 1, "threads_per_trial": None}
    # the trial list a rerun resumes from: a write cut short (a full disk) must leave the previous one whole
    atomic_write_text(sweep_dir / "summary.json", json.dumps({
        "sweep": config, "method": config["method"], "seed": seed, "wall_seconds": round(seconds, 1), **running,
        "metric": metric, "goal": spec.direction(config), "trials": [asdict(t) for t in trials]}, indent=2) + "\n")

    columns = ["trial", "state", *names, metric, "params", "train tok/s", "updates", "seconds", "run_dir", "error"]
    rows = [[t.number, t.state, *(t.params.get(n) for n in names), t.metric, t.parameters, t.train_tokens_per_s,
             t.steps, t.seconds, t.run_dir, t.error] for t in trials]
    table = io.StringIO(newline="")
    writer = csv.writer(table)
    writer.writerow(columns)
    writer.writerows(rows)
    atomic_write_text(sweep_dir / "summary.csv", table.getvalue())

    maximize = spec.direction(config) == "maximize"
    ranked = sorted(rows, key=lambda r: (r[1] != "complete", r[len(names) + 2] is None,
                                         -(r[len(names) + 2] or 0) if maximize else (r[len(names) + 2] or 0)))
    header = columns[:-2]  # the markdown table leaves out the directory and the error text (in CSV/JSON)
    lines = [f"# Sweep {config.get('name', '')}: {len(trials)} trials, {config['method']} search",
             "", f"Wall time {seconds / 60:.1f} min, {running['parallel']} trial(s) at a time"
                 + (f", {running['threads_per_trial']} thread(s) each" if running["threads_per_trial"] else "")
                 + ". Best first; `stopped` = ended early by hyperband "
                 "(its metric is the last validation). Failed trials: see summary.csv.", "",
             "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_fmt(v) for v in row[:-2]) + " |" for row in ranked]
    atomic_write_text(sweep_dir / "summary.md", "\n".join(lines) + "\n")
