"""What a corpus tells evaluation about itself, so that scoring, analysis and the report name no dataset.

A corpus (seqbench.data) may expose `scoring`, a CorpusScoring:
- `subsets`: extra score breakdowns over part of a split, BLEU by source length of the items whose per-pair column
  holds a value (a split of joined passages scored on its single sentences apart, say), each with the key its scores
  get in results.json and the title and note the report prints;
- `markers`: for a corpus whose dependencies carry agreement or reference markers, the suffixes each kind of
  dependency may end in (seqbench.scoring.targeted reads a word's marker against them).
A corpus without any gets CorpusScoring(): plain BLEU, chrF and BLEU by length.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping


@dataclass(frozen=True)
class Subset:
    key: str        # the scores' key in a split's record, e.g. "bleu_by_length_<what>"
    column: str     # the per-pair column that selects the items
    value: Any      # items whose column holds this value
    title: str      # the report's section title
    note: str       # the report's sentence on what a bucket holds

    def describe(self) -> dict:
        return {"key": self.key, "title": self.title, "note": self.note}


@dataclass(frozen=True)
class CorpusScoring:
    subsets: tuple[Subset, ...] = ()
    markers: Mapping[str, frozenset[str]] = field(default_factory=dict)  # dependency kind -> its marker suffixes
