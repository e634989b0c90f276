"""Runs a sweep file's trials locally: Optuna proposes, `train.py` runs as a subprocess, the metric goes back.

Each trial is the command `wandb agent` would start, plus `hydra.run.dir=<sweep dir>/trials/<n>` so that the trial's
run directory (results.json, csv/metrics.csv, checkpoints, stdout.log/stderr.log) lands inside the sweep directory.
While a trial runs, the validation BLEU points its CSV logger writes are reported to Optuna as intermediate values,
so a hyperband pruner can stop it (SIGTERM, as the agent does). A trial that exits non-zero is recorded as failed
with the last line of its stderr (train.py's one-line `error: ...`), and the sweep goes on. With `parallel` N, N
trials run at once (Optuna's n_jobs), each with an equal share of this process's cores (OMP_NUM_THREADS, which
`threads: null` follows), and the summary says so. A sweep directory that already holds trials of the same sweep
(same parameters, method and seed) is resumed: its trials are replayed into the study, each proposal checked against
the recorded one, so the sweep goes on with exactly the proposals an uninterrupted run would have made; raising
run_cap (or --count) extends a finished search the same way. A trial that was still running when the sweep stopped
left no record: it runs again with the same proposal in its own run directory, where train.py resumes it from its
last.ckpt.
"""
from __future__ import annotations

import contextlib
import csv
import json
import os
import signal
import subprocess
import threading
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from seqbench.common.portable import recorded_command, relative
from seqbench.rundir.layout import RunDir
from seqbench.rundir.reader import Run
from seqbench.rundir.results import read_results
from seqbench.sweep import spec

POLL_SECONDS = 2.0   # how often a running trial's metrics.csv is read for intermediate validation BLEU
KILL_DELAY = 30.0    # seconds between SIGTERM and SIGKILL when a trial is stopped early (the agent's KILL_DELAY)
METRIC = "val/bleu"  # the one metric a local sweep reads back from a trial's run directory


@dataclass
class Trial:
    number: int
    state: str                       # complete | failed | stopped (early termination)
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


