"""A toy fourth architecture that lives only in tests/: proof that a new family needs no edit under src/.

The source is averaged into one vector (no attention), and a GRU decoder reads [y_{t-1}; that vector] at every step.
It implements the `Seq2Seq` contract and the family's knowledge (validation, width scaling, label); the harness
finds it through `_target_` in tests/configs/model/toy.yaml.
"""
from __future__ import annotations

import torch
from torch import nn

from seqbench.common.specs import integer
from seqbench.models.interface import Seq2Seq


class MeanContextGRU(Seq2Seq):
    def __init__(self, src_vocab_size: int, tgt_vocab_size: int, hidden_size: int = 32, dropout: float = 0.0):
        super().__init__()
        self.src_vocab_size, self.tgt_vocab_size, self.hidden_size = src_vocab_size, tgt_vocab_size, hidden_size
        self.src_embed = nn.Embedding(src_vocab_size, hidden_size, padding_idx=0)
        self.tgt_embed = nn.Embedding(tgt_vocab_size, hidden_size, padding_idx=0)
        self.rnn = nn.GRU(2 * hidden_size, hidden_size, batch_first=True)
        self.dropout = nn.Dropout(dropout)
        self.output = nn.Linear(hidden_size, tgt_vocab_size)

    def encode(self, src, src_mask):
        embedded = self.src_embed(src) * src_mask[..., None]  # [B,S,H], zero on padding
        context = embedded.sum(1) / src_mask.sum(1, keepdim=True).clamp(min=1)  # [B,H]
        return {"context": context, "mask": src_mask}

    def _inputs(self, tokens, encoder_out):  # tokens [B,T] -> [B,T,2H]
        context = encoder_out["context"][:, None].expand(-1, tokens.size(1), -1)
        return self.dropout(torch.cat([self.tgt_embed(tokens), context], dim=-1))

    def decode(self, tgt_in, encoder_out, state=None, return_attention=False):
        hidden = None if state is None else state["hidden"].transpose(0, 1).contiguous()  # [1,B,H] for nn.GRU
        out, hidden = self.rnn(self._inputs(tgt_in, encoder_out), hidden)
        if state is not None:
            state["hidden"] = hidden.transpose(0, 1)
        logits = self.output(out)  # [B,T,V]
        return (logits, None) if return_attention else logits

    def init_state(self, encoder_out):
        context = encoder_out["context"]
        return {"hidden": context.new_zeros(context.size(0), 1, self.hidden_size)}  # batch-first, for reordering

    config_specs = {**Seq2Seq.config_specs, "hidden_size": integer(1)}

    width_key = "hidden_size"  # what param-budget sizing scales

    @classmethod
    def run_label(cls, preset, cfg):
        return f"{preset}-h{cls.config_value(cfg, 'hidden_size')}"
