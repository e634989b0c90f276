"""Beam search (seqbench.decoding.search) against exhaustive search on tiny models, and its fairseq-style
bookkeeping."""
from __future__ import annotations

import itertools

import pytest
import torch

from seqbench.common.tokens import BOS_ID, EOS_ID
from seqbench.decoding.search import DecodingConfig, beam_search, length_penalty

from conftest import build_tiny_model, random_batch

TINY_VOCAB = 6  # pad, bos, eos, unk and two words: every output sequence can be enumerated


@torch.no_grad()
def _normalised_score(model, src, mask, hypothesis: list[int], alpha: float) -> float:
    """log p(hypothesis <eos> | source) / length_penalty, by teacher forcing (the definition beam search optimises)."""
    tgt_in = torch.tensor([[BOS_ID] + hypothesis])
    log_probs = model.decode(tgt_in, model.encode(src, mask)).log_softmax(-1)[0]  # [T+1,V]
    target = hypothesis + [EOS_ID]
    total = sum(float(log_probs[t, token]) for t, token in enumerate(target))
    return total / float(length_penalty(len(target), alpha))


def _exhaustive(model, src, mask, max_tokens: int, alpha: float) -> tuple[list[int], float]:
    words = [t for t in range(TINY_VOCAB) if t != EOS_ID]
    best, best_score = None, float("-inf")
    for n in range(max_tokens + 1):
        for hypothesis in itertools.product(words, repeat=n):
            score = _normalised_score(model, src, mask, list(hypothesis), alpha)
            if score > best_score:
                best, best_score = list(hypothesis), score
    return best, best_score


@pytest.mark.parametrize("case", ["transformer", "rnn_bahdanau", "cnn"])
@pytest.mark.parametrize("alpha", [0.0, 0.6, 2.0])
@pytest.mark.parametrize("stop_early", [True, False])
def test_wide_beam_equals_exhaustive_search(case, alpha, stop_early):
    """With a beam wider than the number of possible outputs (1 + 5 + 25 + 125) nothing is pruned, so beam search
    must return the best of all hypotheses under the same length-normalised score."""
    model = build_tiny_model(case, tgt_vocab=TINY_VOCAB)
    src, mask, _ = random_batch(lengths=(4, 2, 3))
    cfg = DecodingConfig(beam_size=160, length_penalty=alpha, max_len_a=0.0, max_len_b=3, stop_early=stop_early)
    found = beam_search(model, src, mask, cfg)
    for i, n in enumerate((4, 2, 3)):
        one_src, one_mask = src[i:i + 1, :n], mask[i:i + 1, :n]
        best, best_score = _exhaustive(model, one_src, one_mask, 3, alpha)
        assert _normalised_score(model, one_src, one_mask, found[i], alpha) == pytest.approx(best_score, abs=1e-5)


@pytest.mark.parametrize("case", ["transformer", "rnn_luong_general", "cnn"])
def test_every_sentence_gets_one_hypothesis_within_its_limit(case):
    """(Beam search may score below greedy search: a pruned prefix can lead to greedy's answer. Optimality is checked
    against exhaustive search above.)"""
    model = build_tiny_model(case, tgt_vocab=TINY_VOCAB)
    src, mask, _ = random_batch(lengths=(7, 3, 5, 1))
    beam = beam_search(model, src, mask, DecodingConfig(beam_size=4, length_penalty=0.0, max_len_a=1.0, max_len_b=2))
    assert len(beam) == 4
    for i, n in enumerate((7, 3, 5, 1)):
        assert len(beam[i]) <= n + 2 and EOS_ID not in beam[i]


def test_the_two_length_normalisations():
    assert length_penalty(7, 0.6).item() == pytest.approx(2.0 ** 0.6)  # GNMT: ((5 + 7) / 6) ** 0.6
    assert length_penalty(7, 0.6, "fairseq").item() == pytest.approx(7 ** 0.6)
    assert length_penalty(7, 0.0, "fairseq").item() == length_penalty(7, 0.0).item() == 1.0
    with pytest.raises(ValueError, match="length_normalization"):
        length_penalty(7, 0.6, "marian")


def test_finished_hypotheses_leave_the_beam():
    """A model that says <eos> first with probability ~1/2: the old scheme kept that hypothesis in a beam slot, the
    fairseq scheme moves it to the finished list and keeps k live ones, so the longer, better-normalised
    continuation still competes. Checked through the public result: with alpha large the longest wins."""
    model = build_tiny_model("rnn_bahdanau", tgt_vocab=TINY_VOCAB)
    with torch.no_grad():
        model.output.bias.zero_()
        model.output.weight.zero_()
        model.output.bias[EOS_ID] = 0.5  # every step: <eos> a little likelier than each word
    src, mask, _ = random_batch(lengths=(3,))
    short = beam_search(model, src, mask, DecodingConfig(beam_size=3, length_penalty=0.0, max_len_a=0, max_len_b=4))
    long = beam_search(model, src, mask, DecodingConfig(beam_size=3, length_penalty=5.0, max_len_a=0, max_len_b=4,
                                                        stop_early=False))
    assert short == [[]] and len(long[0]) == 4


