"""Where the Hydra configs live and how a command composes them without running Hydra's application (`seqbench data
describe`, `seqbench bench --preset`, the tests).

The configs are the checkout's top-level conf/; a wheel carries them as the package seqbench.conf (a build mapping in
pyproject.toml), so an installed seqbench finds them from any directory."""
from __future__ import annotations

import tempfile
from pathlib import Path

from omegaconf import DictConfig

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
    from omegaconf import open_dict

    from seqbench.config.resolvers import register_resolvers

    register_resolvers()
    overrides = list(overrides)
    if not any(o.lstrip("+~").startswith("paths.output_dir=") for o in overrides):
        overrides.append(f"paths.output_dir={tempfile.gettempdir()}/seqbench-compose")
    with initialize_config_dir(config_dir=str(config_dir), version_base="1.3", job_name="compose"):
        cfg = hydra_compose(config_name=CONFIG_NAME, overrides=overrides, return_hydra_config=True)
    HydraConfig.instance().set_config(cfg)
    if not hydra_config:
        with open_dict(cfg):
            del cfg["hydra"]
    return cfg
