"""What `python train.py` does once Hydra has composed the config: instantiate, fit, evaluate, record. Only the order
of things: which run a rerun is (resume), what it measures (measurements), its Lightning Trainer (trainer), how it
ends when it does not complete (status) and what it prints (console) live in their own modules."""
from __future__ import annotations

import logging
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import lightning as L
import torch
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf

from seqbench.common.errors import DiskFullError, InputError, disk_full, one_line
from seqbench.common.logs import run_console
from seqbench.common.portable import relative
from seqbench.config.against_data import check_against_data
from seqbench.config.checks import validate
from seqbench.loggers.media import log_run_summary
from seqbench.loggers.wandb_logger import finish_run
from seqbench.measure.memory import reset_peak_memory
from seqbench.models.interface import build_model
from seqbench.models.linear import use_onednn
from seqbench.models.sizing import fit_to_budget
from seqbench.rundir.checkpoints import check_checkpoint, read_checkpoint
from seqbench.rundir.layout import RunDir
from seqbench.rundir.loading import model_spec, save_run_files
from seqbench.rundir.lock import run_directory_lock
from seqbench.rundir.results import completed_record, summary_metrics, write_results
from seqbench.training import init_from
from seqbench.training.console import print_summary
from seqbench.training.measurements import Recorders, measure
from seqbench.training.resume import completed_before, recorded_config, resume_checkpoint
from seqbench.training.status import Diverged, Interrupted, LostRank, SignalGuard, guarded, lost_rank, record_stop
from seqbench.training.trainer import (
    best_checkpoint,
    build_trainer,
    epochs_trained,
    plateau_fields,
    resumed_updates,
    stopped_by,
)

# Lightning warns that a run resumed mid-epoch repeats batches unless its DataLoader is stateful; seqbench's batch
# sampler resumes at the right batch instead (seqbench.training.callbacks.ResumeState): the warning would be wrong.
warnings.filterwarnings("ignore", message="You're resuming from a checkpoint that ended before the epoch ended")
log = logging.getLogger(__name__)


def run(cfg: DictConfig) -> dict:
    """One job. It leaves results.json with its status ("completed", "cut_short" when the time guard stopped training
    before its budget, or "interrupted", "diverged", "failed" and the reason) and re-raises what stopped it (train.py
    turns that into the exit status). Its W&B run, if any, ends with it (marked failed if the job raised), so every
    job of a multirun gets a run of its own."""
    try:
        results = _recorded_run(cfg)
    except BaseException:
        finish_run(exit_code=1)
        raise
    finish_run(exit_code=0)
    return results


def _recorded_run(cfg: DictConfig) -> dict:
    """Validates the config, holds the run directory, and runs the job unless it completed before with this config;
    a job that stops is recorded (status.record_stop) before what stopped it propagates."""
    started = time.perf_counter()
    run_console(quiet=bool(cfg.get("quiet")))  # before anything prints: each line once; quiet: warnings, the JSON
    validate(cfg, environment=True)  # devices, writable directories too: before anything is built or written
    run_dir = Path(cfg.paths.output_dir)
    with run_directory_lock(run_dir):  # a second run in this directory refuses now, before it touches anything
        if (recorded := completed_before(cfg, run_dir)) is not None:
            log.info("%s completed before with this config: its results.json stands (delete it to run the job again)",
                     run_dir)
            return recorded
        trainer = None  # once there is one, the record names the update it reached
        with guarded() as guard:
            try:
                job = _prepare(cfg, guard)
                trainer = job.trainer
                return _complete(cfg, job, guard, started)
            except (Interrupted, Diverged) as stop:
                status = "interrupted" if isinstance(stop, Interrupted) else "diverged"
                record_stop(cfg, run_dir, status, stop, trainer, guard.phase)
                raise
            except Exception as error:
                # a bad input (ours, Hydra's, Lightning's) is one line; a crash or full disk is recorded where it can be
                if one_line(error) is None or disk_full(error) or isinstance(error, DiskFullError):
                    record_stop(cfg, run_dir, "failed", error, trainer, guard.phase)
                lost = lost_rank(error, trainer)
                if lost is not None:
                    raise LostRank(lost, guard.phase, _resume_hint(run_dir)) from error
                raise


