"""One LightningDataModule for every corpus: BPE tokenisation, length filters, token-budget batches."""
from __future__ import annotations

import logging
from pathlib import Path

import lightning as L
from torch.utils.data import DataLoader, Dataset

from seqbench.data.batching import TokenBudgetBatchSampler, collate, token_budget_batches
from seqbench.data.corpus import SPLITS
from seqbench.data.tokenizer import TokenizerPair
from seqbench.errors import InputError

log = logging.getLogger(__name__)


class _EncodedSplit(Dataset):
    def __init__(self, src_ids: list[list[int]], tgt_ids: list[list[int]]):
        self.src_ids, self.tgt_ids = src_ids, tgt_ids

    def __len__(self) -> int:
        return len(self.src_ids)

    def __getitem__(self, i: int):
        return i, self.src_ids[i], self.tgt_ids[i]


class Seq2SeqDataModule(L.LightningDataModule):
    def __init__(self, corpus, cache_dir: str, vocab_size: int = 4000, shared_vocab: bool = False,
                 max_tokens: int = 4096, eval_max_tokens: int | None = None, max_sentences: int | None = None,
                 train_max_len: int | None = None, max_src_len: int | None = None, max_tgt_len: int | None = None,
                 num_workers: int = 0, seed: int = 0):
        super().__init__()
        self.corpus, self.cache_dir = corpus, Path(cache_dir)
        self.vocab_size, self.shared_vocab = vocab_size, shared_vocab
        self.max_tokens, self.eval_max_tokens = max_tokens, eval_max_tokens or max_tokens
        self.max_sentences, self.num_workers, self.seed = max_sentences, num_workers, seed
        self.train_max_len, self.max_src_len, self.max_tgt_len = train_max_len, max_src_len, max_tgt_len
        self.tokenizers: TokenizerPair | None = None
        self.text: dict[str, dict[str, list[str]]] = {}
        self.encoded: dict[str, _EncodedSplit] = {}
        self.filter_counts: dict[str, int] = {}  # pairs removed by the length filters, per split
        self.raw_sizes: dict[str, int] = {}      # pairs per split before the length filters

    def prepare_data(self) -> None:
        # Runs on one process per node before `setup` (and again before every trainer.validate/test): build the
        # cached corpus and tokenizer there, once per process.
        if not self.encoded:
            self._load()

    def setup(self, stage: str | None = None) -> None:
        if not self.encoded:
            self._load()

    def _keep(self, split: str, src: str, tgt: str) -> bool:
        """Drops empty pairs and applies the word-count filters; `train_max_len` applies to training data only
        (the RNNenc-30/50 experiments train on short sentences and test on all)."""
        n_src, n_tgt = len(src.split()), len(tgt.split())
        if not n_src or not n_tgt:  # an empty side has nothing to attend to / nothing to predict
            return False
        if self.max_src_len and n_src > self.max_src_len or self.max_tgt_len and n_tgt > self.max_tgt_len:
            return False
        return not (split == "train" and self.train_max_len and max(n_src, n_tgt) > self.train_max_len)

    def _load(self) -> None:
        dataset = self.corpus.load(self.cache_dir)
        for split in SPLITS:
            pairs = [(s, t) for s, t in zip(dataset[split]["src"], dataset[split]["tgt"]) if self._keep(split, s, t)]
            self.raw_sizes[split] = len(dataset[split])
            self.filter_counts[split] = len(dataset[split]) - len(pairs)
            if not pairs:
                raise InputError(f"the {split} split of {self.corpus.name} is empty after filtering: raise "
                                 f"data.train_max_len / data.max_src_len / data.max_tgt_len or check the corpus")
            self.text[split] = {"src": [s for s, _ in pairs], "tgt": [t for _, t in pairs]}
        log.info("corpus %s: %s", self.corpus.name, ", ".join(
            f"{split} {len(self.text[split]['src'])}" + (f" ({self.filter_counts[split]} removed by length filters)"
                                                          if self.filter_counts[split] else "") for split in SPLITS))
        # The tokenizer is trained on the filtered training text, so the filters are part of its cache key.
        filters = f"len{self.train_max_len or 0}-{self.max_src_len or 0}-{self.max_tgt_len or 0}"
        self.tokenizers = TokenizerPair.load_or_train(self.cache_dir / self.corpus.name / filters,
                                                      self.text["train"]["src"],
                                                      self.text["train"]["tgt"], self.vocab_size, self.shared_vocab)
        for split in SPLITS:
            self.encoded[split] = _EncodedSplit(self.tokenizers.encode_src(self.text[split]["src"]),
                                                self.tokenizers.encode_tgt(self.text[split]["tgt"]))

    def _loader(self, split: str, shuffle: bool) -> DataLoader:
        data = self.encoded[split]
        budget = self.max_tokens if split == "train" else self.eval_max_tokens
        batches = token_budget_batches([len(s) for s in data.src_ids], [len(t) + 1 for t in data.tgt_ids], budget,
                                       self.max_sentences, seed=self.seed)
        sampler = TokenBudgetBatchSampler(batches, shuffle=shuffle, seed=self.seed)
        return DataLoader(data, batch_sampler=sampler, collate_fn=collate, num_workers=self.num_workers)

    def longest(self, split: str) -> tuple[int, int]:
        """Tokens of the longest source and of the longest target + 1 (<bos> y / y <eos>) in a split: the lengths
        its batches and the model's positions must hold."""
        data = self.encoded[split]
        return max(map(len, data.src_ids)), max(map(len, data.tgt_ids)) + 1

    def train_dataloader(self) -> DataLoader:
        return self._loader("train", shuffle=True)

    def val_dataloader(self) -> DataLoader:
        return self._loader("valid", shuffle=False)

    def test_dataloader(self) -> DataLoader:
        return self._loader("test", shuffle=False)

    def references(self, split: str) -> list[str]:
        return self.text[split]["tgt"]

    def sources(self, split: str) -> list[str]:
        return self.text[split]["src"]
