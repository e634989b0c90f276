"""Label-smoothed cross-entropy over non-pad target tokens."""
from __future__ import annotations

import torch
import torch.nn.functional as F

from seqbench.common.tokens import PAD_ID


def label_smoothed_nll(logits: torch.Tensor, target: torch.Tensor, epsilon: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Mean over non-pad tokens of (1-eps) * NLL + eps * (uniform cross-entropy over the vocabulary).

    Returns (smoothed loss, plain NLL); the plain NLL is what perplexity is computed from.
    logits [B,T,V], target [B,T] with PAD_ID where there is no token.
    """
    flat_logits, flat_target = logits.reshape(-1, logits.size(-1)).float(), target.reshape(-1)
    loss = F.cross_entropy(flat_logits, flat_target, ignore_index=PAD_ID, label_smoothing=epsilon)
    with torch.no_grad():
        nll = F.cross_entropy(flat_logits, flat_target, ignore_index=PAD_ID)
    return loss, nll
