"""Matching parameter budgets across architectures (`compare.param_budget`, the arch_comparison experiment).

Each family scales its widths together by one integer knob, keeping the preset's depth and proportions; the family
says which knob and how (`width` / `with_width` on the model class, see seqbench.models.interface), e.g. d_model for
the Transformer, hidden_size for RNNs, the first block's channels for ConvS2S.

The parameter count is monotone in the knob, so a bisection finds the width whose count is closest to the budget.
Counts come from instantiating the model on the meta device (no memory, no initialisation cost) with the real
vocabulary sizes, so embeddings and output layers (which dominate small models) are counted exactly.
"""
from __future__ import annotations

import functools

import torch

from seqbench.common.errors import ConfigError
from seqbench.models.interface import build_model, family_of

TOLERANCE = 0.10  # a sized model's parameter count is within +-10% of the budget, or sizing fails


def count_parameters(model_cfg: dict, src_vocab_size: int, tgt_vocab_size: int) -> int:
    with torch.device("meta"):
        return build_model(model_cfg, src_vocab_size, tgt_vocab_size).num_parameters()


def fit_to_budget(model_cfg: dict, budget: int, src_vocab_size: int, tgt_vocab_size: int) -> dict:
    """model_cfg resized so its parameter count is as close to `budget` as its width grid allows (within TOLERANCE).

    Raises ConfigError when no width gets within the tolerance, e.g. a budget smaller than the embeddings alone.
    """
    family = family_of(model_cfg)
    _, step = family.width(model_cfg)

    @functools.cache  # the bisection and the final choice revisit widths
    def params(units: int) -> int:  # width = units * step
        return count_parameters(family.with_width(model_cfg, units * step), src_vocab_size, tgt_vocab_size)

    lo, hi = 1, 2
    while params(hi) < budget:  # grow the bracket: params(lo) < budget <= params(hi), or lo = 1 already above
        lo, hi = hi, hi * 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if params(mid) < budget else (lo, mid)
    units = min((lo, hi), key=lambda u: abs(params(u) - budget))
    count = params(units)
    if abs(count - budget) > TOLERANCE * budget:
        name = model_cfg.get("name", family.__name__)
        raise ConfigError(f"compare.param_budget={budget}: the closest {name} width gives {count:,} parameters"
                          f", more than {TOLERANCE:.0%} away (vocabularies {src_vocab_size}/"
                          f"{tgt_vocab_size}); change the budget or the preset's depth")
    return family.with_width(model_cfg, units * step)
