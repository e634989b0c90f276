"""What `python train.py` does once Hydra has composed the config: instantiate, fit, evaluate, record."""
from __future__ import annotations

import os
import time
from dataclasses import replace
from pathlib import Path

import lightning as L
import torch
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf

from seqbench import benchmark
from seqbench.attention_maps import attention_examples, save_attention
from seqbench.callbacks import AtomicCheckpointIO, LearningCurve, TrainThroughput
from seqbench.config_check import validate
from seqbench.errors import InputError
from seqbench.results import library_versions, write_results
from seqbench.sizing import fit_to_budget
from seqbench.wandb_logging import finish_run, log_run_summary


def _resume_checkpoint(cfg: DictConfig, run_dir: Path) -> str | None:
    """An explicit ckpt_path wins; otherwise a run directory that already has last.ckpt is resumed."""
    if cfg.get("ckpt_path"):
        if not Path(cfg.ckpt_path).is_file():
            raise InputError(f"ckpt_path={cfg.ckpt_path}: no such checkpoint file")
        return str(cfg.ckpt_path)
    last = run_dir / "checkpoints" / "last.ckpt"
    return str(last) if last.is_file() else None


def model_config(cfg: DictConfig, src_vocab_size: int, tgt_vocab_size: int) -> dict:
    """The resolved model config, resized to `compare.param_budget` parameters when one is set."""
    model_cfg = OmegaConf.to_container(cfg.model, resolve=True)
    budget = cfg.get("compare", {}).get("param_budget")
    return fit_to_budget(model_cfg, budget, src_vocab_size, tgt_vocab_size) if budget else model_cfg


def instantiate_model(model_cfg: dict, src_vocab_size: int, tgt_vocab_size: int):
    kwargs = {k: v for k, v in model_cfg.items() if k != "name"}
    return instantiate(kwargs, src_vocab_size=src_vocab_size, tgt_vocab_size=tgt_vocab_size)


def build_model(cfg: DictConfig, src_vocab_size: int, tgt_vocab_size: int):
    return instantiate_model(model_config(cfg, src_vocab_size, tgt_vocab_size), src_vocab_size, tgt_vocab_size)


def measure(cfg: DictConfig, trainer, module, datamodule, throughput: TrainThroughput | None) -> dict:
    """Peak memory, decode speed (greedy and the configured beam), attention maps, matmul peak and MFU.

    Runs after the test pass on the trainer's device with its autocast: Lightning has moved the model back to the
    CPU by then. Memory is read first: the decode benchmark adds nothing a test pass did not need, but the matmul
    peak's large matrices would set the CUDA maximum.
    """
    device, context = trainer.strategy.root_device, trainer.precision_plugin.forward_context
    model = module.model.to(device)
    out = {"memory": benchmark.peak_memory(device)}
    if cfg.get("test", True):
        batches = benchmark.test_batches(datamodule, cfg.measure.decode_sentences)
        beam, warmup = module.decoding, cfg.measure.decode_warmup_batches
        greedy = benchmark.decode_speed(model, batches, replace(beam, beam_size=1), device, warmup, context)
        out["decoding"] = {"greedy": greedy, "beam": greedy if beam.beam_size == 1 else
                           benchmark.decode_speed(model, batches, beam, device, warmup, context)}
        if cfg.measure.attention_examples and trainer.is_global_zero:
            examples = attention_examples(model, datamodule, beam, device, cfg.measure.attention_examples, context)
            save_attention(Path(cfg.paths.output_dir) / "attention.pt", cfg.compare.label, cfg.model.name, examples)
    summary = throughput.summary(trainer.world_size) if throughput else {}
    if summary.get("measured_steps"):
        peaks = benchmark.peak_flops(device, cfg.measure.peak_flops_seconds)
        out["flops"] = benchmark.training_flops(model, summary["mean_src_tokens"], summary["mean_tgt_tokens"],
                                                summary["target_tokens_per_s"], peaks,
                                                benchmark.training_dtype(trainer.precision))
    return out


def _log_measurements(trainer, results: dict) -> None:
    """The run's summary numbers, also sent to the loggers (CSV, W&B) as one final row."""
    metrics = {"parameters": results["parameters"], "memory/cpu_rss_peak_mb": results["memory"]["cpu_rss_peak_mb"]}
    if results["memory"]["cuda_max_allocated_mb"] is not None:
        metrics["memory/cuda_max_allocated_mb"] = results["memory"]["cuda_max_allocated_mb"]
    for key in ("target_tokens_per_s", "steps_per_s", "time_per_epoch_s"):
        if results["throughput"].get(key) is not None:
            metrics[f"throughput/{key}"] = results["throughput"][key]
    for kind, speed in results.get("decoding", {}).items():
        metrics[f"decode/{kind}_sentences_per_s"] = speed["sentences_per_s"]
        metrics[f"decode/{kind}_tokens_per_s"] = speed["target_tokens_per_s"]
    flops = results.get("flops", {})
    if flops.get("mfu") is not None:
        metrics["flops/mfu"] = flops["mfu"]
        metrics["flops/achieved_train_flops_per_s"] = flops["achieved_train_flops_per_s"]
    for logger in trainer.loggers:
        logger.log_metrics(metrics, step=trainer.global_step)
        logger.save()


