"""What a person watching a run reads: a rich bar on a terminal, plain log lines everywhere else.

A cluster job's output is a file: a bar there is either nothing or control characters, so the run's log (train.log,
and the console when no bar is drawn) gets fairseq's `--log-interval` lines instead: one every `every_n_steps`
updates or `every_seconds` seconds, whichever comes first, and one per validation.
"""
from __future__ import annotations

import logging
import time
from datetime import timedelta

import lightning as L
from lightning.pytorch.callbacks import RichProgressBar

from seqbench.common.logs import quiet
from seqbench.training.callbacks import LearningCurve, TrainThroughput

log = logging.getLogger(__name__)


class UpdatesProgressBar(RichProgressBar):
    """Lightning's rich bar, drawn on a terminal only (and not with quiet=true). Its training bar counts updates
    toward trainer.max_steps when that is the budget, instead of the batches of an epoch of max_epochs."""

    def setup(self, trainer, pl_module, stage):
        from rich.console import Console

        if quiet() or not Console().is_terminal:  # rich would print the bar's last frame into the log
            self.disable()
        super().setup(trainer, pl_module, stage)

    @property
    def total_train_batches(self) -> int | float:
        return self.trainer.max_steps if self.trainer.max_steps > 0 else super().total_train_batches

    def _get_train_description(self, current_epoch: int) -> str:
        if self.trainer.max_steps > 0:
            return f"Updates (epoch {current_epoch})"
        return super()._get_train_description(current_epoch)

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        super().on_train_batch_end(trainer, pl_module, outputs, batch, batch_idx)
        if trainer.max_steps > 0:
            self._update(self.train_progress_bar_id, trainer.global_step)


class ProgressLog(L.Callback):
    """fairseq-style progress lines: update/max_steps, epoch, loss, lr, target tokens/s since the last line, elapsed
    and estimated time left; and per validation BLEU and NLL with the best so far. They always go to the run's log;
    to the console only when no progress bar is drawn there."""

    def __init__(self, every_n_steps: int | None = 100, every_seconds: float | None = 60.0):
        self.every_n_steps = every_n_steps
        self.every_seconds = every_seconds
        self._started = self._last_time = 0.0
        self._first_step = self._last_step = 0
        self._last_tokens = self._last_train_seconds = 0.0

    def on_train_start(self, trainer, pl_module):
        self._started = self._last_time = time.monotonic()
        self._first_step = self._last_step = trainer.global_step
        self._last_tokens, self._last_train_seconds = _throughput_counters(trainer)

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        step, now = trainer.global_step, time.monotonic()
        if step == self._last_step or not trainer.is_global_zero:  # accumulating gradients; one rank speaks
            return
        by_steps = bool(self.every_n_steps) and step % self.every_n_steps == 0
        by_time = bool(self.every_seconds) and now - self._last_time >= self.every_seconds
        if by_steps or by_time:
            log.info(self._update_line(trainer, step, now), extra=_extra(trainer))
            self._last_time, self._last_step = now, step

    def on_validation_end(self, trainer, pl_module):
        if trainer.state.fn != "fit" or trainer.sanity_checking or not trainer.is_global_zero:
            return
        log.info(validation_line(trainer), extra=_extra(trainer))

    def _update_line(self, trainer, step: int, now: float) -> str:
        metrics = trainer.callback_metrics
        parts = [f"update {step:,}" + (f"/{trainer.max_steps:,}" if trainer.max_steps > 0 else ""),
                 f"epoch {trainer.current_epoch}"]
        if "train/loss" in metrics:
            parts.append(f"loss {float(metrics['train/loss']):.3f}")
        if trainer.optimizers:
            parts.append(f"lr {trainer.optimizers[0].param_groups[0]['lr']:.3g}")
        tokens, seconds = _throughput_counters(trainer)
        if seconds > self._last_train_seconds:
            rate = (tokens - self._last_tokens) / (seconds - self._last_train_seconds)
            parts.append(f"{rate:,.0f} target tokens/s")
        self._last_tokens, self._last_train_seconds = tokens, seconds
        elapsed = now - self._started
        parts.append(f"elapsed {_clock(elapsed)}")
        total = _total_updates(trainer)
        if total and step > self._first_step:
            parts.append(f"left ~{_clock(elapsed / (step - self._first_step) * max(total - step, 0))}")
        return ", ".join(parts)


def validation_line(trainer) -> str:
    """`validation at update 400: BLEU 12.34 (best 12.34), NLL 3.210 (best 3.100)`; best over the learning curve."""
    metrics = trainer.callback_metrics
    curve = next((c for c in trainer.callbacks if isinstance(c, LearningCurve)), None)
    points = curve.points if curve is not None else []
    parts = []
    for name, key, fmt, best in (("BLEU", "val/bleu", ".2f", max), ("NLL", "val/nll", ".3f", min)):
        if key in metrics:
            value = float(metrics[key])
            so_far = [p[name.lower()] for p in points if name.lower() in p] + [value]
            parts.append(f"{name} {value:{fmt}} (best {best(so_far):{fmt}})")
    return f"validation at update {trainer.global_step:,}: " + ", ".join(parts or ["no metrics"])


def _extra(trainer) -> dict:
    """Console or not: a drawn bar shows the same there (seqbench.common.logs.ConsoleRecords)."""
    bar = trainer.progress_bar_callback
    return {"console": bar is None or not bar.is_enabled}


def _throughput_counters(trainer) -> tuple[float, float]:
    """(non-pad target tokens seen, training seconds) so far, all processes, from the run's TrainThroughput."""
    meter = next((c for c in trainer.callbacks if isinstance(c, TrainThroughput)), None)
    return (0.0, 0.0) if meter is None else (meter.tokens_seen * trainer.world_size, meter.train_seconds)


def _total_updates(trainer) -> int | None:
    """The updates training is set to reach: max_steps, else max_epochs' worth; None when neither bounds it."""
    if trainer.max_steps > 0:
        return trainer.max_steps
    batches = trainer.num_training_batches
    if trainer.max_epochs is None or trainer.max_epochs < 0 or batches in (0, float("inf")):
        return None
    return int(trainer.max_epochs * batches // trainer.accumulate_grad_batches)


def _clock(seconds: float) -> str:
    return str(timedelta(seconds=round(seconds)))
