"""Checking a checkpoint before training resumes from it: safe to load, and made for this model and vocabulary."""
from __future__ import annotations

from pathlib import Path

import torch

from seqbench.errors import InputError


def check_checkpoint(path: str | Path, module: torch.nn.Module) -> None:
    """One-line InputError unless `path` loads with weights_only=True (tensors and plain types: a checkpoint from
    elsewhere cannot run code) and its weights have exactly the names and shapes of `module`'s.

    Without this, Lightning would fail with a several-page state_dict traceback on a checkpoint of another
    architecture, size or vocabulary.
    """
    try:
        checkpoint = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as error:  # noqa: BLE001 - unpickling errors have many types; all mean "not loadable"
        reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise InputError(f"ckpt_path={path}: not a checkpoint that loads safely (weights_only=True): "
                         f"{reason[:200]}") from None
    state = checkpoint.get("state_dict") if isinstance(checkpoint, dict) else None
    if not isinstance(state, dict):
        raise InputError(f"ckpt_path={path}: not a Lightning checkpoint of a seqbench run (no state_dict)")
    expected = {name: tuple(tensor.shape) for name, tensor in module.state_dict().items()}
    found = {name: tuple(tensor.shape) for name, tensor in state.items() if isinstance(tensor, torch.Tensor)}
    missing, unexpected = sorted(set(expected) - set(found)), sorted(set(found) - set(expected))
    if missing or unexpected:
        detail = f"it lacks {missing[0]}" if missing else f"it has {unexpected[0]}, which this model lacks"
        raise InputError(f"ckpt_path={path}: a checkpoint of another architecture ({detail}; "
                         f"{len(missing)} missing, {len(unexpected)} unexpected weights): use the model config "
                         f"it was trained with, or another run directory")
    for name, shape in expected.items():
        if found[name] != shape:
            raise InputError(f"ckpt_path={path}: a checkpoint of another model size or vocabulary: {name} has shape "
                             f"{list(found[name])} there and {list(shape)} here; use the model and data config "
                             f"it was trained with, or another run directory")
