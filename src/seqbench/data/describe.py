"""A corpus as a training run sees it, for `seqbench data describe`: pairs per split before and after the length
filters, words per sentence (summary and histogram by bucket, 1-10, ..., 61+) for source and target, mean BPE tokens,
and the vocabularies. A plain dict, so the command prints it as tables or as JSON.
"""
from __future__ import annotations

import time

from seqbench.common.text import word_count
from seqbench.data.corpus import SPLITS
from seqbench.data.datamodule import Seq2SeqDataModule
from seqbench.data.stats import count_histogram, count_summary


def describe(datamodule: Seq2SeqDataModule) -> dict:
    """The report of a data module, prepared first (the cached corpus and tokenizers, built if missing)."""
    datamodule.prepare_data()
    return {"corpus": datamodule.corpus.name,
            "splits": {split: _split(datamodule, split) for split in SPLITS},
            "vocabulary": _vocabulary(datamodule)}


def prepare(datamodule: Seq2SeqDataModule) -> dict:
    """Builds (or finds) the data module's cached corpus, tokenizers, prepared store and training batch plan (for its
    seed and token budget); the store's summary, with the seconds that took."""
    start = time.perf_counter()
    datamodule.prepare_data()
    plan = datamodule.training_plan()
    return {"corpus": datamodule.corpus.name, **datamodule.store.summary(), "training_batches": len(plan),
            "seconds": time.perf_counter() - start}


def _split(datamodule: Seq2SeqDataModule, split: str) -> dict:
    encoded = datamodule.encoded[split]
    entry = {"pairs": len(encoded), "before_length_filters": datamodule.raw_sizes[split],
             "removed_by_length_filters": datamodule.filter_counts[split]}
    for side in ("src", "tgt"):
        words = [word_count(text) for text in datamodule.sentences(split, side)]
        entry[side] = {"words": count_summary(words), "buckets": count_histogram(words)}
        lengths = encoded.src_lengths if side == "src" else encoded.tgt_lengths
        entry[side]["bpe_tokens_mean"] = round(float(lengths.sum(dtype="int64")) / max(1, len(lengths)), 2)
    return entry


def _vocabulary(datamodule: Seq2SeqDataModule) -> dict:
    """Word types of the training text (whitespace-separated) and the BPE vocabulary sizes."""
    tokenizers = datamodule.tokenizers
    types = {side: len({w for s in datamodule.sentences("train", side) for w in s.split()}) for side in ("src", "tgt")}
    return {"word_types": types,
            "bpe": {"src": tokenizers.src_vocab_size, "tgt": tokenizers.tgt_vocab_size, "shared": tokenizers.shared}}
