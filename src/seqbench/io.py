"""File helpers: atomic writes (a killed process leaves the old file or the new one, never a truncated one) and
strict line reading of user-given text files."""
from __future__ import annotations

import os
from pathlib import Path

from seqbench.errors import InputError


def atomic_write_bytes(path: str | Path, data: bytes) -> Path:
    """Writes `data` to a temporary file in the same folder (same file system), then renames it over `path`."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    try:
        tmp.write_bytes(data)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path


def atomic_write_text(path: str | Path, text: str) -> Path:
    return atomic_write_bytes(path, text.encode("utf-8"))


def read_lines(path: str | Path) -> list[str]:
    """The file's lines, decoded as strict UTF-8 (a leading BOM and CR line ends are accepted); a missing file,
    invalid UTF-8 or an empty file is an InputError naming the file (and line)."""
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
