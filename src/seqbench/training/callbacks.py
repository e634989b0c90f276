"""Lightning callbacks and plugins: training throughput and progress, atomic checkpoint writes, EMA weights."""
from __future__ import annotations

import logging
import math
import os
import random
import time
from pathlib import Path

import lightning as L
import numpy as np
import psutil
import torch
from lightning.pytorch.callbacks import EMAWeightAveraging, RichModelSummary
from lightning.pytorch.plugins.io import TorchCheckpointIO
from lightning.pytorch.trainer.states import RunningStage, TrainerFn
from lightning.pytorch.utilities.exceptions import SIGTERMException
from lightning.pytorch.utilities.model_summary import get_human_readable_count

from seqbench.common.io import atomic_torch_save
from seqbench.common.lightning_adapter import drop_built_train_loader, set_logging_step
from seqbench.common.logs import show
from seqbench.common.tokens import PAD_ID
from seqbench.measure.speed import clock
from seqbench.scoring.evaluation import LENGTH_METRIC
from seqbench.training.status import Diverged

log = logging.getLogger(__name__)


class TrainingState(L.Callback):
    """A callback whose state describes the training run so far: saved in every checkpoint and restored (`restore`)
    only when training resumes from one. Lightning also restores callbacks when the final validate/test loads the best
    checkpoint, which would roll the whole run's record back to that checkpoint's."""

    def restore(self, state: dict) -> None:
        raise NotImplementedError

    def load_state_dict(self, state_dict: dict) -> None:
        pass  # see on_load_checkpoint: only there is it known whether training resumes

    def on_load_checkpoint(self, trainer, pl_module, checkpoint):
        state = checkpoint.get("callbacks", {}).get(self.state_key)
        if trainer.state.fn == "fit" and state is not None:
            self.restore(state)