def run(cfg: DictConfig) -> dict:
    """One job. Its W&B run, if any, ends with it (marked failed if the job raised), so every job of a multirun
    gets a run of its own."""
    try:
        results = _run(cfg)
    except BaseException:
        finish_run(exit_code=1)
        raise
    finish_run(exit_code=0)
    return results


def _run(cfg: DictConfig) -> dict:
    started = time.perf_counter()
    validate(cfg)
    benchmark.reset_peak_memory()
    if cfg.get("threads"):
        torch.set_num_threads(cfg.threads)
    L.seed_everything(cfg.seed, workers=True, verbose=False)
    run_dir = Path(cfg.paths.output_dir)
    checkpoint_in = _resume_checkpoint(cfg, run_dir)
    if not cfg.get("train", True) and checkpoint_in is None:
        raise InputError("train=false evaluates a trained model: set ckpt_path=<file.ckpt>")

    datamodule = instantiate(cfg.data)
    datamodule.prepare_data()
    datamodule.setup("fit")
    tokenizers = datamodule.tokenizers
    model_cfg = model_config(cfg, tokenizers.src_vocab_size, tokenizers.tgt_vocab_size)
    model = instantiate_model(model_cfg, tokenizers.src_vocab_size, tokenizers.tgt_vocab_size)
    module = instantiate(cfg.module, model=model, _convert_="all")

    callbacks = [instantiate(c) for c in cfg.get("callbacks", {}).values() if c is not None]
    loggers = [instantiate(c) for c in cfg.get("logger", {}).values() if c is not None] or False
    trainer = instantiate(cfg.trainer, callbacks=callbacks, logger=loggers, plugins=[AtomicCheckpointIO()])
    for logger in trainer.loggers:  # the whole resolved config: W&B's config panel, the CSV logger's hparams.yaml
        logger.log_hyperparams(OmegaConf.to_container(cfg, resolve=True))
        logger.save()

    fit_started = time.perf_counter()
    if cfg.get("train", True):
        trainer.fit(module, datamodule=datamodule, ckpt_path=checkpoint_in)
        checkpoint = trainer.checkpoint_callback
        best = checkpoint.best_model_path if checkpoint is not None and checkpoint.best_model_path else None
    else:
        best = checkpoint_in  # evaluate exactly the checkpoint given
    fit_seconds = time.perf_counter() - fit_started

    module.val_bleu = True  # final scores always include BLEU, whatever was monitored during training
    trainer.validate(module, datamodule=datamodule, ckpt_path=best, verbose=False)
    if cfg.get("test", True):
        trainer.test(module, datamodule=datamodule, ckpt_path=best, verbose=False)

    throughput = next((c for c in callbacks if isinstance(c, TrainThroughput)), None)
    curve = next((c for c in callbacks if isinstance(c, LearningCurve)), None)
    scores = {split: {k: v for k, v in r.items() if k not in ("hypotheses", "indices")}
              for split, r in module.eval_results.items()}
    measurements = measure(cfg, trainer, module, datamodule, throughput)
    device = trainer.strategy.root_device
    results = {
        "label": cfg.compare.label,
        "model": {"name": cfg.model.name, "class": cfg.model._target_, "config": model_cfg,
                  "param_budget": cfg.compare.param_budget},
        "parameters": model.num_parameters(),
        "data": {"corpus": datamodule.corpus.name, "src_vocab_size": tokenizers.src_vocab_size,
                 "tgt_vocab_size": tokenizers.tgt_vocab_size,
                 "sizes": {s: len(d) for s, d in datamodule.encoded.items()}, "filtered": datamodule.filter_counts},
        **scores,
        "throughput": throughput.summary(trainer.world_size) if throughput else {},
        **measurements,
        "train": {"wall_time_s": fit_seconds, "steps": trainer.global_step, "epochs": trainer.current_epoch,
                  "best_checkpoint": best},
        "curve": curve.points if curve else [],
        "wall_time_s": time.perf_counter() - started,
        "peak_memory_mb": measurements["memory"]["cuda_max_allocated_mb" if device.type == "cuda"
                                                 else "cpu_rss_peak_mb"],
        "seed": cfg.seed,
        "device": torch.cuda.get_device_name(device) if device.type == "cuda" else str(device),
        "threads": torch.get_num_threads(),
        "versions": library_versions(),
        "run_dir": str(run_dir.resolve()),
        "config": OmegaConf.to_container(cfg, resolve=True),
    }
    _log_measurements(trainer, results)
    if trainer.is_global_zero:
        write_results(results, run_dir)
        log_run_summary(trainer.loggers, results, run_dir, trainer.global_step)
        _print_summary(results)
    return results


def _print_summary(results: dict) -> None:
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
    flops = results.get("flops", {})
    if flops.get("mfu") is not None:
        table.add_row("MFU", f"{flops['mfu']:.1%} of the measured {flops['peak_dtype']} matmul peak "
                             f"({flops['peak_flops_per_s'][flops['peak_dtype']] / 1e12:.2f} TFLOP/s)")
    table.add_row("peak memory", f"{results['peak_memory_mb']:,.0f} MB")
    table.add_row("wall time", f"{results['wall_time_s']:.0f} s")
    table.add_row("run directory", results["run_dir"])
    Console(width=max(100, int(os.environ.get("COLUMNS", 100)))).print(table)
