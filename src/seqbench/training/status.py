"""How a run ends when it does not complete: interrupted by a signal, diverged, or failed; and its record.

A cluster scheduler stops a job with SIGTERM (and a user with Ctrl+C, SIGINT). Lightning's own SIGTERM handling
stops at a batch boundary but then exits with status 0, and nothing but Lightning sees the signal outside its
loops. `SignalGuard` is installed for the whole run instead:
- inside a Lightning call (fit, validate, test), a signal sets Lightning's stop flag, which stops at the end of the
  current training batch or between evaluation batches; `seqbench.training.callbacks.ResumeState` then saves
  `last.ckpt` when the stop came during training, so a rerun in the same run directory continues from that batch.
  Under DDP every rank must stop training at the same batch, so the ranks agree at each training batch's end
  (`SharedStop`, one all-reduce of a boolean) and set the flag together. Lightning's own SIGTERM handler is replaced
  while its loops run: it broadcasts from inside the handler, once per signal received, and Ctrl-C in a terminal
  gives a DDP child rank two (its own, forwarded as SIGTERM, and the launcher's), so the ranks' collectives stopped
  pairing and the run hung;
- outside (data preparation, measurements), the run stops at once: everything before is in the run directory;
- either way the run raises `Interrupted`, results.json records `"status": "interrupted"`, and `seqbench train` exits
  with 128 + the signal number (143 for SIGTERM, 130 for SIGINT), never 0. A second Ctrl+C stops without saving.

A DDP rank that ends (killed, out of memory) makes the others' next collective fail with the backend's traceback;
`lost_rank` tells that failure from others by where it was raised, and the run ends with `LostRank`: one line naming
the rank (the launcher knows how the ranks it started ended) and how to resume.

`record_stop` writes the stopped run's results.json (its status, phase, update and the checkpoint to resume from).
"""
from __future__ import annotations

import logging
import signal
import traceback
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from lightning.pytorch import Callback
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


class LostRank(Exception):
    """A DDP rank ended (killed, out of memory, its machine lost) and a collective of this one failed for it: one line
    naming the rank, and how to resume, instead of the collective's traceback."""

    def __init__(self, lost: str, phase: str, resume: str):
        super().__init__(f"{lost} ended during {phase}; this rank stopped too; {resume}")
        self.exit_status = 1


def lost_rank(error: BaseException, trainer) -> str | None:
    """Which DDP rank ended, if `error` was raised inside a collective of a run of several ranks; None otherwise (then
    `error` is not about a lost rank). The launcher (rank 0) knows how each rank it started ended; a rank it started
    knows only that one of the others did."""
    if trainer is None or trainer.world_size < 2 or not _raised_in_collective(error):
        return None
    procs = getattr(trainer.strategy.launcher, "procs", None) or []  # the ranks Lightning's launcher started
    ended = [(rank, proc.poll()) for rank, proc in enumerate(procs, start=1) if proc.poll() is not None]
    if not ended:
        return "another DDP rank (rank 0, the launcher, if it is gone)" if trainer.global_rank else "another DDP rank"
    return ", ".join(f"DDP rank {rank} ({_how(code)})" for rank, code in ended)


def _how(code: int) -> str:
    return f"killed by {signal.Signals(-code).name}" if code < 0 else f"exit status {code}"


def _raised_in_collective(error: BaseException) -> bool:
    """Whether a frame of torch.distributed raised `error` (or what caused it): a failed collective, found from where
    it was raised, since its type (RuntimeError) and text are the backend's."""
    while error is not None:
        frames = traceback.walk_tb(error.__traceback__)
        if any(frame.f_globals.get("__name__", "").startswith("torch.distributed") for frame, _ in frames):
            return True
        error = error.__cause__ or error.__context__
    return False


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
        self._trainer = None  # while a Lightning call runs
        self._looping = False  # while its loops run (SharedStop installs our handlers then), as opposed to its setup
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
            return  # already stopping (the launcher's forward of a Ctrl-C its ranks received too)
        self.received = signum
        if not self._looping:
            raise Interrupted(signum, self.phase)
        if self._trainer.world_size == 1 or not self._trainer.training:
            # no rank to agree with, or evaluation, whose ranks may have unequal numbers of batches (no collective can
            # be taken at each) and meet only at its end, which a rank that stopped never reaches: stop now
            _stop_at_batch_end(self._trainer)

    def share_stop(self, trainer) -> None:
        """At a training batch's end, on every rank at once (DDP gives them as many): stop there if any rank received
        a signal."""
        if self._looping and trainer.world_size > 1:
            if trainer.strategy.reduce_boolean_decision(self.received is not None, all=False):
                _stop_at_batch_end(trainer)

    def loops_started(self, trainer) -> None:
        """Lightning installed its SIGTERM handler before its loops: ours again, for the reason above."""
        signal.signal(signal.SIGTERM, self._handle)
        self._looping = True

    @contextmanager
    def phase_of_run(self, phase: str, trainer=None) -> Iterator[None]:
        """Marks a phase; `trainer` while Lightning runs it (fit, validate, test) and can stop at a batch boundary."""
        from lightning.pytorch.utilities.exceptions import SIGTERMException

        self.phase, self._trainer = phase, trainer
        if trainer is not None and not any(isinstance(c, SharedStop) for c in trainer.callbacks):
            trainer.callbacks.append(SharedStop(self))
        try:
            yield
        except SIGTERMException:  # Lightning's clean stop; it subclasses SystemExit, whose status would be 0
            raise Interrupted(self.received or signal.SIGTERM, phase) from None
        finally:
            self._trainer, self._looping = None, False
        if self.received is not None:  # Lightning finished its loop before it saw the signal
            raise Interrupted(self.received, phase)


def _stop_at_batch_end(trainer) -> None:
    # the flag Lightning's SIGTERM handler sets, and its loops check after each batch (it has no public setter)
    trainer._signal_connector.received_sigterm = True


class SharedStop(Callback):
    """SignalGuard's hooks in Lightning's loops: its handler in place once they start, the ranks' decision to stop
    taken together at every training batch's end."""

    def __init__(self, guard: SignalGuard):
        self.guard = guard

    def on_train_start(self, trainer, pl_module) -> None:
        self.guard.loops_started(trainer)

    def on_validation_start(self, trainer, pl_module) -> None:
        self.guard.loops_started(trainer)

    def on_test_start(self, trainer, pl_module) -> None:
        self.guard.loops_started(trainer)

    def on_train_batch_end(self, trainer, *args) -> None:
        self.guard.share_stop(trainer)


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