class TrainThroughput(TrainingState):
    """Training speed and progress: steady-state tokens/s and steps/s, time per epoch, tokens seen.

    Every training step is timed from the end of the previous one (or the start of the epoch, or the end of a
    validation), with the device synchronised before each clock read, so validation time is never counted.
    Tokens/s and steps/s cover the steps after `warmup_steps` only (allocator, kernel selection and cache warm-up);
    tokens seen, training seconds and training FLOPs cover all steps, and are logged at every validation
    (val/tokens_seen, val/train_seconds, val/train_flops) so BLEU can be plotted against training time, data seen or
    compute. They are saved in checkpoints and
    restored when training resumes (TrainingState), so a resumed run continues its curve and its counters.

    Counts non-pad target tokens (fairseq's "wps") and non-pad source+target tokens, per process; the totals
    reported are summed over processes by the caller's world size (every rank sees batches of the same budget).
    Training FLOPs are analytic, as MFU's: 3x the model's forward FLOPs per target token (`flops_per_token`) at each
    batch's own mean source and target lengths, times its non-pad target tokens; a count of work, so the same on
    any machine.

    The machine's 1-minute load average (a read of /proc/loadavg: microseconds) is taken at every timed step and its
    maximum kept: a load well above the run's own threads means other work shared the CPU while it was timed, and
    the report says so (timings taken then are not the model's; quality under an update budget is unaffected). None
    where the OS has no load average (Windows).

    Kept rather than Lightning's ThroughputMonitor: it counts non-pad target tokens (fairseq's wps) and excludes
    validation and warm-up steps, and its counters continue through a resume; ThroughputMonitor counts samples and
    takes its FLOPs from measure_flops, whose counter misses CPU attention and the LSTM recurrence.
    """

    def __init__(self, warmup_steps: int = 10):
        self.warmup_steps = warmup_steps
        self.load_average_max: float | None = None  # of the timed steps (see above); restored from checkpoints
        # steady state (after warm-up), this process
        self.target_tokens = self.all_tokens = self.steps = 0
        self.seconds = 0.0
        # whole training, this process; restored from checkpoints
        self.tokens_seen = 0          # non-pad target tokens
        self.train_seconds = 0.0      # validation excluded
        self.train_cpu_seconds = 0.0  # the process's CPU time (all its threads) in the same steps: unlike the wall
                                      # clock, barely moved by other work sharing the machine
        self.train_flops = 0.0        # analytic training FLOPs (see above)
        self.epoch_times: list[float] = []  # seconds of each epoch this process ran from its first batch to its last
        self._sentences = self._src_tokens = self._tgt_tokens = 0  # for mean lengths (the FLOPs estimate)
        self._mark: float | None = None
        self._cpu_mark: float | None = None
        self._step = 0
        self._epoch_seconds, self._epoch_batches = 0.0, 0
        self.first_update_s: float | None = None  # process start -> end of its first update (startup cost)

    def _now(self, pl_module) -> float:
        return clock(pl_module.device)

    _COUNTERS = ("target_tokens", "all_tokens", "steps", "seconds", "tokens_seen", "train_seconds", "train_cpu_seconds",
                 "train_flops",
                 "_sentences", "_src_tokens", "_tgt_tokens", "_step", "_epoch_seconds", "_epoch_batches",
                 "load_average_max")

    def state_dict(self) -> dict:
        # every counter, so a run resumed mid-epoch reports what an uninterrupted one would (timings aside)
        return {**{name: getattr(self, name) for name in self._COUNTERS}, "epoch_times": list(self.epoch_times)}

    def restore(self, state: dict) -> None:
        for name in self._COUNTERS:
            if name in state:  # checkpoints of older versions saved the whole-training totals only
                setattr(self, name, state[name])
        self.epoch_times = list(state["epoch_times"])

    def on_train_start(self, trainer, pl_module):
        self._mark, self._cpu_mark = self._now(pl_module), time.process_time()  # resumed mid-epoch: no epoch start

    def on_train_epoch_start(self, trainer, pl_module):
        self._mark, self._cpu_mark = self._now(pl_module), time.process_time()
        self._epoch_seconds, self._epoch_batches = 0.0, 0

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        now = self._now(pl_module)
        seconds, self._mark = now - self._mark, now
        cpu_now = time.process_time()
        self.train_cpu_seconds += cpu_now - self._cpu_mark
        self._cpu_mark = cpu_now
        if self.first_update_s is None:  # what a user waits for: imports, data, model, the first step
            self.first_update_s = time.time() - psutil.Process().create_time()
        target = int((batch["tgt_out"] != PAD_ID).sum())
        source = int(batch["src_mask"].sum())
        self._step += 1
        self.tokens_seen += target
        self.train_seconds += seconds
        self._epoch_seconds += seconds
        self._epoch_batches += 1
        sentences = batch["src"].size(0)
        self.train_flops += 3 * pl_module.model.flops_per_token(source / sentences, target / sentences) * target
        self._sentences += sentences
        self._src_tokens += source
        self._tgt_tokens += target
        if self._step <= self.warmup_steps:
            return
        self.target_tokens += target
        self.all_tokens += source + target
        self.steps += 1
        self.seconds += seconds
        if hasattr(os, "getloadavg"):
            self.load_average_max = max(self.load_average_max or 0.0, os.getloadavg()[0])
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
            pl_module.log("val/train_cpu_seconds", float(world * self.train_cpu_seconds))
            pl_module.log("val/train_flops", float(world * self.train_flops))

    def on_validation_end(self, trainer, pl_module):
        if trainer.state.fn == "fit":
            self._mark, self._cpu_mark = self._now(pl_module), time.process_time()  # clocks restart after validation

    def summary(self, world_size: int) -> dict:
        out = {"first_update_s": self.first_update_s,
               "tokens_seen": world_size * self.tokens_seen, "train_seconds": self.train_seconds,
               "train_flops": world_size * self.train_flops, "train_cpu_seconds": world_size * self.train_cpu_seconds,
               "epoch_times_s": self.epoch_times,
               "time_per_epoch_s": sum(self.epoch_times) / len(self.epoch_times) if self.epoch_times else None,
               "mean_src_tokens": self._src_tokens / self._sentences if self._sentences else None,
               "mean_tgt_tokens": self._tgt_tokens / self._sentences if self._sentences else None}
        if not self.seconds:
            return {**out, "measured_steps": 0}
        return {**out, "target_tokens_per_s": world_size * self.target_tokens / self.seconds,
                "src_tgt_tokens_per_s": world_size * self.all_tokens / self.seconds,
                "steps_per_s": self.steps / self.seconds, "measured_steps": self.steps,
                "warmup_steps_excluded": self.warmup_steps, "load_average_max": self.load_average_max}


