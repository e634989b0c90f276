"""A WMT-sized parallel corpus for the data-path benchmark (`seqbench data generate`), never for results.

WMT14 en-de has about 4.5M training pairs of 1-100+ words (mean about 25) over a vocabulary of hundreds of thousands
of word types with a Zipfian frequency curve. What the data path's cost depends on is the number of pairs, their
lengths and the vocabulary's size and skew, so this generator reproduces those and nothing else: sentence lengths
from a log-normal clipped to 5-60 words (mean about 25), source words drawn from a Zipf(1.1) distribution over
`vocab` pseudo-words, and a target that is the source mapped word for word through a second vocabulary with
neighbouring words swapped in pairs (so it is a function of the source, and a model can learn it).

The files are TSV ("source<TAB>target", `data=files data.corpus.format=tsv`), written in chunks so memory stays flat
however many pairs are asked for.
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable

import numpy as np

from seqbench.common.io import atomic_path

CHUNK = 50_000  # pairs generated and written at a time


def _words(rng: np.random.Generator, count: int, alphabet: str) -> list[str]:
    """`count` distinct pseudo-words of 2-4 syllables over `alphabet`'s consonants and vowels."""
    consonants, vowels = alphabet.split("|")
    words: dict[str, None] = {}
    while len(words) < count:
        syllables = rng.integers(2, 5)
        words["".join(consonants[rng.integers(len(consonants))] + vowels[rng.integers(len(vowels))]
                      for _ in range(syllables))] = None
    return list(words)


class WmtLikeCorpus:
    """The generator: a seeded pair of vocabularies and the sentence-length and word-frequency distributions."""

    def __init__(self, vocab: int = 30_000, seed: int = 0):
        rng = np.random.default_rng(seed)
        self.src_words = np.array(_words(rng, vocab, "bcdfghklmnprstvz|aeiou"), dtype=object)
        self.tgt_words = np.array(_words(rng, vocab, "bdfgjklmnprstwxyz|aeiouy"), dtype=object)
        ranks = np.arange(1, vocab + 1, dtype=np.float64)
        self.cumulative = np.cumsum(ranks ** -1.1)
        self.cumulative /= self.cumulative[-1]
        self.seed = seed

    def pairs(self, count: int, stream: int) -> list[str]:
        """`count` TSV lines; `stream` separates the splits' random streams."""
        rng = np.random.default_rng([self.seed, stream])
        lengths = np.clip(np.rint(rng.lognormal(np.log(23), 0.45, count)), 5, 60).astype(np.int64)
        ids = np.searchsorted(self.cumulative, rng.random(int(lengths.sum())))
        swapped = ids.copy()  # the target order: each pair of neighbours swapped (an odd last word stays)
        ends = np.cumsum(lengths)
        position = np.arange(len(ids)) - np.repeat(ends - lengths, lengths)
        pair_start = (position % 2 == 0) & (position + 1 < np.repeat(lengths, lengths))
        starts = np.flatnonzero(pair_start)
        swapped[starts], swapped[starts + 1] = ids[starts + 1], ids[starts]
        src = np.split(self.src_words[ids], ends[:-1])
        tgt = np.split(self.tgt_words[swapped], ends[:-1])
        return [" ".join(s) + "\t" + " ".join(t) for s, t in zip(src, tgt)]

    def write(self, path: Path, count: int, stream: int, progress: Callable[[int], None] = lambda n: None) -> None:
        """`count` pairs to `path` (TSV), atomically: a killed generation leaves no file behind."""
        with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8") as out:
            for start in range(0, count, CHUNK):
                size = min(CHUNK, count - start)
                out.write("\n".join(self.pairs(size, stream * 1_000_003 + start // CHUNK)) + "\n")
                progress(size)


def generate(out_dir: Path, train_pairs: int, eval_pairs: int = 3000, vocab: int = 30_000, seed: int = 0,
             progress: Callable[[int], None] = lambda n: None) -> dict[str, Path]:
    """train.tsv, valid.tsv and test.tsv in `out_dir`: the arguments of `data=files data.corpus.format=tsv`."""
    corpus = WmtLikeCorpus(vocab, seed)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {}
    for stream, (split, count) in enumerate((("train", train_pairs), ("valid", eval_pairs), ("test", eval_pairs))):
        paths[split] = out_dir / f"{split}.tsv"
        corpus.write(paths[split], count, stream, progress)
    return paths
