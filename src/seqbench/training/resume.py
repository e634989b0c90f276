"""Which run a rerun of a run directory is: the checkpoint it resumes from, whether it completed before with this
config (and so stands), and the config as records keep it, the identity a rerun is compared by."""
from __future__ import annotations

import json
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from seqbench.common.errors import InputError
from seqbench.common.portable import located
from seqbench.config.environment import check_checkpoint_file
from seqbench.rundir.layout import RunDir
from seqbench.rundir.results import SCORED, read_results


def resume_checkpoint(cfg: DictConfig, run_dir: Path) -> str | None:
    """An explicit ckpt_path wins; otherwise a run directory that already has last.ckpt is resumed."""
    if cfg.get("ckpt_path"):
        check_checkpoint_file(cfg.ckpt_path)
        return str(cfg.ckpt_path)
    last = RunDir(run_dir).last_checkpoint
    if not last.is_file():
        return None
    check_checkpoint_file(last, None, "delete it to start this run afresh, or set ckpt_path=<file.ckpt>")
    return str(last)


def completed_before(cfg: DictConfig, run_dir: Path) -> dict | None:
    """The record of this run directory when it completed before with this config (locations aside, `located`): a
    multirun launched again to finish its remaining jobs neither retrains, re-evaluates nor re-measures (and so
    overwrites) the finished ones, also where its committed records were restored into another directory.
    A run stopped by its wall-clock guard did not get its budget and resumes; any changed setting (a longer budget,
    other decoding, `train=false ckpt_path=...`) runs as asked."""
    if not RunDir(run_dir).results.is_file():
        return None
    try:
        recorded = read_results(run_dir)
    except InputError:  # another schema version or an unreadable record: the run decides afresh
        return None
    config = json.loads(json.dumps(OmegaConf.to_container(cfg, resolve=True), default=str))  # as results.json has it
    if recorded.get("status") not in SCORED or located(recorded.get("config")) != located(config):
        return None
    if (recorded.get("train") or {}).get("stopped_by") == "max_time":
        return None
    return recorded


def recorded_config(cfg: DictConfig) -> dict:
    """The resolved config as records keep it: its locations written `${paths.<key>}` (seqbench.common.portable), so
    a record names no folder of the machine that made it."""
    return located(OmegaConf.to_container(cfg, resolve=True))
