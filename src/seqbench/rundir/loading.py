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
directory, or an exported folder. Every file it reads is checked as it is read: a missing, empty, cut-short or foreign
model.json, tokenizer or weights file is one line naming the file and what to do.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from seqbench.common.errors import ConfigError, InputError
from seqbench.common.io import atomic_write_text
from seqbench.data.tokenizer import TokenizerPair
from seqbench.decoding.search import DecodingConfig
from seqbench.decoding.translator import Decoder, SearchDecoder
from seqbench.models.interface import Seq2Seq, build_model, family_of
from seqbench.rundir.checkpoints import describe_spec, load_checkpoint_weights, resolve_checkpoint
from seqbench.rundir.layout import CHECKPOINTS_DIR, MODEL_FILE, WEIGHTS_FILE, RunDir

RESTORE = "copy it again from the run directory, or export the run again (seqbench export)"
SPEC_FIELDS = {"model": dict, "src_vocab_size": int, "tgt_vocab_size": int, "decoding": dict}


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

    @property
    def position_limit(self) -> int | None:
        """The most tokens the model takes on either side (None: any length)."""
        return family_of(self.spec["model"]).position_limit(self.spec["model"])

    def decoder(self, engine: str = "seqbench", device: str = "cpu") -> Decoder:
        """The decoder `engine` names: seqbench's search over this model, or CTranslate2 over the model exported
        beside it (`seqbench export --format ctranslate2`)."""
        if engine == "seqbench":
            return SearchDecoder(self.model, device)
        from seqbench.decoding.ctranslate2 import Engine

        folder = RunDir(self.root).ctranslate2
        if not folder.is_dir():
            raise InputError(f"{self.root}: no CTranslate2 model; export one with `seqbench export RUN OUT "
                             f"--format ctranslate2`, then translate OUT with --engine ctranslate2")
        return Engine.for_tokenizers(folder, self.tokenizers, device=device)


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
    spec = read_spec(run.model_file)
    decoding = decoding_settings(spec, run.model_file)
    tokenizers = load_tokenizers(run.tokenizers, spec, run.model_file)
    model = model_from_spec(spec)
    weights = weights_file(path, run, checkpoint)
    if weights.suffix == ".safetensors":
        load_safetensors(model, weights, spec)
    else:
        load_checkpoint_weights(model, weights, spec)
    return LoadedModel(model.eval(), tokenizers, decoding, spec, root, weights)


def weights_file(path: Path, run: RunDir, checkpoint: str) -> Path:
    """The file the weights come from: the .ckpt given, an export's model.safetensors, or the run's checkpoint."""
    if path.is_file():
        return path
    if run.weights.is_file():
        if checkpoint != "best":
            raise InputError(f"{run.path}: an exported model has one set of weights; --checkpoint does not apply")
        return run.weights
    if not run.checkpoints.is_dir():  # neither kind: results.json may name a checkpoint of some other folder
        raise InputError(f"{run.path}: no weights, neither {WEIGHTS_FILE} (an exported model) nor {CHECKPOINTS_DIR}/ "
                         f"(a run directory); export the run again, or copy its {CHECKPOINTS_DIR}/ back")
    return resolve_checkpoint(run.path, checkpoint)


def file_bytes(path: Path) -> bytes:
    """A small file's bytes; missing or empty is one line naming it."""
    if not path.is_file():
        raise InputError(f"{path}: missing; {RESTORE}")
    data = path.read_bytes()
    if not data:
        raise InputError(f"{path}: empty; {RESTORE}")
    return data


def read_spec(path: Path) -> dict:
    """model.json, checked: cut short, not JSON, or not a seqbench model spec is one line naming it."""
    try:
        spec = json.loads(file_bytes(path))
    except ValueError as error:  # JSONDecodeError, UnicodeDecodeError
        raise InputError(f"{path}: not valid JSON, cut short or damaged ({error}); {RESTORE}") from None
    if not isinstance(spec, dict) or any(not isinstance(spec.get(k), kind) for k, kind in SPEC_FIELDS.items()):
        raise InputError(f"{path}: not a seqbench {MODEL_FILE} (it holds {', '.join(SPEC_FIELDS)}); {RESTORE}")
    try:
        family_of(spec["model"])
    except ConfigError as error:
        raise InputError(f"{path}: {error}; {RESTORE}") from None
    return spec


def decoding_settings(spec: dict, origin: Path) -> DecodingConfig:
    try:
        return DecodingConfig(**spec["decoding"])
    except TypeError as error:  # a key this version does not know
        raise InputError(f"{origin}: decoding settings this seqbench cannot read ({error}); {RESTORE}") from None


def load_tokenizers(directory: Path, spec: dict, origin: Path) -> TokenizerPair:
    """The run's tokenizers, each file checked, and their vocabularies checked against `spec` (read from `origin`):
    tokenizers of another run would turn the right ids into the wrong words."""
    shared = (directory / "shared.json").is_file()
    tokenizers = [read_tokenizer(file) for file in TokenizerPair._files(directory, shared)]
    pair = TokenizerPair(tokenizers[0], tokenizers[-1])
    found = model_spec({}, pair)
    if any(found[key] != spec.get(key, found[key]) for key in ("src_vocab_size", "tgt_vocab_size", "vocabulary")):
        raise InputError(f"{directory}: tokenizers of another vocabulary ({found['src_vocab_size']}/"
                         f"{found['tgt_vocab_size']} tokens) than {origin} describes ({spec['src_vocab_size']}/"
                         f"{spec['tgt_vocab_size']}); copy the run's own {directory.name}/ again")
    return pair


def read_tokenizer(file: Path):
    """One Hugging Face tokenizers JSON file; missing, empty, cut short or not a tokenizer is one line naming it."""
    from tokenizers import Tokenizer

    data = file_bytes(file)
    try:
        return Tokenizer.from_str(data.decode("utf-8"))
    except Exception as error:  # noqa: BLE001 - the tokenizers library raises bare Exceptions (and UTF-8 may fail)
        first = (str(error).strip().splitlines() or [type(error).__name__])[0]
        raise InputError(f"{file}: not a tokenizer file, cut short or damaged ({first[:200]}); {RESTORE}") from None


def load_safetensors(model: Seq2Seq, path: Path, expected: dict) -> None:
    from safetensors import SafetensorError
    from safetensors.torch import load_model

    if path.stat().st_size == 0:
        raise InputError(f"{path}: empty; export the run again (seqbench export)")
    try:
        load_model(model, str(path), strict=True)
    except SafetensorError as error:
        raise InputError(f"{path}: not a readable safetensors file, cut short or damaged ({error}); export the run "
                         f"again (seqbench export)") from None
    except RuntimeError as error:
        raise InputError(f"{path}: weights do not fit the model described by {MODEL_FILE} "
                         f"({describe_spec(expected)}): {str(error).strip().splitlines()[0]}") from error
