"""The one vocabulary of config checks: a `Spec` says which values a key takes, `check_keys` holds a config to a
table of them, and every failure is a ConfigError of one line, `<key>=<value>: must be <what is allowed>`.

It sits in the lowest layer so that whoever defines keys declares their table beside them (a model family, a
corpus) and seqbench.config.checks, which decides whether a config may run, runs every table before anything is
built. Relations between keys are written as code beside the table, raising a ConfigError worded the same way.
"""
from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Callable

from omegaconf import DictConfig, ListConfig, OmegaConf

from seqbench.common.errors import ConfigError
from seqbench.common.nested import lookup


def is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def is_list(value: Any) -> bool:
    """A YAML list: a list, tuple or OmegaConf ListConfig, not a string."""
    return isinstance(value, Sequence) and not isinstance(value, str)


@dataclass(frozen=True)
class Spec:
    ok: Callable[[Any], bool]
    allowed: str  # completes "<key>=<value>: must be ..."


def integer(low: int, high: int | None = None, none: bool = False, note: str = "") -> Spec:
    bound = f">= {low}" if high is None else f"in [{low}, {high}]"
    return Spec(lambda v: (none and v is None) or is_int(v) and v >= low and (high is None or v <= high),
                f"an integer {bound}" + (" or null" if none else "") + note)


def number(low: float, strict: bool = False, high: float | None = None, none: bool = False, note: str = "") -> Spec:
    bound = (f"> {low}" if strict else f">= {low}") + (f" and <= {high}" if high is not None else "")
    return Spec(lambda v: (none and v is None) or is_number(v) and (v > low if strict else v >= low)
                and (high is None or v <= high), f"a number {bound}" + (" or null" if none else "") + note)


def fraction(none: bool = False) -> Spec:
    """A rate below 1: dropout, label smoothing."""
    return Spec(lambda v: (none and v is None) or is_number(v) and 0 <= v < 1,
                "a number in [0, 1)" + (" or null" if none else ""))


def boolean(none: bool = False, extra: tuple = ()) -> Spec:
    allowed = "true or false" + "".join(f" or {e}" for e in extra) + (" or null" if none else "")
    return Spec(lambda v: isinstance(v, bool) or v in extra or (none and v is None), allowed)


def one_of(*choices, note: str = "") -> Spec:
    return Spec(lambda v: v in choices, "one of " + ", ".join(str(c) for c in choices) + note)


def text(what: str = "a non-empty string", none: bool = False) -> Spec:
    return Spec(lambda v: (none and v is None) or isinstance(v, str) and v.strip() != "",
                what + (" or null" if none else ""))


def show(value: Any) -> str:
    """A value as a message quotes it: strings quoted, null/true/false as a config writes them."""
    if isinstance(value, (DictConfig, ListConfig)):
        value = OmegaConf.to_container(value)
    if value is None or isinstance(value, bool):
        return {None: "null", True: "true", False: "false"}[value]
    return repr(value) if isinstance(value, str) else str(value)


def check(key: str, value: Any, spec: Spec) -> None:
    if not spec.ok(value):
        raise ConfigError(f"{key}={show(value)}: must be {spec.allowed}")


def check_keys(cfg: Mapping, specs: Mapping[str, Spec | Callable[[], Spec]], prefix: str = "") -> None:
    """Each key of `specs` (dotted: "trainer.max_steps") that `cfg` holds, against its spec; a spec given as a function
    is made when its key is present (one that imports a library). `prefix` completes the key a message names."""
    for key, spec in specs.items():
        present, value = lookup(cfg, key)
        if present:
            check(prefix + key, value, spec if isinstance(spec, Spec) else spec())


def with_defaults(target: Callable, cfg: Mapping) -> dict:
    """The values a config builds `target` with: its keys (resolved, as plain lists and dicts) over the defaults of
    `target`'s arguments, the config's own keys (`_target_`) left out; for checking relations between keys."""
    given = OmegaConf.to_container(cfg, resolve=True) if isinstance(cfg, DictConfig) else dict(cfg)
    defaults = {name: p.default for name, p in inspect.signature(target).parameters.items()
                if p.default is not inspect.Parameter.empty}
    return {**defaults, **{key: value for key, value in given.items() if not str(key).startswith("_")}}
