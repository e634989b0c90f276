"""What `python train.py` does once Hydra has composed the config: instantiate, fit, evaluate, record."""
from __future__ import annotations

import json
import logging
import os
import time
import warnings
from dataclasses import dataclass, replace
from pathlib import Path

import lightning as L
import torch
from hydra.utils import instantiate
from lightning.pytorch.callbacks import EarlyStopping, LearningRateMonitor, Timer
from lightning.pytorch.callbacks.early_stopping import EarlyStoppingReason
from omegaconf import DictConfig, OmegaConf

from seqbench.common.errors import DiskFullError, InputError, disk_full, one_line
from seqbench.common.portable import located, relative
from seqbench.config.against_data import check_against_data
from seqbench.config.checks import validate
from seqbench.config.environment import check_checkpoint_file
from seqbench.decoding.attention import attention_examples, save_attention
from seqbench.loggers.csv_logger import ResumableCSVLogger
from seqbench.loggers.media import log_run_summary
from seqbench.loggers.wandb_logger import WandbLogger, finish_run
from seqbench.measure import peaks
from seqbench.measure.memory import peak_memory, reset_peak_memory
from seqbench.measure.speed import decode_speed, test_batches
from seqbench.models.interface import build_model
from seqbench.models.linear import use_onednn
from seqbench.models.sizing import fit_to_budget
from seqbench.rundir.checkpoints import check_checkpoint, read_checkpoint
from seqbench.rundir.layout import RunDir
from seqbench.rundir.loading import model_spec, save_run_files
from seqbench.rundir.lock import run_directory_lock
from seqbench.rundir.results import completed_record, read_results, summary_metrics, write_results, write_status
from seqbench.training.callbacks import AtomicCheckpointIO, LearningCurve, TrainThroughput
from seqbench.training.status import Diverged, Interrupted, SignalGuard, guarded

# Lightning warns that a run resumed mid-epoch repeats batches unless its DataLoader is stateful; seqbench's batch
# sampler resumes at the right batch instead (seqbench.training.callbacks.ResumeState), so the warning would be wrong
# here.
warnings.filterwarnings("ignore", message="You're resuming from a checkpoint that ended before the epoch ended")
log = logging.getLogger(__name__)


def _resume_checkpoint(cfg: DictConfig, run_dir: Path) -> str | None:
    """An explicit ckpt_path wins; otherwise a run directory that already has last.ckpt is resumed."""
    if cfg.get("ckpt_path"):
        check_checkpoint_file(cfg.ckpt_path)
        return str(cfg.ckpt_path)
    last = RunDir(run_dir).last_checkpoint
    if not last.is_file():
        return None
    check_checkpoint_file(last, None, "delete it to start this run afresh, or set ckpt_path=<file.ckpt>")
    return str(last)


def model_config(cfg: DictConfig, src_vocab_size: int, tgt_vocab_size: int) -> dict:
    """The resolved model config, resized to `compare.param_budget` parameters when one is set."""
    model_cfg = OmegaConf.to_container(cfg.model, resolve=True)
    budget = cfg.get("compare", {}).get("param_budget")
    return fit_to_budget(model_cfg, budget, src_vocab_size, tgt_vocab_size) if budget else model_cfg


