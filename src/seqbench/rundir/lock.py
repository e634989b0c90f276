"""One run at a time in a run directory: a second run started in a directory in use refuses in one line, naming the
process that holds it, instead of mixing its logs and checkpoints into the first run's and overwriting its record.

The lock is an advisory `flock` on <run>/.lock, released by the kernel when the process ends however it ends (a
crash or SIGKILL leaves no stale lock). In a multi-process run (DDP) the launching process (rank 0 of node 0) holds it
for all its ranks. On systems without flock (Windows) runs are not locked.

fcntl directly rather than the filelock package (whose Unix lock is the same flock): the lock file also carries the
holder's pid and host, which the refusal names.
"""
from __future__ import annotations

import os
import socket
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from seqbench.common.errors import InputError
from seqbench.rundir.layout import RunDir


def _holds_for_its_ranks() -> bool:
    return os.environ.get("LOCAL_RANK", "0") == "0" and os.environ.get("NODE_RANK", "0") == "0"


@contextmanager
def run_directory_lock(run_dir: str | Path) -> Iterator[None]:
    """Holds the run directory's lock for the block; InputError (one line) when another process holds it."""
    try:
        import fcntl
    except ImportError:  # Windows
        yield
        return
    if not _holds_for_its_ranks():
        yield
        return
    path = RunDir(run_dir).lock
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+", encoding="utf-8") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "another process"
            raise InputError(f"{run_dir}: in use by {holder}; wait for that run to end, or choose another "
                             "hydra.run.dir") from None
        handle.seek(0)
        handle.truncate()
        handle.write(f"process {os.getpid()} on {socket.gethostname()}, since "
                     f"{time.strftime('%Y-%m-%d %H:%M:%S')}\n")
        handle.flush()
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