def _stop(proc: subprocess.Popen) -> None:
    """SIGTERM to the trial's process group, SIGKILL after KILL_DELAY, as `wandb agent` stops a run."""
    for sig, wait in ((signal.SIGTERM, KILL_DELAY), (signal.SIGKILL, None)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def last_line(path: Path) -> str | None:
    lines = [line.strip() for line in path.read_text(errors="replace").splitlines() if line.strip()]
    return lines[-1][:500] if lines else None


class SweepStopped(Exception):
    """The sweep was interrupted while this trial ran: its training was stopped and it is left unrecorded."""


def run_process(args: list[str], run_dir: Path, env: dict[str, str], stopping: threading.Event | None = None,
                should_stop=None, name: str = "trial") -> int | None:
    """Runs one training command with its output appended to run_dir/stdout.log and stderr.log (a resumed job adds to
    them). Every POLL_SECONDS: when `stopping` is set (the sweep was interrupted), the training is stopped (SIGTERM:
    train.py saves last.ckpt) and SweepStopped raised; when `should_stop()` says so, it is stopped and None returned.
    Otherwise returns its exit status."""
    with open(run_dir / "stdout.log", "ab") as out, open(run_dir / "stderr.log", "ab") as err:
        proc = subprocess.Popen(args, stdout=out, stderr=err, env=env, start_new_session=True)
        try:
            while proc.poll() is None:
                time.sleep(POLL_SECONDS)
                if stopping is not None and stopping.is_set():
                    _stop(proc)
                    raise SweepStopped(name)
                if should_stop is not None and should_stop():
                    _stop(proc)
                    return None
        except BaseException:  # an error here: never leave a training running behind
            if proc.poll() is None:
                _stop(proc)
            raise
    return proc.returncode


def run_trial(trial, config: dict, number: int, sweep_dir: Path, env: dict[str, str], params: dict,
              stopping: threading.Event | None = None) -> Trial:
    """Starts the trial's command with the proposed params, reports each validation to Optuna while it runs, stops
    it when the pruner says, or when `stopping` is set (the sweep was interrupted: SweepStopped, no record)."""
    searched = {name: params[name] for name in spec.searched(config)}
    run_dir = (sweep_dir / "trials" / f"{number:03d}").resolve()
    run_dir.mkdir(parents=True, exist_ok=True)
    args = spec.command(config, params, run_dir / "args.json") + [f"hydra.run.dir={run_dir}"]
    shown = recorded_command(args, sweep_dir)  # records name no folder of this machine (seqbench.common.portable)
    (run_dir / "command.txt").write_text(" ".join(shown) + "\n", encoding="utf-8")
    print(f"trial {number}: {' '.join(f'{k}={v}' for k, v in searched.items())}", flush=True)

    started = time.perf_counter()
    reported: list[float] = []

    def pruned() -> bool:  # the validations written since the last poll go to Optuna, which may stop the trial
        stop = False
        for value in _validation_points(run_dir)[len(reported):]:
            reported.append(value)
            trial.report(value, step=len(reported))
            stop = stop or trial.should_prune()
        return stop

    returncode = run_process(args, run_dir, env, stopping, pruned, f"trial {number}")
    stopped = returncode is None
    record = Trial(number=number, state="complete", params=searched, metric=None, intermediate=reported,
                   seconds=round(time.perf_counter() - started, 1), run_dir=relative(run_dir, sweep_dir),
                   command=shown)
    results_path = RunDir(run_dir).results
    if stopped:
        record.state, record.metric = "stopped", reported[-1]
    elif returncode != 0 or not results_path.is_file():
        record.state = "failed"
        record.error = last_line(run_dir / "stderr.log") or f"exit status {returncode}"
    else:
        results = read_results(results_path)
        record.metric = results["valid"]["bleu"]
        record.parameters = results.get("parameters")
        record.train_tokens_per_s = results.get("throughput", {}).get("target_tokens_per_s")
        record.steps = results.get("train", {}).get("steps")
    print(f"trial {number}: {record.state}, {config['metric']['name']}="
          f"{'—' if record.metric is None else f'{record.metric:.2f}'} ({record.seconds:.0f} s)"
          + (f": {record.error}" if record.error else ""), flush=True)
    return record


def _target_reached(config: dict, value: float | None) -> bool:
    target = config.get("metric", {}).get("target")
    if target is None or value is None:
        return False
    return value >= target if spec.direction(config) == "maximize" else value <= target


def usable_cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def run_sweep(path: str | Path, count: int | None = None, out: str | Path | None = None, seed: int | None = 0,
              env: dict[str, str] | None = None, parallel: int = 1) -> Path:
    """Runs up to min(count, run_cap, grid size) trials, `parallel` at a time; writes the summary after every trial.
    Returns the sweep dir."""
    from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait

    import optuna

    config, total = _checked_sweep(path, count)
    sweep_dir = Path(out) if out else default_sweep_dir(config)
    sweep_dir.mkdir(parents=True, exist_ok=True)
    previous, previous_seconds = recorded_trials(sweep_dir, config, seed)
    (sweep_dir / "sweep.yaml").write_text(Path(path).read_text(encoding="utf-8"), encoding="utf-8")
    study = _study(config, seed, total)
    env, running = _trial_environment(env, parallel)
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
            state = {"complete": optuna.trial.TrialState.COMPLETE, "stopped": optuna.trial.TrialState.PRUNED,
                     "failed": optuna.trial.TrialState.FAIL}[record.state]
            study.tell(trial, record.metric if record.state == "complete" else None, state=state)
            reached |= _target_reached(config, record.metric)
        return reached

    # Optuna's own n_jobs reseeds the sampler for every trial, so a parallel search would propose differently on
    # every run. Here the main thread asks and draws each trial's parameters in trial order (a random search
    # proposes exactly what a sequential or resumed one does) and threads only run and watch the trial processes.
    lock, running_trials, reached, stopping = threading.Lock(), {}, False, threading.Event()
    with ThreadPoolExecutor(max_workers=parallel) as pool, interrupted_by_sigterm():
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


def _trial_environment(env: dict[str, str] | None, parallel: int) -> tuple[dict[str, str], dict]:
    """The trials' environment (each trial's share of the cores when several run) and how they run, for the summary."""
    env = dict(os.environ if env is None else env)
    if parallel > 1:
        env["OMP_NUM_THREADS"] = str(max(1, usable_cores() // parallel))  # `threads: null` follows it
    return env, {"parallel": parallel,
                 "threads_per_trial": int(env["OMP_NUM_THREADS"]) if "OMP_NUM_THREADS" in env else None}


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


@contextlib.contextmanager
def interrupted_by_sigterm():
    """SIGTERM (a scheduler's or `kill`'s stop) raises KeyboardInterrupt in the main thread, as Ctrl-C does, so the
    sweep stops its trials instead of dying with them still running."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum, frame):
        error = KeyboardInterrupt(f"signal {signum}")
        error.signum = signum
        raise error

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


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
    import optuna

    trial = study.ask()
    params = {name: value for name, value in spec.suggest(trial, config).items() if name in spec.searched(config)}
    if trial.number != record.number or params != record.params:
        raise spec.SweepError(f"trial {record.number}: the sampler now proposes {params}, the sweep directory "
                              f"recorded {record.params} (another Optuna version or an edited summary.json?)")
    for step, value in enumerate(record.intermediate, start=1):
        trial.report(value, step=step)
    state = {"complete": optuna.trial.TrialState.COMPLETE, "stopped": optuna.trial.TrialState.PRUNED,
             "failed": optuna.trial.TrialState.FAIL}[record.state]
    study.tell(trial, record.metric if record.state == "complete" else None, state=state)
    return record


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
    (sweep_dir / "summary.json").write_text(json.dumps({
        "sweep": config, "method": config["method"], "seed": seed, "wall_seconds": round(seconds, 1), **running,
        "metric": metric, "goal": spec.direction(config), "trials": [asdict(t) for t in trials]}, indent=2) + "\n")

    columns = ["trial", "state", *names, metric, "params", "train tok/s", "updates", "seconds", "run_dir", "error"]
    rows = [[t.number, t.state, *(t.params.get(n) for n in names), t.metric, t.parameters, t.train_tokens_per_s,
             t.steps, t.seconds, t.run_dir, t.error] for t in trials]
    with open(sweep_dir / "summary.csv", "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(columns)
        writer.writerows(rows)

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
    (sweep_dir / "summary.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