def measure(cfg: DictConfig, trainer, module, datamodule, throughput: TrainThroughput | None) -> dict:
    """Peak memory, decode speed (greedy and the configured beam), attention maps and MFU against the machine's
    cached matmul peak.

    Runs after the test pass on the trainer's device with its autocast: Lightning has moved the model back to the
    CPU by then. Memory is read first: the decode benchmark adds nothing a test pass did not need, but the matmul
    peak's large matrices would set the CUDA maximum.
    """
    device, context = trainer.strategy.root_device, trainer.precision_plugin.forward_context
    model = module.model.to(device)
    out = {"memory": peak_memory(device)}
    if cfg.get("test", True):
        test_split = datamodule.evaluation("test")
        batches = test_batches(test_split, cfg.measure.decode_sentences)
        # Every hypothesis exactly decode_tokens long: the work does not depend on what the model has learned.
        beam = replace(module.decoding, min_len=cfg.measure.decode_tokens, max_len=cfg.measure.decode_tokens)
        warmup = cfg.measure.decode_warmup_batches
        greedy = decode_speed(model, batches, replace(beam, beam_size=1), device, warmup, context)
        out["decoding"] = {"greedy": greedy, "beam": greedy if beam.beam_size == 1 else
                           decode_speed(model, batches, beam, device, warmup, context)}
        if cfg.measure.attention_examples and trainer.is_global_zero:
            examples = attention_examples(model, test_split, module.decoding, device, cfg.measure.attention_examples,
                                          context)
            save_attention(RunDir(cfg.paths.output_dir).attention, cfg.compare.label, cfg.model.name, examples)
    summary = throughput.summary(trainer.world_size) if throughput else {}
    if summary.get("measured_steps"):
        # The machine's cached peak (measured now only the first time), so MFU compares across runs on one machine.
        cached = peaks.cached_peaks(device, cfg.paths.cache_dir, cfg.measure.peak_flops_seconds)
        dtype = peaks.training_dtype(trainer.precision)
        datasheet = peaks.datasheet_peak(peaks.device_name(device), dtype) if device.type == "cuda" else None
        out["flops"] = peaks.training_flops(model, summary["mean_src_tokens"], summary["mean_tgt_tokens"],
                                            summary["target_tokens_per_s"], cached, dtype, datasheet)
    return out


def _log_summary(trainer, results: dict) -> None:
    """The run's headline numbers (seqbench.rundir.results.METRICS), sent to the loggers as one final row."""
    metrics = summary_metrics(results)
    for logger in trainer.loggers:
        logger.log_metrics(metrics, step=trainer.global_step)
        logger.save()


def run(cfg: DictConfig) -> dict:
    """One job. It leaves results.json with its status ("completed", or "interrupted", "diverged", "failed" and the
    reason) and re-raises what stopped it (train.py turns that into the exit status). Its W&B run, if any, ends with
    it (marked failed if the job raised), so every job of a multirun gets a run of its own."""
    try:
        results = _recorded_run(cfg)
    except BaseException:
        finish_run(exit_code=1)
        raise
    finish_run(exit_code=0)
    return results


def _recorded_run(cfg: DictConfig) -> dict:
    started = time.perf_counter()
    validate(cfg, environment=True)  # devices, writable directories too: before anything is built or written
    run_dir = Path(cfg.paths.output_dir)
    with run_directory_lock(run_dir):  # a second run in this directory refuses now, before it touches anything
        return _locked_run(cfg, run_dir, started)


def _locked_run(cfg: DictConfig, run_dir: Path, started: float) -> dict:
    if (recorded := _completed_before(cfg, run_dir)) is not None:
        log.info("%s completed before with this config: its results.json stands (delete it to run the job again)",
                 run_dir)
        return recorded
    progress: dict = {}  # the trainer, once there is one: the record names the update reached
    with guarded() as guard:
        try:
            return _run(cfg, guard, started, progress)
        except (Interrupted, Diverged) as stop:
            status = "interrupted" if isinstance(stop, Interrupted) else "diverged"
            _record_stop(cfg, run_dir, status, stop, progress, guard.phase)
            raise
        except Exception as error:
            # a bad input (ours, Hydra's, Lightning's) is one line; a crash or a full disk is recorded where it can be
            if one_line(error) is None or disk_full(error) or isinstance(error, DiskFullError):
                _record_stop(cfg, run_dir, "failed", error, progress, guard.phase)
            raise


def _completed_before(cfg: DictConfig, run_dir: Path) -> dict | None:
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
    if recorded.get("status") != "completed" or located(recorded.get("config")) != located(config) \
            or (recorded.get("train") or {}).get("stopped_by") == "max_time":
        return None
    return recorded


def _recorded_config(cfg: DictConfig) -> dict:
    """The resolved config as records keep it: its locations written `${paths.<key>}` (seqbench.common.portable), so
    a record names no folder of the machine that made it."""
    return located(OmegaConf.to_container(cfg, resolve=True))


