"""Where the Hydra configs live (inside the package, so an installed seqbench finds them from any directory) and how a
command composes them without running Hydra's application (`seqbench data describe`, `seqbench bench --preset`, the
tests)."""
from __future__ import annotations

import tempfile
from pathlib import Path

from omegaconf import DictConfig

CONF_DIR = Path(__file__).resolve().parents[1] / "conf"  # seqbench/conf/: train.yaml and its groups
CONFIG_NAME = "train"


def compose(overrides: list[str] = (), config_dir: str | Path = CONF_DIR, hydra_config: bool = False) -> DictConfig:
    """conf/train.yaml with Hydra overrides, as `seqbench train <overrides>` would compose it, without running it.

    paths.output_dir is ${hydra:runtime.output_dir}, which only a running Hydra application resolves: it is set to a
    temporary folder (nothing is written there) unless an override sets it. `hydra_config` keeps the `hydra` node."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir

    from seqbench.config.resolvers import register_resolvers

    register_resolvers()
    overrides = list(overrides)
    if not hydra_config and not any(o.lstrip("+~").startswith("paths.output_dir=") for o in overrides):
        overrides.append(f"paths.output_dir={tempfile.gettempdir()}/seqbench-compose")
    with initialize_config_dir(config_dir=str(config_dir), version_base="1.3", job_name="compose"):
        return hydra_compose(config_name=CONFIG_NAME, overrides=overrides, return_hydra_config=hydra_config)
