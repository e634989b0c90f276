"""Using a trained model outside training: a run directory that stands on its own, and one loader for it.

At the start of training `save_run_files` writes into the run directory everything translation needs besides the
weights, so a run copied to another machine translates with no data cache and no network:

    <run>/model.json     {"model": the resolved model config (after compare.param_budget resizing),
                          "src_vocab_size", "tgt_vocab_size", "vocabulary": fingerprint of both vocabularies,
                          "decoding": the run's module.decoding}
    <run>/tokenizers/    Hugging Face tokenizers JSON: shared.json, or src.json and tgt.json
    <run>/config.yaml    the whole resolved config

Checkpoints carry the same model spec in their hyperparameters (`Seq2SeqModule.hparams.model_spec`), so a
checkpoint of another architecture or vocabulary is refused with one line (seqbench.rundir.checkpoints). An exported
folder (`seqbench export`) holds model.json, tokenizers/, config.yaml and model.safetensors.
`load_run` accepts all three: a run directory (its best or last checkpoint, or any other), a .ckpt inside a run
directory, or an exported folder.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from seqbench.common.errors import InputError
from seqbench.common.io import atomic_write_text
from seqbench.data.tokenizer import TokenizerPair
from seqbench.decoding.search import DecodingConfig
from seqbench.models.interface import Seq2Seq, build_model
from seqbench.rundir.checkpoints import describe_spec, load_checkpoint_weights, resolve_checkpoint
from seqbench.rundir.layout import MODEL_FILE, RunDir


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


def model_from_spec(spec: dict) -> Seq2Seq:
    return build_model(spec["model"], spec["src_vocab_size"], spec["tgt_vocab_size"])


def save_run_files(directory: str | Path, spec: dict, decoding: dict, tokenizers: TokenizerPair,
                   config_yaml: str) -> None:
    run = RunDir(directory)
    atomic_write_text(run.model_file, json.dumps({**spec, "decoding": decoding}, indent=2) + "\n")
    tokenizers.save(run.tokenizers)
    atomic_write_text(run.config_file, config_yaml)


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
        if RunDir(root).model_file.is_file():
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
    run = RunDir(root)
    spec = json.loads(run.model_file.read_text())
    tokenizers = TokenizerPair.load(run.tokenizers)
    model = model_from_spec(spec)
    if path.is_file():
        weights = path
    elif run.weights.is_file():
        if checkpoint != "best":
            raise InputError(f"{root}: an exported model has one set of weights; --checkpoint does not apply")
        weights = run.weights
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
                         f"({describe_spec(expected)}): {str(error).strip().splitlines()[0]}") from error
