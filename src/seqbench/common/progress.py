"""One way to show progress for every long step outside training (tokenising a corpus, decoding passes, reports).

On a terminal, a rich bar on stderr. Anywhere else (a cluster job's log, nohup, a pipe, CI) plain log lines instead,
with no control characters: one when the step starts, one every PLAIN_INTERVAL_S seconds (done, rate, time left) and
one when it ends; and `stage` says when a step without a count starts and ends. Training has its own
(seqbench.training.progress).
"""
from __future__ import annotations

import logging
import os
import sys
import time
from contextlib import contextmanager
from datetime import timedelta
from typing import Callable, Iterator

PLAIN_INTERVAL_S = 30.0  # a plain line at most this often: a 4.5M-pair corpus says how far it is twice a minute
log = logging.getLogger(__name__)


def enabled() -> bool:
    return sys.stderr.isatty() and not os.environ.get("CI")


@contextmanager
def progress_bar(description: str, total: int | None, unit: str = "") -> Iterator[Callable[[int], None]]:
    """Yields `advance(n)`; shows `description`, the count done of `total`, the rate and the time left."""
    if not enabled():
        with _plain_lines(description, total, unit) as advance:
            yield advance
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    columns = [TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TextColumn(unit),
               TimeRemainingColumn()]
    with Progress(*columns, console=Console(stderr=True), transient=False) as bar:
        task = bar.add_task(description, total=total)
        yield lambda n: bar.advance(task, n)


@contextmanager
def stage(description: str) -> Iterator[None]:
    """`<description> ...` when a step without a count starts, `<description>: done in 0:01:02` when it ends."""
    started = time.monotonic()
    log.info("%s ...", description)
    yield
    log.info("%s: done in %s", description, _clock(time.monotonic() - started))


@contextmanager
def _plain_lines(description: str, total: int | None, unit: str) -> Iterator[Callable[[int], None]]:
    started = last = time.monotonic()
    done = 0
    of_total = f" of {total:,}" if total else ""
    log.info("%s: 0%s %s", description, of_total, unit)

    def advance(n: int) -> None:
        nonlocal done, last
        done += n
        now = time.monotonic()
        if now - last >= PLAIN_INTERVAL_S:
            last = now
            rate = done / max(now - started, 1e-9)
            left = f", left ~{_clock((total - done) / rate)}" if total and rate > 0 else ""
            share = f" ({done / total:.0%})" if total else ""
            log.info("%s: %s%s %s%s, %s %s/s%s", description, f"{done:,}", of_total, unit, share, f"{rate:,.0f}",
                     unit or "items", left)

    yield advance
    seconds = time.monotonic() - started
    log.info("%s: %s %s in %s", description, f"{done:,}", unit, _clock(seconds))


def _clock(seconds: float) -> str:
    return str(timedelta(seconds=round(seconds)))