def _record_stop(cfg: DictConfig, run_dir: Path, status: str, error: BaseException, progress: dict,
                 phase: str) -> None:
    """The stopped run's record, unless the directory holds a completed one (a later attempt's failure never
    overwrites a finished result; its error line is on stderr) or the disk is too full to write it."""
    trainer = progress.get("trainer")
    if trainer is not None and not trainer.is_global_zero:
        return
    try:
        if read_results(run_dir).get("status") == "completed":
            log.warning("%s keeps its completed results.json; this attempt ended %s: %s", run_dir, status, error)
            return
    except InputError:
        pass  # no record, or an unreadable one: this one replaces it
    last = RunDir(run_dir).last_checkpoint
    try:
        write_status(run_dir, status, error, phase=phase, step=trainer.global_step if trainer is not None else None,
                     resume_checkpoint=relative(last, run_dir) if last.is_file() else None, label=cfg.compare.label,
                     seed=cfg.seed, run_dir=".", config=_recorded_config(cfg))
    except DiskFullError:
        pass  # the run's own error line names the full disk


@dataclass
class Recorders:
    """The callbacks results.json is made from, built here rather than from YAML, so the record never depends on
    which callbacks a config happens to list: training throughput (and FLOPs) and the learning curve."""

    throughput: TrainThroughput
    curve: LearningCurve

    @classmethod
    def for_run(cls, cfg: DictConfig) -> Recorders:
        return cls(TrainThroughput(warmup_steps=cfg.measure.throughput_warmup_steps), LearningCurve())


def _run(cfg: DictConfig, guard: SignalGuard, started: float, progress: dict) -> dict:
    """One run, top to bottom: data, model, trainer, fit, evaluate, measure, record."""
    reset_peak_memory()
    if cfg.get("threads"):
        torch.set_num_threads(cfg.threads)
    use_onednn(cfg.onednn_linear)  # before the model is built: every Linear of this process follows it
    L.seed_everything(cfg.seed, workers=True, verbose=False)
    run_dir = Path(cfg.paths.output_dir)
    guard.phase = "data preparation"
    checkpoint_in = _resume_checkpoint(cfg, run_dir)
    if not cfg.get("train", True) and checkpoint_in is None:
        raise InputError("train=false evaluates a trained model: set ckpt_path=<file.ckpt>")
    datamodule = _data(cfg)
    model, model_cfg, spec, resumed_at = _model(cfg, datamodule, checkpoint_in)
    # model_spec goes in after instantiation: Hydra would try to build the `_target_` inside its model config
    module = instantiate(cfg.module, _partial_=True, _convert_="all")(model=model, model_spec=spec,
                                                                      evaluation_data=datamodule.evaluation)
    recorders = Recorders.for_run(cfg)
    trainer = _trainer(cfg, recorders, resumed_at)
    progress["trainer"] = trainer
    _save_run_files(cfg, trainer, run_dir, spec, datamodule.tokenizers)
    best, stopped_by, fit_seconds = _fit(cfg, trainer, module, datamodule, checkpoint_in, guard)
    _evaluate(cfg, trainer, module, datamodule, best, guard, run_dir)
    guard.phase = "measurements"
    measurements = measure(cfg, trainer, module, datamodule, recorders.throughput)
    device = trainer.strategy.root_device
    results = completed_record(
        label=cfg.compare.label, parameters=model.num_parameters(), data=datamodule.summary(),
        scores={split: evaluation.scores for split, evaluation in module.evaluations.items()},
        model={"name": cfg.model.name, "class": cfg.model._target_, "config": model_cfg,
               "param_budget": cfg.compare.param_budget},
        throughput=recorders.throughput.summary(trainer.world_size), measurements=measurements,
        train={"wall_time_s": fit_seconds, "steps": trainer.global_step, "epochs": _epochs_trained(trainer),
               "max_steps": trainer.max_steps, "stopped_by": stopped_by,
               "best_checkpoint": None if best is None else relative(best, run_dir)},
        curve=recorders.curve.points, wall_time_s=time.perf_counter() - started, seed=cfg.seed,
        device=torch.cuda.get_device_name(device) if device.type == "cuda" else str(device),
        threads=torch.get_num_threads(), config=_recorded_config(cfg))
    _log_summary(trainer, results)
    guard.phase = "writing results"
    if trainer.is_global_zero:
        write_results(results, run_dir)
        log_run_summary(trainer.loggers, results, run_dir, trainer.global_step)
        _print_summary(results, run_dir)
    return results


