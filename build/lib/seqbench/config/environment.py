"""Phase 2, this machine: `check_environment` runs with the config checks, before anything is built or written: the
accelerator and device count exist here, the run and cache directories can be written. `check_checkpoint_file`: a
checkpoint to load is one. Each problem is one line naming the key and the fix.
"""
from __future__ import annotations

import os
import zipfile
from pathlib import Path

from omegaconf import DictConfig

from seqbench.common.errors import ConfigError, InputError


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
