"""What evaluation sees of a split, and nothing else of the data: its texts, detokenisation, and token-budget batches.

The validation/test loaders, the test decoding benchmark and the attention examples all batch through
`batch_indices`, so a subset is batched exactly like the full pass (same budget, the same `<eos>` slot per target).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from seqbench.common.breakdowns import CorpusScoring
from seqbench.data.batching import collate, token_budget_batches
from seqbench.data.store import StoreSplit
from seqbench.data.tokenizer import TokenizerPair


@dataclass
class EvalSplit:
    name: str                   # "valid" or "test"
    sources: list[str]          # detokenised source sentences, in split order
    references: list[str]       # detokenised reference translations, in split order
    encoded: StoreSplit         # the split's token ids, mapped from the prepared store
    tokenizers: TokenizerPair
    max_tokens: int             # the evaluation token budget (padding included)
    max_sentences: int | None = None
    seed: int = 0               # breaks length ties in the batching
    # The corpus's per-pair columns besides the text, aligned with `sources` (the synthetic pair's `clauses`,
    # `max_dependency`, `dependencies`); empty for a corpus without any.
    metadata: dict[str, list] = field(default_factory=dict)
    scoring: CorpusScoring = field(default_factory=CorpusScoring)  # what the corpus adds to its scores
    def __len__(self) -> int:
        return len(self.sources)

    def batch_indices(self, subset: Sequence[int] | None = None) -> list[list[int]]:
        """Token-budget batches of the split (or of `subset`), as lists of indices into the split."""
        rows = list(range(len(self))) if subset is None else list(subset)
        src_lengths, tgt_lengths = self.encoded.src_lengths[rows], self.encoded.tgt_lengths[rows].astype(int) + 1
        batches = token_budget_batches(src_lengths, tgt_lengths,  # +1: the <eos>
                                       self.max_tokens, self.max_sentences, seed=self.seed)
        return [[rows[j] for j in batch] for batch in batches]

    def batches(self, subset: Sequence[int] | None = None) -> list[dict]:
        """Collated batches (tensors with "index", "src", "src_mask", ...) of the split or of `subset`."""
        return [collate([self.encoded[i] for i in batch]) for batch in self.batch_indices(subset)]

    def detokenize(self, ids: list[list[int]]) -> list[str]:
        """Target token ids (no bos/eos/pad) -> detokenised text, comparable with `references`."""
        return self.tokenizers.decode_tgt(ids)

    def source_ids(self, i: int) -> list[int]:
        return self.encoded.source_ids(i)
