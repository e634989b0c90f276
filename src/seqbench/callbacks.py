"""Lightning callbacks and plugins: training throughput and progress, atomic checkpoint writes."""
from __future__ import annotations

import os
import time
from pathlib import Path

import lightning as L
import torch
from lightning.pytorch.plugins.io import TorchCheckpointIO

from seqbench.data.tokenizer import PAD_ID


def _synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


class TrainThroughput(L.Callback):
    """Training speed and progress: steady-state tokens/s and steps/s, time per epoch, tokens seen.

    Every training step is timed from the end of the previous one (or the start of the epoch, or the end of a
    validation), with the device synchronised before each clock read, so validation time is never counted.
    Tokens/s and steps/s cover the steps after `warmup_steps` only (allocator, kernel selection and cache warm-up);
    tokens seen and training seconds cover all steps, and are logged at every validation (val/tokens_seen,
    val/train_seconds) so BLEU can be plotted against training time or data seen. They are saved in checkpoints,
    so a resumed run continues its curve.

    Counts non-pad target tokens (fairseq's "wps") and non-pad source+target tokens, per process; the totals
    reported are summed over processes by the caller's world size (every rank sees batches of the same budget).
    """

    def __init__(self, warmup_steps: int = 10):
        self.warmup_steps = warmup_steps
        # steady state (after warm-up), this process
        self.target_tokens = self.all_tokens = self.steps = 0
        self.seconds = 0.0
        # whole training, this process; restored from checkpoints
        self.tokens_seen = 0          # non-pad target tokens
        self.train_seconds = 0.0      # validation excluded
        self.epoch_times: list[float] = []  # seconds of each epoch this process ran from its first batch to its last
        self._sentences = self._src_tokens = self._tgt_tokens = 0  # for mean lengths (the FLOPs estimate)
        self._mark: float | None = None
        self._step = 0
        self._epoch_seconds, self._epoch_batches = 0.0, 0

    def _now(self, pl_module) -> float:
        _synchronize(pl_module.device)
        return time.perf_counter()

    def state_dict(self) -> dict:
        return {"tokens_seen": self.tokens_seen, "train_seconds": self.train_seconds,
                "epoch_times": list(self.epoch_times)}

    def load_state_dict(self, state_dict: dict) -> None:
        self.tokens_seen = state_dict["tokens_seen"]
        self.train_seconds = state_dict["train_seconds"]
        self.epoch_times = list(state_dict["epoch_times"])

    def on_train_epoch_start(self, trainer, pl_module):
        self._mark = self._now(pl_module)
        self._epoch_seconds, self._epoch_batches = 0.0, 0

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        now = self._now(pl_module)
        seconds, self._mark = now - self._mark, now
        target = int((batch["tgt_out"] != PAD_ID).sum())
        source = int(batch["src_mask"].sum())
        self._step += 1
        self.tokens_seen += target
        self.train_seconds += seconds
        self._epoch_seconds += seconds
        self._epoch_batches += 1
        self._sentences += batch["src"].size(0)
        self._src_tokens += source
        self._tgt_tokens += target
        if self._step <= self.warmup_steps:
            return
        self.target_tokens += target
        self.all_tokens += source + target
        self.steps += 1
        self.seconds += seconds
        pl_module.log("train/tgt_tokens_per_s", self.target_tokens / self.seconds, on_step=True, on_epoch=False)

    def on_train_epoch_end(self, trainer, pl_module):
        # Only epochs run from their first batch to their last: not one cut by max_steps, nor one resumed mid-way.
        if self._epoch_batches and self._epoch_batches == trainer.num_training_batches:
            self.epoch_times.append(self._epoch_seconds)
            pl_module.log("train/epoch_seconds", self._epoch_seconds, on_step=False, on_epoch=True)

    def on_validation_epoch_end(self, trainer, pl_module):
        if trainer.state.fn == "fit" and not trainer.sanity_checking:
            world = trainer.world_size
            pl_module.log("val/tokens_seen", float(world * self.tokens_seen))
            pl_module.log("val/train_seconds", self.train_seconds)

    def on_validation_end(self, trainer, pl_module):
        if trainer.state.fn == "fit":
            self._mark = self._now(pl_module)  # the clock restarts after validation

    def summary(self, world_size: int) -> dict:
        out = {"tokens_seen": world_size * self.tokens_seen, "train_seconds": self.train_seconds,
               "epoch_times_s": self.epoch_times,
               "time_per_epoch_s": sum(self.epoch_times) / len(self.epoch_times) if self.epoch_times else None,
               "mean_src_tokens": self._src_tokens / self._sentences if self._sentences else None,
               "mean_tgt_tokens": self._tgt_tokens / self._sentences if self._sentences else None}
        if not self.seconds:
            return {**out, "measured_steps": 0}
        return {**out, "target_tokens_per_s": world_size * self.target_tokens / self.seconds,
                "src_tgt_tokens_per_s": world_size * self.all_tokens / self.seconds,
                "steps_per_s": self.steps / self.seconds, "measured_steps": self.steps,
                "warmup_steps_excluded": self.warmup_steps}


class AtomicCheckpointIO(TorchCheckpointIO):
    """Writes to a temporary file in the same folder, then renames: a killed run never leaves a truncated .ckpt."""

    def save_checkpoint(self, checkpoint, path, storage_options=None):
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
        torch.save(checkpoint, tmp)
        os.replace(tmp, path)


class LearningCurve(L.Callback):
    """The validation points of training, whatever the logger: after each validation during fit, the step, the
    validation BLEU and NLL, and the training progress (`val/tokens_seen`, `val/train_seconds` from
    TrainThroughput). run.py stores them in results.json ("curve") for the report's learning-curve plot.

    Saved in checkpoints and restored only when training resumes: Lightning also restores callbacks when the final
    validate/test loads the best checkpoint, which would cut the curve back to that checkpoint's step.
    """

    KEYS = {"bleu": "val/bleu", "nll": "val/nll", "tokens_seen": "val/tokens_seen", "train_seconds": "val/train_seconds"}

    def __init__(self):
        self.points: list[dict] = []

    def state_dict(self) -> dict:
        return {"points": list(self.points)}

    def on_load_checkpoint(self, trainer, pl_module, checkpoint):
        state = checkpoint.get("callbacks", {}).get(self.state_key)
        if trainer.state.fn == "fit" and state is not None:
            self.points = list(state["points"])

    def on_validation_end(self, trainer, pl_module):
        if trainer.state.fn != "fit" or trainer.sanity_checking:
            return
        metrics = trainer.callback_metrics
        self.points.append({"step": trainer.global_step,
                            **{name: float(metrics[key]) for name, key in self.KEYS.items() if key in metrics}})
