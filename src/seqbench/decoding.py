"""Greedy and batched beam search over the `Seq2Seq` incremental-decoding contract: one implementation for all models.

Every sentence of the batch is decoded at once (B x beam rows); a sentence stops at <eos> or at its own length limit
max_len_a * source_length + max_len_b (capped at max_len). <eos> is masked out before min_len tokens, so
min_len = max_len = N makes every hypothesis exactly N tokens long (how decoding speed is benchmarked: every system
does the same work, whatever its model would have stopped at).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from seqbench.data.tokenizer import BOS_ID, EOS_ID
from seqbench.models.interface import Seq2Seq


@dataclass
class DecodingConfig:
    beam_size: int = 1  # 1 = greedy
    length_penalty: float = 1.0  # alpha of GNMT's ((5 + |y|) / 6) ** alpha; 0 = no normalisation
    max_len_a: float = 1.5  # hypotheses are at most a * source_length + b tokens (eos excluded)
    max_len_b: int = 10
    min_len: int = 0  # <eos> is not allowed before this many tokens; wins over the length limits when larger
    max_len: int | None = None  # absolute cap on the hypothesis length (eos excluded), as fairseq's --max-len


def length_limits(src_mask: torch.Tensor, cfg: DecodingConfig) -> torch.Tensor:
    """Per-sentence maximum hypothesis length [B] (eos excluded): a * S + b, capped at max_len, at least min_len."""
    limits = (src_mask.sum(1).float() * cfg.max_len_a + cfg.max_len_b).long()
    if cfg.max_len is not None:
        limits = limits.clamp(max=cfg.max_len)
    return limits.clamp(min=cfg.min_len)


def forbid_eos_before_min_len(logits: torch.Tensor, step: int, cfg: DecodingConfig) -> torch.Tensor:
    return logits.index_fill(-1, torch.tensor([EOS_ID], device=logits.device), float("-inf")) \
        if step < cfg.min_len else logits


def strip_at_eos(tokens: torch.Tensor) -> list[list[int]]:
    """Rows of token ids -> lists cut at the first <eos>."""
    out = []
    for row in tokens.tolist():
        out.append(row[:row.index(EOS_ID)] if EOS_ID in row else row)
    return out


@torch.no_grad()
def greedy_search(model: Seq2Seq, src: torch.Tensor, src_mask: torch.Tensor, cfg: DecodingConfig) -> list[list[int]]:
    encoder_out = model.encode(src, src_mask)
    state = model.init_state(encoder_out)
    limits = length_limits(src_mask, cfg)
    batch = src.size(0)
    tokens = torch.full((batch,), BOS_ID, dtype=torch.long, device=src.device)
    finished = torch.zeros(batch, dtype=torch.bool, device=src.device)
    output = []
    for step in range(int(limits.max()) + 1):
        logits, state, _ = model.decode_step(tokens, encoder_out, state)
        tokens = forbid_eos_before_min_len(logits, step, cfg).argmax(-1)
        tokens = torch.where(finished | (step >= limits), torch.full_like(tokens, EOS_ID), tokens)
        output.append(tokens)
        finished |= tokens == EOS_ID
        if finished.all():
            break
    return strip_at_eos(torch.stack(output, 1))


def length_penalty(lengths: torch.Tensor, alpha: float) -> torch.Tensor:
    return ((5.0 + lengths.float()) / 6.0) ** alpha


@torch.no_grad()
def beam_search(model: Seq2Seq, src: torch.Tensor, src_mask: torch.Tensor, cfg: DecodingConfig) -> list[list[int]]:
    """Standard batched beam search; finished hypotheses stay in the beam, extended by <eos> at no cost.

    Hypotheses are ranked by their summed log-probability while searching and by the length-normalised score at the
    end, as in fairseq/GNMT. With beam_size=1 this is exactly greedy search.
    """
    k, batch, device = cfg.beam_size, src.size(0), src.device
    encoder_out = model.expand_encoder_out(model.encode(src, src_mask), k)
    state = model.init_state(encoder_out)
    limits = length_limits(src_mask, cfg).repeat_interleave(k)  # [B*k]
    scores = torch.full((batch, k), float("-inf"), device=device)
    scores[:, 0] = 0.0  # all beams start identical: keep one alive so the first step does not pick duplicates
    tokens = torch.full((batch * k,), BOS_ID, dtype=torch.long, device=device)
    finished = torch.zeros(batch * k, dtype=torch.bool, device=device)
    lengths = torch.zeros(batch * k, dtype=torch.long, device=device)
    history = torch.empty(batch * k, 0, dtype=torch.long, device=device)
    for step in range(int(limits.max()) + 1):
        logits, state, _ = model.decode_step(tokens, encoder_out, state)
        log_probs = forbid_eos_before_min_len(logits.float().log_softmax(-1), step, cfg)  # [B*k, V]
        # Finished rows may only continue with <eos> at zero cost; rows at their length limit must emit <eos>.
        forced_eos = finished | (step >= limits)
        eos_only = torch.full_like(log_probs, float("-inf"))
        eos_only[:, EOS_ID] = 0.0
        log_probs = torch.where(finished[:, None], eos_only, log_probs)
        log_probs = torch.where((forced_eos & ~finished)[:, None],
                                torch.where(eos_only == 0, log_probs, eos_only), log_probs)
        vocab = log_probs.size(-1)
        candidates = (scores.view(-1, 1) + log_probs).view(batch, k * vocab)
        scores, flat = candidates.topk(k, dim=-1)  # [B,k]
        beam_origin = flat // vocab + torch.arange(batch, device=device)[:, None] * k  # rows in the B*k layout
        tokens = (flat % vocab).view(-1)
        origin = beam_origin.view(-1)
        history = torch.cat([history.index_select(0, origin), tokens[:, None]], dim=1)
        was_finished = finished.index_select(0, origin)
        lengths = lengths.index_select(0, origin) + (~was_finished).long()
        finished = was_finished | (tokens == EOS_ID)
        state = model.reorder_state(state, origin)
        if finished.all():
            break
    # Length of a hypothesis counts its <eos>, as fairseq does.
    normalised = scores.view(-1) / length_penalty(lengths, cfg.length_penalty)
    best = normalised.view(batch, k).argmax(-1) + torch.arange(batch, device=device) * k
    return strip_at_eos(history.index_select(0, best))


def generate(model: Seq2Seq, src: torch.Tensor, src_mask: torch.Tensor, cfg: DecodingConfig) -> list[list[int]]:
    if cfg.beam_size == 1:
        return greedy_search(model, src, src_mask, cfg)
    return beam_search(model, src, src_mask, cfg)
