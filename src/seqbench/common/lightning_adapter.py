"""seqbench's adapter to Lightning's internals: the one module that reads or sets Lightning attributes outside its
public API. Each function below is pinned by a test in tests/test_framework_adapters.py that fails, naming this module,
when a Lightning upgrade removes or changes what it touches (issue 52). Everything else seqbench does with Lightning
goes through the public API (the CSV logger's resume, for one, calls only its experiment writer's `log_metrics` and
`save`; the model summary overrides the public `summarize`).

- The fit loop's train loader (`drop_built_train_loader`): Lightning has no public way to make the fit loop build its
  train loader again once built; seqbench.training.callbacks.ResumeState needs that on resuming mid-epoch.
- The step loggers are given (`set_logging_step`): Lightning logs at its count of batches that stepped, not at
  `global_step`, and counts one too many when a run resumes from a checkpoint taken at an epoch's end; ResumeState
  puts it back.
- The state of Lightning's WandbLogger (`wandb_init_args`, `set_wandb_run_id`, `wandb_run`, `set_wandb_run`,
  `reattaches_wandb_run`): seqbench.loggers.wandb_logger.WandbLogger subclasses it to start the W&B run itself (with a
  timeout and its own mode rules) and to continue an earlier run, for which Lightning offers only constructor
  arguments. The subclass also relies on how Lightning's `experiment` and `version` read that state (a run set here is
  the one `experiment` returns and `version` names; a pickled logger re-attaches); the same tests pin that.

In common rather than in the layers that call it (training, loggers), so that any layer may use it.
"""
from __future__ import annotations

from typing import Any


def drop_built_train_loader(trainer) -> None:
    """Drops the train loader the fit loop has built, if any, so that it builds it again (from the datamodule) when the
    epoch starts: clears the fit loop's `_combined_loader`."""
    if getattr(trainer.fit_loop, "_combined_loader", None) is not None:
        trainer.fit_loop._combined_loader = None


def set_logging_step(trainer, step: int) -> None:
    """Makes the step Lightning hands loggers (the training epoch loop's `_batches_that_stepped`) `step` from now on."""
    trainer.fit_loop.epoch_loop._batches_that_stepped = step


def wandb_init_args(logger) -> dict[str, Any]:
    """The keyword arguments Lightning's WandbLogger passes to `wandb.init` (its `_wandb_init`): what the constructor
    was given, with Lightning's defaults (among them `resume="allow"`). The dict itself, not a copy."""
    return logger._wandb_init


def set_wandb_run_id(logger, run_id: str) -> None:
    """Makes a WandbLogger whose run has not started yet start (or continue) the W&B run `run_id`, as the constructor's
    `id` argument would have: sets `_wandb_init["id"]` and `_id` (what `version` returns before the run starts)."""
    logger._wandb_init["id"] = logger._id = run_id


def wandb_run(logger):
    """The W&B run a WandbLogger has started or been given (its `_experiment`); None before that."""
    return logger._experiment


def set_wandb_run(logger, run) -> None:
    """Gives a WandbLogger the run it logs to, as the constructor's `experiment` argument would have (`_experiment`):
    Lightning's `experiment` then returns it without starting another."""
    logger._experiment = run


def reattaches_wandb_run(logger) -> bool:
    """Whether a WandbLogger was unpickled in a spawned DDP worker from a logger whose run had started: Lightning left
    it the run's `_attach_id`, and its `experiment` attaches to that run rather than starting one."""
    return getattr(logger, "_attach_id", None) is not None