def _resume_hint(run_dir: Path) -> str:
    if RunDir(run_dir).last_checkpoint.is_file():
        return f"rerun with hydra.run.dir={run_dir} to resume from its last checkpoint"
    return f"rerun with hydra.run.dir={run_dir} to start again (no checkpoint yet)"


@dataclass
class _Job:
    """What a run is built from before it trains: data, model, module, recorders and trainer."""

    datamodule: object
    model: object
    model_cfg: dict
    spec: dict
    module: object
    recorders: Recorders
    trainer: L.Trainer
    checkpoint_in: str | None  # the checkpoint it resumes from (or, with train=false, evaluates)
    init: dict | None          # train.init: the weights it started from (init_from), or None


def _prepare(cfg: DictConfig, guard: SignalGuard) -> _Job:
    """Process settings, then data, model, module and trainer."""
    reset_peak_memory()
    if cfg.get("threads"):
        torch.set_num_threads(cfg.threads)
    use_onednn(cfg.onednn_linear)  # before the model is built: every Linear of this process follows it
    L.seed_everything(cfg.seed, workers=True, verbose=False)
    guard.phase = "data preparation"
    checkpoint_in = resume_checkpoint(cfg, Path(cfg.paths.output_dir))
    if not cfg.get("train", True) and checkpoint_in is None:
        raise InputError("train=false evaluates a trained model: set ckpt_path=<file.ckpt>")
    if cfg.get("init_from") and not cfg.get("train", True):
        raise InputError("init_from starts training from saved weights; to evaluate a model, set train=false "
                         "ckpt_path=<file.ckpt> without init_from")
    init = init_from.record(cfg) if cfg.get("init_from") else None  # its mistakes before the data is prepared
    datamodule = instantiate(cfg.data)
    datamodule.prepare_data()
    datamodule.setup("fit")
    model, model_cfg, spec, resumed_at = _model(cfg, datamodule, checkpoint_in)
    # init_from applies once: a fine-tuning run that resumes continues from its own checkpoint
    keep_state = init_from.initialise(cfg, model, spec) if init and checkpoint_in is None else None
    # model_spec goes in after instantiation: Hydra would try to build the `_target_` inside its model config
    module = instantiate(cfg.module, _partial_=True, _convert_="all")(model=model, model_spec=spec,
                                                                      evaluation_data=datamodule.evaluation)
    recorders = Recorders.for_run(cfg)
    trainer = build_trainer(cfg, recorders, resumed_at, [keep_state] if keep_state else [])
    return _Job(datamodule, model, model_cfg, spec, module, recorders, trainer, checkpoint_in, init)


def _complete(cfg: DictConfig, job: _Job, guard: SignalGuard, started: float) -> dict:
    """Fit, evaluate, measure, record."""
    run_dir, trainer, module, datamodule = Path(cfg.paths.output_dir), job.trainer, job.module, job.datamodule
    _save_run_files(cfg, trainer, run_dir, job.spec, datamodule.tokenizers)
    best, stopped, fit_seconds = _fit(cfg, job, guard)
    _evaluate(cfg, trainer, module, datamodule, best, guard, run_dir)
    guard.phase = "measurements"
    measurements = measure(cfg, trainer, module, datamodule, job.recorders.throughput)
    device = trainer.strategy.root_device
    # the time guard stopping training is the run's budget only when the user said so (time_budget=true)
    status = "cut_short" if stopped == "max_time" and not cfg.get("time_budget") else "completed"
    results = completed_record(
        status=status, label=cfg.compare.label, parameters=job.model.num_parameters(), data=datamodule.summary(),
        scores={split: evaluation.scores for split, evaluation in module.evaluations.items()},
        model={"name": cfg.model.name, "class": cfg.model._target_, "config": job.model_cfg,
               "param_budget": cfg.compare.param_budget},
        throughput=job.recorders.throughput.summary(trainer.world_size), measurements=measurements,
        train={"wall_time_s": fit_seconds, "steps": trainer.global_step, "epochs": epochs_trained(trainer),
               "max_steps": trainer.max_steps, "stopped_by": stopped, "resumed_at": resumed_updates(trainer),
               "best_checkpoint": None if best is None else relative(best, run_dir),
               **plateau_fields(trainer, job.recorders.curve.points, cfg.measure.get("target_bleu")),
               **({"init": job.init} if job.init else {})},
        curve=job.recorders.curve.points, wall_time_s=time.perf_counter() - started, seed=cfg.seed,
        device=torch.cuda.get_device_name(device) if device.type == "cuda" else str(device),
        threads=torch.get_num_threads(), config=recorded_config(cfg))
    metrics = summary_metrics(results)  # the headline numbers (seqbench.rundir.results.METRICS), one final row
    for logger in trainer.loggers:
        logger.log_metrics(metrics, step=trainer.global_step)
        logger.save()
    guard.phase = "writing results"
    if trainer.is_global_zero:
        write_results(results, run_dir)
        log_run_summary(trainer.loggers, results, run_dir, trainer.global_step)
        print_summary(results, run_dir)
    return results


