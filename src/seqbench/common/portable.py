"""Locations as records and recorded commands write them: never a machine's own folders, so a record copied to another
machine (or committed) points somewhere meaningful there.

  - a path inside the run directory: relative to it ("." for the directory itself, "checkpoints/best-epoch004.ckpt");
  - a location in a config: `${paths.<key>}` for the paths group's folders (run, log and cache directories) and
    anything under them, the interpolation the config itself uses, so the config resolves again on any machine;
  - a location in a recorded command: relative to the working directory when it lies under it, else an upper-case
    placeholder naming what it is (`OUT`, the command's output folder; `VENV`, fairseq's environment); the interpreter
    is `python`, the one an activated environment puts on PATH.
"""
from __future__ import annotations

import os
import re
import sys
from pathlib import Path


def relative(path: str | Path, base: str | Path) -> str:
    """`path` relative to `base` (POSIX separators; "." for base itself) when it lies under base, else unchanged."""
    path, base = Path(path).resolve(), Path(base).resolve()
    try:
        return path.relative_to(base).as_posix() or "."
    except ValueError:
        return str(path)


def shown(path: str | Path, placeholder: str, cwd: str | Path | None = None) -> str:
    """A location as a recorded command shows it: relative to the working directory when it lies under it (where the
    command runs again as written), else `placeholder`."""
    path, cwd = Path(path).resolve(), Path(cwd or os.getcwd()).resolve()
    try:
        return path.relative_to(cwd).as_posix() or "."
    except ValueError:
        return placeholder


def interpreter(argument: str) -> str:
    """`python` for this process's interpreter (a command recorded with its absolute path names a local venv)."""
    return "python" if argument == sys.executable else argument


def recorded_command(args: list[str], out: str | Path, placeholder: str = "OUT",
                     cwd: str | Path | None = None) -> list[str]:
    """`args` as a record keeps them: the interpreter `python`, and every absolute location (an argument, or an
    override's value after `=`) under the command's output folder `out` written from `shown(out, placeholder)`;
    any other absolute location stays as it is (`/usr/bin/env`)."""
    base = shown(out, placeholder, cwd)

    def location(text: str) -> str:
        if not os.path.isabs(text):
            return text
        inside = relative(text, out)
        if os.path.isabs(inside):
            return text
        return base if inside == "." else f"{base}/{inside}"

    def argument(arg: str) -> str:
        key, equals, value = arg.partition("=")
        return f"{key}={location(value)}" if equals and not key.startswith("/") else location(arg)

    return [argument(interpreter(arg)) for arg in args]


def located(config):
    """`config` (a plain dict, resolved) with the paths group's absolute locations written as `${paths.<key>}` wherever
    they occur, the longest first (the run directory lies under the log directory); the group's own values become
    those interpolations too. Idempotent: a config written this way comes back unchanged."""
    if not isinstance(config, dict):
        return config
    paths = sorted(((key, value) for key, value in (config.get("paths") or {}).items()
                    if isinstance(value, str) and Path(value).is_absolute()), key=lambda item: -len(item[1]))
    # a folder's name, not a prefix of another name: /runs/a is not replaced inside /runs/ab
    paths = [(re.compile(re.escape(value.rstrip("/")) + r"(?=/|$)"), key) for key, value in paths]

    def written(node):
        if isinstance(node, dict):
            return {key: written(value) for key, value in node.items()}
        if isinstance(node, list):
            return [written(value) for value in node]
        if isinstance(node, str):
            for pattern, key in paths:
                node = pattern.sub("${paths." + key + "}", node)
        return node

    return written(config)