class ModelSummary(RichModelSummary):
    """Lightning's rich model summary with the model's analytic FLOPs in place of its FLOPs column. That column is
    filled by torch's FlopCounterMode from an example input: without one it prints 0, and with one it counts no
    attention on CPU (scaled_dot_product_attention has no formula there) and no nn.LSTM recurrence, so a Transformer
    or LSTM reads low. The analytic count (`flops_per_token`, at `example_tokens` source and target tokens) is the
    one MFU and results.json use."""

    def __init__(self, max_depth: int = 1, example_tokens: int = 20, **summarize_kwargs):
        super().__init__(max_depth, **summarize_kwargs)
        self.example_tokens = example_tokens
        self.forward_flops: tuple[int, float] | None = None

    def on_fit_start(self, trainer, pl_module):
        n = self.example_tokens
        self.forward_flops = (n, pl_module.model.flops_per_token(n, n))
        super().on_fit_start(trainer, pl_module)  # calls self.summarize

    def summarize(self, summary_data, total_parameters, trainable_parameters, model_size, total_training_modes,
                  total_flops, **summarize_kwargs):
        from rich.table import Table

        table = Table(header_style=summarize_kwargs.get("header_style", "bold magenta"))
        columns = [(name, values) for name, values in summary_data if name != "FLOPs"]
        for name, _ in columns:
            table.add_column(name, justify="right" if name.startswith("Params") else "left")
        for row in zip(*(values for _, values in columns)):
            table.add_row(*row)
        lines = [f"Trainable params: {get_human_readable_count(int(trainable_parameters))}",
                 f"Total params: {get_human_readable_count(int(total_parameters))}",
                 f"Total estimated model params size (MB): {model_size:,.3f}"]
        if self.forward_flops is not None:
            n, per_token = self.forward_flops
            lines.append(f"Forward FLOPs per target token (analytic, {n} source and {n} target tokens; training "
                         f"counts 3x): {get_human_readable_count(int(per_token))}")
        show(log, table, "\n".join(lines), width=120)  # on stdout and in the run's log


class AtomicCheckpointIO(TorchCheckpointIO):
    """Writes to a temporary file in the same folder, then renames: a killed run never leaves a truncated .ckpt."""

    def save_checkpoint(self, checkpoint, path, storage_options=None):
        atomic_torch_save(checkpoint, path)


class EMAWeights(EMAWeightAveraging):
    """Lightning's exponential moving average of the weights, evaluated on the averaged weights after training too.

    During fit Lightning swaps the average in for each validation (so val/nll, and the best checkpoint, are the
    average's) and saves it as each checkpoint's `state_dict`, with the raw weights in `current_model_state`. But
    outside fit its `on_load_checkpoint` restores `current_model_state`, the raw weights, and only validation swaps
    the average back in: `trainer.test(ckpt_path=best)` after `fit` tested the raw weights while `validate` scored
    the average. Here validate and test load a checkpoint's `state_dict` as any checkpoint, so both evaluate the
    average, as do `train=false ckpt_path=...` and translate; resuming training (fit) restores both as Lightning does.
    """

    def on_load_checkpoint(self, trainer, pl_module, checkpoint):
        if trainer.state.fn == "fit":
            super().on_load_checkpoint(trainer, pl_module, checkpoint)

    def on_validation_epoch_start(self, trainer, pl_module):
        if trainer.state.fn == "fit":
            super().on_validation_epoch_start(trainer, pl_module)

    def on_validation_epoch_end(self, trainer, pl_module):
        if trainer.state.fn == "fit":
            super().on_validation_epoch_end(trainer, pl_module)


def _rng_states() -> dict:
    """Every generator training draws from (dropout: torch; seed_everything also seeds Python and NumPy), as plain
    types and tensors so checkpoints load with torch.load(weights_only=True)."""
    numpy = np.random.get_state(legacy=False)
    states = {"torch": torch.get_rng_state(), "python": random.getstate(),
              "numpy": {"key": torch.from_numpy(numpy["state"]["key"].astype(np.int64)), "pos": numpy["state"]["pos"],
                        "has_gauss": numpy["has_gauss"], "gauss": numpy["gauss"]}}
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        states["cuda"] = torch.cuda.get_rng_state_all()
    return states


