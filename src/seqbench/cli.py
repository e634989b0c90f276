"""One line, exit status 2, for every mistake in the user's input, wherever it is noticed.

Hydra rejects overrides and compositions before the task function runs and prints them its own way (several lines,
exit 1); Lightning raises MisconfigurationException; the project raises ConfigError / InputError. `run_cli` sees all of
them: while Hydra composes, HYDRA_FULL_ERROR=1 is set so Hydra re-raises instead of printing, and `one_line` turns the
user's mistakes into `error: <key>...: <fix>`. Anything else is a bug and keeps its traceback. A user who sets
HYDRA_FULL_ERROR=1 gets the full traceback of everything.
"""
from __future__ import annotations

import difflib
import os
import sys
from typing import Callable

from seqbench.errors import user_error

_FULL_ERROR = "HYDRA_FULL_ERROR"
_composing = False  # True from run_cli's start until the task function calls composition_done()


def _user_wants_traceback() -> bool:
    return os.environ.get(_FULL_ERROR) == "1" and not _composing


def composition_done() -> None:
    """Called first thing in the task function: from here on HYDRA_FULL_ERROR is the user's own again, so Hydra
    reports the task's bugs as usual and child processes (DDP ranks) inherit the user's setting, not ours."""
    global _composing
    if _composing:
        os.environ.pop(_FULL_ERROR, None)
        _composing = False


def exit_if_user_error(error: BaseException, before_task: bool = False) -> None:
    """Print `error: ...` and exit with status 2 if `error` is the user's mistake; return (to re-raise) otherwise."""
    message = None if _user_wants_traceback() else one_line(error, before_task)
    if message is not None:
        print(f"error: {message}", file=sys.stderr)
        sys.exit(2)


def _squash(text: str) -> str:
    return " ".join(text.split())


def _takes(target: str, argument: str) -> bool:
    """Whether the callable `target` (a `_target_` path) has an argument of this name."""
    import inspect

    from hydra.utils import get_object

    try:
        return argument in inspect.signature(get_object(target)).parameters
    except Exception:  # noqa: BLE001 - an unimportable target: no hint, the config checks report it later
        return False


def _unknown_key(error) -> str | None:
    """`model.n_head=4`: "Could not override 'model.n_head'" caused by "Key 'n_head' is not in struct"."""
    from omegaconf import DictConfig
    from omegaconf.errors import ConfigAttributeError, ConfigKeyError

    cause = error.__cause__
    if not isinstance(cause, (ConfigKeyError, ConfigAttributeError)) or not getattr(cause, "full_key", None):
        return None
    parent, key, full_key = cause.parent_node, cause.key, cause.full_key
    prefix = full_key[: -len(str(key))] if full_key.endswith(str(key)) else ""
    keys = [k for k in parent.keys() if k != "hydra"] if isinstance(parent, DictConfig) else []
    if isinstance(parent, DictConfig) and "_target_" in parent and _takes(parent._target_, str(key)):
        return f"{full_key}: not set in the config; add it with +{full_key}=<value> ({parent._target_} takes it)"
    close = difflib.get_close_matches(str(key), [str(k) for k in keys], n=1)
    if close:
        return f"{full_key}: no such key; did you mean {prefix}{close[0]}?"
    return (f"{full_key}: no such key (keys here: {', '.join(map(str, keys))}); "
            f"+{full_key}=<value> adds a new key")


def one_line(error: BaseException, before_task: bool = False) -> str | None:
    """The one-line message for a mistake in the user's input, or None for a bug (which must keep its traceback).
    `before_task`: the error came from Hydra before the task function ran (composition, creating the run dir)."""
    found = user_error(error)
    if found is not None:
        return _squash(str(found))
    from hydra.errors import ConfigCompositionException, MissingConfigException, OverrideParseException
    from lightning.fabric.utilities.exceptions import MisconfigurationException
    from omegaconf.errors import InterpolationResolutionError

    if isinstance(error, MissingConfigException) and getattr(error, "missing_cfg_file", None):
        group, _, choice = str(error.missing_cfg_file).rpartition("/")
        options = f" (available: {', '.join(error.options)})" if getattr(error, "options", None) else ""
        return f"{group or 'config'}={choice}: no such config{options}" if group else _squash(str(error))
    if isinstance(error, OverrideParseException):
        reason = str(error).splitlines()[0]
        return (f"{error.override}: cannot be parsed ({reason}); quote values with special characters, "
                f"e.g. 'key=\"a b\"'")
    if isinstance(error, ConfigCompositionException):
        message = _unknown_key(error)
        if message:
            return message
        cause = f": {_squash(str(error.__cause__).splitlines()[0])}" if error.__cause__ else ""
        return _squash(str(error).splitlines()[0]) + cause
    if isinstance(error, InterpolationResolutionError):
        key = getattr(error, "full_key", None)
        return f"{key}: {_squash(getattr(error, 'msg', str(error)))}" if key else _squash(str(error))
    key, cause = "trainer", error
    while cause is not None and not isinstance(cause, MisconfigurationException):
        # Hydra's InstantiationException names the config node it was building ("full_key: callbacks.lr_monitor")
        key = next((line.split(":", 1)[1].strip() for line in str(cause).splitlines()
                    if line.startswith("full_key:")), key)
        cause = cause.__cause__
    if cause is not None:
        return f"{key}: {_squash(str(cause))}"
    if before_task and isinstance(error, OSError) and error.filename:
        return (f"hydra.run.dir={error.filename}: cannot be written ({error.strerror}); "
                f"choose a writable hydra.run.dir or paths.log_dir")
    return None


def run_cli(main: Callable[[], object]) -> None:
    """Run a `@hydra.main` function; a mistake in the user's input becomes `error: ...` on stderr and exit status 2.

    Hydra's errors (before the task runs) are caught here; the task function catches its own with
    `exit_if_user_error`, since Hydra handles what escapes it."""
    global _composing
    if os.environ.get(_FULL_ERROR) == "1":  # the user asked for Hydra's full traces: nothing to intercept
        main()
        return
    _composing = True
    os.environ[_FULL_ERROR] = "1"  # Hydra re-raises composition errors to us instead of printing them
    try:
        main()
    except Exception as error:  # noqa: BLE001 - only the user's own mistakes become one line; the rest re-raises
        before_task = _composing
        composition_done()
        exit_if_user_error(error, before_task)
        raise
    finally:
        composition_done()


def run_tool(main: Callable[..., object], *args) -> int:
    """Run a command-line tool's `main(*args)` (translate, average, export, data describe): a mistake in the user's
    input (`one_line`) becomes `error: ...` on stderr and exit status 2; anything else is a bug and keeps its
    traceback."""
    try:
        main(*args)
    except Exception as error:  # noqa: BLE001 - re-raised below unless it is the user's
        message = one_line(error)
        if message is None:
            raise
        print(f"error: {message}", file=sys.stderr)
        return 2
    return 0
