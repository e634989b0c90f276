"""What `python train.py` does once Hydra has composed the config: instantiate, fit, evaluate, record."""
from __future__ import annotations

import os
import resource
import time
from pathlib import Path

import lightning as L
import torch
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf

from seqbench.callbacks import AtomicCheckpointIO, TrainThroughput
from seqbench.config_check import validate
from seqbench.errors import InputError
from seqbench.results import library_versions, write_results


def _peak_memory_mb(device: torch.device) -> float:
    if device.type == "cuda":
        return torch.cuda.max_memory_allocated(device) / 2**20
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux reports KiB


def _resume_checkpoint(cfg: DictConfig, run_dir: Path) -> str | None:
    """An explicit ckpt_path wins; otherwise a run directory that already has last.ckpt is resumed."""
    if cfg.get("ckpt_path"):
        if not Path(cfg.ckpt_path).is_file():
            raise InputError(f"ckpt_path={cfg.ckpt_path}: no such checkpoint file")
        return str(cfg.ckpt_path)
    last = run_dir / "checkpoints" / "last.ckpt"
    return str(last) if last.is_file() else None


def build_model(cfg: DictConfig, src_vocab_size: int, tgt_vocab_size: int):
    model_cfg = OmegaConf.to_container(cfg.model, resolve=True)
    model_cfg.pop("name")
    return instantiate(model_cfg, src_vocab_size=src_vocab_size, tgt_vocab_size=tgt_vocab_size)


def run(cfg: DictConfig) -> dict:
    started = time.perf_counter()
    validate(cfg)
    if cfg.get("threads"):
        torch.set_num_threads(cfg.threads)
    L.seed_everything(cfg.seed, workers=True, verbose=False)
    run_dir = Path(cfg.paths.output_dir)

    datamodule = instantiate(cfg.data)
    datamodule.prepare_data()
    datamodule.setup("fit")
    tokenizers = datamodule.tokenizers
    model = build_model(cfg, tokenizers.src_vocab_size, tokenizers.tgt_vocab_size)
    module = instantiate(cfg.module, model=model, _convert_="all")

    callbacks = [instantiate(c) for c in cfg.get("callbacks", {}).values() if c is not None]
    loggers = [instantiate(c) for c in cfg.get("logger", {}).values() if c is not None] or False
    trainer = instantiate(cfg.trainer, callbacks=callbacks, logger=loggers, plugins=[AtomicCheckpointIO()])

    fit_started = time.perf_counter()
    if cfg.get("train", True):
        trainer.fit(module, datamodule=datamodule, ckpt_path=_resume_checkpoint(cfg, run_dir))
    fit_seconds = time.perf_counter() - fit_started

    checkpoint = trainer.checkpoint_callback
    best = checkpoint.best_model_path if checkpoint is not None and checkpoint.best_model_path else None
    module.val_bleu = True  # final scores always include BLEU, whatever was monitored during training
    trainer.validate(module, datamodule=datamodule, ckpt_path=best, verbose=False)
    if cfg.get("test", True):
        trainer.test(module, datamodule=datamodule, ckpt_path=best, verbose=False)

    throughput = next((c for c in callbacks if isinstance(c, TrainThroughput)), None)
    scores = {split: {k: v for k, v in r.items() if k not in ("hypotheses", "indices")}
              for split, r in module.eval_results.items()}
    results = {
        "model": {"name": cfg.model.name, "class": cfg.model._target_,
                  "config": OmegaConf.to_container(cfg.model, resolve=True)},
        "parameters": model.num_parameters(),
        "data": {"corpus": datamodule.corpus.name, "src_vocab_size": tokenizers.src_vocab_size,
                 "tgt_vocab_size": tokenizers.tgt_vocab_size,
                 "sizes": {s: len(d) for s, d in datamodule.encoded.items()}, "filtered": datamodule.filter_counts},
        **scores,
        "throughput": throughput.summary(trainer.world_size) if throughput else {},
        "train": {"wall_time_s": fit_seconds, "steps": trainer.global_step, "epochs": trainer.current_epoch,
                  "best_checkpoint": best},
        "wall_time_s": time.perf_counter() - started,
        "peak_memory_mb": _peak_memory_mb(module.device),
        "seed": cfg.seed,
        "device": str(module.device) if module.device.type == "cpu" else torch.cuda.get_device_name(module.device),
        "threads": torch.get_num_threads(),
        "versions": library_versions(),
        "run_dir": str(run_dir.resolve()),
        "config": OmegaConf.to_container(cfg, resolve=True),
    }
    if trainer.is_global_zero:
        write_results(results, run_dir)
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
    table.add_row("wall time", f"{results['wall_time_s']:.0f} s")
    table.add_row("run directory", results["run_dir"])
    Console(width=max(100, int(os.environ.get("COLUMNS", 100)))).print(table)
