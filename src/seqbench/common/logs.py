"""What a run shows and where: one logging setup for the console and the run's log.

Hydra configures the logging of `seqbench train` (conf/hydra/job_logging/seqbench.yaml): every record goes once to the
console (stdout) and once to the run's log (train.log), through the filters here. Tables (the model summary, the
final summary) are printed on stdout by rich and written to the log as plain text (`show`); `quiet=true` leaves only
the one-line JSON summary on stdout and warnings on stderr (`run_console`). Commands without Hydra log their progress
lines to stderr while they run (`command_logging`).
"""
from __future__ import annotations

import io
import logging
import sys
from contextlib import contextmanager
from typing import Iterator

# Lightning's INFO notices that say nothing about this run (an advert, the callbacks it did not add, settings that
# are its defaults); matched by their start, as Lightning 2.6 words them.
LIGHTNING_NOTICES = (
    "💡 Tip:",                                           # litlogger / litmodels adverts
    "Trainer already configured with model summary callbacks",  # our ModelSummary replaces its default
    "TPU available:", "HPU available:",                # accelerators this project never uses
)
_DEFAULTS_NOTICE = "=1.0)` was configured so"  # `Trainer(limit_val_batches=1.0)` ...: the defaults, the whole set
_quiet = False


class LightningNotices(logging.Filter):
    """Drops LIGHTNING_NOTICES, and Lightning's `Trainer(<limit or interval>=1.0) was configured so ...` lines (its
    defaults: the whole split, once per epoch; a limit of 1 batch is still said)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not record.name.startswith("lightning."):
            return True
        message = record.getMessage()
        return not (message.startswith(LIGHTNING_NOTICES) or _DEFAULTS_NOTICE in message)


class ConsoleRecords(logging.Filter):
    """On the console handler: drops records logged with `extra={"console": False}`: the plain progress lines while a
    progress bar is drawn there, and tables that rich has printed already (see `show`)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return getattr(record, "console", True)


def run_console(quiet: bool) -> None:
    """At a run's start, once Hydra has set up the logging: Lightning's own console handler (which `import lightning`
    adds whatever is configured) goes, so its lines print once, through Hydra's handlers; quiet=true: the console
    shows warnings and errors only, and stdout only the JSON summary line."""
    global _quiet
    _quiet = quiet
    if logging.getLogger().handlers:  # Hydra's: without them (a bare script) Lightning's handler is the only one
        for name in ("lightning", "lightning.pytorch", "lightning.fabric"):
            logging.getLogger(name).handlers.clear()
            logging.getLogger(name).propagate = True
    for handler in logging.getLogger().handlers:
        if type(handler) is logging.StreamHandler and quiet:  # the console, not the log file (a FileHandler)
            handler.setStream(sys.stderr)  # stdout is the JSON line's alone
            handler.setLevel(logging.WARNING)


def quiet() -> bool:
    return _quiet


def show(log: logging.Logger, *renderables, width: int = 100) -> None:
    """Prints rich `renderables` on stdout (unless quiet) and writes the same text to the run's log, once each."""
    from rich.console import Console

    text = io.StringIO()
    Console(file=text, width=width, color_system=None).print(*renderables, soft_wrap=False)
    log.info("\n%s", text.getvalue().rstrip("\n"), extra={"console": False})
    if not _quiet:
        Console(width=width).print(*renderables)


@contextmanager
def command_logging(name: str = "seqbench") -> Iterator[None]:
    """For a command that Hydra does not configure: the project's INFO lines (progress without a terminal) on
    stderr while it runs, nothing else's."""
    logger = logging.getLogger(name)
    if logging.getLogger().handlers or logger.handlers:  # already configured (a run, a test's caplog): keep it
        yield
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("[%(asctime)s] %(message)s", "%H:%M:%S"))
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
