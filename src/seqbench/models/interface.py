"""The one contract every architecture implements, so one training module and one beam search serve them all.

Shapes: B batch, S source length, T target length, V target vocabulary, L layers, H heads.
Masks are boolean and True on real (non-pad) tokens.

    encode(src [B,S], src_mask [B,S]) -> encoder_out: dict of batch-first tensors; always has "mask" [B,S]
    decode(tgt_in [B,T], encoder_out, return_attention=False)
        -> logits [B,T,V]                        (teacher forcing, causal: logits[:, t] sees tgt_in[:, :t+1] only)
        -> (logits, attention [B,L,H,T,S])       when return_attention
    init_state(encoder_out) -> state              incremental-decoding state before the first step
    decode_step(tokens [B], encoder_out, state) -> (logits [B,V], state, attention [B,L,H,S])
                                                  feeding tgt_in[:, t] at step t gives decode(...)[:, t]
    reorder_state(state, indices [B']) -> state   beam search: row i of the new state is row indices[i] of the old
    expand_encoder_out(encoder_out, beam) -> encoder_out with every row repeated `beam` times (row-major)

`indices` given to `reorder_state` never move a hypothesis to a different source sentence, so anything a model
derives from `encoder_out` alone (e.g. cross-attention keys) may be kept out of the reordering.

Attention rows are probability distributions over source positions: non-negative, zero on padding, summing to 1
(architectures without attention return None).
"""
from __future__ import annotations

from typing import Any

import torch
from torch import nn


def index_batch(tree: Any, indices: torch.Tensor) -> Any:
    """index_select(0, indices) on every tensor in a nest of dicts/lists/tuples; other leaves are kept as they are."""
    if isinstance(tree, torch.Tensor):
        return tree.index_select(0, indices)
    if isinstance(tree, dict):
        return {k: index_batch(v, indices) for k, v in tree.items()}
    if isinstance(tree, (list, tuple)):
        return type(tree)(index_batch(v, indices) for v in tree)
    return tree


class Seq2Seq(nn.Module):
    """Base class: subclasses implement encode/decode/init_state/decode_step; reordering is generic by default."""

    src_vocab_size: int
    tgt_vocab_size: int

    def encode(self, src: torch.Tensor, src_mask: torch.Tensor) -> dict[str, torch.Tensor]:
        raise NotImplementedError

    def decode(self, tgt_in: torch.Tensor, encoder_out: dict, return_attention: bool = False):
        raise NotImplementedError

    def init_state(self, encoder_out: dict) -> dict:
        raise NotImplementedError

    def decode_step(self, tokens: torch.Tensor, encoder_out: dict, state: dict):
        raise NotImplementedError

    def reorder_state(self, state: dict, indices: torch.Tensor) -> dict:
        return index_batch(state, indices)

    def expand_encoder_out(self, encoder_out: dict, beam: int) -> dict:
        batch = encoder_out["mask"].size(0)
        indices = torch.arange(batch, device=encoder_out["mask"].device).repeat_interleave(beam)
        return index_batch(encoder_out, indices)

    def forward(self, src: torch.Tensor, src_mask: torch.Tensor, tgt_in: torch.Tensor) -> torch.Tensor:
        return self.decode(tgt_in, self.encode(src, src_mask))

    def flops_per_token(self, src_len: int, tgt_len: int) -> float:
        """Forward FLOPs per target token (matrix products only), for the MFU estimate. Subclasses refine it."""
        return 2.0 * sum(p.numel() for p in self.parameters() if p.dim() > 1)

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())
