"""Checks of the config against the machine and the data, each one line naming the key and the fix.

`check_environment` runs with the config checks, before anything is built or written: the accelerator and device
count exist here, the run and cache directories can be written. `check_checkpoint_file`: a checkpoint to load is one.
`check_against_data` runs once the data is tokenised, before the first batch: the model's position table and the
token budgets must hold the longest sentence that survived the length filters.
"""
from __future__ import annotations

import os
import zipfile
from pathlib import Path

from omegaconf import DictConfig

from seqbench.config_check import ConfigError
from seqbench.errors import InputError
from seqbench.models.interface import family_of


def _accelerator_available(name: str) -> tuple[bool, int]:
    """(available, device count) of a Lightning accelerator name; "gpu" is CUDA or Apple MPS, as in Lightning."""
    from lightning.pytorch.accelerators import AcceleratorRegistry

    names = ("cuda", "mps") if name == "gpu" else (name,)
    for candidate in names:
        accelerator = AcceleratorRegistry[candidate]["accelerator"]
        if accelerator.is_available():
            return True, accelerator.auto_device_count()
    return False, 0


def check_devices(cfg: DictConfig) -> None:
    from lightning.pytorch.accelerators import AcceleratorRegistry

    trainer = cfg.get("trainer") or {}
    accelerator, devices = trainer.get("accelerator", "auto"), trainer.get("devices", "auto")
    known = ("auto", "gpu", *sorted(AcceleratorRegistry.available_accelerators()))
    if accelerator not in known:
        raise ConfigError(f"trainer.accelerator={accelerator!r}: allowed values are {', '.join(known)}")
    if accelerator in ("auto", "cpu"):
        return
    available, count = _accelerator_available(accelerator)
    if not available:
        raise ConfigError(f"trainer.accelerator={accelerator}: no {accelerator.upper()} on this machine; "
                          f"use trainer=cpu (or trainer.accelerator=cpu)")
    if isinstance(devices, int) and devices > count:
        raise ConfigError(f"trainer.devices={devices}: this machine has {count} {accelerator.upper()} device(s); "
                          f"use trainer.devices={count} or -1 (all)")


def _writable_dir(key: str, path: Path) -> None:
    """The directory exists and can be written, or can be created: its nearest existing ancestor is a writable
    directory. Nothing is created here."""
    existing = path
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir():
        raise ConfigError(f"{key}={path}: {existing} is a file, not a directory; choose another {key}")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise ConfigError(f"{key}={path}: {existing} is not writable; choose a writable {key}")


def check_paths(cfg: DictConfig) -> None:
    for key in ("paths.output_dir", "paths.cache_dir"):
        _writable_dir(key, Path(cfg.paths[key.split(".")[1]]).absolute())


def check_checkpoint_file(path: str | Path, key: str | None = "ckpt_path",
                          fix: str = "point ckpt_path at a .ckpt written by a seqbench run") -> None:
    """A checkpoint is a file written by torch.save: a zip archive holding data.pkl. A text file, an empty or a
    truncated file (its zip directory, at the end, is missing) fails here in one line rather than in torch.load."""
    path = Path(path)
    label = f"{key}={path}" if key else str(path)
    if not path.is_file():
        raise InputError(f"{label}: no such checkpoint file")
    try:
        with zipfile.ZipFile(path) as archive:
            ok = any(name == "data.pkl" or name.endswith("/data.pkl") for name in archive.namelist())
    except (zipfile.BadZipFile, OSError):
        ok = False
    if not ok:
        raise InputError(f"{label}: not a PyTorch checkpoint (empty, truncated or another kind of file); {fix}")


def check_environment(cfg: DictConfig) -> None:
    check_devices(cfg)
    check_paths(cfg)


def _decode_positions(src_len: int, cfg: DictConfig) -> int:
    """Positions a decoder uses for a source of `src_len` tokens: <bos> plus its hypothesis length limit
    (seqbench.decoding: int(a * src_len + b) tokens, then the forced <eos>)."""
    decoding = cfg.module.decoding
    return int(src_len * decoding.max_len_a + decoding.max_len_b) + 1


def check_against_data(cfg: DictConfig, model_cfg: dict, datamodule) -> None:
    """The longest sentence of every split, as the batches and the model will see it, must fit."""
    longest = datamodule.longest()  # {split: (source, target + 1) tokens}
    filters = "or drop long pairs with data.max_src_len / data.max_tgt_len (words)"
    for split, (src, tgt) in longest.items():
        key = "data.max_tokens" if split == "train" else "data.eval_max_tokens"
        budget = datamodule.token_budget(split)
        if max(src, tgt) > budget:
            raise InputError(f"{key}={budget}: the longest {split} pair has {max(src, tgt)} tokens and does not fit "
                             f"one batch; raise {key} to at least {max(src, tgt)} {filters}")
    positions = family_of(model_cfg).position_limit(model_cfg)
    if positions is None:  # no position table (RNNs, rotary Transformers): any length
        return
    for split, (src, tgt) in longest.items():
        need, what = max(src, tgt), "tokens"
        if split != "train" and _decode_positions(src, cfg) > need:
            need, what = _decode_positions(src, cfg), "positions to decode (module.decoding.max_len_a/b)"
        if need > positions:
            raise InputError(f"model.max_positions={positions}: the longest {split} sentence needs {need} {what}; "
                             f"raise model.max_positions to at least {need} {filters}")
