"""Greedy and batched beam search over the `Seq2Seq` incremental-decoding contract: one implementation for all models.

Every sentence of the batch is decoded at once (B x beam rows); a sentence stops at <eos> or at its own length limit
max_len_a * source_length + max_len_b (capped at max_len). <eos> is masked out before min_len tokens, so
min_len = max_len = N makes every hypothesis exactly N tokens long (how decoding speed is benchmarked: every system
does the same work, whatever its model would have stopped at). Models are only asked for logits, one token per step
through `Seq2Seq.decode` with an incremental state: attention weights are never requested here, so attention stays on
fused kernels.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from seqbench.common.tokens import BOS_ID, EOS_ID
from seqbench.models.interface import Seq2Seq


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


def forbid_eos_before_min_len_(scores: torch.Tensor, step: int, cfg: DecodingConfig) -> torch.Tensor:
    """<eos> gets -inf before min_len tokens, in place: the [rows, V] scores are the largest tensor of a search step,
    and copying them every step is a share of beam search worth avoiding (docs/speed.md). Returns the scores."""
    if step < cfg.min_len:
        scores[..., EOS_ID] = float("-inf")
    return scores


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
        logits = model.decode(tokens[:, None], encoder_out, state)[:, 0]  # [B,V]
        tokens = forbid_eos_before_min_len_(logits, step, cfg).argmax(-1)
        tokens = torch.where(step >= limits, torch.full_like(tokens, EOS_ID), tokens)
        output[active, step] = tokens
        ended = tokens == EOS_ID
        n_ended = int(ended.sum())  # the one host sync of a step
        if n_ended == tokens.size(0):
            break
        if n_ended:  # finished sentences leave the batch: the model never computes their rows again
            keep = (~ended).nonzero().squeeze(1)
            active, tokens, limits = active[keep], tokens[keep], limits[keep]
            encoder_out = model.reorder_encoder_out(encoder_out, keep)
            model.reorder_state(state, keep)
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


@dataclass
class Beams:
    """Beam search's bookkeeping: one row per sentence still in the batch, k hypotheses each."""

    active: torch.Tensor           # [B] the input index of each sentence
    limits: torch.Tensor           # [B] its length limit: tokens before <eos>
    best_penalty: torch.Tensor     # [B,1] the length penalty at that limit, the largest a hypothesis can reach
    scores: torch.Tensor           # [B,k] log-probabilities of the live hypotheses (-inf: none)
    history: torch.Tensor          # [B,k,step] their tokens so far
    finished_scores: torch.Tensor  # [B,k] normalised scores of the best finished hypotheses, best first
    finished_tokens: torch.Tensor  # [B,k,steps] their tokens, <eos>-padded
    finished_count: torch.Tensor   # [B] how many hypotheses have finished
    done: torch.Tensor             # [B] the sentence's answer is settled

    @classmethod
    def start(cls, limits: torch.Tensor, k: int, steps: int, cfg: DecodingConfig) -> Beams:
        batch, device = limits.size(0), limits.device
        scores = torch.full((batch, k), float("-inf"), device=device)
        scores[:, 0] = 0.0  # all beams start identical: one alive, so the first step does not pick duplicates
        # The most a live hypothesis's normalised score can still become: its log-probability only falls, and with
        # alpha >= 0 the penalty grows with length, so dividing by the longest allowed length's penalty bounds it.
        best_penalty = length_penalty(limits + 1, cfg.length_penalty, cfg.length_normalization).to(device)[:, None]
        return cls(active=torch.arange(batch, device=device), limits=limits, best_penalty=best_penalty,
                   scores=scores, history=torch.empty(batch, k, 0, dtype=torch.long, device=device),
                   finished_scores=torch.full((batch, k), float("-inf"), device=device),
                   finished_tokens=torch.full((batch, k, steps), EOS_ID, dtype=torch.long, device=device),
                   finished_count=torch.zeros(batch, dtype=torch.long, device=device),
                   done=torch.zeros(batch, dtype=torch.bool, device=device))

    @property
    def size(self) -> int:
        return self.active.size(0)

    def select(self, keep: torch.Tensor) -> Beams:
        """The sentences `keep` [B'] only (done sentences leaving the batch)."""
        return Beams(**{name: value[keep] for name, value in vars(self).items()})

    def record_answers(self, answers: torch.Tensor, ended: torch.Tensor) -> None:
        """The best finished hypothesis of each `ended` [B] sentence is its answer (each has one: <eos> is forced at
        its limit, and the search ends there at the latest)."""
        ended = ended.nonzero().squeeze(1)
        answers[self.active[ended]] = self.finished_tokens[ended, self.finished_scores[ended].argmax(1)]


def _finish(beams: Beams, top_scores: torch.Tensor, ends: torch.Tensor, prefixes: torch.Tensor, step: int,
            cfg: DecodingConfig) -> None:
    """<eos> candidates among the best k of a sentence not done yet join its finished hypotheses, which keep the
    best k by normalised score. top_scores, ends [B,2k], prefixes [B,2k,step]: the best 2k candidates, best first."""
    k, steps = beams.scores.size(1), beams.finished_tokens.size(2)
    finishing = ends & (torch.arange(ends.size(1), device=ends.device) < k) & ~beams.done[:, None] \
        & top_scores.isfinite()
    normalised = torch.where(finishing, top_scores / length_penalty(step + 1, cfg.length_penalty,
                                                                    cfg.length_normalization),
                             torch.full_like(top_scores, float("-inf")))
    padded = torch.nn.functional.pad(prefixes, (0, steps - step), value=EOS_ID)  # [B,2k,steps]
    beams.finished_scores, keep = torch.cat([beams.finished_scores, normalised], dim=1).topk(k, dim=1)
    beams.finished_tokens = torch.cat([beams.finished_tokens, padded], dim=1).gather(
        1, keep[:, :, None].expand(-1, -1, steps))
    beams.finished_count += finishing.sum(1)


