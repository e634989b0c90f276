"""The hypotheses of a validation or test pass, accumulated on each rank and gathered across ranks by torchmetrics.

BLEU and chrF are corpus scores, and the evaluation's breakdowns (by source length, by structure, targeted agreement)
need every sentence's text beside its source and metadata, so the ranks' hypotheses are gathered as text and scored
once with sacreBLEU itself (`Evaluator`), not summed as per-rank scores. torchmetrics' own `SacreBLEUScore` and
`CHRFScore` are not used: they re-implement sacreBLEU in float32 tensors, and their BLEU has no 'exp' smoothing
(sacreBLEU's default), so a corpus without a matching 4-gram scores 0 instead of sacreBLEU's value, and their chrF
differs in the fourth significant digit. `GatheredHypotheses` is a torchmetrics `Metric` with list states that
torchmetrics concatenates across ranks (`dist_reduce_fx="cat"`) when it computes: the text travels as UTF-8 bytes in
a tensor, since torchmetrics gathers tensors only.
"""
from __future__ import annotations

from typing import Sequence

import torch
from torchmetrics import Metric

_STATES = {"index": torch.long, "length": torch.long, "utf8": torch.uint8}


class GatheredHypotheses(Metric):
    """`update(indices, hypotheses)` with each batch's positions in the split and detokenised hypotheses;
    `compute()` gives (indices, hypotheses) of every rank's batches, sorted by position, one per position."""

    full_state_update = False

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        for name in _STATES:
            self.add_state(name, default=[], dist_reduce_fx="cat")
        self._seed()

    def _seed(self) -> None:
        # A rank that decoded nothing (a split with fewer batches than ranks) would send torchmetrics' stand-in for an
        # empty list, a float32 tensor, which cannot be gathered with the other ranks' int64 and uint8 ones: each
        # state starts with an empty tensor of its own dtype.
        for name, dtype in _STATES.items():
            getattr(self, name).append(torch.zeros(0, dtype=dtype, device=self.device))

    def reset(self) -> None:
        super().reset()
        self._seed()

    def update(self, indices: Sequence[int], hypotheses: Sequence[str]) -> None:
        if len(indices) != len(hypotheses):
            raise ValueError(f"{len(indices)} indices but {len(hypotheses)} hypotheses: they must match")
        encoded = [h.encode("utf-8") for h in hypotheses]
        self.index.append(torch.tensor(list(indices), dtype=torch.long, device=self.device))
        self.length.append(torch.tensor([len(b) for b in encoded], dtype=torch.long, device=self.device))
        self.utf8.append(torch.tensor(list(b"".join(encoded)), dtype=torch.uint8, device=self.device))

    def compute(self) -> tuple[list[int], list[str]]:
        def whole(state):  # a list of tensors on this rank; one tensor once torchmetrics has gathered the ranks'
            return torch.cat(state) if isinstance(state, list) else state

        indices, lengths = whole(self.index).tolist(), whole(self.length).tolist()
        data = whole(self.utf8).cpu().numpy().tobytes()
        by_index, start = {}, 0
        for i, n in zip(indices, lengths):
            by_index[i] = data[start:start + n].decode("utf-8")
            start += n
        order = sorted(by_index)
        return order, [by_index[i] for i in order]
