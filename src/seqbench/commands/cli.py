"""One way to run a command: `run_command(main, argv)`.

Every command's `main(argv)` runs under it. A mistake in the user's input, wherever it is noticed, becomes one line,
`error: <key or file>: <what is wrong and the fix>`, on stderr and exit status 2: the project's ConfigError and
InputError, Hydra's composition errors and Lightning's misconfigurations alike (seqbench.common.errors.one_line).
Anything else is a bug and keeps its traceback. The project's progress lines (seqbench.common.progress: plain lines
where stderr is not a terminal) go to stderr. Ctrl-C (SIGINT) ends a command with exit status 130 and one line, no
traceback: what it wrote before stays written (a command that can resume says how itself).

Hydra rejects overrides and compositions before the task function runs and prints them its own way (several lines,
exit 1): while Hydra composes, HYDRA_FULL_ERROR=1 is set so that Hydra re-raises them to us instead. The task function
calls `composition_done()` first thing, which gives HYDRA_FULL_ERROR back to the user (so child processes, DDP ranks,
inherit the user's setting, not ours) and catches its own errors with `exit_if_user_error`, since Hydra handles what
escapes it. A user who sets HYDRA_FULL_ERROR=1 gets the full traceback of everything.
"""
from __future__ import annotations

import os
import signal
import sys
from contextlib import nullcontext
from typing import Callable, Sequence

from seqbench.common.errors import one_line
from seqbench.common.logs import command_logging

_FULL_ERROR = "HYDRA_FULL_ERROR"
_composing = False  # True from run_command's start until a Hydra task function calls composition_done()


def composition_done() -> None:
    """Called first thing in a Hydra task function: from here on HYDRA_FULL_ERROR is the user's own again."""
    global _composing
    if _composing:
        os.environ.pop(_FULL_ERROR, None)
        _composing = False


def _report(error: BaseException, before_task: bool = False) -> bool:
    """Prints `error: ...` if `error` is the user's mistake (and the user did not ask for tracebacks)."""
    message = None if os.environ.get(_FULL_ERROR) == "1" else one_line(error, before_task)
    if message is not None:
        print(f"error: {message}", file=sys.stderr)
    return message is not None


def exit_if_user_error(error: BaseException) -> None:
    """Inside a Hydra task function: exit with status 2 after one line if `error` is the user's mistake; return (to
    re-raise) otherwise."""
    if _report(error):
        sys.exit(2)


def run_command(main: Callable[[Sequence[str] | None], int | None], argv: Sequence[str] | None = None,
                hydra: bool = False) -> int:
    """Runs `main(argv)`; returns its exit status (None counts as 0), or 2 after one line for the user's mistake.
    `hydra`: the command composes a Hydra config (train), whose errors before its task function are Hydra's."""
    if os.environ.get(_FULL_ERROR) == "1":  # the user asked for full traces: nothing to intercept
        return int(main(argv) or 0)
    try:
        return _run_reporting(main, argv, hydra)
    except KeyboardInterrupt as stop:  # Ctrl-C, or a SIGTERM that the sweep runner raises as one (with its signum)
        signum = getattr(stop, "signum", signal.SIGINT)
        print(f"error: interrupted by {signal.Signals(signum).name}", file=sys.stderr)
        return 128 + signum


def _run_reporting(main: Callable[[Sequence[str] | None], int | None], argv: Sequence[str] | None,
                   hydra: bool) -> int:
    """run_command's work, whose KeyboardInterrupt run_command catches wherever it is raised: a signal that arrives
    as the command ends (its stdin closed at the same moment) is raised at the next Python call, here or below."""
    global _composing
    _composing = hydra
    if hydra:
        os.environ[_FULL_ERROR] = "1"  # Hydra re-raises composition errors to us instead of printing them
    try:
        with nullcontext() if hydra else command_logging():  # Hydra sets up a run's logging itself
            status = main(argv)
    except Exception as error:  # noqa: BLE001 - only the user's own mistakes become one line; the rest re-raises
        before_task = _composing
        composition_done()
        if _report(error, before_task):
            return 2
        raise
    finally:
        composition_done()
    return int(status or 0)
