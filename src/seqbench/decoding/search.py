"""Greedy and batched beam search over the `Seq2Seq` incremental-decoding contract: one implementation for all models.

Every sentence of the batch is decoded at once (B x beam rows); a sentence stops at <eos> or at its own length limit
max_len_a * source_length + max_len_b (capped at max_len). <eos> is masked out before min_len tokens, so
min_len = max_len = N makes every hypothesis exactly N tokens long (how decoding speed is benchmarked: every system
does the same work, whatever its model would have stopped at). Models are only asked for logits: attention weights
are never requested here, so attention stays on fused kernels.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from seqbench.common.tokens import BOS_ID, EOS_ID
from seqbench.models.interface import Seq2Seq, index_batch


@dataclass
class DecodingConfig:
    beam_size: int = 1  # 1 = greedy
    length_penalty: float = 1.0  # alpha of the length normalisation below; 0 = no normalisation
    length_normalization: str = "gnmt"  # gnmt: score / ((5 + |y|) / 6) ** alpha (Wu et al. 2016, Marian, OpenNMT);
                                        # fairseq: score / |y| ** alpha (fairseq's --lenpen)
    max_len_a: float = 1.5  # hypotheses are at most a * source_length + b tokens (eos excluded)
    max_len_b: int = 10
    stop_early: bool = True  # beam: a sentence is done when beam_size hypotheses have finished (fairseq's default);
                             # False: only once no live hypothesis can still beat them after length normalisation
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
    batch, steps = src.size(0), int(limits.max()) + 1
    output = torch.full((batch, steps), EOS_ID, dtype=torch.long, device=src.device)
    active = torch.arange(batch, device=src.device)  # the batch rows of the sentences still decoding
    tokens = torch.full((batch,), BOS_ID, dtype=torch.long, device=src.device)
    for step in range(steps):
        logits, state, _ = model.decode_step(tokens, encoder_out, state)
        tokens = forbid_eos_before_min_len(logits, step, cfg).argmax(-1)
        tokens = torch.where(step >= limits, torch.full_like(tokens, EOS_ID), tokens)
        output[active, step] = tokens
        ended = tokens == EOS_ID
        n_ended = int(ended.sum())  # the one host sync of a step
        if n_ended == tokens.size(0):
            break
        if n_ended:  # finished sentences leave the batch: the model never computes their rows again
            keep = (~ended).nonzero().squeeze(1)
            active, tokens, limits = active[keep], tokens[keep], limits[keep]
            encoder_out, state = index_batch(encoder_out, keep), model.reorder_state(state, keep)
    return strip_at_eos(output)


NORMALIZATIONS = ("gnmt", "fairseq")


def length_penalty(lengths: torch.Tensor | int, alpha: float, kind: str = "gnmt") -> torch.Tensor:
    """The divisor of a finished hypothesis's log-probability: GNMT's ((5 + |y|) / 6) ** alpha, or fairseq's
    |y| ** alpha; |y| counts the <eos>, as in fairseq."""
    lengths = torch.as_tensor(lengths, dtype=torch.float)
    if kind == "fairseq":
        return lengths ** alpha
    if kind == "gnmt":
        return ((5.0 + lengths) / 6.0) ** alpha
    raise ValueError(f"length_normalization={kind!r}: one of {', '.join(NORMALIZATIONS)}")


@torch.no_grad()
def beam_search(model: Seq2Seq, src: torch.Tensor, src_mask: torch.Tensor, cfg: DecodingConfig) -> list[list[int]]:
    """Batched beam search with fairseq's bookkeeping, one implementation for every model; the length normalisation
    is GNMT's or fairseq's (`cfg.length_normalization`).

    Every step scores the k live hypotheses of each sentence over the vocabulary and keeps the best 2k candidates.
    A candidate ending in <eos> among the best k is finished: it leaves the beam for its sentence's finished list
    with its length-normalised score (score / length_penalty); the best k candidates that do not end in <eos> are
    the next live hypotheses, so finished ones never occupy a beam slot. A sentence is done when k hypotheses have
    finished (`cfg.stop_early`), or, with stop_early=False, once no live hypothesis can still beat the k-th finished
    one after normalisation (its score can only fall; its normaliser can at most reach the length limit's). Either way
    it is also done as soon as no live hypothesis can still beat its best finished one: the answer is then settled,
    so stopping changes no answer, only the work. At its length limit a sentence may only emit <eos>, so every
    sentence finishes. The answer is the best finished
    hypothesis by normalised score. With beam_size=1 this is exactly greedy search.
    """
    k, batch, device = cfg.beam_size, src.size(0), src.device
    encoder_out = model.expand_encoder_out(model.encode(src, src_mask), k)
    state = model.init_state(encoder_out)
    limits = length_limits(src_mask, cfg)  # [B] tokens before <eos>
    steps = int(limits.max()) + 1
    # The most a live hypothesis's normalised score can still become: its log-probability only falls, and with
    # alpha >= 0 the penalty grows with length, so dividing by the longest allowed length's penalty bounds it.
    best_penalty = length_penalty(limits + 1, cfg.length_penalty, cfg.length_normalization).to(device)[:, None]

    scores = torch.full((batch, k), float("-inf"), device=device)
    scores[:, 0] = 0.0  # all beams start identical: one alive, so the first step does not pick duplicates
    tokens = torch.full((batch * k,), BOS_ID, dtype=torch.long, device=device)
    history = torch.empty(batch, k, 0, dtype=torch.long, device=device)
    finished_scores = torch.full((batch, k), float("-inf"), device=device)  # normalised, best first
    finished_tokens = torch.full((batch, k, steps), EOS_ID, dtype=torch.long, device=device)
    finished_count = torch.zeros(batch, dtype=torch.long, device=device)
    done = torch.zeros(batch, dtype=torch.bool, device=device)
    answers = torch.full((batch, steps), EOS_ID, dtype=torch.long, device=device)
    active = torch.arange(batch, device=device)  # the input index of each sentence still decoding
    first_limit = int(limits.min())  # kept on the host: no device sync per step to ask whether a limit is reached
    eos_only = None  # [V]: 0 for <eos>, -inf elsewhere; built once, at the first step where a limit is reached

    def answer(ended: torch.Tensor) -> None:
        """The best finished hypothesis of each `ended` sentence is its answer (each has one: <eos> is forced at its
        limit, and the loop ends there at the latest)."""
        ended = ended.nonzero().squeeze(1)
        answers[active[ended]] = finished_tokens[ended, finished_scores[ended].argmax(1)]

    for step in range(steps):
        logits, state, _ = model.decode_step(tokens, encoder_out, state)
        log_probs = forbid_eos_before_min_len(logits.float().log_softmax(-1), step, cfg).view(batch, k, -1)
        vocab = log_probs.size(-1)
        if step >= first_limit:  # some sentence may only emit <eos> (masking every step cost 5% of beam search)
            at_limit = step >= limits  # [B]
            if eos_only is None:
                eos_only = torch.full((vocab,), float("-inf"), device=device)
                eos_only[EOS_ID] = 0.0
            log_probs = torch.where(at_limit[:, None, None], log_probs + eos_only, log_probs)
        candidates = (scores[:, :, None] + log_probs).view(batch, k * vocab)
        top_scores, top = candidates.topk(min(2 * k, k * vocab), dim=1)  # [B,2k], best first
        top_beam, top_token = top // vocab, top % vocab
        ends = top_token == EOS_ID
        prefixes = history.gather(1, top_beam[:, :, None].expand(-1, -1, step))  # [B,2k,step]

        # Finish: <eos> candidates among the best k, of sentences not done yet.
        finishing = ends & (torch.arange(top.size(1), device=device) < k) & ~done[:, None] & top_scores.isfinite()
        normalised = torch.where(finishing, top_scores / length_penalty(step + 1, cfg.length_penalty,
                                                                        cfg.length_normalization),
                                 torch.full_like(top_scores, float("-inf")))
        padded = torch.nn.functional.pad(prefixes, (0, steps - step), value=EOS_ID)  # [B,2k,steps]
        pool_scores = torch.cat([finished_scores, normalised], dim=1)
        finished_scores, keep = pool_scores.topk(k, dim=1)
        finished_tokens = torch.cat([finished_tokens, padded], dim=1).gather(
            1, keep[:, :, None].expand(-1, -1, steps))
        finished_count += finishing.sum(1)

        # Continue: the best k candidates that do not end in <eos>.
        live_scores, live = top_scores.masked_fill(ends, float("-inf")).topk(k, dim=1)  # [B,k]
        beam, tokens = top_beam.gather(1, live), top_token.gather(1, live)
        history = torch.cat([prefixes.gather(1, live[:, :, None].expand(-1, -1, step)), tokens[:, :, None]], dim=2)
        scores, tokens = live_scores, tokens.view(-1)

        full = finished_count >= k
        best_live = (scores / best_penalty).max(1).values  # the most any live hypothesis can still score
        if cfg.stop_early:
            done |= full
        else:
            done |= full & ~(best_live > finished_scores[:, -1])
        # No live hypothesis can still beat the best finished one: that one is the answer whatever follows, so the
        # sentence stops here (an untrained model's live beams would otherwise repeat a word to the length limit).
        done |= best_live < finished_scores[:, 0]
        n_done = int(done.sum())  # the one host sync of a step
        if n_done == batch:
            break
        rows = torch.arange(batch, device=device) * k  # [B]: the first row of each sentence in the state
        if n_done:  # done sentences leave the batch: the model never computes their rows again
            answer(done)
            keep = (~done).nonzero().squeeze(1)
            rows, tokens = rows[keep], tokens.view(batch, k)[keep].view(-1)
            active, limits, best_penalty, scores, history, beam = (
                x[keep] for x in (active, limits, best_penalty, scores, history, beam))
            finished_scores, finished_tokens, finished_count, done = (
                x[keep] for x in (finished_scores, finished_tokens, finished_count, done))
            encoder_out = index_batch(encoder_out, (rows[:, None] + torch.arange(k, device=device)).view(-1))
            batch, first_limit = keep.size(0), int(limits.min())
        state = model.reorder_state(state, (rows[:, None] + beam).view(-1))

    answer(torch.ones_like(done))  # the sentences still in the batch: done, or at their length limit
    return strip_at_eos(answers)


def generate(model: Seq2Seq, src: torch.Tensor, src_mask: torch.Tensor, cfg: DecodingConfig) -> list[list[int]]:
    if cfg.beam_size == 1:
        return greedy_search(model, src, src_mask, cfg)
    return beam_search(model, src, src_mask, cfg)