def _settle(beams: Beams, cfg: DecodingConfig) -> None:
    """Marks the sentences whose answer can no longer change as done."""
    full = beams.finished_count >= beams.scores.size(1)
    best_live = (beams.scores / beams.best_penalty).max(1).values  # the most any live hypothesis can still score
    if cfg.stop_early:
        beams.done |= full
    else:
        beams.done |= full & ~(best_live > beams.finished_scores[:, -1])
    # No live hypothesis can still beat the best finished one: that one is the answer whatever follows, so the
    # sentence stops here (an untrained model's live beams would otherwise repeat a word to the length limit).
    beams.done |= best_live < beams.finished_scores[:, 0]


def _advance(beams: Beams, log_probs: torch.Tensor, step: int, cfg: DecodingConfig) -> tuple[torch.Tensor, ...]:
    """One step of every sentence from log_probs [B,k,V] (overwritten): of the best 2k candidates, those ending in
    <eos> among the best k finish and the best k others live on; then which sentences are done.
    -> (beam [B,k]: the hypothesis each live one continues, tokens [B,k]: the token it adds)"""
    k, vocab = log_probs.size(1), log_probs.size(2)
    candidates = log_probs.add_(beams.scores[:, :, None]).view(beams.size, k * vocab)  # in place, as above
    top_scores, top = candidates.topk(min(2 * k, k * vocab), dim=1)  # [B,2k], best first
    top_beam, top_token = top // vocab, top % vocab
    ends = top_token == EOS_ID
    prefixes = beams.history.gather(1, top_beam[:, :, None].expand(-1, -1, step))  # [B,2k,step]
    _finish(beams, top_scores, ends, prefixes, step, cfg)
    # Continue: the best k candidates that do not end in <eos>.
    beams.scores, live = top_scores.masked_fill(ends, float("-inf")).topk(k, dim=1)  # [B,k]
    beam, tokens = top_beam.gather(1, live), top_token.gather(1, live)
    beams.history = torch.cat([prefixes.gather(1, live[:, :, None].expand(-1, -1, step)), tokens[:, :, None]], 2)
    _settle(beams, cfg)
    return beam, tokens


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
    sentence finishes. The answer is the best finished hypothesis by normalised score. With beam_size=1 this is
    exactly greedy search.
    """
    k, batch, device = cfg.beam_size, src.size(0), src.device
    encoder_out = model.expand_encoder_out(model.encode(src, src_mask), k)  # row b*k+j: hypothesis j of sentence b
    state = model.init_state(encoder_out)
    limits = length_limits(src_mask, cfg)  # [B] tokens before <eos>
    steps = int(limits.max()) + 1
    beams = Beams.start(limits, k, steps, cfg)
    answers = torch.full((batch, steps), EOS_ID, dtype=torch.long, device=device)
    tokens = torch.full((batch * k,), BOS_ID, dtype=torch.long, device=device)  # [B*k] the newest token of each row
    first_limit = int(limits.min())  # kept on the host: no device sync per step to ask whether a limit is reached
    eos_only = None  # [V]: 0 for <eos>, -inf elsewhere; built once, at the first step where a limit is reached

    for step in range(steps):
        logits = model.decode(tokens[:, None], encoder_out, state)[:, 0]  # [B*k,V]
        log_probs = forbid_eos_before_min_len_(logits.float().log_softmax(-1), step, cfg).view(beams.size, k, -1)
        if step >= first_limit:  # some sentence may only emit <eos> (masking every step cost 5% of beam search)
            if eos_only is None:
                eos_only = torch.full((log_probs.size(-1),), float("-inf"), device=device)
                eos_only[EOS_ID] = 0.0
            log_probs = torch.where((step >= beams.limits)[:, None, None], log_probs + eos_only, log_probs)
        beam, tokens = _advance(beams, log_probs, step, cfg)  # [B,k] each
        n_done = int(beams.done.sum())  # the one host sync of a step
        if n_done == beams.size:
            break
        rows = torch.arange(beams.size, device=device) * k  # [B]: the first row of each sentence in the state
        if n_done:  # done sentences leave the batch, explicitly: the model never computes their rows again
            beams.record_answers(answers, beams.done)
            keep = (~beams.done).nonzero().squeeze(1)
            beams, rows, beam, tokens = beams.select(keep), rows[keep], beam[keep], tokens[keep]
            encoder_out = model.reorder_encoder_out(encoder_out, keep)
            first_limit = int(beams.limits.min())
        model.reorder_state(state, (rows[:, None] + beam).view(-1))
        tokens = tokens.view(-1)

    beams.record_answers(answers, torch.ones_like(beams.done))  # those still in the batch: done, or at their limit
    return strip_at_eos(answers)


def generate(model: Seq2Seq, src: torch.Tensor, src_mask: torch.Tensor, cfg: DecodingConfig) -> list[list[int]]:
    if cfg.beam_size == 1:
        return greedy_search(model, src, src_mask, cfg)
    return beam_search(model, src, src_mask, cfg)