def _set_rng_states(states: dict) -> None:
    torch.set_rng_state(states["torch"])
    random.setstate(states["python"])
    numpy = states["numpy"]
    np.random.set_state(("MT19937", numpy["key"].numpy().astype(np.uint32), numpy["pos"], numpy["has_gauss"],
                         numpy["gauss"]))
    if "cuda" in states and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(states["cuda"])


class ResumeState(L.Callback):
    """What a run needs, beyond Lightning's checkpoint, to resume exactly where it stopped; and the checkpoint taken
    when it is stopped.

    Lightning checkpoints hold the model, optimizer, scheduler, loop counters and callback states, but not the
    position in the epoch's batch order nor the random generators. This callback saves both (the batches done in the
    current epoch, and the RNG states) and restores them: the datamodule's next train loader skips the batches
    done (`Seq2SeqDataModule.resume_training_at`), and the generators are set back as they were when the checkpoint
    was taken. With a fixed seed on one CPU process, a run stopped and resumed ends with the weights, losses and
    BLEU of an uninterrupted run.

    When training is stopped by SIGTERM/SIGINT (seqbench.training.status), Lightning ends at a batch boundary and this
    callback saves `checkpoint_path` (last.ckpt, what a rerun in the run directory resumes from). A stop during
    validation saves nothing: the previous last.ckpt stays, and the rerun repeats the batches since.
    """

    def __init__(self, checkpoint_path: str):
        self.checkpoint_path = checkpoint_path
        self.epoch = self.batches_done = 0
        self.resumed_at: list[int] = []  # the updates this training was resumed at, over all its processes
        self._rng_to_restore: dict | None = None
        self._resumed = False  # until the first epoch started after resuming

    def state_dict(self) -> dict:
        return {"epoch": self.epoch, "batches_done": self.batches_done, "resumed_at": list(self.resumed_at),
                "rng": _rng_states()}

    def load_state_dict(self, state_dict: dict) -> None:
        self.epoch, self.batches_done = state_dict["epoch"], state_dict["batches_done"]
        self.resumed_at = list(state_dict.get("resumed_at", []))  # absent from checkpoints older than it
        self._rng_to_restore = state_dict["rng"]

    def on_fit_start(self, trainer, pl_module):
        if self._rng_to_restore is None:
            return
        self._resumed = True
        self._replace_last_checkpoint_when_saving(trainer)
        resume = getattr(trainer.datamodule, "resume_training_at", None)
        if resume is not None:
            resume(self.epoch, self.batches_done)
            # A train loader Lightning built already (trainer.estimated_stepping_batches builds it and its iterator)
            # holds the epoch's start: drop it, so the fit loop builds the resumed one.
            drop_built_train_loader(trainer)

    def _replace_last_checkpoint_when_saving(self, trainer) -> None:
        """A resumed run's next last checkpoint replaces `checkpoint_path`, the one a later rerun resumes from.

        ModelCheckpoint overwrites last.ckpt only when its restored state says it wrote that file: one saved here
        at a SIGTERM (or in a run directory since moved) does not, and it wrote last-v1.ckpt, ... beside it instead,
        so a resumed run killed again resumed from the first stop, every update since lost."""
        for callback in trainer.checkpoint_callbacks:
            last = callback.format_checkpoint_name({}, callback.CHECKPOINT_NAME_LAST)
            if callback.save_last and Path(last) == Path(self.checkpoint_path):
                callback.last_model_path = self.checkpoint_path

    def on_train_start(self, trainer, pl_module):
        # The last hook before the first resumed update; nothing since the checkpoint drew from these generators in
        # the uninterrupted run, and loaders draw from their own (Seq2SeqDataModule), however many Lightning makes.
        if self._rng_to_restore is not None:
            _set_rng_states(self._rng_to_restore)
            self._rng_to_restore = None
        if self._resumed:
            self.resumed_at.append(trainer.global_step)  # restored by now (it is not yet in on_fit_start)

    def on_train_epoch_start(self, trainer, pl_module):
        if self._resumed and pl_module.automatic_optimization:
            # A restart from a checkpoint taken at an epoch's end (ModelCheckpoint saves in on_train_epoch_end) runs
            # that epoch's end again, and Lightning counts one more update for loggers there: every later row of
            # metrics.csv was one update late. With automatic optimization that count is the update count.
            set_logging_step(trainer, trainer.global_step)
        self._resumed = False
        self.epoch, self.batches_done = trainer.current_epoch, 0
        # Lightning gives samplers its count of epochs processed, which a run resumed from a checkpoint taken at an
        # epoch's end (ModelCheckpoint saves in on_train_epoch_end) counts twice: without this every later epoch
        # drew the next epoch's batch order. The epoch's iterator is made after this hook.
        batch_sampler = getattr(trainer.train_dataloader, "batch_sampler", None)
        if hasattr(batch_sampler, "set_epoch"):
            batch_sampler.set_epoch(trainer.current_epoch)

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        self.batches_done += 1

    def on_exception(self, trainer, pl_module, exception):
        # Lightning raises SIGTERMException at a batch boundary: the state is consistent there, and only there
        # (a real error may have left a half-done step; a stop mid-validation would resume a half-scored validation).
        if (isinstance(exception, SIGTERMException) and trainer.state.fn == TrainerFn.FITTING
                and trainer.state.stage == RunningStage.TRAINING):
            trainer.save_checkpoint(self.checkpoint_path)


