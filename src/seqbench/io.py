"""Writing files so that a killed process never leaves half of one: the one atomic-write helper of the project.

Everything is written to a temporary sibling (same folder, so the rename stays on one file system) and renamed over
the target in one step: readers see the old file, or the new one, never a truncated mix.
"""
from __future__ import annotations

import os
import shutil
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator


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
