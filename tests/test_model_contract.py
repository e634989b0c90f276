"""The contract every architecture must meet (seqbench.models.interface), run over every model in MODEL_CASES."""
from __future__ import annotations

import pytest
import torch

from seqbench.common.tokens import EOS_ID
from seqbench.decoding.search import DecodingConfig, beam_search, greedy_search

from conftest import MODEL_CASES, TGT_VOCAB, build_tiny_model, random_batch

CASES = sorted(MODEL_CASES)


def _batch(lengths=(7, 4, 5), tgt_len=6, seed=0):
    return random_batch(lengths, tgt_len, seed)


@pytest.mark.parametrize("case", CASES)
def test_shapes(case):
    model = build_tiny_model(case)
    src, mask, tgt = _batch()
    enc = model.encode(src, mask)
    assert enc["mask"].shape == mask.shape
    logits = model.decode(tgt, enc)
    assert logits.shape == (3, 6, TGT_VOCAB)
    state = model.init_state(enc)
    step_logits, state, _ = model.decode_step(tgt[:, 0], enc, state)
    assert step_logits.shape == (3, TGT_VOCAB)


@pytest.mark.parametrize("case", CASES)
def test_padding_invariance(case):
    """A sentence's logits are the same alone and inside a padded batch (source and target padding)."""
    model = build_tiny_model(case)
    src, mask, tgt = _batch(lengths=(9, 4, 6))
    batch_logits = model(src, mask, tgt)
    for i in range(3):
        n = int(mask[i].sum())
        alone = model(src[i:i + 1, :n], mask[i:i + 1, :n], tgt[i:i + 1])
        torch.testing.assert_close(batch_logits[i:i + 1], alone, atol=1e-5, rtol=1e-5)
    # target padding: a shorter target gives the same logits on its prefix
    short = model(src, mask, tgt[:, :3])
    torch.testing.assert_close(short, batch_logits[:, :3], atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("case", CASES)
def test_causality(case):
    """Changing target token j never changes logits at positions < j."""
    model = build_tiny_model(case)
    src, mask, tgt = _batch(tgt_len=8)
    reference = model(src, mask, tgt)
    for j in (1, 4, 7):
        changed = tgt.clone()
        changed[:, j] = (changed[:, j] + 7) % (TGT_VOCAB - 4) + 4
        logits = model(src, mask, changed)
        torch.testing.assert_close(logits[:, :j], reference[:, :j], atol=1e-5, rtol=1e-5)
        assert not torch.allclose(logits[:, j:], reference[:, j:], atol=1e-5), "position j should see token j"


@pytest.mark.parametrize("case", CASES)
def test_incremental_equals_full(case):
    model = build_tiny_model(case)
    src, mask, tgt = _batch(tgt_len=8)
    enc = model.encode(src, mask)
    full = model.decode(tgt, enc)
    state = model.init_state(enc)
    for t in range(tgt.size(1)):
        step, state, _ = model.decode_step(tgt[:, t], enc, state)
        torch.testing.assert_close(step, full[:, t], atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("case", CASES)
def test_incremental_survives_reordering(case):
    """Reordering the state mid-sentence gives the logits of the reordered sentences (what beam search relies on)."""
    model = build_tiny_model(case)
    src, mask, tgt = _batch(lengths=(5, 5, 5), tgt_len=6)
    src = src[[0, 0, 0]]  # reordering never crosses sentences: use one source sentence, three target prefixes
    mask = mask[[0, 0, 0]]
    enc = model.encode(src, mask)
    full = model.decode(tgt, enc)
    order = torch.tensor([2, 0, 1])
    state = model.init_state(enc)
    for t in range(3):
        _, state, _ = model.decode_step(tgt[:, t], enc, state)
    state = model.reorder_state(state, order)
    for t in range(3, 6):
        step, state, _ = model.decode_step(tgt[order, t], enc, state)
        torch.testing.assert_close(step, full[order, t], atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("case", CASES)
def test_beam_one_equals_greedy(case):
    model = build_tiny_model(case)
    src, mask, _ = _batch(lengths=(7, 3, 5, 6))
    cfg = DecodingConfig(beam_size=1, max_len_a=1.0, max_len_b=5)
    assert beam_search(model, src, mask, cfg) == greedy_search(model, src, mask, cfg)


@pytest.mark.parametrize("case", CASES)
def test_beam_search_batched_equals_alone(case):
    model = build_tiny_model(case)
    src, mask, _ = _batch(lengths=(7, 3, 5))
    cfg = DecodingConfig(beam_size=3, max_len_a=1.0, max_len_b=4)
    batched = beam_search(model, src, mask, cfg)
    for i in range(3):
        n = int(mask[i].sum())
        assert beam_search(model, src[i:i + 1, :n], mask[i:i + 1, :n], cfg) == batched[i:i + 1]
    assert all(len(h) <= int(mask[i].sum()) + 4 and EOS_ID not in h for i, h in enumerate(batched))


@pytest.mark.parametrize("case", CASES)
def test_attention_weights_are_distributions(case):
    model = build_tiny_model(case)
    src, mask, tgt = _batch(lengths=(7, 3, 5))
    enc = model.encode(src, mask)
    logits, attention = model.decode(tgt, enc, return_attention=True)
    if attention is None:
        pytest.skip("architecture without attention")
    assert attention.dim() == 5 and attention.shape[0] == 3 and attention.shape[3:] == (6, 7)  # [B,L,H,T,S]
    assert (attention >= 0).all()
    pad = ~mask[:, None, None, None, :].expand_as(attention)
    assert attention[pad].abs().max() == 0
    torch.testing.assert_close(attention.sum(-1), torch.ones_like(attention.sum(-1)), atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(logits, model.decode(tgt, enc), atol=1e-5, rtol=1e-5)
    _, _, step_attention = model.decode_step(tgt[:, 0], enc, model.init_state(enc), need_attention=True)
    torch.testing.assert_close(step_attention, attention[:, :, :, 0], atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("case", CASES)
def test_decode_step_returns_attention_only_when_asked(case):
    """Search never asks, so the Transformer stays on fused attention; asking changes nothing but the third output."""
    model = build_tiny_model(case)
    src, mask, tgt = _batch()
    enc = model.encode(src, mask)
    plain, asked = model.init_state(enc), model.init_state(enc)
    for t in range(tgt.size(1)):
        logits, plain, none = model.decode_step(tgt[:, t], enc, plain)
        logits_asked, asked, attention = model.decode_step(tgt[:, t], enc, asked, need_attention=True)
        assert none is None
        torch.testing.assert_close(logits, logits_asked, atol=1e-5, rtol=1e-5)
        if model.decode(tgt, enc, return_attention=True)[1] is not None:
            assert attention.dim() == 4 and attention.shape[0] == 3 and attention.shape[-1] == src.size(1)
