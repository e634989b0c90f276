"""Cache entries (prepared datasets, tokenizers, the Bible database) that are checked before they are read.

Every entry is written atomically (a temporary sibling, then a rename) and then sealed with the SHA-256 of each of
its files (`<entry>.sha256.json` beside it). Before reading, `cached` checks the seal: an entry that is half
written (killed between rename and seal, or by an older version that wrote no seal and cannot be read), truncated
or altered is logged, deleted and rebuilt, never read. Entries from before seals existed are read once, and sealed
if they read without error. A reader may check more than the seal can (a store's file sizes against its counts):
what it finds `Damaged` is rebuilt too, sealed or not, since a seal only says the files are as they were sealed.

Processes that share a cache (the jobs of a parallel multirun) take turns on an entry: `cached` holds an advisory
lock on `<entry>.lock` while it checks, builds, seals and reads it, so a missing entry is built once and no process
replaces a folder that another is reading (a folder's atomic write deletes the old one before its rename). Reading
a sealed entry writes nothing: where the lock cannot be created (a read-only, shared cache), a lock file that is
there is held shared, and none is held where there is none, since nobody can be writing there.
The lock is fcntl's flock directly: a read-only cache needs a shared lock on a lock file opened read-only (or none),
which filelock's FileLock does not take; its ReadWriteLock, in the 4.x releases installed here, could replace this
once the project requires them (filelock comes only through other packages today).
"""
from __future__ import annotations

import errno
import hashlib
import json
import logging
import shutil
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator, TypeVar

from seqbench.common.errors import CACHE_PLACES, out_of_room
from seqbench.common.io import atomic_write_text, cannot_write

log = logging.getLogger(__name__)
T = TypeVar("T")


class Damaged(Exception):
    """Raised by an entry's reader: the entry fails a check of its structure, so it is rebuilt, not read."""


def _seal_path(entry: Path) -> Path:
    return entry.with_name(entry.name + ".sha256.json")


def _digests(entry: Path) -> dict[str, str]:
    files = [entry] if entry.is_file() else sorted(p for p in entry.rglob("*") if p.is_file())
    digests = {}
    for path in files:
        sha = hashlib.sha256()
        with path.open("rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                sha.update(chunk)
        digests[path.relative_to(entry).as_posix() if path != entry else "."] = sha.hexdigest()
    return digests


def seal(entry: Path) -> None:
    """Record the checksums of a complete entry (file or folder)."""
    atomic_write_text(_seal_path(entry), json.dumps(_digests(entry), indent=1, sort_keys=True) + "\n")


def problem(entry: Path) -> str | None:
    """Why `entry` must not be read ("missing", "not sealed", or what differs from its seal); None if intact."""
    if not entry.exists():
        return "missing"
    seal_path = _seal_path(entry)
    if not seal_path.is_file():
        return "not sealed"
    try:
        expected = json.loads(seal_path.read_text())
    except (OSError, ValueError):
        return "its seal is unreadable"
    found = _digests(entry)
    for name in sorted(set(expected) | set(found)):
        if expected.get(name) != found.get(name):
            what = "missing" if name not in found else "unexpected" if name not in expected else "changed"
            return f"{'it' if name == '.' else name} is {what} (checksum)"
    return None


def remove(entry: Path) -> None:
    if entry.is_dir():
        shutil.rmtree(entry)
    elif entry.exists():
        entry.unlink()
    _seal_path(entry).unlink(missing_ok=True)


@contextmanager
def entry_lock(entry: Path) -> Iterator[None]:
    """Waits for, then holds, the entry's lock (flock on `<entry>.lock`, released by the kernel however the process
    ends): exclusive, or shared where the lock file cannot be written. No lock on systems without flock (Windows)."""
    try:
        import fcntl
    except ImportError:
        yield
        return
    handle = _lock_file(entry)
    if handle is None:
        yield
        return
    with handle:
        fcntl.flock(handle, fcntl.LOCK_EX if handle.writable() else fcntl.LOCK_SH)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _lock_file(entry: Path):
    """`<entry>.lock` opened to append (created if missing); opened to read where its folder cannot be written; None
    where it cannot be written and is not there."""
    lock = entry.with_name(entry.name + ".lock")
    try:
        entry.parent.mkdir(parents=True, exist_ok=True)
        return open(lock, "a")
    except OSError as error:
        if error.errno not in (errno.EROFS, errno.EACCES, errno.EPERM):
            raise
    try:
        return open(lock)
    except FileNotFoundError:
        return None


def seal_digest(entry: Path) -> str | None:
    """What identifies the entry's content without reading it: the digest of its seal (which holds every file's
    checksum), or None while it has none. The seal is not checked against the files here (`problem` does that)."""
    try:
        return hashlib.sha256(_seal_path(entry).read_bytes()).hexdigest()
    except OSError:
        return None


def intact(entry: Path, read: Callable[[], T]) -> T | None:
    """`read()` the entry if it is there and intact, None otherwise (never builds): while holding its lock."""
    with entry_lock(entry):
        if problem(entry) is not None:
            return None
        try:
            return read()
        except Damaged:
            return None  # for `cached` to rebuild


def cached(entry: Path, read: Callable[[], T], build: Callable[[], None], what: str) -> T:
    """`read()` the cache entry if it is intact; otherwise delete it, `build()` it (which writes `entry`), seal it
    and read it; all of it while holding the entry's lock."""
    with entry_lock(entry):
        return _checked(entry, read, build, what)


def _checked(entry: Path, read: Callable[[], T], build: Callable[[], None], what: str) -> T:
    reason = problem(entry)
    if reason in (None, "not sealed"):  # not sealed: written before seals, or killed between its rename and its seal
        try:
            value = read()
        except Damaged as error:
            reason = f"damaged ({error})"
        except Exception as error:  # noqa: BLE001 - any failure to read an unsealed entry means rebuild
            if reason is None:
                raise
            reason = f"unreadable ({type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''})"
        else:
            if reason is not None:
                seal(entry)
            return value
    if reason != "missing":
        log.warning("cached %s at %s is incomplete or corrupted: %s; rebuilding it", what, entry, reason)
        remove(entry)
    _build(entry, build)
    return read()


def _build(entry: Path, build: Callable[[], None]) -> None:
    """`build()` and seal the entry; no room for it is one line naming the entry and the cache's settings (the
    failing write may be a library's, naming no file, and the run's folder is not where the cache is)."""
    try:
        build()
        seal(entry)
    except Exception as error:
        cause = out_of_room(error)
        if cause is None:
            raise
        raise cannot_write(entry, cause, CACHE_PLACES) from error
