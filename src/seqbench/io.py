"""Atomic file writes: a temporary file in the same folder, then a rename, so a killed process never leaves a
half-written file where a reader (a resumed run, translate, a report) would find it."""
from __future__ import annotations

import os
from pathlib import Path

import torch


def _temporary(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    return path.with_name(f".{path.name}.tmp{os.getpid()}")


def atomic_write_bytes(path: str | Path, data: bytes) -> Path:
    path = Path(path)
    tmp = _temporary(path)
    tmp.write_bytes(data)
    os.replace(tmp, path)
    return path


def atomic_write_text(path: str | Path, text: str) -> Path:
    return atomic_write_bytes(path, text.encode("utf-8"))


def atomic_torch_save(obj, path: str | Path) -> Path:
    path = Path(path)
    tmp = _temporary(path)
    torch.save(obj, tmp)
    os.replace(tmp, path)
    return path
