"""Subword BPE with Hugging Face `tokenizers`, trained on the training split and cached next to the data.

Metaspace pre-tokenisation (SentencePiece-style "▁" word markers) makes detokenisation an exact inverse for text
with single spaces, so BLEU is computed on the same kind of string as the reference.
"""
from __future__ import annotations

import hashlib
import itertools
from pathlib import Path
from typing import Callable, Iterable

from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

from seqbench.common.io import atomic_path
from seqbench.common.progress import enabled as progress_enabled
from seqbench.common.progress import stage
from seqbench.common.tokens import SPECIAL_TOKENS, UNK
from seqbench.data.cache import cached, intact


def train_bpe(texts: Iterable[str], vocab_size: int, min_frequency: int = 2) -> Tokenizer:
    """BPE trained on `texts` (any iterable: a corpus sample is streamed, never held as one list)."""
    tok = Tokenizer(models.BPE(unk_token=UNK))
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Metaspace()
    tok.decoder = decoders.Metaspace()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=min_frequency, special_tokens=SPECIAL_TOKENS,
                                  show_progress=progress_enabled())
    tok.train_from_iterator(texts, trainer=trainer)
    return tok


class TokenizerPair:
    """Source and target tokenizers; the same object twice when the vocabulary is shared."""

    def __init__(self, src: Tokenizer, tgt: Tokenizer):
        self.src, self.tgt = src, tgt
        self.shared = src is tgt
        self.directory: Path | None = None  # where load_or_train keeps them

    @classmethod
    def load_or_train(cls, directory: Path, texts: Callable[[], tuple[Iterable[str], Iterable[str]]],
                      vocab_size: int, shared: bool, tag: str = "") -> TokenizerPair:
        """The cached tokenizers in `directory`/bpe-..., trained if missing on `texts()` (called only then: the
        training source and target texts, in corpus order). `tag` names how those texts were chosen (a sample)."""
        directory = Path(directory) / f"bpe-{'shared' if shared else 'separate'}-{vocab_size}{tag}"
        toks = []
        for side, path in enumerate(cls._files(directory, shared)):

            def build(path=path, side=side) -> None:
                src, tgt = texts()
                directory.mkdir(parents=True, exist_ok=True)
                which = "shared" if shared else ("source", "target")[side]
                with stage(f"training the {which} BPE tokenizer ({vocab_size:,} types)"):
                    with atomic_path(path) as tmp:  # a killed run never leaves a half-written tokenizer behind
                        train_bpe(itertools.chain(src, tgt) if shared else (src, tgt)[side], vocab_size).save(str(tmp))

            toks.append(cached(path, lambda path=path: Tokenizer.from_file(str(path)), build, "tokenizer"))
        pair = cls(toks[0], toks[-1])
        pair.directory = directory
        return pair

    @classmethod
    def load_cached(cls, directory: Path, vocab_size: int, shared: bool, tag: str = "") -> TokenizerPair | None:
        """The tokenizers `load_or_train` would return, if they are cached and intact; None otherwise."""
        directory = Path(directory) / f"bpe-{'shared' if shared else 'separate'}-{vocab_size}{tag}"
        toks = [intact(path, lambda path=path: Tokenizer.from_file(str(path)))
                for path in cls._files(directory, shared)]
        if any(tok is None for tok in toks):
            return None
        pair = cls(toks[0], toks[-1])
        pair.directory = directory
        return pair

    def digest(self) -> str:
        """Identifies the tokenizers' vocabularies and merges (what a prepared store's ids depend on)."""
        sides = [self.src] if self.shared else [self.src, self.tgt]
        return hashlib.sha256("".join(tok.to_str() for tok in sides).encode()).hexdigest()

    @staticmethod
    def _files(directory: Path, shared: bool) -> list[Path]:
        return [directory / "shared.json"] if shared else [directory / "src.json", directory / "tgt.json"]

    def save(self, directory: str | Path) -> None:
        """The tokenizer JSON files (shared.json, or src.json and tgt.json): all `load` needs, offline."""
        from seqbench.common.io import atomic_write_text

        for tok, path in zip([self.src, self.tgt], self._files(Path(directory), self.shared)):
            atomic_write_text(path, tok.to_str())

    @classmethod
    def load(cls, directory: str | Path) -> TokenizerPair:
        directory = Path(directory)
        shared = (directory / "shared.json").is_file()
        toks = [Tokenizer.from_file(str(p)) for p in cls._files(directory, shared)]
        return cls(toks[0], toks[-1])

    @property
    def src_vocab_size(self) -> int:
        return self.src.get_vocab_size()

    @property
    def tgt_vocab_size(self) -> int:
        return self.tgt.get_vocab_size()

    def encode_src(self, texts: list[str]) -> list[list[int]]:
        return [e.ids for e in self.src.encode_batch(texts)]

    def encode_tgt(self, texts: list[str]) -> list[list[int]]:
        return [e.ids for e in self.tgt.encode_batch(texts)]

    def decode_tgt(self, ids: list[list[int]]) -> list[str]:
        """Token ids (without bos/eos/pad) back to detokenised text."""
        return self.tgt.decode_batch(ids, skip_special_tokens=True)