@pytest.mark.parametrize("case", ["transformer", "rnn_bahdanau", "cnn"])
@pytest.mark.parametrize("beam", [1, 3])
def test_finished_sentences_leave_the_batch_without_changing_any_answer(case, beam):
    """Sentences with different length limits finish at different steps and leave the batch (the model sees fewer
    rows as the search goes on); every sentence still gets exactly the answer it gets decoded alone."""
    from seqbench.decoding.search import generate

    model = build_tiny_model(case).eval()
    lengths = (9, 2, 6, 1, 7)
    src, mask, _ = random_batch(lengths=lengths)
    cfg = DecodingConfig(beam_size=beam, length_penalty=0.6, max_len_a=1.0, max_len_b=2)
    rows_seen, decode = [], model.decode

    def counting_decode(tokens, *args, **kwargs):
        rows_seen.append(tokens.size(0))
        return decode(tokens, *args, **kwargs)

    model.decode = counting_decode
    together = generate(model, src, mask, cfg)
    assert rows_seen[-1] < rows_seen[0] == len(lengths) * beam, rows_seen
    alone = [generate(model, src[i:i + 1, :n], mask[i:i + 1, :n], cfg)[0] for i, n in enumerate(lengths)]
    assert together == alone


@pytest.mark.parametrize("stop_early", [True, False])
def test_a_sentence_stops_once_its_best_finished_hypothesis_cannot_be_beaten(stop_early):
    """<eos> is near-certain at the first step and near-impossible after it (as an untrained model's beams that
    repeat one word): the empty hypothesis finishes at step 0 and no live one can come close, so the search stops
    there. Without that rule only one hypothesis would have finished until the length limit forces <eos>, and the
    live beams would run all 31 steps to reach the same answer."""
    model = build_tiny_model("transformer", tgt_vocab=TINY_VOCAB)
    src, mask, _ = random_batch(lengths=(3, 5))
    steps, decode = [], model.decode

    def eos_first_decode(tokens, encoder_out, state):
        logits = decode(tokens, encoder_out, state)  # [B,1,V]
        eos_bonus = 8.0 if not steps else -20.0  # finite: <eos> can still be forced at the limit
        steps.append(tokens.size(0))
        return logits.index_add(2, torch.tensor([EOS_ID]), torch.full((logits.size(0), 1, 1), eos_bonus))

    model.decode = eos_first_decode
    cfg = DecodingConfig(beam_size=3, length_penalty=0.6, max_len_a=0.0, max_len_b=30, stop_early=stop_early)
    assert beam_search(model, src, mask, cfg) == [[], []]
    assert len(steps) == 1, steps


class FixedDistribution:
    """A stub model whose every step predicts <eos> 0.2, word 4 ("a") 0.6 and word 5 ("b") 0.2, whatever the source:
    every hypothesis's score can be written down by hand."""

    def encode(self, src, src_mask):
        return {"mask": src_mask}

    def expand_encoder_out(self, encoder_out, k):
        return encoder_out  # its logits read nothing from the source

    def reorder_encoder_out(self, encoder_out, indices):
        return {"mask": encoder_out["mask"][indices]}

    def init_state(self, encoder_out):
        return {}

    def decode(self, tgt_in, encoder_out, state=None):
        probs = torch.full((*tgt_in.shape, TINY_VOCAB), 1e-12)
        probs[..., EOS_ID], probs[..., 4], probs[..., 5] = 0.2, 0.6, 0.2
        return probs.log()

    def reorder_state(self, state, indices):
        pass


@pytest.mark.parametrize("alpha, kind, expected", [
    # log p: "" = ln .2 = -1.609; "a" = ln .6 + ln .2 = -2.120; "a a" = -2.631; "a a a" = -3.142 (|y| counts <eos>)
    (0.0, "gnmt", []),             # unnormalised: -1.609 beats -2.120, -2.631, -3.142
    (1.0, "gnmt", []),             # / ((5+|y|)/6): -1.609, -1.817, -1.973, -2.095
    (1.0, "fairseq", [4, 4, 4]),   # / |y|: -1.609, -1.060, -0.877, -0.785
    (0.5, "fairseq", [4]),         # / sqrt|y|: -1.609, -1.499, -1.519, -1.571
])
def test_beam_scores_are_the_normalised_scores_worked_out_by_hand(alpha, kind, expected):
    src = torch.tensor([[4, 5]])
    cfg = DecodingConfig(beam_size=4, length_penalty=alpha, length_normalization=kind, max_len_a=0.0, max_len_b=3,
                         stop_early=False)
    assert beam_search(FixedDistribution(), src, src != 0, cfg) == [expected]
