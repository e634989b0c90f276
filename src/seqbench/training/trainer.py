"""The run's Lightning Trainer: built from the config's trainer, loggers and callbacks with the recorders, and read
after fit (the best checkpoint, what stopped training, the passes over the data)."""
from __future__ import annotations

from hydra.utils import instantiate
from lightning.pytorch.callbacks import EarlyStopping, LearningRateMonitor, ProgressBar, Timer
from lightning.pytorch.callbacks.early_stopping import EarlyStoppingReason
from omegaconf import DictConfig

from seqbench.analysis.curves import LATE_FRACTION
from seqbench.analysis.plateau import plateau_record
from seqbench.loggers.csv_logger import ResumableCSVLogger
from seqbench.loggers.wandb_logger import WandbLogger
from seqbench.training.callbacks import AtomicCheckpointIO, ResumeState
from seqbench.training.measurements import Recorders
from seqbench.training.plateau import PlateauStopping


def build_trainer(cfg: DictConfig, recorders: Recorders, resumed_at: int | None, extra_callbacks=()):
    """The Lightning Trainer with the config's loggers and callbacks, the recorders and `extra_callbacks` (the run's
    own, such as init_from's KeepTrainingState)."""
    loggers = [instantiate(c) for c in cfg.get("logger", {}).values() if c is not None] or False
    for logger in loggers or []:  # a resumed run continues its metrics.csv and its W&B run
        if isinstance(logger, (ResumableCSVLogger, WandbLogger)) and resumed_at is not None:
            logger.resume_from(resumed_at)
    callbacks = [recorders.throughput, recorders.curve, *extra_callbacks,
                 *(instantiate(c) for c in cfg.get("callbacks", {}).values() if c is not None)]
    if not loggers:  # logger=none: LearningRateMonitor refuses a Trainer without a logger; there is nothing to log to
        callbacks = [c for c in callbacks if not isinstance(c, LearningRateMonitor)]
    # callbacks.progress_bar=null means no bar (the progress log's lines remain), not Lightning's default tqdm one
    bar = any(isinstance(c, ProgressBar) for c in callbacks)
    return instantiate(cfg.trainer, callbacks=callbacks, logger=loggers, plugins=[AtomicCheckpointIO()],
                       enable_progress_bar=bar)


def best_checkpoint(trainer) -> str | None:
    """The checkpoint callback's best checkpoint, or None without one."""
    checkpoint = trainer.checkpoint_callback
    return checkpoint.best_model_path if checkpoint is not None and checkpoint.best_model_path else None


def stopped_by(trainer) -> str:
    """What ended training: "plateau" (budget=plateau's rule: the curve levelled off), "max_steps" (the update
    budget, or the plateau budget's cap), "early_stopping", "max_time" (the wall-clock guard: the run did not get its
    budget, and the report says so) or "max_epochs"."""
    if _stopped(plateau_rule(trainer)):  # first: the rule may decide at the cap's own validation
        return "plateau"
    if 0 < trainer.max_steps <= trainer.global_step:
        return "max_steps"
    if any(isinstance(c, EarlyStopping) and _stopped(c) for c in trainer.callbacks):
        return "early_stopping"
    timer = next((c for c in trainer.callbacks if isinstance(c, Timer)), None)
    remaining = timer.time_remaining() if timer is not None else None  # None: no duration, nothing to run out
    if remaining is not None and remaining <= 0:
        return "max_time"
    return "max_epochs"


def plateau_rule(trainer) -> PlateauStopping | None:
    """The run's plateau rule (budget=plateau), or None when it trains to a fixed budget."""
    return next((c for c in trainer.callbacks if isinstance(c, PlateauStopping)), None)


def plateau_fields(trainer, curve: list[dict], target: float | None) -> dict:
    """results.json's train.plateau (seqbench.analysis.plateau.plateau_record: the curve's level and what reaching
    90/95/99% of it and `target` cost; its window is the plateau rule's, else the last quarter), train.plateau_rule
    (the rule's settings, null for a fixed budget) and train.final_lr_factor (the lr at the end as a share of the
    peak: a schedule that took it to zero flattened the curve itself)."""
    rule = plateau_rule(trainer)
    optimizer = trainer.optimizers[0] if trainer.optimizers else None
    group = optimizer.param_groups[0] if optimizer is not None else {}
    return {"plateau": plateau_record(curve, rule.window if rule else LATE_FRACTION, target),
            "plateau_rule": None if rule is None else {"monitor": rule.monitor, "window": rule.window,
                                                       "min_gain": rule.min_gain, "min_steps": rule.min_steps},
            "final_lr_factor": group["lr"] / group["initial_lr"] if group.get("initial_lr") else None}


def _stopped(callback: EarlyStopping | None) -> bool:
    return callback is not None and callback.stopping_reason != EarlyStoppingReason.NOT_STOPPED


def resumed_updates(trainer) -> list[int]:
    """The updates at which this training was resumed from a checkpoint (by a rerun or a promoted search job), in
    order; empty for a run trained in one go."""
    state = next((c for c in trainer.callbacks if isinstance(c, ResumeState)), None)
    return list(state.resumed_at) if state is not None else []


def epochs_trained(trainer) -> float | None:
    """Updates / batches per epoch: the passes over the training data, fractional when training stopped mid-epoch.
    (Lightning's current_epoch is not it: a run resumed after its last update keeps the checkpoint's epoch.)"""
    batches = trainer.num_training_batches
    if not batches or batches == float("inf"):
        return None
    return trainer.global_step * trainer.accumulate_grad_batches / batches
