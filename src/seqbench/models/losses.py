"""Label-smoothed cross-entropy over non-pad target tokens."""
from __future__ import annotations

import torch

from seqbench.common.tokens import PAD_ID


def label_smoothed_nll(logits: torch.Tensor, target: torch.Tensor, epsilon: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Mean over non-pad tokens of (1-eps) * NLL + eps * (uniform cross-entropy over the vocabulary), as
    F.cross_entropy(..., label_smoothing=eps) computes it.

    Returns (smoothed loss, plain NLL); the plain NLL is what perplexity is computed from. Both come from one
    log-softmax: asking F.cross_entropy for each computed it twice (64 x 60 tokens, 1,000 words, one thread on the
    reference CPU: 6.6 against 3.6 ms without gradients, 21.6 against 14.9 ms forward and backward).
    logits [B,T,V], target [B,T] with PAD_ID where there is no token.
    """
    log_probs = logits.reshape(-1, logits.size(-1)).float().log_softmax(-1)  # [N,V]
    flat_target = target.reshape(-1)
    padding = flat_target == PAD_ID
    tokens = (~padding).sum()
    nll = -log_probs.gather(1, flat_target[:, None]).squeeze(1)  # [N]
    smoothed = (1.0 - epsilon) * nll - epsilon * log_probs.mean(-1) if epsilon else nll
    loss = smoothed.masked_fill(padding, 0.0).sum() / tokens
    return loss, nll.detach().masked_fill(padding, 0.0).sum() / tokens
