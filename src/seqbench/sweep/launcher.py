"""One training trial of a search, the same for both engines: a W&B sweep file's trials (seqbench.sweep.runner) and a
successive-halving search's jobs (seqbench.sweep.halving).

A trial is its engine's training command with `hydra.run.dir=<its run directory>`, run as a subprocess in its own
process group with its output appended to stdout.log and stderr.log there (a resumed trial adds to them); its
command.txt records the command without this machine's folders (seqbench.common.portable). Its engine stops it early
through `should_stop` (a pruner) or, when the search is interrupted, through `stopping`; either way the training gets
SIGTERM (train.py saves last.ckpt) and SIGKILL after KILL_DELAY, as `wandb agent` stops a run. When it ends, its
results.json says how, and one line says so on stdout. A trial stopped by its machine rather than by its
configuration (a full disk) is not a result: it stops the search unrecorded (MachineFailure), so the same command
retries it, from its last.ckpt, once the cause is fixed.
"""
from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from seqbench.common.errors import DiskFullError, InputError
from seqbench.common.io import atomic_write_text
from seqbench.common.portable import recorded_command, relative
from seqbench.rundir.layout import RunDir
from seqbench.rundir.results import CUT_SHORT_EXIT, SCORED, read_results

POLL_SECONDS = 2.0  # how often a running trial is watched (its engine's should_stop, an interrupted search)
KILL_DELAY = 30.0   # seconds between SIGTERM and SIGKILL when a trial is stopped (the agent's KILL_DELAY)


class SweepStopped(Exception):
    """The search was interrupted while this trial ran: its training was stopped and it is left unrecorded."""


class MachineFailure(InputError):
    """A trial failed because of its machine, not its configuration: recording it as failed would score its
    configuration 0 in the search for good. The search stops instead (one error line) and leaves it unrecorded."""


@dataclass
class Outcome:
    """How a trial ended, for its engine's record."""
    state: str                # complete | diverged | failed | stopped (by its engine's should_stop)
    metric: float | None      # valid BLEU (complete), the score it was stopped at (stopped), None otherwise
    results: dict[str, Any]   # its results.json; {} when it wrote none or was stopped
    seconds: float
    run_dir: str              # relative to the sweep directory
    command: list[str]        # as command.txt records it
    error: str | None = None


def usable_cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def trial_environment(env: dict[str, str] | None, parallel: int) -> tuple[dict[str, str], dict]:
    """The trials' environment (each trial's share of the cores when several run at once) and how they run, for the
    summary: {"parallel": trials at once, "threads_per_trial": their OMP_NUM_THREADS, None if not set}."""
    env = dict(os.environ if env is None else env)
    if parallel > 1:
        env["OMP_NUM_THREADS"] = str(max(1, usable_cores() // parallel))  # `threads: null` follows it
    return env, {"parallel": parallel,
                 "threads_per_trial": int(env["OMP_NUM_THREADS"]) if "OMP_NUM_THREADS" in env else None}


def launch(name: str, command: list[str], run_dir: Path, sweep_dir: Path, env: dict[str, str],
           stopping: threading.Event | None = None, should_stop: Callable[[], float | None] | None = None,
           updates: int | None = None) -> Outcome:
    """Runs one trial to its end and prints its line. `should_stop()`, asked every POLL_SECONDS, returns the score
    to stop the trial at (None: it goes on); `stopping` set stops it and raises SweepStopped; `updates`: a completed
    trial that stopped short of this many updates failed (a rung is a count of updates)."""
    run_dir.mkdir(parents=True, exist_ok=True)
    args = [*command, f"hydra.run.dir={run_dir}"]
    shown = recorded_command(args, sweep_dir)
    atomic_write_text(run_dir / "command.txt", " ".join(shown) + "\n")
    started = time.perf_counter()
    with open(run_dir / "stdout.log", "ab") as out, open(run_dir / "stderr.log", "ab") as err:
        proc = subprocess.Popen(args, stdout=out, stderr=err, env=env, start_new_session=True)
        stopped_at = _watch(proc, stopping, should_stop, name)
    seconds = round(time.perf_counter() - started, 1)
    if stopped_at is not None:
        state, metric, results, error = "stopped", stopped_at, {}, None
    else:
        state, metric, results, error = _ended(proc.returncode, run_dir, updates)
        if state == "failed" and (error or "").startswith(f"{DiskFullError.__name__}: "):
            raise MachineFailure(f"{name}: {error.split(': ', 1)[1]}. The search stopped without recording this "
                                 "trial: the same command resumes it (the trial from its last.ckpt)")
    outcome = Outcome(state, metric, results, seconds, relative(run_dir, sweep_dir), shown, error)
    print(f"{name}: {outcome.state}, val/bleu={'—' if outcome.metric is None else f'{outcome.metric:.2f}'} "
          f"({outcome.seconds:.0f} s)" + (f": {outcome.error}" if outcome.error else ""), flush=True)
    return outcome


def _watch(proc: subprocess.Popen, stopping: threading.Event | None,
           should_stop: Callable[[], float | None] | None, name: str) -> float | None:
    """Waits for the trial's process; returns the score should_stop stopped it at, None when it ended by itself."""
    try:
        while proc.poll() is None:
            time.sleep(POLL_SECONDS)
            if stopping is not None and stopping.is_set():
                _stop(proc)
                raise SweepStopped(name)
            stopped_at = should_stop() if should_stop is not None else None
            if stopped_at is not None:
                _stop(proc)
                return stopped_at
    except BaseException:  # an error here: never leave a training running behind
        if proc.poll() is None:
            _stop(proc)
        raise
    return None


def _ended(returncode: int, run_dir: Path, updates: int | None) -> tuple[str, float | None, dict, str | None]:
    """State, metric, results.json and error of a trial that ended by itself: complete when it exited 0 with a
    completed record (a record without a status is an older completed one) or 3 with a cut_short one that still
    trained its rung's updates, else diverged or failed with the first of
    its record's error, its last line on stderr and its exit status."""
    results = read_results(run_dir) if RunDir(run_dir).results.is_file() else {}
    cut_short = results.get("status") == "cut_short" and returncode == CUT_SHORT_EXIT  # its steps fall short below
    if (returncode == 0 or cut_short) and results and results.get("status", "completed") in SCORED:
        if updates is not None and results["train"]["steps"] < updates:
            train = results["train"]
            return "failed", None, results, (f"stopped at {train['steps']} of {updates} updates (by "
                                             f"{train.get('stopped_by')}): raise trainer.max_epochs or "
                                             "trainer.max_time")
        return "complete", results["valid"]["bleu"], results, None
    error = results.get("error") or _last_line(run_dir / "stderr.log") or f"exit status {returncode}"
    return "diverged" if results.get("status") == "diverged" else "failed", None, results, error


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


def _last_line(path: Path) -> str | None:
    lines = [line.strip() for line in path.read_text(errors="replace").splitlines() if line.strip()]
    return lines[-1][:500] if lines else None


@contextlib.contextmanager
def interrupted_by_sigterm():
    """SIGTERM (a scheduler's or `kill`'s stop) raises KeyboardInterrupt in the main thread, as Ctrl-C does, so the
    search stops its trials instead of dying with them still running."""
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
