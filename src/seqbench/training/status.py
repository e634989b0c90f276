"""How a run ends when it does not complete: interrupted by a signal, diverged, or failed; and its record.

A cluster scheduler stops a job with SIGTERM (and a user with Ctrl+C, SIGINT). Lightning's own SIGTERM handling
stops at a batch boundary but then exits with status 0, and nothing but Lightning sees the signal outside its
loops. `SignalGuard` is installed for the whole run instead:
- inside a Lightning call (fit, validate, test), a signal is handed to Lightning's SIGTERM handling, which stops at
  the end of the current training batch or between evaluation batches; `seqbench.training.callbacks.ResumeState`
  then saves `last.ckpt` when the stop came during training, so a rerun in the same run directory continues from
  that batch;
- outside (data preparation, measurements), the run stops at once: everything before is in the run directory;
- either way the run raises `Interrupted`, results.json records `"status": "interrupted"`, and `seqbench train` exits
  with 128 + the signal number (143 for SIGTERM, 130 for SIGINT), never 0. A second Ctrl+C stops without saving.

`record_stop` writes the stopped run's results.json (its status, phase, update and the checkpoint to resume from).
"""
from __future__ import annotations

import logging
import signal
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from omegaconf import DictConfig

from seqbench.common.errors import DiskFullError, InputError
from seqbench.common.portable import relative
from seqbench.rundir.layout import RunDir
from seqbench.rundir.results import CUT_SHORT_EXIT, SCORED, read_results, write_status
from seqbench.training.resume import recorded_config

SIGNALS = (signal.SIGTERM, signal.SIGINT)
log = logging.getLogger("seqbench.training.run")  # the run's logger: its lines keep the name they always had


class Interrupted(Exception):
    """The run was stopped by a signal; what it had done so far is saved."""

    def __init__(self, signum: int, phase: str):
        self.signum, self.phase = signum, phase
        super().__init__(f"interrupted by {signal.Signals(signum).name} during {phase}")

    @property
    def exit_status(self) -> int:
        return 128 + self.signum  # the shell's convention for a process ended by a signal


class CutShort(Exception):
    """The time guard (trainer.max_time) stopped training before its budget: the run was evaluated and recorded in
    full with status "cut_short", and `seqbench train` exits with CUT_SHORT_EXIT (3), not 0."""

    exit_status = CUT_SHORT_EXIT


class Diverged(Exception):
    """The training loss became NaN or infinite (seqbench.training.callbacks.StopOnNonFiniteLoss)."""


class SignalGuard:
    """SIGTERM/SIGINT handlers for the duration of a run (see the module docstring). `phase` names what the run is
    doing, for the record and the message."""

    def __init__(self):
        self.received: int | None = None
        self.phase = "setup"
        self._in_lightning = False
        self._previous: dict[int, object] = {}

    def install(self) -> None:
        for signum in SIGNALS:
            self._previous[signum] = signal.signal(signum, self._handle)

    def uninstall(self) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        self._previous = {}

    def _handle(self, signum: int, frame) -> None:
        if self.received is not None:
            if signum == signal.SIGINT and self.received == signal.SIGINT:
                raise KeyboardInterrupt  # Ctrl+C twice: the user does not want to wait for a clean stop
            return  # already stopping (or our own SIGTERM below, forwarded to Lightning)
        self.received = signum
        # Lightning's handler is in place only while its loops run (not during its setup, restore or teardown)
        if not self._in_lightning or signal.getsignal(signal.SIGTERM) == self._handle:
            raise Interrupted(signum, self.phase)
        if signum == signal.SIGINT:
            # Lightning stops cleanly on SIGTERM only (SIGINT would raise KeyboardInterrupt mid-step): forward it.
            signal.raise_signal(signal.SIGTERM)

    @contextmanager
    def phase_of_run(self, phase: str, lightning: bool = False) -> Iterator[None]:
        """Marks a phase; `lightning=True` while Lightning's loops run and can stop at a batch boundary."""
        from lightning.pytorch.utilities.exceptions import SIGTERMException

        self.phase, self._in_lightning = phase, lightning
        try:
            yield
        except SIGTERMException:  # Lightning's clean stop; it subclasses SystemExit, whose status would be 0
            raise Interrupted(self.received or signal.SIGTERM, phase) from None
        finally:
            self._in_lightning = False
        if self.received is not None:  # Lightning finished its loop before it saw the signal
            raise Interrupted(self.received, phase)


@contextmanager
def guarded() -> Iterator[SignalGuard]:
    guard = SignalGuard()
    guard.install()
    try:
        yield guard
    finally:
        guard.uninstall()


def record_stop(cfg: DictConfig, run_dir: Path, status: str, error: BaseException, trainer, phase: str) -> None:
    """The stopped run's record (`trainer`: None before there is one), unless the directory holds a completed one (a
    later attempt's failure never overwrites a finished result; its error line is on stderr) or the disk is too full
    to write it."""
    if trainer is not None and not trainer.is_global_zero:
        return
    try:
        if read_results(run_dir).get("status") in SCORED:
            log.warning("%s keeps its scored results.json; this attempt ended %s: %s", run_dir, status, error)
            return
    except InputError:
        pass  # no record, or an unreadable one: this one replaces it
    last = RunDir(run_dir).last_checkpoint
    try:
        write_status(run_dir, status, error, phase=phase, step=trainer.global_step if trainer is not None else None,
                     resume_checkpoint=relative(last, run_dir) if last.is_file() else None, label=cfg.compare.label,
                     seed=cfg.seed, run_dir=".", config=recorded_config(cfg))
    except DiskFullError:
        pass  # the run's own error line names the full disk
