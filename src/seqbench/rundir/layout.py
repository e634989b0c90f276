"""Where everything lies in a run directory (and an exported model folder): the one place these names are written.

    <run>/results.json            the versioned record (seqbench.rundir.results)
    <run>/model.json              model config, vocabulary sizes and fingerprint, decoding settings (loading)
    <run>/config.yaml             the whole resolved config
    <run>/tokenizers/             Hugging Face tokenizers JSON: shared.json, or src.json and tgt.json
    <run>/checkpoints/            best-*.ckpt, last.ckpt (what a rerun resumes from), recent-step*.ckpt
    <run>/{hypotheses,references,sources}.<split>.txt   one sentence per line, same order (split: valid, test)
    <run>/attention.pt            attention maps of a few test sentences (seqbench.decoding.attention)
    <export>/model.safetensors    an exported model's weights (seqbench export), beside model.json and tokenizers/
    <export>/ctranslate2/         the same weights as a CTranslate2 model (seqbench export --format ctranslate2)
    <run>/.lock                   held by the run using the directory (seqbench.rundir.lock); names its process
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from seqbench.common.io import atomic_write_text

RESULTS_FILE = "results.json"
MODEL_FILE = "model.json"
CONFIG_FILE = "config.yaml"
TOKENIZERS_DIR = "tokenizers"
CHECKPOINTS_DIR = "checkpoints"
LAST_CHECKPOINT = "last.ckpt"
BEST_CHECKPOINTS = "best-*.ckpt"
RECENT_CHECKPOINTS = "recent-step*.ckpt"  # callbacks.recent_checkpoints' file names (conf/callbacks/default.yaml)
WEIGHTS_FILE = "model.safetensors"
CTRANSLATE2_DIR = "ctranslate2"
ATTENTION_FILE = "attention.pt"
TEXT_FILES = ("hypotheses", "references", "sources")
LOCK_FILE = ".lock"


@dataclass(frozen=True)
class RunDir:
    """The paths of one run directory (or exported folder); nothing is read or created here."""

    path: Path

    def __post_init__(self):
        object.__setattr__(self, "path", Path(self.path))

    @property
    def results(self) -> Path:
        return self.path / RESULTS_FILE

    @property
    def model_file(self) -> Path:
        return self.path / MODEL_FILE

    @property
    def config_file(self) -> Path:
        return self.path / CONFIG_FILE

    @property
    def tokenizers(self) -> Path:
        return self.path / TOKENIZERS_DIR

    @property
    def checkpoints(self) -> Path:
        return self.path / CHECKPOINTS_DIR

    @property
    def last_checkpoint(self) -> Path:
        return self.checkpoints / LAST_CHECKPOINT

    @property
    def weights(self) -> Path:
        return self.path / WEIGHTS_FILE

    @property
    def ctranslate2(self) -> Path:
        return self.path / CTRANSLATE2_DIR

    @property
    def attention(self) -> Path:
        return self.path / ATTENTION_FILE

    @property
    def lock(self) -> Path:
        return self.path / LOCK_FILE

    def text(self, name: str, split: str) -> Path:
        """hypotheses / references / sources of a split, one sentence per line."""
        return self.path / f"{name}.{split}.txt"

    def write_texts(self, split: str, texts: dict[str, list[str]]) -> list[Path]:
        """<name>.<split>.txt for each of TEXT_FILES in `texts`, one sentence per line, each written atomically."""
        return [atomic_write_text(self.text(name, split), "".join(line + "\n" for line in texts[name]))
                for name in TEXT_FILES]
