"""DecodingConfig.min_len and max_len: greedy and beam search give exactly N tokens when both are N, whatever the
model would rather do (stop at once, or never stop), and the config check rejects contradictory values."""
from __future__ import annotations

import pytest
import torch

from seqbench.common.tokens import EOS_ID
from seqbench.decoding.search import DecodingConfig, generate, length_limits
from seqbench.models.interface import Seq2Seq

from conftest import build_tiny_model, random_batch


class EosBias(Seq2Seq):
    """A real tiny model whose <eos> logit is shifted by `bias`: +50 wants to stop at once, -50 never stops."""

    def __init__(self, inner: Seq2Seq, bias: float):
        super().__init__()
        self.inner, self.bias = inner, bias

    def _shift(self, logits):
        return logits.index_add(-1, torch.tensor([EOS_ID]), torch.full_like(logits[..., :1], self.bias))

    def encode(self, src, src_mask):
        return self.inner.encode(src, src_mask)

    def init_state(self, encoder_out):
        return self.inner.init_state(encoder_out)

    def decode(self, tgt_in, encoder_out, state=None, return_attention=False):
        return self._shift(self.inner.decode(tgt_in, encoder_out, state))

    def reorder_state(self, state, indices):
        self.inner.reorder_state(state, indices)

    def expand_encoder_out(self, encoder_out, k):
        return self.inner.expand_encoder_out(encoder_out, k)

    def reorder_encoder_out(self, encoder_out, indices):
        return self.inner.reorder_encoder_out(encoder_out, indices)


CASES = ["transformer", "rnn_lstm_luong_general_no_feed", "rnn_bahdanau", "cnn"]


@pytest.mark.parametrize("beam", [1, 3])
@pytest.mark.parametrize("case", CASES)
def test_min_len_and_max_len_give_exactly_n_tokens(case, beam):
    src, mask, _ = random_batch(lengths=(7, 2, 5))
    eager = EosBias(build_tiny_model(case), bias=50.0).eval()
    assert generate(eager, src, mask, DecodingConfig(beam_size=beam)) == [[], [], []]  # stops at once by itself
    exact = DecodingConfig(beam_size=beam, min_len=9, max_len=9)
    hypotheses = generate(eager, src, mask, exact)
    assert [len(h) for h in hypotheses] == [9, 9, 9] and all(EOS_ID not in h for h in hypotheses)

    endless = EosBias(build_tiny_model(case), bias=-50.0).eval()
    unlimited = DecodingConfig(beam_size=beam, max_len_a=1.0, max_len_b=20)
    assert [len(h) for h in generate(endless, src, mask, unlimited)] == [27, 22, 25]  # a * S + b
    capped = DecodingConfig(beam_size=beam, max_len_a=1.0, max_len_b=20, max_len=9)
    assert [len(h) for h in generate(endless, src, mask, capped)] == [9, 9, 9]
    assert [len(h) for h in generate(endless, src, mask, exact)] == [9, 9, 9]


def test_length_limits_min_len_wins_over_a_smaller_limit():
    mask = torch.tensor([[True] * 4 + [False] * 2, [True] * 6])
    assert length_limits(mask, DecodingConfig(max_len_a=1.0, max_len_b=2)).tolist() == [6, 8]
    assert length_limits(mask, DecodingConfig(max_len_a=1.0, max_len_b=2, max_len=7)).tolist() == [6, 7]
    assert length_limits(mask, DecodingConfig(max_len_a=0.0, max_len_b=2, min_len=5)).tolist() == [5, 5]


@pytest.mark.parametrize("overrides, key", [
    (["module.decoding.min_len=-1"], "module.decoding.min_len"),
    (["module.decoding.max_len=0"], "module.decoding.max_len"),
    (["module.decoding.min_len=5", "module.decoding.max_len=4"], "module.decoding.min_len"),
])
def test_config_check_rejects_bad_lengths(overrides, key):
    from seqbench.common.errors import ConfigError
    from seqbench.config.checks import validate

    from conftest import compose_train

    validate(compose_train(["module.decoding.min_len=3", "module.decoding.max_len=3"]))
    with pytest.raises(ConfigError, match=key):
        validate(compose_train(overrides))
