"""Using a trained model outside training: a run directory that stands on its own, and one loader for it.

At the start of training `save_run_files` writes into the run directory everything translation needs besides the
weights, so a run copied to another machine translates with no data cache and no network:

    <run>/model.json     {"model": the resolved model config (after compare.param_budget resizing),
                          "src_vocab_size", "tgt_vocab_size", "vocabulary": fingerprint of both vocabularies,
                          "decoding": the run's module.decoding}
    <run>/tokenizers/    Hugging Face tokenizers JSON: shared.json, or src.json and tgt.json
    <run>/config.yaml    the whole resolved config

Checkpoints carry the same model spec in their hyperparameters (`Seq2SeqModule.hparams.model_spec`), so a
checkpoint of another architecture or vocabulary is refused with one line rather than loaded into the wrong model.
An exported folder (`python -m seqbench.export`) holds model.json, tokenizers/, config.yaml and model.safetensors.
`load_run` accepts all three: a run directory (its best or last checkpoint, or any other), a .ckpt inside a run
directory, or an exported folder.
"""
from __future__ import annotations

import hashlib
import json
import pickle
from dataclasses import dataclass
from pathlib import Path

import torch
from hydra.utils import instantiate

from seqbench.data.tokenizer import TokenizerPair
from seqbench.decoding import DecodingConfig
from seqbench.errors import InputError
from seqbench.io import atomic_write_text
from seqbench.models.interface import Seq2Seq

MODEL_FILE, TOKENIZERS_DIR, CONFIG_FILE, WEIGHTS_FILE = "model.json", "tokenizers", "config.yaml", "model.safetensors"
MODULE_PREFIX = "model."  # Seq2SeqModule's state_dict keys are its model's, under this prefix


def vocabulary_fingerprint(tokenizers: TokenizerPair) -> str:
    """Identifies the token-id assignment of both sides: two vocabularies of the same size from different corpora
    fit the same weight shapes, but their ids mean different words."""
    digest = hashlib.sha256()
    for tok in (tokenizers.src, tokenizers.tgt):
        digest.update(json.dumps(tok.get_vocab(), sort_keys=True).encode("utf-8"))
    return digest.hexdigest()[:16]


def model_spec(model_cfg: dict, tokenizers: TokenizerPair) -> dict:
    """What rebuilds the model without the data: its config, vocabulary sizes and vocabulary fingerprint."""
    return {"model": model_cfg, "src_vocab_size": tokenizers.src_vocab_size,
            "tgt_vocab_size": tokenizers.tgt_vocab_size, "vocabulary": vocabulary_fingerprint(tokenizers)}


def instantiate_model(model_cfg: dict, src_vocab_size: int, tgt_vocab_size: int) -> Seq2Seq:
    kwargs = {k: v for k, v in model_cfg.items() if k != "name"}
    return instantiate(kwargs, src_vocab_size=src_vocab_size, tgt_vocab_size=tgt_vocab_size)


def build_model(spec: dict) -> Seq2Seq:
    return instantiate_model(spec["model"], spec["src_vocab_size"], spec["tgt_vocab_size"])


def save_run_files(directory: str | Path, spec: dict, decoding: dict, tokenizers: TokenizerPair,
                   config_yaml: str) -> None:
    directory = Path(directory)
    atomic_write_text(directory / MODEL_FILE, json.dumps({**spec, "decoding": decoding}, indent=2) + "\n")
    tokenizers.save(directory / TOKENIZERS_DIR)
    atomic_write_text(directory / CONFIG_FILE, config_yaml)


def read_checkpoint(path: str | Path, origin: str | None = None) -> dict:
    """A Lightning checkpoint, loaded on the CPU with `weights_only=True`: tensors and plain containers only, so
    opening a checkpoint from elsewhere cannot run code. `origin` names it in error messages (default: its path)."""
    path = Path(path)
    origin = origin or str(path)
    if not path.is_file():
        raise InputError(f"{origin}: no such checkpoint file")
    try:
        checkpoint = torch.load(path, map_location="cpu", weights_only=True)
    except (pickle.UnpicklingError, RuntimeError, EOFError, ValueError) as error:
        first_line = (str(error).strip().splitlines() or [type(error).__name__])[0]
        raise InputError(f"{origin}: not a readable checkpoint ({first_line[:200]})") from None
    if not isinstance(checkpoint, dict) or "state_dict" not in checkpoint:
        raise InputError(f"{origin}: not a Lightning checkpoint (no state_dict)")
    return checkpoint


