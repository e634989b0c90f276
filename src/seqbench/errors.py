"""Errors about the user's input (data files, corpora, config values) that are reported as one line, no traceback."""
from __future__ import annotations


class InputError(ValueError):
    pass


def user_error(error: BaseException) -> ValueError | None:
    """The ConfigError or InputError behind `error`, if any: Hydra wraps what instantiated objects raise, so the
    user's own mistake may sit a few `__cause__` links down. None for everything else (a real bug: re-raise it)."""
    from seqbench.config_check import ConfigError

    while error is not None and not isinstance(error, (ConfigError, InputError)):
        error = error.__cause__
    return error


def run_cli(main, *args) -> int:
    """Runs a command-line tool's `main(*args)`: the user's own mistakes become one `error: ...` line on stderr and
    exit status 2; anything else is a bug and keeps its traceback."""
    import sys

    try:
        main(*args)
    except Exception as error:  # noqa: BLE001 - re-raised below unless it is the user's
        cause = user_error(error)
        if cause is None:
            raise
        print(f"error: {cause}", file=sys.stderr)
        return 2
    return 0
