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

from seqbench.common.errors import InputError
from seqbench.common.io import atomic_path, check_folder

CHUNK = 50_000  # pairs generated and written at a time
SPLITS = ("train", "valid", "test")
ALPHABETS = {"src": "bcdfghklmnprstvz|aeiou", "tgt": "bdfgjklmnprstwxyz|aeiouy"}  # consonants|vowels
SYLLABLES = (2, 4)  # a word's fewest and most syllables


def max_vocab() -> int:
    """The most distinct words `_words` can make on either side: a syllable is a consonant and a vowel (C*V forms), a
    word of s syllables has (C*V)^s forms; 80^2 + 80^3 + 80^4 = 41,478,400 for the source's 16 consonants and 5
    vowels. Asked for more, its loop could never end."""
    per_syllable = (len(consonants) * len(vowels) for consonants, vowels in (a.split("|") for a in ALPHABETS.values()))
    return min(sum(forms ** n for n in range(SYLLABLES[0], SYLLABLES[1] + 1)) for forms in per_syllable)


def _words(rng: np.random.Generator, count: int, alphabet: str) -> list[str]:
    """`count` distinct pseudo-words of 2-4 syllables over `alphabet`'s consonants and vowels."""
    consonants, vowels = alphabet.split("|")
    words: dict[str, None] = {}
    while len(words) < count:
        syllables = rng.integers(SYLLABLES[0], SYLLABLES[1] + 1)
        words["".join(consonants[rng.integers(len(consonants))] + vowels[rng.integers(len(vowels))]
                      for _ in range(syllables))] = None
    return list(words)


class WmtLikeCorpus:
    """The generator: a seeded pair of vocabularies and the sentence-length and word-frequency distributions."""

    def __init__(self, vocab: int = 30_000, seed: int = 0):
        rng = np.random.default_rng(seed)
        self.src_words, self.tgt_words = (np.array(_words(rng, vocab, ALPHABETS[side]), dtype=object)
                                          for side in ("src", "tgt"))
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
    """train.tsv, valid.tsv and test.tsv in `out_dir`: the arguments of `data=files data.corpus.format=tsv`. One line
    before any work where they cannot be written, or would replace files that are there."""
    paths = {split: out_dir / f"{split}.tsv" for split in SPLITS}
    _check_arguments(out_dir, paths, vocab)
    corpus = WmtLikeCorpus(vocab, seed)
    out_dir.mkdir(parents=True, exist_ok=True)
    for stream, split in enumerate(SPLITS):
        corpus.write(paths[split], train_pairs if split == "train" else eval_pairs, stream, progress)
    return paths


def _check_arguments(out_dir: Path, paths: dict[str, Path], vocab: int) -> None:
    if vocab > max_vocab():
        raise InputError(f"--vocab {vocab}: at most {max_vocab():,} word types, the distinct words the generator can "
                         "make")
    check_folder(out_dir, paths["train"].name)
    there = [path.name for path in paths.values() if path.exists()]
    if there:
        raise InputError(f"{out_dir}: already holds {', '.join(there)}, which generate would replace; remove them or "
                         "choose another folder")
