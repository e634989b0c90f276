"""Training that starts from saved weights: fine-tuning, or a model continued on new data (`init_from=PATH`).

fairseq's `--finetune-from-model` / `--reset-optimizer --reset-lr-scheduler --reset-meters`, OpenNMT's
`-train_from -reset_optim all`, Joey NMT's `load_model` + `reset_*`: the weights of a run directory (its best
checkpoint), a checkpoint file or an exported model, checked against the model this config builds (architecture,
shapes and vocabulary: one `error:` line otherwise), then training from update 0. `init_reset` says what else starts
afresh: the optimizer's state (Adam's moments), the learning-rate schedule (its warm-up and decay) and the counters
(the update count, the epoch and the batch order). A checkpoint also carries the first two; an export carries weights
only, so it needs both reset. Keeping the counters is resuming, which `ckpt_path` does.

It applies once, at the start: a fine-tuning run that is stopped resumes from its own last.ckpt like any run.
"""
from __future__ import annotations

from pathlib import Path

import lightning as L
from omegaconf import DictConfig

from seqbench.common.errors import InputError
from seqbench.common.portable import relative
from seqbench.models.interface import Seq2Seq
from seqbench.rundir.checkpoints import check_fits, checkpoint_spec, model_weights, read_checkpoint
from seqbench.rundir.layout import RunDir
from seqbench.rundir.loading import find_root, load_safetensors, read_spec, weights_file

RESETS = ("optimizer", "schedule", "counters")


def check_resets(resets) -> tuple[str, ...]:
    """The `init_reset` list, checked: known names, and the counters among them (keeping them is a resume)."""
    resets = tuple(resets or ())
    unknown = [r for r in resets if r not in RESETS]
    if unknown:
        raise InputError(f"init_reset={list(resets)}: {', '.join(map(str, unknown))} is not one of "
                         f"{', '.join(RESETS)}")
    if "counters" not in resets:
        raise InputError(f"init_reset={list(resets)}: keeping the update count and batch order is resuming a run: "
                         "set ckpt_path=<file.ckpt> instead (or add counters)")
    return resets


def _source(cfg: DictConfig) -> tuple[Path, str]:
    path = Path(cfg.init_from)
    if not path.exists():
        raise InputError(f"init_from={path}: no such run directory, checkpoint or exported model")
    return weights_file(path, RunDir(find_root(path)), "best"), f"init_from={path}"


def record(cfg: DictConfig) -> dict:
    """results.json's train.init: where the weights came from (the file, the update it was written at) and what
    started afresh. Read without loading the weights, so a resumed fine-tuning run records it too."""
    source, origin = _source(cfg)
    step = None if source.suffix == ".safetensors" else read_checkpoint(source, origin, mmap=True).get("global_step")
    return {"from": str(cfg.init_from), "weights": relative(source, Path(cfg.paths.output_dir)),
            "source_update": step, "reset": list(check_resets(cfg.get("init_reset")))}


def initialise(cfg: DictConfig, model: Seq2Seq, spec: dict) -> L.Callback | None:
    """Loads `cfg.init_from`'s weights into `model` (built from `spec`) after checking they fit. Returns the callback
    that puts the checkpoint's optimizer or schedule state into the run's (KeepTrainingState), or None when both
    start afresh."""
    resets = check_resets(cfg.get("init_reset"))
    source, origin = _source(cfg)
    kept = [r for r in ("optimizer", "schedule") if r not in resets]
    if source.suffix == ".safetensors":
        if kept:
            raise InputError(f"{origin}: an exported model holds weights only; its {' and '.join(kept)} state "
                             "cannot be kept: add them to init_reset, or start from the run's checkpoint")
        found = read_spec(RunDir(find_root(source)).model_file)
        check_fits(model, model.state_dict(), origin, found, spec)  # the vocabulary; load_safetensors the shapes
        load_safetensors(model, source, spec)
        return None
    checkpoint = read_checkpoint(source, origin)
    weights = model_weights(checkpoint)
    check_fits(model, weights, origin, checkpoint_spec(checkpoint), spec)
    model.load_state_dict(weights)
    return KeepTrainingState(checkpoint, resets) if kept else None


class KeepTrainingState(L.Callback):
    """Puts the optimizer's and the schedule's state of the checkpoint a run starts from (init_from with them not in
    init_reset) into the run's own, once the Trainer has built them and before the first update."""

    def __init__(self, checkpoint: dict, resets: tuple[str, ...]):
        self.checkpoint, self.resets = checkpoint, resets

    def on_fit_start(self, trainer, pl_module):
        for optimizer in trainer.optimizers if "optimizer" not in self.resets else []:
            # the moments and step counts only: the hyperparameters (lr, betas, decay) stay this config's
            settings = [{k: v for k, v in group.items() if k != "params"} for group in optimizer.param_groups]
            optimizer.load_state_dict(self.checkpoint["optimizer_states"][trainer.optimizers.index(optimizer)])
            for group, own in zip(optimizer.param_groups, settings):
                group.update(own)
        for i, config in enumerate(trainer.lr_scheduler_configs if "schedule" not in self.resets else []):
            config.scheduler.load_state_dict(self.checkpoint["lr_schedulers"][i])
            for group, lr in zip(config.scheduler.optimizer.param_groups, config.scheduler.get_last_lr()):
                group["lr"] = lr  # the first update's lr is the schedule's, where it left off
        self.checkpoint = None  # its tensors are in the optimizer now; the rest is not needed again
