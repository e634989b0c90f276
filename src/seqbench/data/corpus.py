"""Parallel corpora as Hugging Face `DatasetDict`s with `src`/`tgt` text columns and train/valid/test splits.

A corpus is any object with a `name` and `load(cache_dir) -> DatasetDict`; the data module does the rest
(tokenizer, length filters, batching), so every source goes through the same path. A corpus class that a config
names also has a classmethod `validate_config(cfg)`: its keys (`data.corpus.*`), each against a table in the
vocabulary of seqbench.common.specs, and the relations between them, which seqbench.config.checks runs before any
corpus is built; `load` takes its keys as checked.
"""
from __future__ import annotations

import difflib
from contextlib import contextmanager
from dataclasses import fields
from pathlib import Path
from typing import Iterator, Mapping

import datasets
from datasets import Dataset, DatasetDict, load_from_disk

from seqbench.common import progress
from seqbench.common.breakdowns import CorpusScoring
from seqbench.common.errors import ConfigError
from seqbench.common.io import atomic_path
from seqbench.common.specs import check_keys, integer, number, show
from seqbench.common.structure import STRUCTURE_COLUMNS
from seqbench.data.cache import cached, remove
from seqbench.data.longrange import generate_long_range_splits
from seqbench.data.synthetic import MARKERS, GrammarConfig, generate_splits, has_long_range

SPLITS = ("train", "valid", "test")


def save_atomically(dataset: DatasetDict, path: Path) -> None:
    """Write to a sibling folder, then rename: a killed run leaves either the old cache or none, never half of one.
    Hugging Face's "Saving the dataset" bars, one per split, are shown only where ours are (on a terminal)."""
    with quiet_datasets(not progress.enabled()), atomic_path(path) as tmp:
        dataset.save_to_disk(str(tmp))


@contextmanager
def quiet_datasets(quiet: bool = True) -> Iterator[None]:
    """Hugging Face datasets' progress bars off inside the block (if `quiet`), as they were after it."""
    was_off = datasets.are_progress_bars_disabled()
    if quiet:
        datasets.disable_progress_bars()
    try:
        yield
    finally:
        if quiet and not was_off:
            datasets.enable_progress_bars()


# Every whole-number option of the grammar is a count or a seed, every fractional one a probability.
SYNTHETIC_SPECS = {f.name: integer(0) if f.type == "int" else number(0, high=1)
                   for f in fields(GrammarConfig) if f.type in ("int", "float")}


class SyntheticCorpus:
    """The embedded synthetic language pair (see `seqbench.data.synthetic`), cached keyed by its generator config."""

    def __init__(self, **grammar):
        if "length_buckets" in grammar:
            grammar["length_buckets"] = tuple(tuple(b) for b in grammar["length_buckets"])
        if "clause_count_weights" in grammar:
            grammar["clause_count_weights"] = tuple(grammar["clause_count_weights"])
        self.config = GrammarConfig(**grammar)
        self.name = f"synthetic-{self.config.cache_key()}"
        self.scoring = CorpusScoring(markers=MARKERS)  # its dependencies' agreement and reference markers

    @classmethod
    def validate_config(cls, cfg: Mapping) -> None:
        """Each key an option of GrammarConfig (the constructor takes any keyword), and a number of the right kind."""
        known = sorted(f.name for f in fields(GrammarConfig))
        for key in cfg:
            if not key.startswith("_") and key not in known:
                close = difflib.get_close_matches(key, known, n=1)
                hint = f"did you mean data.corpus.{close[0]}?" if close else f"options: {', '.join(known)}"
                raise ConfigError(f"data.corpus.{key}={show(cfg[key])}: not an option of the synthetic corpus; {hint}")
        check_keys(cfg, SYNTHETIC_SPECS, prefix="data.corpus.")

    def load(self, cache_dir: str | Path) -> DatasetDict:
        path = Path(cache_dir) / self.name / "dataset"

        def build() -> None:
            generate = generate_long_range_splits if has_long_range(self.config) else generate_splits
            splits = generate(self.config)
            path.parent.mkdir(parents=True, exist_ok=True)
            save_atomically(DatasetDict({name: Dataset.from_list(splits[name]) for name in SPLITS}), path)

        dataset = cached(path, lambda: load_from_disk(str(path)), build, "dataset")
        if not set(STRUCTURE_COLUMNS) <= set(dataset["test"].column_names):
            # Cached before the structure columns existed: the same texts, regenerated with them.
            remove(path)
            dataset = cached(path, lambda: load_from_disk(str(path)), build, "dataset")
        return dataset
