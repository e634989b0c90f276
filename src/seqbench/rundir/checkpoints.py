"""Checkpoints: read safely (tensors and plain types only), checked against the model they are loaded into, and found
in a run directory (best, last, or a path).

Checkpoints carry the model spec in their hyperparameters (`Seq2SeqModule.hparams.model_spec`, see
seqbench.rundir.loading), so a checkpoint of another architecture or vocabulary is refused with one line rather than
loaded into the wrong model.
"""
from __future__ import annotations

import pickle
from pathlib import Path

import torch

from seqbench.common.errors import InputError
from seqbench.models.interface import Seq2Seq
from seqbench.rundir.layout import BEST_CHECKPOINTS, RunDir
from seqbench.rundir.results import read_results

MODULE_PREFIX = "model."  # Seq2SeqModule's state_dict keys are its model's, under this prefix
# what torch.load raises for a file that is cut short, empty or not its own (a text file: KeyError)
TORCH_LOAD_ERRORS = (pickle.UnpicklingError, RuntimeError, EOFError, ValueError, KeyError)


def unreadable(error: BaseException) -> str:
    """Why a file could not be read, in a few words: the first line of the error (its type where that says more)."""
    first = (str(error).strip().splitlines() or [""])[0]
    return (f"{type(error).__name__} {first}".strip() if isinstance(error, KeyError) or not first else first)[:200]


def read_checkpoint(path: str | Path, origin: str | None = None, mmap: bool = False) -> dict:
    """A Lightning checkpoint, loaded on the CPU with `weights_only=True`: tensors and plain containers only, so
    opening a checkpoint from elsewhere cannot run code. `origin` names it in error messages (default: its path);
    `mmap`: map the file instead of reading it, so the tensors' data is read only where it is used (a check of
    shapes and hyperparameters reads almost nothing)."""
    path = Path(path)
    origin = origin or str(path)
    if not path.is_file():
        raise InputError(f"{origin}: no such checkpoint file")
    try:
        checkpoint = torch.load(path, map_location="cpu", weights_only=True, mmap=mmap)
    except TORCH_LOAD_ERRORS as error:
        raise InputError(f"{origin}: not a readable checkpoint ({unreadable(error)})") from None
    if not isinstance(checkpoint, dict) or "state_dict" not in checkpoint:
        raise InputError(f"{origin}: not a Lightning checkpoint (no state_dict)")
    return checkpoint


def checkpoint_spec(checkpoint: dict) -> dict | None:
    """The model spec a checkpoint was trained with; None for checkpoints written before specs were saved."""
    return (checkpoint.get("hyper_parameters") or {}).get("model_spec")


def model_weights(checkpoint: dict) -> dict[str, torch.Tensor]:
    """The model's own state dict out of a Seq2SeqModule checkpoint (the module prefix removed)."""
    return {k[len(MODULE_PREFIX):]: v for k, v in checkpoint["state_dict"].items() if k.startswith(MODULE_PREFIX)}


def describe_spec(spec: dict) -> str:
    return f"{spec['model'].get('name', '?')}, vocabularies {spec['src_vocab_size']}/{spec['tgt_vocab_size']}"


def _spec_differences(found: dict, expected: dict) -> list[str]:
    out = [f"{key}={found[key]} (expected {expected[key]})" for key in ("src_vocab_size", "tgt_vocab_size")
           if found.get(key) != expected.get(key)]
    for key in sorted(set(found["model"]) | set(expected["model"]), key=lambda k: (k != "name", k)):
        if found["model"].get(key) != expected["model"].get(key):
            out.append(f"model.{key}={found['model'].get(key)!r} (expected {expected['model'].get(key)!r})")
    return out


def _shape_problems(model: Seq2Seq, weights: dict[str, torch.Tensor]) -> list[str]:
    own = model.state_dict()
    problems = [f"missing {k}" for k in own if k not in weights]
    problems += [f"unexpected {k}" for k in weights if k not in own]
    problems += [f"{k} has shape {list(weights[k].shape)} (expected {list(v.shape)})" for k, v in own.items()
                 if k in weights and weights[k].shape != v.shape]
    return problems


def check_fits(model: Seq2Seq, weights: dict[str, torch.Tensor], origin: str, found: dict | None,
               expected: dict) -> None:
    """One-line InputError when `weights` (described by spec `found`, None if unknown) do not belong in `model`
    (built from spec `expected`): another architecture or size, or another vocabulary, even of the same size."""
    if found is not None and found.get("vocabulary") != expected.get("vocabulary"):
        raise InputError(f"{origin}: trained with another vocabulary ({describe_spec(found)}) than this model "
                         f"({describe_spec(expected)}): its token ids mean other words")
    problems = _shape_problems(model, weights)
    if problems:
        detail = _spec_differences(found, expected) if found is not None else []
        raise InputError(f"{origin}: a checkpoint of another model: " + ", ".join((detail or problems)[:3])
                         + (" ..." if len(detail or problems) > 3 else ""))


def check_checkpoint(model: Seq2Seq, path: str | Path, expected: dict, origin: str | None = None) -> dict:
    """One-line InputError when the checkpoint's weights do not belong in `model` (check_fits), read through a memory
    map so the weights are not loaded: whatever resumes or evaluates it loads it once. Returns the checkpoint."""
    checkpoint = read_checkpoint(path, origin, mmap=True)
    check_fits(model, model_weights(checkpoint), origin or str(path), checkpoint_spec(checkpoint), expected)
    return checkpoint


def load_checkpoint_weights(model: Seq2Seq, path: str | Path, expected: dict, origin: str | None = None) -> dict:
    """Loads a checkpoint's weights into `model` after checking they fit; returns the checkpoint. `origin` names the
    checkpoint in error messages (default: its path)."""
    checkpoint = read_checkpoint(path, origin)
    weights = model_weights(checkpoint)
    check_fits(model, weights, origin or str(path), checkpoint_spec(checkpoint), expected)
    model.load_state_dict(weights)
    return checkpoint


def best_checkpoint(run_dir: Path) -> Path:
    """The checkpoint the run was evaluated with (results.json), else its only best-*.ckpt."""
    results_file = RunDir(run_dir).results
    recorded = read_results(results_file).get("train", {}).get("best_checkpoint") \
        if results_file.is_file() else None
    candidates = sorted(RunDir(run_dir).checkpoints.glob(BEST_CHECKPOINTS))
    if recorded:
        local = RunDir(run_dir).checkpoints / Path(recorded).name  # the run directory may have moved since
        for path in (local, Path(recorded)):
            if path.is_file():
                return path
    if len(candidates) == 1:
        return candidates[0]
    if recorded:
        raise InputError(f"{local}: missing, and results.json names it the best checkpoint; copy it back, or pass "
                         f"--checkpoint last or a .ckpt path")
    found = ", ".join(p.name for p in candidates) or "none"
    raise InputError(f"{run_dir}: cannot tell which checkpoint is the best (best-*.ckpt: {found}); "
                     f"pass --checkpoint last or a .ckpt path")


def resolve_checkpoint(run_dir: Path, which: str) -> Path:
    """`best`, `last` or a path -> a checkpoint file of the run."""
    if which == "best":
        return best_checkpoint(run_dir)
    path = RunDir(run_dir).last_checkpoint if which == "last" else Path(which)
    if not path.is_file():
        raise InputError(f"{path}: no such checkpoint file")
    return path
