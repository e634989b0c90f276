"""File helpers: atomic writes (the one atomic-write helper of the project) and strict reading of user-given
text files.

Atomic writes: everything is written to a temporary sibling (same folder, so the rename stays on one file system) and
renamed over the target in one step: readers see the old file, or the new one, never a truncated mix. A write that
fails is one line naming the target and the cause its errno gives (no space, permission, read-only file system);
`check_writable` finds the causes that can be known before any work starts.

Text is split into lines on "\n" only (a "\r" before it is dropped), never on the other characters
`str.splitlines` ends lines at (form feed, U+2028...): one line in is one line out wherever a file's lines are counted.
"""
from __future__ import annotations

import errno
import os
import shutil
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO, Iterator

from seqbench.common.errors import (
    DISK_FULL_ERRNOS,
    PATH_ERRNOS,
    RUN_PLACES,
    DiskFullError,
    InputError,
    UnwritableError,
    os_error,
)

NEARLY_FULL_BYTES = 64 * 2**20  # a failed write with less room than this left is taken for a full disk
UTF8_BOM = b"\xef\xbb\xbf"


@contextmanager
def atomic_path(path: str | Path, durable: bool = False) -> Iterator[Path]:
    """Yields a temporary sibling of `path` to write (a file or a folder); renames it over `path` if the block ends
    without an exception, and removes it otherwise. `durable`: its data is flushed to the disk before the rename and
    the rename after it, so that a power loss leaves the old `path` or the whole new one (the kernel may otherwise
    write the rename before the data: a complete-looking name over truncated files)."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        _remove(tmp)
        yield tmp
        if durable:
            _sync(*(sorted(p for p in tmp.rglob("*") if p.is_file()) if tmp.is_dir() else []), tmp)
        if tmp.is_dir() and path.is_dir():
            shutil.rmtree(path)  # a folder cannot be renamed over another one
        os.replace(tmp, path)
        if durable:
            _sync(path.parent)
    except Exception as error:
        _remove(tmp)
        failure = _write_failure(path, tmp, error)
        if failure is None:
            raise
        raise failure from error
    finally:
        _remove(tmp)


def _sync(*paths: Path) -> None:
    """fsync each file or folder (a folder's entries: names created or renamed in it). Folders cannot be opened to
    be synced on Windows, whose renames are written through."""
    for path in paths:
        if path.is_dir() and os.name != "posix":
            continue
        descriptor = os.open(path, os.O_RDONLY)
        try:
            os.fsync(descriptor)
        finally:
            os.close(descriptor)


def cannot_write(path: Path, error: OSError, elsewhere: str = RUN_PLACES) -> InputError | None:
    """The one-line error for `path`, which `error` kept from being written, named from its errno: no room
    (DiskFullError, which says to write `elsewhere`), or permission, read-only file system, not a folder
    (UnwritableError); None for other errnos."""
    if error.errno in DISK_FULL_ERRNOS:
        return DiskFullError(path, _free_bytes(path.parent), error.errno, elsewhere)
    if error.errno in PATH_ERRNOS:
        return UnwritableError(path, error.strerror)
    return None


def _write_failure(path: Path, tmp: Path, error: Exception) -> InputError | None:
    """What an atomic write of `path` that ended with `error` is reported as; None to re-raise `error` itself."""
    if isinstance(error, InputError):
        return None  # already one line: the caller's own check, or a nested write naming its file
    cause = os_error(error)
    if cause is not None:
        return cannot_write(path, cause) if _writes(cause.filename, path, tmp) else None
    free = _free_bytes(path.parent)
    # torch.save reports a full disk as a RuntimeError of its stream writer ("iostream error"), with no errno: with
    # that little room left after the partial file is gone, the write failed for want of space
    return DiskFullError(path, free) if free is not None and free < NEARLY_FULL_BYTES else None


def _writes(filename, path: Path, tmp: Path) -> bool:
    """Whether an OSError's file is one the atomic write of `path` makes: the temporary, the target or a folder above
    it (an unnamed one too). Another file failed to be read inside the block: its own error names it."""
    if not isinstance(filename, (str, os.PathLike)):
        return True
    named = Path(filename)
    return named.is_relative_to(tmp) or named in (path, *path.parents)


def _free_bytes(folder: Path) -> int | None:
    try:
        return shutil.disk_usage(folder).free
    except OSError:
        return None


def check_writable(path: str | Path) -> None:
    """One line now, before any work, if `path` cannot be written (its folder refuses new files, is on a read-only
    file system, or is a file): a file is created and removed in its folder, or in the nearest folder above that
    exists. A full disk shows only when the data is written; atomic_path names it then."""
    folder = next(p for p in Path(path).absolute().parents if p.exists())
    probe = folder / f".{Path(path).name}.probe{os.getpid()}"
    try:
        if not folder.is_dir():
            raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), str(folder))
        os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600))
        os.unlink(probe)
    except OSError as error:
        failure = cannot_write(Path(path), error)
        if failure is None:
            raise
        raise failure from None


def check_folder(path: str | Path, first_file: str) -> None:
    """`check_writable` for a folder that files are written into (`first_file` the first of them), which must not be
    a file."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise InputError(f"{path}: is a file, not a folder; choose a folder")
    check_writable(path / first_file)


def _remove(path: Path) -> None:
    if path.is_dir():
        shutil.rmtree(path, ignore_errors=True)
    elif path.exists():
        path.unlink()


def atomic_write_bytes(path: str | Path, data: bytes) -> Path:
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)
    return Path(path)