def model_config(cfg: DictConfig, src_vocab_size: int, tgt_vocab_size: int) -> dict:
    """The resolved model config, resized to `compare.param_budget` parameters when one is set."""
    model_cfg = OmegaConf.to_container(cfg.model, resolve=True)
    budget = cfg.get("compare", {}).get("param_budget")
    return fit_to_budget(model_cfg, budget, src_vocab_size, tgt_vocab_size) if budget else model_cfg


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
        checked = check_checkpoint(model, checkpoint_in, spec, origin=f"ckpt_path={checkpoint_in}")
        resumed_at = checked.get("global_step")
    return model, model_cfg, spec, resumed_at


def _save_run_files(cfg: DictConfig, trainer, run_dir: Path, spec: dict, tokenizers) -> None:
    """What translation needs besides the weights, and the whole config to every logger."""
    if trainer.is_global_zero:  # the run directory stands on its own: translate needs no cache or network
        save_run_files(run_dir, spec, OmegaConf.to_container(cfg.module.decoding), tokenizers,
                       OmegaConf.to_yaml(OmegaConf.create(recorded_config(cfg))))
    for logger in trainer.loggers:  # the whole resolved config: W&B's config panel, the CSV logger's hparams.yaml
        logger.log_hyperparams(OmegaConf.to_container(cfg, resolve=True))
        logger.save()


def _fit(cfg: DictConfig, job: _Job, guard: SignalGuard) -> tuple[str | None, str | None, float]:
    """Trains (resuming from the job's checkpoint), or with train=false takes that checkpoint as the model to
    evaluate. Returns (the checkpoint to evaluate, what stopped training, seconds in fit)."""
    fit_started = time.perf_counter()
    if not cfg.get("train", True):
        return job.checkpoint_in, None, 0.0  # evaluate exactly the checkpoint given
    # Checkpoints are loaded with weights_only=True: tensors and plain types only, never arbitrary pickled objects.
    with guard.phase_of_run("training", job.trainer):
        job.trainer.fit(job.module, datamodule=job.datamodule, ckpt_path=job.checkpoint_in, weights_only=True)
    return best_checkpoint(job.trainer), stopped_by(job.trainer), time.perf_counter() - fit_started


def _evaluate(cfg: DictConfig, trainer, module, datamodule, best: str | None, guard: SignalGuard,
              run_dir: Path) -> None:
    """The final validation and test of the best checkpoint's weights, loaded once into the module (the callbacks
    keep the whole run's state), and every split's hypotheses, references and sources written beside the record."""
    if best is not None:
        module.load_state_dict(read_checkpoint(best, f"checkpoint {best}")["state_dict"])
    with guard.phase_of_run("validation", trainer):
        trainer.validate(module, datamodule=datamodule, verbose=False)
    if cfg.get("test", True):
        with guard.phase_of_run("testing", trainer):
            trainer.test(module, datamodule=datamodule, verbose=False)
    if trainer.is_global_zero:
        # One sentence per line: `seqbench score` and the report rescore and test from the run directory alone.
        for split, evaluation in module.evaluations.items():
            RunDir(run_dir).write_texts(split, {"hypotheses": evaluation.hypotheses,
                                                "references": evaluation.references, "sources": evaluation.sources})
