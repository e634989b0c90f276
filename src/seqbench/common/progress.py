"""One progress bar for every long step outside training (tokenising a corpus, decoding passes, reports).

Drawn by rich on stderr, and only when stderr is a terminal: logs, pipes, tests and CI get no bar and no control
characters. Training keeps Lightning's own bar.
"""
from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from typing import Callable, Iterator


def enabled() -> bool:
    return sys.stderr.isatty() and not os.environ.get("CI")


@contextmanager
def progress_bar(description: str, total: int | None, unit: str = "") -> Iterator[Callable[[int], None]]:
    """Yields `advance(n)`; the bar shows `description`, the count done of `total`, the rate and the time left."""
    if not enabled():
        yield lambda n: None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    columns = [TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TextColumn(unit),
               TimeRemainingColumn()]
    with Progress(*columns, console=Console(stderr=True), transient=False) as bar:
        task = bar.add_task(description, total=total)
        yield lambda n: bar.advance(task, n)
