"""Where the Hydra configs live, how a command composes them without running Hydra's application (`seqbench data
describe`, `seqbench bench --preset`, the tests), and which configs a config group offers (`group_options`, and the
one line for a choice Hydra finds none for, `missing_config`). Whether a composed config may run is decided in one
place, seqbench.config.checks.

The configs are the checkout's top-level conf/; a wheel carries them as the package seqbench.conf (a build mapping in
pyproject.toml), so an installed seqbench finds them from any directory."""
from __future__ import annotations

import tempfile
from pathlib import Path

from omegaconf import DictConfig

from seqbench.common.errors import ConfigError

CONFIG_NAME = "train"


def _conf_dir() -> Path:
    """seqbench/conf/ in an installed wheel; the checkout's conf/ in an editable install (through the mapping, or
    beside src/ when the installer ignored it)."""
    import importlib.util

    package = Path(__file__).resolve().parents[1]
    candidates = [package / "conf"]
    spec = importlib.util.find_spec("seqbench.conf")
    if spec is not None and spec.submodule_search_locations:
        candidates += [Path(location) for location in spec.submodule_search_locations]
    candidates.append(package.parents[1] / "conf")  # src/seqbench -> the checkout's root
    return next((c for c in candidates if (c / f"{CONFIG_NAME}.yaml").is_file()), candidates[-1])


CONF_DIR = _conf_dir()  # train.yaml and its groups


def compose(overrides: list[str] = (), config_dir: str | Path = CONF_DIR, hydra_config: bool = False) -> DictConfig:
    """conf/train.yaml with Hydra overrides, as `seqbench train <overrides>` would compose it, without running it.

    Hydra's own config is made current (HydraConfig), as in a run, so `${hydra:runtime.choices.model}` (the run's
    label) resolves; `hydra_config` keeps the `hydra` node in the result. paths.output_dir is
    ${hydra:runtime.output_dir}, which only a running Hydra application sets: it is a temporary folder (nothing is
    written there) unless an override sets it."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from hydra.core.hydra_config import HydraConfig
    from hydra.errors import MissingConfigException
    from omegaconf import open_dict

    from seqbench.config.resolvers import register_resolvers

    register_resolvers()
    overrides = list(overrides)
    if not any(o.lstrip("+~").startswith("paths.output_dir=") for o in overrides):
        overrides.append(f"paths.output_dir={tempfile.gettempdir()}/seqbench-compose")
    with initialize_config_dir(config_dir=str(config_dir), version_base="1.3", job_name="compose"):
        try:
            cfg = hydra_compose(config_name=CONFIG_NAME, overrides=overrides, return_hydra_config=True)
        except MissingConfigException as error:
            raise missing_config(error) from error
    HydraConfig.instance().set_config(cfg)
    if not hydra_config:
        with open_dict(cfg):
            del cfg["hydra"]
    return cfg


def with_config_loader(ask):
    """`ask(loader)` with Hydra's own config loader: the running Hydra application's (its search path and the
    plugins' stored configs) or, outside one, one over conf/."""
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    if GlobalHydra.instance().is_initialized():
        return ask(GlobalHydra.instance().config_loader())
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        return ask(GlobalHydra.instance().config_loader())


def _options(loader, group: str, nested: bool = True) -> list[str]:
    from hydra.core.object_type import ObjectType

    names = list(loader.get_group_options(group, results_filter=ObjectType.CONFIG))
    for folder in loader.list_groups(group) if nested else ():
        names += [f"{folder}/{name}" for name in _options(loader, f"{group}/{folder}")]
    return sorted(names)


def group_options(group: str, loader=None) -> list[str]:
    """The configs of a config group as Hydra's config loader (`loader`, else with_config_loader's) finds them, those
    in a sub-folder as `folder/name` (recipe: equal_search/cnn), sorted; empty for a name that is no config group."""
    return _options(loader, group) if loader is not None else with_config_loader(lambda found: _options(found, group))


def missing_config(error) -> ConfigError:
    """Hydra's MissingConfigException (a group choice with no config, found by Hydra's composition, swept or not) as
    one line naming the choice as it was made and every config of its group: `recipe='equal_search/lstm': allowed
    values are cnn, ..., equal_search/cnn, ...`. Read from its attributes: `missing_cfg_file` is <group>/<choice>,
    and `options`, when Hydra lists them (a single choice, not one inside a list: logger=[csv,x]), are the configs of
    the group, which tells where the group ends when the choice is a path itself."""
    path = str(error.missing_cfg_file or "")
    if not path:  # no config file to name (Hydra found no config directory): Hydra's own words
        return ConfigError(" ".join(str(error).split()))
    if "/" not in path:
        return ConfigError(f"--config-name={path}: no such primary config (seqbench's is {CONFIG_NAME})")

    def described(loader) -> str:
        group, _, choice = path.rpartition("/")
        parts = path.split("/")
        for end in range(1, len(parts)) if error.options else ():
            if _options(loader, "/".join(parts[:end]), nested=False) == sorted(error.options):
                group, choice = "/".join(parts[:end]), "/".join(parts[end:])
                break
        options = _options(loader, group)
        allowed = f"allowed values are {', '.join(options)}" if options else f"{group} has no configs"
        if group == "recipe":  # train.yaml's `recipe: ${model}`: the model preset has no recipe file yet
            allowed += (f" (recipe follows the model preset's name unless given: add conf/recipe/{choice}.yaml, "
                        "whose `defaults: [none]` trains with train.yaml's, or pass recipe=none)")
        return f"{group}={choice!r}: {allowed}"

    return ConfigError(with_config_loader(described))
