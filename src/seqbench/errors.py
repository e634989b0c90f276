"""The user's mistakes (config values, data files, corpora), reported as one line with exit status 2, no traceback.

`ConfigError`: a bad config value, found before any data or model is built. `InputError`: a bad file, corpus or
checkpoint, found when it is read. `require`/`positive_int`/`choice`/`probability` are the checks each model class's
`validate_config` uses, so messages read the same everywhere: `<key>=<value>: <what is allowed>`.
"""
from __future__ import annotations

from typing import Any, Iterable


class ConfigError(ValueError):
    pass


class InputError(ValueError):
    pass


def user_error(error: BaseException) -> ValueError | None:
    """The ConfigError or InputError behind `error`, if any: Hydra wraps what instantiated objects raise, so the
    user's own mistake may sit a few `__cause__` links down. None for everything else (a real bug: re-raise it)."""
    while error is not None and not isinstance(error, (ConfigError, InputError)):
        error = error.__cause__
    return error


def require(ok: bool, message: str) -> None:
    if not ok:
        raise ConfigError(message)


def is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def positive_int(value: Any, key: str, allow_none: bool = False) -> None:
    if value is None and allow_none:
        return
    require(is_int(value) and value > 0, f"{key}={value!r}: must be a positive integer")


def probability(value: Any, key: str) -> None:
    """A dropout-like rate in [0, 1); None (unset) passes."""
    if value is not None:
        require(isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value < 1,
                f"{key}={value!r}: must be in [0, 1)")


def choice(value: Any, key: str, allowed: Iterable[str]) -> None:
    allowed = tuple(allowed)
    require(value in allowed, f"{key}={value!r}: allowed values are {', '.join(allowed)}")
