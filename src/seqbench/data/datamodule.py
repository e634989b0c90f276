"""One LightningDataModule for every corpus: length filters, BPE tokenisation, token-budget batches.

The corpus is tokenised once into a prepared store (seqbench.data.store) that every process maps; training reads its
batches from there and plans them from its length arrays, so no process holds the training text or its token ids in
Python objects. Only the evaluation splits (small) keep their text in memory, for scoring.
"""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Iterator

import lightning as L
import numpy as np
import torch
from torch.utils.data import DataLoader

from seqbench.common.breakdowns import CorpusScoring
from seqbench.common.errors import InputError
from seqbench.common.io import atomic_path
from seqbench.common.progress import progress_bar
from seqbench.common.text import word_count
from seqbench.data.batching import Batches, TokenBudgetBatchSampler, collate, plan_batches
from seqbench.data.cache import cached, seal_digest
from seqbench.data.corpus import SPLITS
from seqbench.data.eval_split import EvalSplit
from seqbench.data.store import CHUNK, Identity, Store, StoreSplit, corpus_digest, open_existing, open_or_build
from seqbench.data.tokenizer import TokenizerPair

log = logging.getLogger(__name__)


class Seq2SeqDataModule(L.LightningDataModule):
    def __init__(self, corpus, cache_dir: str, vocab_size: int = 4000, shared_vocab: bool = False,
                 max_tokens: int = 4096, eval_max_tokens: int | None = None, max_sentences: int | None = None,
                 train_max_len: int | None = None, max_src_len: int | None = None, max_tgt_len: int | None = None,
                 num_workers: int = 0, seed: int = 0, tokenizer_sample: int | None = 1_000_000):
        super().__init__()
        self.corpus, self.cache_dir = corpus, Path(cache_dir)
        self.vocab_size, self.shared_vocab = vocab_size, shared_vocab
        self.max_tokens, self.eval_max_tokens = max_tokens, eval_max_tokens or max_tokens
        self.max_sentences, self.num_workers, self.seed = max_sentences, num_workers, seed
        self.train_max_len, self.max_src_len, self.max_tgt_len = train_max_len, max_src_len, max_tgt_len
        self.tokenizer_sample = tokenizer_sample
        self.tokenizers: TokenizerPair | None = None
        self.store: Store | None = None
        self.text: dict[str, dict[str, list[str]]] = {}  # valid/test only: sources and references, for scoring
        self.columns: dict[str, dict[str, list]] = {}  # valid/test: the corpus's other columns (per-pair structure)
        self.encoded: dict[str, StoreSplit] = {}
        self.filter_counts: dict[str, int] = {}  # pairs removed by the length filters, per split
        self.raw_sizes: dict[str, int] = {}      # pairs per split before the length filters
        self._train_resume: tuple[int, int] | None = None  # (epoch, batches done) for the next train loader

    def resume_training_at(self, epoch: int, batches_done: int) -> None:
        """The next train_dataloader() continues `epoch` after `batches_done` batches (seqbench.training.callbacks.
        ResumeState calls this when a run restarts from a checkpoint taken mid-epoch)."""
        self._train_resume = (epoch, batches_done)

    def prepare_data(self) -> None:
        # Runs on one process per node before `setup` (and again before every trainer.validate/test): builds the
        # cached corpus, tokenizers and prepared store there; the other processes wait for their locks, then map them.
        if not self.encoded:
            self._load()

    def setup(self, stage: str | None = None) -> None:
        if not self.encoded:
            self._load()

    def _filters_key(self) -> str:
        return f"len{self.train_max_len or 0}-{self.max_src_len or 0}-{self.max_tgt_len or 0}"

    def _keep(self, split: str, src: str, tgt: str) -> bool:
        """Drops empty pairs and applies the word-count filters; `train_max_len` applies to training data only
        (the RNNenc-30/50 experiments train on short sentences and test on all)."""
        n_src, n_tgt = word_count(src), word_count(tgt)
        if not n_src or not n_tgt:  # an empty side has nothing to attend to / nothing to predict
            return False
        if self.max_src_len and n_src > self.max_src_len or self.max_tgt_len and n_tgt > self.max_tgt_len:
            return False
        return not (split == "train" and self.train_max_len and max(n_src, n_tgt) > self.train_max_len)

    def _kept_rows(self, dataset, split: str) -> np.ndarray:
        """Rows of a split that pass the filters, read a chunk at a time."""
        kept = []
        with progress_bar(f"filtering {split}", total=dataset[split].num_rows, unit="pairs") as advance:
            for start, batch in enumerate(dataset[split].select_columns(["src", "tgt"]).iter(batch_size=CHUNK)):
                kept.append(np.flatnonzero([self._keep(split, s, t) for s, t in zip(batch["src"], batch["tgt"])])
                            + start * CHUNK)
                advance(len(batch["src"]))
        rows = np.concatenate(kept) if kept else np.empty(0, dtype=np.int64)
        if not len(rows):
            raise InputError(f"the {split} split of {self.corpus.name} is empty after filtering: raise "
                             f"data.train_max_len / data.max_src_len / data.max_tgt_len or check the corpus")
        return rows

    def _tokenizer_rows(self, kept: np.ndarray) -> np.ndarray:
        """The training rows the tokenizer learns from: all of them, or a seeded sample of data.tokenizer_sample
        (seeded alike for every run seed, so all seeds share one tokenizer and one store)."""
        if not self.tokenizer_sample or len(kept) <= self.tokenizer_sample:
            return kept
        return kept[np.sort(np.random.default_rng(0).choice(len(kept), self.tokenizer_sample, replace=False))]

    def _tokenizer_options(self) -> dict:
        tag = f"-sample{self.tokenizer_sample}" if self.tokenizer_sample else ""
        return {"vocab_size": self.vocab_size, "shared": self.shared_vocab, "tag": tag}

    def _load(self) -> None:
        # The tokenizer is trained on the filtered training text, so the filters are part of its cache key.
        parent = self.cache_dir / self.corpus.name / self._filters_key()
        self.store = self._prepared(parent) or self._prepare(parent)
        self.encoded = dict(self.store.splits)
        for split, entry in self.store.meta["splits"].items():
            self.raw_sizes[split] = entry["raw_pairs"]
            self.filter_counts[split] = entry["raw_pairs"] - entry["pairs"]
        for split in SPLITS[1:]:  # the evaluation splits: small, their text and columns kept for scoring
            self.text[split], self.columns[split] = self.store.evaluation_text(split)
        log.info("corpus %s: %s", self.corpus.name, ", ".join(
            f"{split} {len(self.encoded[split])}" + (f" ({self.filter_counts[split]} removed by length filters)"
                                                     if self.filter_counts[split] else "") for split in SPLITS))

    def _corpus_version(self) -> str | None:
        """The cached corpus's version without reading it: its cache entry's seal (corpora cache themselves at
        <cache_dir>/<name>/dataset); None for a corpus without one (held in memory)."""
        return seal_digest(self.cache_dir / self.corpus.name / "dataset")

    def _prepared(self, parent: Path) -> Store | None:
        """The store prepared before from this corpus version with these tokenizers, opened without loading the
        corpus: what every process of a run does once the data is prepared (a corpus's Arrow files, opened, put
        hundreds of MB of their pages into each process)."""
        version = self._corpus_version()
        tokenizers = TokenizerPair.load_cached(parent, **self._tokenizer_options()) if version else None
        if tokenizers is None:
            return None
        self.tokenizers = tokenizers
        return open_existing(tokenizers.directory, Identity(version, tokenizers.digest(), self._filters_key()))

    def _prepare(self, parent: Path) -> Store:
        """Loads (or builds) the corpus, then the tokenizers and the store, building what is missing."""
        dataset = self.corpus.load(self.cache_dir)
        kept: dict[str, np.ndarray] = {}

        def kept_rows(split: str) -> np.ndarray:  # computed only when something must be built, once
            if split not in kept:
                kept[split] = self._kept_rows(dataset, split)
            return kept[split]

        def training_texts() -> tuple[Iterator[str], Iterator[str]]:
            rows = self._tokenizer_rows(kept_rows("train"))
            return (_column(dataset["train"], rows, side) for side in ("src", "tgt"))

        self.tokenizers = TokenizerPair.load_or_train(parent, training_texts, **self._tokenizer_options())
        version = self._corpus_version() or corpus_digest(dataset)
        identity = Identity(version, self.tokenizers.digest(), self._filters_key())
        return open_or_build(self.tokenizers.directory, identity, dataset, kept_rows, self.tokenizers,
                             getattr(self.corpus, "where", None))

    def sentences(self, split: str, side: str) -> Iterator[str]:
        """The filtered sentences of one side of a split, the training split's streamed from the corpus."""
        if split in self.text:
            return iter(self.text[split][side])
        return _column(self.corpus.load(self.cache_dir)[split], np.asarray(self.encoded[split].rows), side)

    def _loader(self, data: StoreSplit, batches: Batches | list[list[int]], shuffle: bool,
                resumable: bool = False) -> DataLoader:
        sampler = TokenBudgetBatchSampler(batches, shuffle=shuffle, seed=self.seed)
        if resumable and self._train_resume is not None:  # the training loader of a run resumed mid-epoch
            sampler.resume(*self._train_resume)
            self._train_resume = None
        # Its own generator: otherwise every iterator Lightning makes draws its worker seed from torch's global one,
        # the dropout stream, and a resumed run (whose restart makes an iterator the uninterrupted run did not) or a
        # change of validation frequency would train on other dropout masks. The batch order is the sampler's.
        return DataLoader(data, batch_sampler=sampler, collate_fn=collate, num_workers=self.num_workers,
                          generator=torch.Generator().manual_seed(self.seed))

    def longest(self) -> dict[str, tuple[int, int]]:
        """Per split, tokens of the longest source and of the longest target + 1 (<bos> y / y <eos>): the lengths
        its batches and the model's positions must hold."""
        return {split: (int(data.src_lengths.max()), int(data.tgt_lengths.max()) + 1)
                for split, data in self.encoded.items()}

    def token_budget(self, split: str) -> int:
        """Tokens per batch of a split (data.max_tokens for training, data.eval_max_tokens otherwise)."""
        return self.max_tokens if split == "train" else self.eval_max_tokens

    def train_dataloader(self) -> DataLoader:
        data = self.encoded["train"]
        batches = self.training_plan()
        # Lightning's overfit_batches (debug=overfit) needs the same batches every epoch, and it cannot turn off the
        # shuffling of a batch sampler itself.
        overfit = self.trainer is not None and self.trainer.overfit_batches > 0
        return self._loader(data, batches, shuffle=not overfit, resumable=True)

    def training_plan(self) -> Batches:
        """The training split's batches, planned once per token budget and seed and kept beside the store: every
        rank and every later run of that seed maps the plan (planning a 4.5M-pair split takes seconds and ~100 MB
        for a moment)."""
        directory = self.store.directory
        entry = directory.with_name(f"{directory.name}.plans") / (
            f"tokens{self.max_tokens}-sentences{self.max_sentences or 0}-seed{self.seed}")
        data = self.encoded["train"]

        def build() -> None:
            plan = plan_batches(data.src_lengths, np.add(data.tgt_lengths, 1, dtype=np.int32),  # +1: the <eos>
                                self.max_tokens, self.max_sentences, seed=self.seed)
            with atomic_path(entry) as tmp:
                plan.save(tmp)

        return cached(entry, lambda: Batches.load(entry), build, "batch plan")

    def val_dataloader(self) -> DataLoader:
        split = self.evaluation("valid")
        return self._loader(split.encoded, split.batch_indices(), shuffle=False)

    def test_dataloader(self) -> DataLoader:
        split = self.evaluation("test")
        return self._loader(split.encoded, split.batch_indices(), shuffle=False)

    def evaluation(self, split: str) -> EvalSplit:
        """The one object evaluation code gets of a split (valid or test): texts, detokenisation, batches."""
        return EvalSplit(split, self.text[split]["src"], self.text[split]["tgt"], self.encoded[split],
                         self.tokenizers, self.eval_max_tokens, self.max_sentences, self.seed,
                         self.columns.get(split, {}), getattr(self.corpus, "scoring", None) or CorpusScoring())

    @property
    def vocab_sizes(self) -> tuple[int, int]:
        return self.tokenizers.src_vocab_size, self.tokenizers.tgt_vocab_size

    def summary(self) -> dict:
        """The data part of results.json: corpus, vocabulary sizes, pairs per split and how many the filters took."""
        return {"corpus": self.corpus.name, "src_vocab_size": self.vocab_sizes[0],
                "tgt_vocab_size": self.vocab_sizes[1], "sizes": {s: len(d) for s, d in self.encoded.items()},
                "filtered": self.filter_counts}


def _column(data, rows: np.ndarray, side: str) -> Iterator[str]:
    """One text column of `rows` of an Arrow split, read a chunk at a time."""
    column = data.select_columns([side])
    for start in range(0, len(rows), CHUNK):
        yield from column.select(rows[start:start + CHUNK])[side]