def _data(cfg: DictConfig):
    """The data module, prepared and set up for training."""
    datamodule = instantiate(cfg.data)
    datamodule.prepare_data()
    datamodule.setup("fit")
    return datamodule


def _model(cfg: DictConfig, datamodule, checkpoint_in: str | None):
    """The model for the data's vocabularies (resized to compare.param_budget), checked against the data and, when
    the run resumes or evaluates a checkpoint, against that checkpoint (read lazily: fit or the evaluation loads it,
    once). Returns (model, its resolved config, its spec, the update the checkpoint was written at or None)."""
    model_cfg = model_config(cfg, *datamodule.vocab_sizes)
    check_against_data(cfg, model_cfg, datamodule)  # positions and token budgets hold the longest sentence
    model = build_model(model_cfg, *datamodule.vocab_sizes)
    spec = model_spec(model_cfg, datamodule.tokenizers)
    resumed_at = None
    if checkpoint_in is not None:  # another architecture or vocabulary: one line now, not a traceback mid-run
        resumed_at = check_checkpoint(model, checkpoint_in, spec, origin=f"ckpt_path={checkpoint_in}").get(
            "global_step")
    return model, model_cfg, spec, resumed_at


def _trainer(cfg: DictConfig, recorders: Recorders, resumed_at: int | None):
    """The Lightning Trainer with the config's loggers and callbacks and the recorders."""
    loggers = [instantiate(c) for c in cfg.get("logger", {}).values() if c is not None] or False
    for logger in loggers or []:  # a resumed run continues its metrics.csv and its W&B run
        if isinstance(logger, (ResumableCSVLogger, WandbLogger)) and resumed_at is not None:
            logger.resume_from(resumed_at)
    callbacks = [recorders.throughput, recorders.curve,
                 *(instantiate(c) for c in cfg.get("callbacks", {}).values() if c is not None)]
    if not loggers:  # logger=none: LearningRateMonitor refuses a Trainer without a logger; there is nothing to log to
        callbacks = [c for c in callbacks if not isinstance(c, LearningRateMonitor)]
    return instantiate(cfg.trainer, callbacks=callbacks, logger=loggers, plugins=[AtomicCheckpointIO()])


def _save_run_files(cfg: DictConfig, trainer, run_dir: Path, spec: dict, tokenizers) -> None:
    """What translation needs besides the weights, and the whole config to every logger."""
    if trainer.is_global_zero:  # the run directory stands on its own: translate needs no cache or network
        save_run_files(run_dir, spec, OmegaConf.to_container(cfg.module.decoding), tokenizers,
                       OmegaConf.to_yaml(OmegaConf.create(_recorded_config(cfg))))
    for logger in trainer.loggers:  # the whole resolved config: W&B's config panel, the CSV logger's hparams.yaml
        logger.log_hyperparams(OmegaConf.to_container(cfg, resolve=True))
        logger.save()


def _fit(cfg: DictConfig, trainer, module, datamodule, checkpoint_in: str | None, guard: SignalGuard):
    """Trains (resuming from checkpoint_in), or with train=false takes checkpoint_in as the model to evaluate.
    Returns (the checkpoint to evaluate, what stopped training, seconds in fit)."""
    fit_started = time.perf_counter()
    if not cfg.get("train", True):
        return checkpoint_in, None, 0.0  # evaluate exactly the checkpoint given
    # Checkpoints are loaded with weights_only=True: tensors and plain types only, never arbitrary pickled objects.
    with guard.phase_of_run("training", lightning=True):
        trainer.fit(module, datamodule=datamodule, ckpt_path=checkpoint_in, weights_only=True)
    checkpoint = trainer.checkpoint_callback
    best = checkpoint.best_model_path if checkpoint is not None and checkpoint.best_model_path else None
    return best, _stopped_by(trainer), time.perf_counter() - fit_started


