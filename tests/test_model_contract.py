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
    assert model.decode(tgt[:, :1], enc, state).shape == (3, 1, TGT_VOCAB)


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
    """One token at a time (as search feeds it) or several at once, a state continues where it stopped and gives
    the teacher-forced logits of the same positions."""
    model = build_tiny_model(case)
    src, mask, tgt = _batch(tgt_len=8)
    enc = model.encode(src, mask)
    full = model.decode(tgt, enc)
    for chunks in ([1] * 8, [3, 1, 4], [8]):
        state, start = model.init_state(enc), 0
        for n in chunks:
            logits = model.decode(tgt[:, start:start + n], enc, state)
            torch.testing.assert_close(logits, full[:, start:start + n], atol=1e-5, rtol=1e-5)
            start += n


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
        model.decode(tgt[:, t:t + 1], enc, state)
    model.reorder_state(state, order)
    for t in range(3, 6):
        step = model.decode(tgt[order, t:t + 1], enc, state)
        torch.testing.assert_close(step, full[order, t:t + 1], atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("case", CASES)
def test_sentences_leave_the_batch_mid_sentence(case):
    """Search drops finished sentences: fewer state rows (each from its own sentence) and the encoder output of the
    rows kept; the sentences left decode on exactly as before."""
    model = build_tiny_model(case)
    src, mask, tgt = _batch(lengths=(7, 4, 5, 6), tgt_len=6)
    enc = model.encode(src, mask)
    full = model.decode(tgt, enc)
    state = model.init_state(enc)
    model.decode(tgt[:, :2], enc, state)
    keep = torch.tensor([3, 1])
    _decodes_on_after_leaving(model, enc, state, keep, keep, tgt, full)


def _decodes_on_after_leaving(model, enc, state, sentences, rows, tgt, expected, start=2):
    """Drops all but `sentences` (whose decoder rows are `rows`) after `start` tokens, then checks every further
    step's logits against `expected` [rows of the full batch, T, V]."""
    enc = model.reorder_encoder_out(enc, sentences)
    model.reorder_state(state, rows)
    for t in range(start, tgt.size(1)):
        step = model.decode(tgt[rows, t:t + 1], enc, state)
        torch.testing.assert_close(step, expected[rows, t:t + 1], atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("case", CASES)
def test_expanded_rows_decode_their_own_sentence(case):
    """After expand_encoder_out(k), row b*k+j decodes against sentence b, whatever the other rows hold; when
    sentences leave (reorder_encoder_out of the kept sentences), their rows decode on as before. Each row's target
    differs, so a row reading another sentence's or hypothesis's data changes its logits."""
    model = build_tiny_model(case)
    src, mask, _ = _batch(lengths=(7, 4, 5))
    k = 3
    tgt = random_batch([4] * 9, tgt_len=6, seed=1)[2]  # [B*k,T]: a different target per row
    enc = model.encode(src, mask)
    rows = torch.arange(3).repeat_interleave(k)
    expected = model.decode(tgt, model.encode(src[rows], mask[rows]))  # every row with its own copy
    expanded = model.expand_encoder_out(enc, k)
    torch.testing.assert_close(model.decode(tgt, expanded), expected, atol=1e-5, rtol=1e-5)
    _, attention = model.decode(tgt, expanded, return_attention=True)
    _, expected_attention = model.decode(tgt, model.encode(src[rows], mask[rows]), return_attention=True)
    if attention is not None:
        torch.testing.assert_close(attention, expected_attention, atol=1e-5, rtol=1e-5)
    state = model.init_state(expanded)
    model.decode(tgt[:, :2], expanded, state)
    keep = torch.tensor([2, 0])
    _decodes_on_after_leaving(model, expanded, state, keep, (keep[:, None] * k + torch.arange(k)).view(-1), tgt,
                              expected)


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


@pytest.mark.parametrize("case", CASES)
def test_incremental_attention_is_asked_for_only_when_wanted(case):
    """Search never asks, so the Transformer stays on fused attention; asking, with a state as without, changes
    nothing but adding the maps, and a state's maps are the teacher-forced ones at the same positions."""
    model = build_tiny_model(case)
    src, mask, tgt = _batch()
    enc = model.encode(src, mask)
    _, full_attention = model.decode(tgt, enc, return_attention=True)
    plain, asked = model.init_state(enc), model.init_state(enc)
    for t in range(tgt.size(1)):
        logits = model.decode(tgt[:, t:t + 1], enc, plain)
        assert isinstance(logits, torch.Tensor)
        logits_asked, attention = model.decode(tgt[:, t:t + 1], enc, asked, return_attention=True)
        torch.testing.assert_close(logits, logits_asked, atol=1e-5, rtol=1e-5)
        if full_attention is None:
            assert attention is None
        else:
            torch.testing.assert_close(attention, full_attention[:, :, :, t:t + 1], atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("case", CASES)
def test_onednn_inference_decodes_as_f_linear(case, monkeypatch):
    """Every linear layer through oneDNN (its size threshold lowered to 0) gives the logits and hypotheses of
    F.linear (seqbench.models.linear: float32 inference on the CPU takes oneDNN above the threshold)."""
    from seqbench.models import linear as linear_module

    if not linear_module.ENABLED:
        pytest.skip("no oneDNN linear in this torch build")
    model = build_tiny_model(case).eval()
    src, mask, tgt = _batch(lengths=(7, 3, 5))
    cfg = DecodingConfig(beam_size=3, max_len_a=1.0, max_len_b=4)
    with torch.no_grad():
        monkeypatch.setattr(linear_module, "ENABLED", False)
        expected, hypotheses = model(src, mask, tgt), beam_search(model, src, mask, cfg)
        monkeypatch.setattr(linear_module, "ENABLED", True)
        monkeypatch.setattr(linear_module, "MIN_MULTIPLY_ADDS", 0)
        calls = []
        uses = linear_module.uses_onednn
        monkeypatch.setattr(linear_module, "uses_onednn", lambda x, w: calls.append(uses(x, w)) or calls[-1])
        torch.testing.assert_close(model(src, mask, tgt), expected, atol=1e-5, rtol=1e-5)
        assert beam_search(model, src, mask, cfg) == hypotheses
    assert calls and all(calls), "every linear layer should have gone through oneDNN"
