"""A corpus as a training run sees it, for `seqbench data describe`: pairs per split before and after the length
filters, words per sentence (summary and histogram by bucket, 1-10, ..., 61+) for source and target, mean BPE tokens,
and the vocabularies. A plain dict, so the command prints it as tables or as JSON.
"""
from __future__ import annotations

from seqbench.data.corpus import SPLITS
from seqbench.data.datamodule import Seq2SeqDataModule
from seqbench.data.stats import length_histogram, length_summary


def describe(datamodule: Seq2SeqDataModule) -> dict:
    """The report of a data module, prepared first (the cached corpus and tokenizers, built if missing)."""
    datamodule.prepare_data()
    return {"corpus": datamodule.corpus.name,
            "splits": {split: _split(datamodule, split) for split in SPLITS},
            "vocabulary": _vocabulary(datamodule)}


def _split(datamodule: Seq2SeqDataModule, split: str) -> dict:
    text, encoded = datamodule.text[split], datamodule.encoded.get(split)
    entry = {"pairs": len(text["src"]), "before_length_filters": datamodule.raw_sizes.get(split, len(text["src"])),
             "removed_by_length_filters": datamodule.filter_counts.get(split, 0)}
    for side in ("src", "tgt"):
        entry[side] = {"words": length_summary(text[side]), "buckets": length_histogram(text[side])}
        if encoded is not None:
            ids = encoded.src_ids if side == "src" else encoded.tgt_ids
            entry[side]["bpe_tokens_mean"] = round(sum(map(len, ids)) / max(1, len(ids)), 2)
    return entry


def _vocabulary(datamodule: Seq2SeqDataModule) -> dict:
    """Word types of the training text (whitespace-separated) and the BPE vocabulary sizes."""
    train, tokenizers = datamodule.text["train"], datamodule.tokenizers
    return {"word_types": {side: len({w for s in train[side] for w in s.split()}) for side in ("src", "tgt")},
            "bpe": {"src": tokenizers.src_vocab_size, "tgt": tokenizers.tgt_vocab_size, "shared": tokenizers.shared}}
