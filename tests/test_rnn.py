"""RNN encoder-decoder specifics (seqbench.models.rnn): packed encoder, attention scores, bridge, config, presets."""
from __future__ import annotations

import math

import pytest
import torch

from seqbench.common.tokens import BOS_ID, PAD_ID
from seqbench.models.rnn import Attention, RNNSeq2Seq

from conftest import compose_train

PRESETS = ("rnn", "rnnencdec", "rnnsearch", "rnnsearch_small", "luong")


def _src(lengths=(7, 3, 5), vocab=40, seed=0):
    g = torch.Generator().manual_seed(seed)
    src = torch.full((len(lengths), max(lengths)), PAD_ID)
    for i, n in enumerate(lengths):
        src[i, :n] = torch.randint(4, vocab, (n,), generator=g)
    return src, src != PAD_ID


def _model(**kwargs):
    torch.manual_seed(0)
    args = dict(embed_dim=8, hidden_size=12, encoder_layers=2, decoder_layers=2, dropout=0.0)
    return RNNSeq2Seq(40, 45, **dict(args, **kwargs)).eval()


@pytest.mark.parametrize("cell", ["gru", "lstm"])
def test_packed_encoder_ignores_padding(cell):
    """Final states (bridged) and outputs of a padded sentence equal those of the sentence alone."""
    model = _model(cell=cell)
    src, mask = _src()
    enc = model.encode(src, mask)
    assert enc["memory"][~mask].abs().max() == 0
    for i in range(3):
        n = int(mask[i].sum())
        alone = model.encode(src[i:i + 1, :n], mask[i:i + 1, :n])
        for key in ("hidden", "cell") if cell == "lstm" else ("hidden",):
            torch.testing.assert_close(enc[key][i:i + 1], alone[key], atol=1e-6, rtol=1e-6)
        torch.testing.assert_close(enc["memory"][i:i + 1, :n], alone["memory"], atol=1e-6, rtol=1e-6)
    # whatever sits in the padded positions never reaches a state
    garbage = torch.where(mask, src, torch.randint(4, 40, src.shape))
    torch.testing.assert_close(model.encode(garbage, mask)["hidden"], enc["hidden"])


def _attend(attention, query, memory, mask):
    return attention(torch.tensor([[query]]), attention.keys(torch.tensor([memory])), torch.tensor([memory]),
                     torch.tensor([mask]))


def _check(context, weights, scores, memory, mask):
    expected = torch.tensor(scores).masked_fill(~torch.tensor(mask), float("-inf")).softmax(-1)
    torch.testing.assert_close(weights[0, 0], expected)
    torch.testing.assert_close(context[0, 0], expected @ torch.tensor(memory))
    assert weights[0, 0, ~torch.tensor(mask)].abs().max() == 0


MEMORY, MASK = [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], [True, True, False]  # third position is padding


def test_luong_dot_scores():
    attention = Attention("luong_dot", 2, 2)
    assert isinstance(attention.key_proj, torch.nn.Identity)
    context, weights = _attend(attention, [1.0, 0.0], MEMORY, MASK)
    _check(context, weights, [1.0, 3.0, 5.0], MEMORY, MASK)  # s . h_j
    assert isinstance(Attention("luong_dot", 2, 4).key_proj, torch.nn.Linear)  # bidirectional memory is projected


def test_luong_general_scores():
    attention = Attention("luong_general", 2, 2)
    with torch.no_grad():
        attention.key_proj.weight.copy_(torch.tensor([[0.0, 1.0], [1.0, 0.0]]))  # W swaps the coordinates
    context, weights = _attend(attention, [1.0, 0.0], MEMORY, MASK)
    _check(context, weights, [2.0, 4.0, 6.0], MEMORY, MASK)  # s^T W h_j


@pytest.mark.parametrize("kind", ["bahdanau", "luong_concat"])
def test_additive_scores(kind):
    """v^T tanh(W_s s + W_h h_j + b) with W_s = W_h = I, b = (0.1, 0), v = (1, -1)."""
    attention = Attention(kind, 2, 2)
    with torch.no_grad():
        attention.query_proj.weight.copy_(torch.eye(2))
        attention.key_proj.weight.copy_(torch.eye(2))
        attention.key_proj.bias.copy_(torch.tensor([0.1, 0.0]))
        attention.v.weight.copy_(torch.tensor([[1.0, -1.0]]))
    memory = [[0.0, 0.5], [1.0, 1.0], [0.2, 0.3]]
    context, weights = _attend(attention, [0.5, 0.0], memory, MASK)
    scores = [math.tanh(0.5 + h[0] + 0.1) - math.tanh(h[1]) for h in memory]
    _check(context, weights, scores, memory, MASK)


