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
