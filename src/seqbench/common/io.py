"""File helpers: atomic writes (the one atomic-write helper of the project) and strict reading of user-given
text files.

Atomic writes: everything is written to a temporary sibling (same folder, so the rename stays on one file system) and
renamed over the target in one step: readers see the old file, or the new one, never a truncated mix.
"""
from __future__ import annotations

import os
import shutil
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from seqbench.common.errors import DiskFullError, disk_full

NEARLY_FULL_BYTES = 64 * 2**20  # a failed write with less room than this left is taken for a full disk


@contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yields a temporary sibling of `path` to write (a file or a folder); renames it over `path` if the block ends
    without an exception, and removes it otherwise."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    _remove(tmp)
    try:
        yield tmp
        if tmp.is_dir() and path.is_dir():
            shutil.rmtree(path)  # a folder cannot be renamed over another one
        os.replace(tmp, path)
    except Exception as error:
        _remove(tmp)
        free = shutil.disk_usage(path.parent).free
        # torch.save reports a full disk as a RuntimeError of its stream writer ("iostream error"), not as ENOSPC:
        # with that little room left after the partial file is gone, the write failed for want of space
        if disk_full(error) or free < NEARLY_FULL_BYTES:
            raise DiskFullError(path, free) from error
        raise
    finally:
        _remove(tmp)


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


def atomic_torch_save(obj, path: str | Path) -> Path:
    import torch

    with atomic_path(path) as tmp:
        torch.save(obj, tmp)
    return Path(path)


def read_lines(path: str | Path) -> list[str]:
    """The file's lines, decoded as strict UTF-8 (a leading BOM and CR line ends are accepted); a missing file,
    invalid UTF-8 or an empty file is an InputError naming the file (and line)."""
    from seqbench.common.errors import InputError

    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: file not found")
    data = path.read_bytes()
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    raw_lines = data.split(b"\n")
    if raw_lines and raw_lines[-1] == b"":
        raw_lines.pop()  # the newline that ends the last line
    lines = []
    for number, raw in enumerate(raw_lines, start=1):
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as error:
            raise InputError(f"{path}:{number}: invalid UTF-8 (byte 0x{raw[error.start]:02x} at column "
                             f"{error.start + 1}); re-encode the file as UTF-8") from None
        lines.append(line[:-1] if line.endswith("\r") else line)
    if not lines:
        raise InputError(f"{path}: the file is empty")
    return lines
