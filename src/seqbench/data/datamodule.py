"""One LightningDataModule for every corpus: BPE tokenisation, length filters, token-budget batches."""
from __future__ import annotations

import logging
from pathlib import Path

import lightning as L
from torch.utils.data import DataLoader

from seqbench.common.breakdowns import CorpusScoring
from seqbench.common.errors import InputError
from seqbench.common.text import word_count
from seqbench.data.batching import TokenBudgetBatchSampler, collate, token_budget_batches
from seqbench.data.corpus import SPLITS
from seqbench.data.eval_split import EncodedSplit, EvalSplit
from seqbench.data.tokenizer import TokenizerPair

log = logging.getLogger(__name__)


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
        self.columns: dict[str, dict[str, list]] = {}  # valid/test: the corpus's other columns (per-pair structure)
        self.encoded: dict[str, EncodedSplit] = {}
        self.filter_counts: dict[str, int] = {}  # pairs removed by the length filters, per split
        self.raw_sizes: dict[str, int] = {}      # pairs per split before the length filters
        self._train_resume: tuple[int, int] | None = None  # (epoch, batches done) for the next train loader

    def resume_training_at(self, epoch: int, batches_done: int) -> None:
        """The next train_dataloader() continues `epoch` after `batches_done` batches (seqbench.training.callbacks.
        ResumeState calls this when a run restarts from a checkpoint taken mid-epoch)."""
        self._train_resume = (epoch, batches_done)

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
        n_src, n_tgt = word_count(src), word_count(tgt)
        if not n_src or not n_tgt:  # an empty side has nothing to attend to / nothing to predict
            return False
        if self.max_src_len and n_src > self.max_src_len or self.max_tgt_len and n_tgt > self.max_tgt_len:
            return False
        return not (split == "train" and self.train_max_len and max(n_src, n_tgt) > self.train_max_len)

    def _load(self) -> None:
        dataset = self.corpus.load(self.cache_dir)
        for split in SPLITS:
            # Plain lists, read once: indexing a Dataset column element by element costs ~0.1 ms each (seconds here)
            columns = dataset[split].to_dict()
            sources, targets = columns.pop("src"), columns.pop("tgt")
            kept = [i for i, (s, t) in enumerate(zip(sources, targets)) if self._keep(split, s, t)]
            pairs = [(sources[i], targets[i]) for i in kept]
            if split != "train":  # what evaluation may bucket or score by (seqbench.scoring.targeted)
                self.columns[split] = {name: [column[i] for i in kept] for name, column in columns.items()}
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
            self.encoded[split] = EncodedSplit(self.tokenizers.encode_src(self.text[split]["src"]),
                                                self.tokenizers.encode_tgt(self.text[split]["tgt"]))

    def _loader(self, data: EncodedSplit, batches: list[list[int]], shuffle: bool,
                resumable: bool = False) -> DataLoader:
        sampler = TokenBudgetBatchSampler(batches, shuffle=shuffle, seed=self.seed)
        if resumable and self._train_resume is not None:  # the training loader of a run resumed mid-epoch
            sampler.resume(*self._train_resume)
            self._train_resume = None
        return DataLoader(data, batch_sampler=sampler, collate_fn=collate, num_workers=self.num_workers)

    def longest(self) -> dict[str, tuple[int, int]]:
        """Per split, tokens of the longest source and of the longest target + 1 (<bos> y / y <eos>): the lengths
        its batches and the model's positions must hold."""
        return {split: (max(map(len, data.src_ids)), max(map(len, data.tgt_ids)) + 1)
                for split, data in self.encoded.items()}

    def token_budget(self, split: str) -> int:
        """Tokens per batch of a split (data.max_tokens for training, data.eval_max_tokens otherwise)."""
        return self.max_tokens if split == "train" else self.eval_max_tokens

    def train_dataloader(self) -> DataLoader:
        data = self.encoded["train"]
        batches = token_budget_batches([len(s) for s in data.src_ids], [len(t) + 1 for t in data.tgt_ids],
                                       self.max_tokens, self.max_sentences, seed=self.seed)  # +1: the <eos>
        # Lightning's overfit_batches (debug=overfit) needs the same batches every epoch, and it cannot turn off the
        # shuffling of a batch sampler itself.
        overfit = self.trainer is not None and self.trainer.overfit_batches > 0
        return self._loader(data, batches, shuffle=not overfit, resumable=True)

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
