"""Transformer-only behaviour beyond the shared contract (tests/test_model_contract.py runs every position scheme
through that): rotary position embeddings and the position options' validation and sizing."""
from __future__ import annotations

import pytest
import torch

from seqbench.common.errors import ConfigError
from seqbench.models.transformer import Rotary, Transformer, explicit_attention

from conftest import build_tiny_model, random_batch


def test_rotary_scores_depend_only_on_the_offset_between_positions():
    torch.manual_seed(0)
    rotary = Rotary(8)
    q, k = torch.randn(1, 1, 1, 8), torch.randn(1, 1, 1, 8)
    score = (rotary(q, 3) * rotary(k, 1)).sum()  # query at 3, key at 1
    for shift in (5, 40, 900):
        torch.testing.assert_close((rotary(q, 3 + shift) * rotary(k, 1 + shift)).sum(), score, atol=1e-4, rtol=1e-4)
    assert not torch.allclose((rotary(q, 4) * rotary(k, 1)).sum(), score)  # a different offset scores differently
    torch.testing.assert_close(rotary(q, 0), q)  # position 0 is the identity
    torch.testing.assert_close(rotary(q, 7).norm(), q.norm())  # a rotation keeps lengths


def test_rope_needs_no_position_table_beyond_max_positions():
    """Rope has no table: a sentence longer than max_positions still encodes and decodes, as incremental steps
    too; a table-based model refuses it with a message naming the key."""
    src, mask, tgt = random_batch(lengths=(20, 12), tgt_len=15)
    rope = build_tiny_model("transformer_rope", max_positions=8)
    full = rope(src, mask, tgt)
    enc = rope.encode(src, mask)
    state = rope.init_state(enc)
    for t in range(tgt.size(1)):
        step = rope.decode(tgt[:, t:t + 1], enc, state)
        torch.testing.assert_close(step, full[:, t:t + 1], atol=1e-5, rtol=1e-5)
    sinusoidal = build_tiny_model("transformer", max_positions=8)
    with pytest.raises(ValueError, match="exceeds model.max_positions=8"):
        sinusoidal(src, mask, tgt)


@pytest.mark.parametrize("cfg, message", [
    ({"positions": "alibi"}, "model.positions='alibi': must be one of sinusoidal, learned, rope"),
    ({"positions": "rope", "d_model": 36, "n_heads": 4}, "model.n_heads=4: rope rotates pairs"),
    ({"positions": "sinusoidal", "d_model": 33, "n_heads": 3}, "sinusoidal positions need an even d_model"),
])
def test_position_options_are_validated_in_one_line(cfg, message):
    with pytest.raises(ConfigError, match=message):
        Transformer.validate_config(cfg)
    Transformer.validate_config({**cfg, "positions": "learned"})  # a table of any width is fine


@pytest.mark.parametrize("heads, positions, step", [(4, "sinusoidal", 4), (4, "learned", 4), (4, "rope", 8),
                                                    (3, "sinusoidal", 6), (3, "learned", 3), (3, "rope", 6)])
def test_param_budget_sizing_keeps_widths_valid(heads, positions, step):
    """Sizing moves d_model in steps that keep every head whole, sin/cos pairs whole and rope's pairs within heads."""
    assert Transformer.width({"d_model": 96, "n_heads": heads, "positions": positions}) == (96, step)


def test_rope_angles_grown_while_decoding_still_train():
    """The rotary angle table is cached and grows with the longest sentence seen; grown under inference mode (a
    validation of longer sentences than training's), it must not turn into an inference tensor that training's
    backward pass refuses."""
    model = build_tiny_model("transformer_rope").train()
    src, mask, tgt = random_batch(lengths=(300, 12), tgt_len=5)  # past the first table of 256 positions
    with torch.inference_mode():
        expected = model(src, mask, tgt)
    rotary = model.encoder_layers[0].attn.rotary
    assert rotary._table[0].size(0) >= 300 and not rotary._table[0].is_inference()
    model(src, mask, tgt).sum().backward()
    torch.testing.assert_close(model(src, mask, tgt).detach(), expected)


def test_the_key_value_cache_grows_and_reorders_past_its_first_capacity():
    """Incremental decoding under no_grad (as search runs it) equals full decoding over 40 positions, past the
    cache's first 32-position buffers, with beam-style reorderings before and after the growth."""
    from seqbench.models.transformer import KVCache

    model = build_tiny_model("transformer").eval()
    src, mask, tgt = random_batch(lengths=(6, 6, 6), tgt_len=40)
    src, mask = src[[0, 0, 0]], mask[[0, 0, 0]]  # reordering never crosses sentences: one source, three prefixes
    with torch.no_grad():
        enc = model.encode(src, mask)
        full = model.decode(tgt, enc)
        state, rows = model.init_state(enc), torch.arange(3)
        for t in range(40):
            if t == 35:
                rows = rows[[2, 0, 1]]
                model.reorder_state(state, torch.tensor([2, 0, 1]))
            if t == 20:
                rows = rows[[1, 1, 0]]
                model.reorder_state(state, torch.tensor([1, 1, 0]))
            step = model.decode(tgt[rows, t:t + 1], enc, state)
            torch.testing.assert_close(step, full[rows, t:t + 1], atol=1e-5, rtol=1e-5)
    assert all(isinstance(c, KVCache) and c.length == 40 and c.k.size(2) == 64 for c in state["self_kv"])


@pytest.mark.parametrize("masked", [False, True])
def test_explicit_attention_equals_sdpa_on_a_cache_prefix(masked):
    """CPU decoding's two-bmm attention gives SDPA's output, on keys read in place from a longer buffer (a cache's
    filled prefix), with and without a padding mask; its weights are distributions that are zero where masked."""
    g = torch.Generator().manual_seed(0)
    q = torch.randn(3, 2, 4, 8, generator=g)
    k_buffer, v_buffer = torch.randn(3, 2, 16, 8, generator=g), torch.randn(3, 2, 16, 8, generator=g)
    k, v = k_buffer[:, :, :5], v_buffer[:, :, :5]  # strided views, as KVCache.append returns them
    mask = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0], [1, 0, 0, 0, 0]], dtype=torch.bool)[:, None, None, :] \
        if masked else None
    y, weights = explicit_attention(q, k, v, mask)
    expected = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    torch.testing.assert_close(y, expected, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(weights.sum(-1), torch.ones(3, 2, 4))
    if masked:
        assert (weights.masked_select(~mask.expand_as(weights)) == 0).all()