def _evaluate(cfg: DictConfig, trainer, module, datamodule, best: str | None, guard: SignalGuard,
              run_dir: Path) -> None:
    """The final validation and test of the best checkpoint's weights, loaded once into the module (the callbacks
    keep the whole run's state), and every split's hypotheses, references and sources written beside the record."""
    if best is not None:
        module.load_state_dict(read_checkpoint(best, f"checkpoint {best}")["state_dict"])
    with guard.phase_of_run("validation", lightning=True):
        trainer.validate(module, datamodule=datamodule, verbose=False)
    if cfg.get("test", True):
        with guard.phase_of_run("testing", lightning=True):
            trainer.test(module, datamodule=datamodule, verbose=False)
    if trainer.is_global_zero:
        # One sentence per line: `seqbench score` and the report rescore and test from the run directory alone.
        for split, evaluation in module.evaluations.items():
            RunDir(run_dir).write_texts(split, {"hypotheses": evaluation.hypotheses,
                                                "references": evaluation.references, "sources": evaluation.sources})


def _stopped_by(trainer) -> str:
    """What ended training: "max_steps" (the update budget), "early_stopping", "max_time" (the wall-clock guard: the
    run did not get its budget, and the report says so) or "max_epochs"."""
    if 0 < trainer.max_steps <= trainer.global_step:
        return "max_steps"
    if any(isinstance(c, EarlyStopping) and c.stopping_reason != EarlyStoppingReason.NOT_STOPPED
           for c in trainer.callbacks):
        return "early_stopping"
    timer = next((c for c in trainer.callbacks if isinstance(c, Timer)), None)
    remaining = timer.time_remaining() if timer is not None else None  # None: no duration, nothing to run out
    if remaining is not None and remaining <= 0:
        return "max_time"
    return "max_epochs"


def _epochs_trained(trainer) -> float | None:
    """Updates / batches per epoch: the passes over the training data, fractional when training stopped mid-epoch.
    (Lightning's current_epoch is not it: a run resumed after its last update keeps the checkpoint's epoch.)"""
    batches = trainer.num_training_batches
    if not batches or batches == float("inf"):
        return None
    return trainer.global_step * trainer.accumulate_grad_batches / batches


def _print_summary(results: dict, run_dir: Path) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"seqbench: {results['model']['name']}", show_header=False)
    test = results.get("test", {})
    table.add_row("test BLEU", f"{test.get('bleu', float('nan')):.2f}")
    table.add_row("sacreBLEU signature", test.get("bleu_signature", "-"))
    table.add_row("valid BLEU", f"{results.get('valid', {}).get('bleu', float('nan')):.2f}")
    table.add_row("parameters", f"{results['parameters']:,}")
    tput = results["throughput"]
    if tput.get("measured_steps"):
        table.add_row("train tokens/s", f"{tput['target_tokens_per_s']:,.0f} target (non-pad), "
                                        f"{tput['src_tgt_tokens_per_s']:,.0f} source+target")
    for kind, speed in results.get("decoding", {}).items():
        table.add_row(f"decode ({kind}, beam {speed['beam_size']})",
                      f"{speed['sentences_per_s']:,.1f} sentences/s, {speed['target_tokens_per_s']:,.0f} tokens/s")
    if results.get("flops"):
        table.add_row("MFU", peaks.mfu_text(results["flops"]))
    table.add_row("peak memory", f"{results['peak_memory_mb']:,.0f} MB")
    table.add_row("wall time", f"{results['wall_time_s']:.0f} s")
    Console(width=max(100, int(os.environ.get("COLUMNS", 100)))).print(table)
    print(f"run directory: {run_dir.resolve()}", flush=True)  # outside the table: a long path is never cut