def checkpoint_spec(checkpoint: dict) -> dict | None:
    """The model spec a checkpoint was trained with; None for checkpoints written before specs were saved."""
    return (checkpoint.get("hyper_parameters") or {}).get("model_spec")


def model_weights(checkpoint: dict) -> dict[str, torch.Tensor]:
    """The model's own state dict out of a Seq2SeqModule checkpoint (the module prefix removed)."""
    return {k[len(MODULE_PREFIX):]: v for k, v in checkpoint["state_dict"].items() if k.startswith(MODULE_PREFIX)}


def _describe(spec: dict) -> str:
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
        raise InputError(f"{origin}: trained with another vocabulary ({_describe(found)}) than this model "
                         f"({_describe(expected)}): its token ids mean other words")
    problems = _shape_problems(model, weights)
    if problems:
        detail = _spec_differences(found, expected) if found is not None else []
        raise InputError(f"{origin}: a checkpoint of another model: " + ", ".join((detail or problems)[:3])
                         + (" ..." if len(detail or problems) > 3 else ""))


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
    results_file = run_dir / "results.json"
    recorded = json.loads(results_file.read_text()).get("train", {}).get("best_checkpoint") \
        if results_file.is_file() else None
    candidates = sorted((run_dir / "checkpoints").glob("best-*.ckpt"))
    if recorded:
        local = run_dir / "checkpoints" / Path(recorded).name  # the run directory may have moved since
        for path in (local, Path(recorded)):
            if path.is_file():
                return path
    if len(candidates) == 1:
        return candidates[0]
    found = ", ".join(p.name for p in candidates) or "none"
    raise InputError(f"{run_dir}: cannot tell which checkpoint is the best (best-*.ckpt: {found}); "
                     f"pass --checkpoint last or a .ckpt path")


def resolve_checkpoint(run_dir: Path, which: str) -> Path:
    """`best`, `last` or a path -> a checkpoint file of the run."""
    if which == "best":
        return best_checkpoint(run_dir)
    path = run_dir / "checkpoints" / "last.ckpt" if which == "last" else Path(which)
    if not path.is_file():
        raise InputError(f"{path}: no such checkpoint file")
    return path


@dataclass
class LoadedModel:
    model: Seq2Seq          # in eval mode, on the CPU
    tokenizers: TokenizerPair
    decoding: DecodingConfig  # the run's decoding settings
    spec: dict              # model.json
    root: Path              # the run directory or exported folder
    weights: Path           # the checkpoint or safetensors file the weights came from


def find_root(path: Path) -> Path:
    """The run directory or exported folder of a path: the path itself, or the folder a checkpoint lies in (or the
    run directory above its checkpoints/)."""
    candidates = [path] if path.is_dir() else [path.parent, path.parent.parent]
    for root in candidates:
        if (root / MODEL_FILE).is_file():
            return root
    raise InputError(f"{path}: no {MODEL_FILE} found (not a seqbench run directory, a checkpoint inside one, or an "
                     f"exported model; runs trained before run directories were self-contained lack it)")


def load_run(path: str | Path, checkpoint: str = "best") -> LoadedModel:
    """Model, tokenizers and decoding settings from a run directory (`checkpoint`: best, last or a path), a .ckpt
    inside a run directory, or an exported folder. Reads local files only."""
    path = Path(path)
    if not path.exists():
        raise InputError(f"{path}: no such run directory, checkpoint or exported model")
    root = find_root(path)
    spec = json.loads((root / MODEL_FILE).read_text())
    tokenizers = TokenizerPair.load(root / TOKENIZERS_DIR)
    model = build_model(spec)
    if path.is_file():
        weights = path
    elif (root / WEIGHTS_FILE).is_file():
        if checkpoint != "best":
            raise InputError(f"{root}: an exported model has one set of weights; --checkpoint does not apply")
        weights = root / WEIGHTS_FILE
    else:
        weights = resolve_checkpoint(root, checkpoint)
    if weights.suffix == ".safetensors":
        load_safetensors(model, weights, spec)
    else:
        load_checkpoint_weights(model, weights, spec)
    return LoadedModel(model.eval(), tokenizers, DecodingConfig(**spec["decoding"]), spec, root, weights)


def load_safetensors(model: Seq2Seq, path: Path, expected: dict) -> None:
    from safetensors.torch import load_model

    try:
        load_model(model, str(path), strict=True)
    except RuntimeError as error:
        raise InputError(f"{path}: weights do not fit the model described by {MODEL_FILE} "
                         f"({_describe(expected)}): {str(error).strip().splitlines()[0]}") from error
