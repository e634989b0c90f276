"""Phase 1: the command line, before Hydra composes anything: malformed overrides and group choices that do not exist
are one line naming the choices (Hydra would report them too, over several lines)."""
from __future__ import annotations

from seqbench.common.errors import ConfigError


def _search_dirs(overrides: list[str], conf_dir: str) -> list:
    """conf/ plus the local folders of a `hydra.searchpath=[file://...]` override (a user's own configs)."""
    from pathlib import Path

    dirs = [Path(conf_dir)]
    for override in overrides:
        key, _, value = override.partition("=")
        if key.lstrip("+") == "hydra.searchpath":
            for entry in value.strip("[]").split(","):
                entry = entry.strip().strip("'\"")
                if entry.startswith("file://"):
                    dirs.append(Path(entry[len("file://"):]))
    return dirs


def _stored_choices(group: str) -> set[str]:
    """Choices of a group that Hydra and its plugins register in the ConfigStore rather than as files
    (hydra/launcher=basic, submitit_local, submitit_slurm when the launcher plugin is installed)."""
    from hydra.core.config_store import ConfigStore
    from hydra.core.plugins import Plugins

    Plugins.instance()  # imports hydra_plugins.*, whose modules register their configs
    try:
        return {name.removesuffix(".yaml") for name in ConfigStore.instance().list(group)}
    except OSError:  # no such group in the store
        return set()


def check_group_choices(argv: list[str], conf_dir: str) -> None:
    """A malformed override, or a group choice with no conf/<group>/<choice>.yaml, as one line naming the choices.

    `argv` is the command line after the program name; its overrides are read by Hydra's own argument and override
    parsers, so whatever Hydra composes passes: lists (`logger=[csv,wandb]`), sweeps (`model=transformer,cnn`,
    `choice(...)`, `range(...)`, `glob(...)`), `+`/`~` prefixes, `group@package=...`. Hydra would report a bad choice
    too, but over several lines; this runs before Hydra composes anything.
    """
    import argparse

    from hydra._internal.utils import get_args_parser  # the parser @hydra.main uses: flags vs overrides
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.core.override_parser.types import ValueType
    from hydra.errors import OverrideParseException

    parser = get_args_parser()
    parser.exit_on_error = False
    try:
        overrides = parser.parse_known_args(argv)[0].overrides
    except argparse.ArgumentError:
        return  # a bad flag: Hydra's own usage message says it
    override_parser = OverridesParser.create()
    dirs = _search_dirs(overrides, conf_dir)
    for text in overrides:
        try:
            (override,) = override_parser.parse_overrides([text])
        except OverrideParseException as error:
            raise ConfigError(f"cannot parse override {text!r}: {str(error).splitlines()[0]}") from None
        groups = [d / override.key_or_group for d in dirs if (d / override.key_or_group).is_dir()]
        if override.is_delete() or not groups:
            continue  # a config key (model.n_heads=...), a group outside conf/ (hydra/launcher) or a deletion
        available = sorted({p.relative_to(group).with_suffix("").as_posix()  # recipe=equal_search/cnn: a folder's
                            for group in groups for p in group.rglob("*.yaml")}
                           | _stored_choices(override.key_or_group))
        if override.value_type == ValueType.GLOB_CHOICE_SWEEP:
            if not override.value().filter(available):
                raise ConfigError(f"{text}: matches no {override.key_or_group} (allowed values are "
                                  f"{', '.join(available)})")
            continue
        if override.value_type == ValueType.INTERVAL_SWEEP:
            raise ConfigError(f"{text}: a config group takes names, not an interval (allowed values are "
                              f"{', '.join(available)})")
        values = list(override.sweep_iterator()) if override.is_sweep_override() else [override.value()]
        for value in values:
            for choice in value if isinstance(value, list) else [value]:  # logger=[csv,wandb]: two choices
                if choice is not None and str(choice) not in available:
                    raise ConfigError(f"{override.key_or_group}={str(choice)!r}: allowed values are "
                                      f"{', '.join(available)}")
