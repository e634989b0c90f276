"""Greedy search without the incremental cache: what the cache saves, measured by `seqbench bench`."""
from __future__ import annotations

import torch

from seqbench.common.tokens import BOS_ID, EOS_ID
from seqbench.decoding.search import DecodingConfig, forbid_eos_before_min_len_, length_limits, strip_at_eos


@torch.no_grad()
def recompute_greedy(model, src: torch.Tensor, src_mask: torch.Tensor, cfg: DecodingConfig) -> list[list[int]]:
    """`decode` runs over the whole prefix at every step and only its last position is used. Same limits as
    seqbench.decoding.search (min_len, max_len), so it returns the same hypotheses as greedy_search (tested), at the
    cost the cache saves."""
    encoder_out = model.encode(src, src_mask)
    limits = length_limits(src_mask, cfg)
    prefix = torch.full((src.size(0), 1), BOS_ID, dtype=torch.long, device=src.device)
    finished = torch.zeros(src.size(0), dtype=torch.bool, device=src.device)
    for step in range(int(limits.max()) + 1):
        logits = model.decode(prefix, encoder_out)[:, -1]
        tokens = forbid_eos_before_min_len_(logits, step, cfg).argmax(-1)
        tokens = torch.where(finished | (step >= limits), torch.full_like(tokens, EOS_ID), tokens)
        prefix = torch.cat([prefix, tokens[:, None]], 1)
        finished |= tokens == EOS_ID
        if finished.all():
            break
    return strip_at_eos(prefix[:, 1:])
