"""The user's mistakes (config values, data files, corpora), reported as one line with exit status 2, no traceback.

`ConfigError`: a bad config value, found before any data or model is built (the checks' vocabulary is
seqbench.common.specs; whether a config is valid is decided in seqbench.config.checks). `InputError`: a bad file,
corpus or checkpoint, found when it is read. `one_line` tells a mistake in the user's input (ours, Hydra's or
Lightning's) from a bug and words it as one line.
"""
from __future__ import annotations

import difflib
import errno


class ConfigError(ValueError):
    pass


class InputError(ValueError):
    pass


RUN_PLACES = "the run elsewhere (hydra.run.dir, paths.log_dir)"
CACHE_PLACES = "the cache elsewhere (SEQBENCH_CACHE_DIR, paths.cache_dir)"


class DiskFullError(InputError):
    """A file could not be written for want of room (its file system full, its quota used, or the process's file-size
    limit reached): one line naming the file and where else to write it (`elsewhere`), no traceback."""

    def __init__(self, path, free_bytes: int | None = None, code: int = errno.ENOSPC, elsewhere: str = RUN_PLACES):
        free = f" ({free_bytes / 2**20:.1f} MiB free there)" if free_bytes is not None else ""
        why = (f"no space left on its file system{free}; free some space or" if code != errno.EFBIG
               else "larger than this process's file-size limit (ulimit -f) allows; raise the limit or")
        super().__init__(f"{path}: cannot be written, {why} write {elsewhere}")
        self.path = path


class UnwritableError(InputError):
    """A file or folder that cannot be written for the reason its OSError's errno gives (permission, read-only file
    system, a file where a folder should be): one line naming it, no traceback."""

    def __init__(self, path, reason: str):
        super().__init__(f"{path}: cannot be written ({reason}); choose a place you can write to")
        self.path = path


DISK_FULL_ERRNOS = (28, 122, 27)  # ENOSPC, EDQUOT, EFBIG (ulimit -f): no room for the file, the same remedies
PATH_ERRNOS = (1, 2, 13, 20, 21, 30)  # EPERM, ENOENT, EACCES, ENOTDIR, EISDIR, EROFS: a path the user gave


def disk_full(error: BaseException) -> bool:
    """Whether `error` (or what caused it) says the disk, the quota or the file-size limit is full."""
    return out_of_room(error) is not None


def out_of_room(error: BaseException) -> OSError | None:
    """The OSError in `error`'s chain (itself, its causes and contexts) that says there is no room for a file."""
    while error is not None:
        if isinstance(error, OSError) and error.errno in DISK_FULL_ERRNOS:
            return error
        error = error.__cause__ or error.__context__
    return None


def os_error(error: BaseException) -> OSError | None:
    """The first OSError that carries an errno in `error`'s chain (itself, then its causes and contexts)."""
    while error is not None and not (isinstance(error, OSError) and error.errno is not None):
        error = error.__cause__ or error.__context__
    return error


def user_error(error: BaseException) -> ValueError | None:
    """The ConfigError or InputError behind `error`, if any: Hydra wraps what instantiated objects raise, so the
    user's own mistake may sit a few `__cause__` links down. None for everything else (a real bug: re-raise it)."""
    while error is not None and not isinstance(error, (ConfigError, InputError)):
        error = error.__cause__
    return error


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
    `before_task`: the error came from Hydra before the task function ran (composition, creating the run dir).

    Built from the exceptions' attributes and `__cause__` chains, never by reading their text: what an exception
    does not say in attributes (which config node a Lightning misconfiguration came from) is for the config checks
    (seqbench.config.checks) to find first. A group choice with no config (Hydra's MissingConfigException) arrives
    here as a ConfigError already: naming the group's configs takes Hydra's config loader
    (seqbench.config.compose.missing_config)."""
    found = user_error(error)
    if found is not None:
        return _squash(str(found))
    cause = out_of_room(error)
    if cause is not None:
        return _squash(str(DiskFullError(cause.filename or "a file", code=cause.errno)))
    from hydra.errors import ConfigCompositionException, HydraException, OverrideParseException
    from lightning.fabric.utilities.exceptions import MisconfigurationException
    from omegaconf.errors import InterpolationResolutionError

    if isinstance(error, OverrideParseException):
        # Hydra raises it while handling the parser's HydraException, whose message is the grammar's one line
        reason = f" ({_squash(str(error.__context__))})" if isinstance(error.__context__, HydraException) else ""
        return f"{error.override}: cannot be parsed{reason}; quote values with special characters, e.g. 'key=\"a b\"'"
    if isinstance(error, ConfigCompositionException):
        message = _unknown_key(error)
        if message:
            return message
        cause = f": {_squash(str(error.__cause__))}" if error.__cause__ is not None else ""
        return _squash(str(error)) + cause  # Hydra's words and the cause's (OmegaConf's with its full_key) in full
    if isinstance(error, InterpolationResolutionError):
        key = getattr(error, "full_key", None)
        return f"{key}: {_squash(getattr(error, 'msg', str(error)))}" if key else _squash(str(error))
    cause = error
    while cause is not None and not isinstance(cause, MisconfigurationException):
        cause = cause.__cause__
    if cause is not None:  # Lightning refused a setting the config checks do not know
        return f"Lightning: {_squash(str(cause))}"
    if isinstance(error, OSError) and error.filename and before_task and error.errno == errno.EEXIST:
        return (f"hydra.run.dir={error.filename}: {error.filename} is a file, not a directory; choose another "
                f"hydra.run.dir (hydra.sweep.dir in a multirun)")
    if isinstance(error, OSError) and error.filename and error.errno in PATH_ERRNOS:
        if before_task:  # Hydra creating the run directory
            return (f"hydra.run.dir={error.filename}: cannot be written ({error.strerror}); "
                    f"choose a writable hydra.run.dir or paths.log_dir")
        return f"{error.filename}: {error.strerror}"
    return None