def atomic_write_text(path: str | Path, text: str) -> Path:
    return atomic_write_bytes(path, text.encode("utf-8"))


def atomic_savefig(figure, path: str | Path, **options) -> Path:
    """A matplotlib figure saved atomically: a killed report leaves no 0-byte image. Its format is `path`'s suffix
    (the temporary's name has none)."""
    with atomic_path(path) as tmp:
        figure.savefig(tmp, format=Path(path).suffix.lstrip("."), **options)
    return Path(path)


def atomic_torch_save(obj, path: str | Path) -> Path:
    import torch

    with atomic_path(path) as tmp:
        tmp.touch()  # torch reports a file it cannot create without the errno that names why: Python keeps it
        torch.save(obj, tmp)
    return Path(path)


def read_lines(path: str | Path, empty_ok: bool = False) -> list[str]:
    """The file's lines, decoded as strict UTF-8 (a leading BOM and CR line ends are accepted); a missing file,
    invalid UTF-8 or an empty file (unless `empty_ok`) is an InputError naming the file (and line)."""
    lines = list(file_lines(path))
    if not lines and not empty_ok:
        raise InputError(f"{path}: the file is empty")
    return lines


def file_lines(path: str | Path) -> Iterator[str]:
    """`read_lines` a line at a time, for files too large to hold (a WMT-sized corpus): the same splitting, decoding
    and errors, except that an empty file yields nothing."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: file not found")
    with path.open("rb") as f:
        yield from stream_lines(f, str(path))


def stream_lines(stream: BinaryIO, name: str = "stdin") -> Iterator[str]:
    """The lines of a byte stream (stdin, a file), split on "\n" only and decoded as strict UTF-8, each as soon as it
    has been read: a terminal or a pipe gets each line's answer before it sends the next. Invalid UTF-8 is an
    InputError naming the line, the column and the byte offset in the stream."""
    offset = 0
    for number, raw in enumerate(iter(stream.readline, b""), start=1):
        if number == 1 and raw.startswith(UTF8_BOM):
            raw, offset = raw[3:], 3
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as error:
            raise InputError(f"{name}:{number}: invalid UTF-8 (byte 0x{raw[error.start]:02x} at column "
                             f"{error.start + 1}, byte offset {offset + error.start}); re-encode it as UTF-8") from None
        offset += len(raw)
        yield line.removesuffix("\n").removesuffix("\r")