class ValidateLastUpdate(L.Callback):
    """Validates the final weights of a run that reaches trainer.max_steps between two validations.

    Lightning validates at epoch ends (or every val_check_interval) and stops at max_steps without validating, so the
    best checkpoint could never be the last updates' weights: the quickstart's 2,500 updates end 256 updates into
    its fifth epoch, and its best-by-NLL checkpoint was then update 2,244 at 66.0 test BLEU while the final weights
    scored 75.9. Asking the loop to stop at the last update makes Lightning run its validation there, as it does
    for an EarlyStopping or max_time stop (and does nothing more when that update ends an epoch anyway)."""

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        if 0 < trainer.max_steps <= trainer.global_step:
            trainer.should_stop = True


class StopOnNonFiniteLoss(L.Callback):
    """Stops training with one line naming the update when the loss is NaN or infinite, before that update's
    backward pass and optimizer step: the weights and the last checkpoint written stay those of the last good
    update. All processes agree before stopping, so DDP ranks do not wait on each other."""

    def on_before_backward(self, trainer, pl_module, loss):
        bad = not math.isfinite(float(loss.detach()))
        if trainer.strategy.reduce_boolean_decision(bad, all=False):
            folder = Path(trainer.default_root_dir) / "checkpoints"
            kept = (f"the checkpoints before it are kept in {folder}" if list(folder.glob("*.ckpt"))
                    else "no checkpoint was written before it")
            raise Diverged(f"training diverged: the loss is {float(loss.detach())} at update "
                           f"{trainer.global_step + 1} (epoch {trainer.current_epoch}); {kept}; lower optimizer.lr "
                           f"or raise scheduler.warmup_steps")


class LearningCurve(TrainingState):
    """The validation points of training, whatever the logger: after each validation during fit, the step, the
    validation BLEU and NLL, BLEU by source length (`val/bleu_len_<bucket>`: whether short sentences have levelled
    off is a question of the budget, not of the overall score) and the training progress (`val/tokens_seen`,
    `val/train_seconds`, `val/train_flops` from TrainThroughput). run.py stores them in results.json ("curve") for the
    report's learning-curve plot and the --curve headline. Saved in checkpoints and restored only when training
    resumes (TrainingState).
    """

    KEYS = {"bleu": "val/bleu", "nll": "val/nll", "tokens_seen": "val/tokens_seen",
            "train_seconds": "val/train_seconds", "train_cpu_seconds": "val/train_cpu_seconds",
            "train_flops": "val/train_flops"}
    BY_LENGTH = f"val/{LENGTH_METRIC}_"

    def __init__(self):
        self.points: list[dict] = []

    def state_dict(self) -> dict:
        return {"points": list(self.points)}

    def restore(self, state: dict) -> None:
        self.points = list(state["points"])

    def on_validation_end(self, trainer, pl_module):
        if trainer.state.fn != "fit" or trainer.sanity_checking:
            return
        metrics = trainer.callback_metrics
        point = {"step": trainer.global_step,
                 **{name: float(metrics[key]) for name, key in self.KEYS.items() if key in metrics}}
        by_length = {key[len(self.BY_LENGTH):]: float(value) for key, value in metrics.items()
                     if key.startswith(self.BY_LENGTH)}
        if by_length:
            point["bleu_by_length"] = by_length
        self.points.append(point)
