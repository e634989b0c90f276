"""Lightning callbacks and plugins: steady-state training throughput, atomic checkpoint writes."""
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
    """Tokens per second over training steps after `warmup_steps`, with validation time excluded.

    Counts non-pad target tokens (fairseq's "wps") and non-pad source+target tokens, per process; the totals
    reported are summed over processes by the caller's world size (every rank sees batches of the same budget).
    """

    def __init__(self, warmup_steps: int = 10):
        self.warmup_steps = warmup_steps
        self.target_tokens = self.all_tokens = self.steps = 0
        self.seconds = 0.0
        self._started: float | None = None
        self._step = 0

    def _now(self, pl_module) -> float:
        _synchronize(pl_module.device)
        return time.perf_counter()

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
        self._step += 1
        if self._step > self.warmup_steps and self._started is None:
            self._started = self._now(pl_module)

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        if self._started is None:
            return
        self.target_tokens += int((batch["tgt_out"] != PAD_ID).sum())
        self.all_tokens += int(batch["src_mask"].sum()) + int((batch["tgt_out"] != PAD_ID).sum())
        self.steps += 1
        now = self._now(pl_module)
        self.seconds += now - self._started
        self._started = now
        if self.seconds > 0:
            pl_module.log("train/tgt_tokens_per_s", self.target_tokens / self.seconds, on_step=True, on_epoch=False)

    def on_validation_start(self, trainer, pl_module):
        self._started = None  # the clock restarts at the next training batch

    def summary(self, world_size: int) -> dict:
        if not self.seconds:
            return {"measured_steps": 0}
        return {"target_tokens_per_s": world_size * self.target_tokens / self.seconds,
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