def test_bahdanau_scores_previous_state_luong_current():
    """Bahdanau's first attention depends only on s_0 (not on the first token); Luong's on s_1, hence the token."""
    src, mask = _src()
    first, other = torch.full((3,), BOS_ID), torch.full((3,), 17)
    for kind in ("bahdanau", "luong_dot", "luong_general", "luong_concat"):
        model = _model(attention=kind)
        enc = model.encode(src, mask)
        a = model.decode(first[:, None], enc, model.init_state(enc), return_attention=True)[1]
        b = model.decode(other[:, None], enc, model.init_state(enc), return_attention=True)[1]
        assert a.shape == (3, 1, 1, 1, 7)
        assert torch.equal(a, b) == (kind == "bahdanau"), kind


def test_no_attention_returns_none():
    model = _model(attention="none")
    src, mask = _src()
    enc = model.encode(src, mask)
    tgt = torch.randint(4, 45, (3, 4))
    logits, attention = model.decode(tgt, enc, return_attention=True)
    assert logits.shape == (3, 4, 45) and attention is None
    assert model.decode(tgt[:, :1], enc, model.init_state(enc), return_attention=True)[1] is None
    assert enc["summary"].shape == (3, 24)  # both directions of the top encoder layer


@pytest.mark.parametrize("cell", ["gru", "lstm"])
@pytest.mark.parametrize("encoder_layers,decoder_layers,bidirectional", [(1, 1, True), (2, 3, True), (3, 2, False)])
def test_bridge_shapes(cell, encoder_layers, decoder_layers, bidirectional):
    model = _model(cell=cell, attention="luong_general", encoder_layers=encoder_layers,
                   decoder_layers=decoder_layers, bidirectional=bidirectional)
    src, mask = _src()
    enc = model.encode(src, mask)
    assert enc["memory"].shape == (3, 7, 12 * (2 if bidirectional else 1))
    state = model.init_state(enc)
    keys = {"hidden", "cell", "feed"} if cell == "lstm" else {"hidden", "feed"}
    assert set(state) == keys
    for key in keys - {"feed"}:
        assert enc[key].shape == state[key].shape == (3, decoder_layers, 12)
        assert enc[key].abs().max() < 1  # tanh bridge
    model.decode(torch.full((3, 1), BOS_ID), enc, state)
    assert state["hidden"].shape == (3, decoder_layers, 12) and state["feed"].shape == (3, 12)


def test_unknown_cell_or_attention_raises():
    with pytest.raises(ValueError, match="model.cell='rnn'"):
        RNNSeq2Seq(10, 10, cell="rnn")
    with pytest.raises(ValueError, match="model.attention='multihead'"):
        RNNSeq2Seq(10, 10, attention="multihead")


def test_flops_per_token_grows_with_source_length():
    model = _model(attention="bahdanau")
    assert 0 < model.flops_per_token(5, 5) < model.flops_per_token(10, 5)


@pytest.mark.parametrize("preset", PRESETS)
def test_preset_composes_and_instantiates(preset):
    from seqbench.config.checks import validate
    from seqbench.models.interface import build_model

    cfg = compose_train([f"model={preset}"])
    validate(cfg)
    assert cfg.model.name == "rnn"
    torch.manual_seed(0)
    model = build_model(cfg.model, 50, 60).eval()
    assert isinstance(model, RNNSeq2Seq)
    assert (model.cell, model.attention_kind) == (cfg.model.cell, cfg.model.attention)
    assert model.hidden_size == cfg.model.hidden_size and model.decoder.num_layers == cfg.model.decoder_layers
    src, mask = _src((4, 2), vocab=50)
    with torch.no_grad():
        logits = model(src, mask, torch.randint(4, 60, (2, 3)))
    assert logits.shape == (2, 3, 60) and torch.isfinite(logits).all()
