"""A W&B grid sweep file as the Hydra preset that runs the same grid with Hydra's basic sweeper
(conf/hparams_search/<name>.yaml, `python train.py -m hparams_search=<name>`). The sweep file is the one definition
of the space and its budget: `wandb sweep` reads it as it is, and the preset, which Hydra must find under conf/ (an
installed seqbench ships conf/, not sweeps/), is generated from it and committed; tests/test_sweeps.py checks that
the committed preset is what the sweep file generates:

    python -m seqbench.sweep.hydra_preset sweeps/transformer_shape.yaml > conf/hparams_search/transformer_shape.yaml

A constant that names a config group (shape, recipe) becomes an override in the preset's defaults list, the other
constants its config keys, the searched parameters its sweeper's params in the file's order. The sweep file's
command (the agent's logger) is how W&B's runs log, not part of the space, and stays out.
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import yaml

from seqbench.config.compose import CONF_DIR
from seqbench.sweep import spec


def preset(path: str | Path) -> str:
    """The preset's YAML text for the grid sweep file at `path`."""
    config = spec.load(path)
    if config["method"] != "grid":
        raise spec.SweepError(f"{path}: method {config['method']}: a Hydra preset is generated from a grid")
    constants = spec.constants(config)
    groups = {name: value for name, value in constants.items() if "." not in name and (CONF_DIR / name).is_dir()}
    body: dict[str, Any] = {"defaults": [{f"override /{name}": value} for name, value in groups.items()]}
    for name, value in constants.items():
        if name not in groups:
            *parents, leaf = name.split(".")
            node = body
            for part in parents:
                node = node.setdefault(part, {})
            node[leaf] = value
    body["hydra"] = {"mode": "MULTIRUN", "sweeper": {"params": {
        name: ",".join(_hydra_value(value) for value in searched["values"])
        for name, searched in spec.searched(config).items()}}}
    source = f"sweeps/{Path(path).name}"
    return (f"# @package _global_\n"
            f"# Generated from {source} (the space and budget, and why, are there): edit that file, then\n"
            f"#   python -m seqbench.sweep.hydra_preset {source} > conf/hparams_search/{Path(path).name}\n"
            f"# Hydra's basic sweeper runs the same grid: python train.py -m hparams_search={Path(path).stem}\n"
            + yaml.safe_dump(body, sort_keys=False))


def _hydra_value(value: Any) -> str:
    """A value as Hydra's override grammar writes it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return "null" if value is None else str(value)


if __name__ == "__main__":
    sys.stdout.write(preset(sys.argv[1]))
