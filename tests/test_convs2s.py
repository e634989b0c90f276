"""ConvS2S-specific checks (the generic contract is in test_model_contract.py): rolling incremental state, causality,
multi-step attention over z + e, weight norm and init, gradient scaling, FLOPs, and the Hydra presets."""
from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils import parametrize

from seqbench.common.tokens import PAD_ID
from seqbench.models.convs2s import ConvS2S

from conftest import SRC_VOCAB, TGT_VOCAB, build_tiny_model, compose_train, random_batch


def _batch(lengths=(7, 4, 5), tgt_len=8, seed=0):
    return random_batch(lengths, tgt_len, seed)


@pytest.mark.parametrize("case", ["cnn", "cnn_kernel5"])
def test_incremental_state_is_a_rolling_buffer_of_k_minus_1_inputs(case):
    model = build_tiny_model(case)
    src, mask, tgt = _batch()
    enc = model.encode(src, mask)
    inputs = []  # each decoder layer's input over the full sequence, [B,T,Cin]
    hooks = [layer.register_forward_pre_hook(lambda _, args: inputs.append(args[0])) for layer in model.layers]
    model.decode(tgt, enc)
    for h in hooks:
        h.remove()
    state = model.init_state(enc)
    for t in range(tgt.size(1)):
        model.decode(tgt[:, t:t + 1], enc, state)
        assert state["step"] == t + 1
        for layer, x, history in zip(model.layers, inputs, state["history"]):
            k = layer.kernel_width
            assert history.shape == (3, k - 1, layer.conv.in_channels)  # constant size, whatever the step
            expected = F.pad(x, (0, 0, k - 1, 0))[:, t + 1:t + k]  # the last k-1 inputs, zeros before the start
            torch.testing.assert_close(history, expected, atol=1e-5, rtol=1e-5)


def test_decoder_is_causal_with_kernel_5():
    """Every position j: changing tgt[j] leaves all earlier logits untouched and changes logits at j."""
    model = build_tiny_model("cnn_kernel5")
    assert {layer.kernel_width for layer in model.layers} >= {5}
    src, mask, tgt = _batch(tgt_len=10)
    reference = model(src, mask, tgt)
    for j in range(tgt.size(1)):
        changed = tgt.clone()
        changed[:, j] = (changed[:, j] + 7) % (TGT_VOCAB - 4) + 4
        logits = model(src, mask, changed)
        torch.testing.assert_close(logits[:, :j], reference[:, :j], atol=1e-6, rtol=1e-6)
        assert not torch.allclose(logits[:, j], reference[:, j], atol=1e-5)


def test_one_layer_matches_hand_computation():
    """Encoder and a one-layer decoder written out from the paper's equations: keys z, values z + e."""
    torch.manual_seed(0)
    model = ConvS2S(SRC_VOCAB, TGT_VOCAB, embed_dim=8, encoder_layers=[[8, 3]], decoder_layers=[[8, 3]],
                    out_embed_dim=8, dropout=0.0).eval()
    src, mask, tgt = _batch(lengths=(5, 3), tgt_len=4)
    S, T, keep = src.size(1), tgt.size(1), mask[..., None].float()
    r = math.sqrt(0.5)

    enc = model.encoder
    e = (enc.embed.tokens(src) + enc.embed.positions.weight[:S]) * keep
    x = enc.fc_in(e)
    y = F.conv1d((x * keep).transpose(1, 2), enc.convs[0].weight, enc.convs[0].bias, padding=1)
    x = (F.glu(y, dim=1).transpose(1, 2) + x) * r
    z = enc.fc_out(x) * keep

    layer = model.layers[0]
    g = model.tgt_embed.tokens(tgt) + model.tgt_embed.positions.weight[:T]
    x = model.fc_in(g)
    y = F.conv1d(x.transpose(1, 2), layer.conv.weight, layer.conv.bias, padding=2)[..., :T]  # causal
    h = F.glu(y, dim=1).transpose(1, 2)
    d = (layer.attn_in(h) + g) * r
    scores = torch.einsum("bte,bse->bts", d, z).masked_fill(~mask[:, None], float("-inf"))
    a = scores.softmax(-1)
    m = mask.sum(1).float()[:, None, None]
    c = torch.einsum("bts,bse->bte", a, (z + e) * r) * m * torch.sqrt(1 / m)
    h = (h + layer.attn_out(c)) * r
    x = (h + x) * r
    expected = model.output(model.fc_out(x))

    logits, attention = model.decode(tgt, model.encode(src, mask), return_attention=True)
    torch.testing.assert_close(attention[:, 0, 0], a, atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(logits, expected, atol=1e-5, rtol=1e-5)


def test_attention_keys_are_z_and_values_are_z_plus_e():
    model = build_tiny_model("cnn")
    src, mask, tgt = _batch()
    enc = model.encode(src, mask)
    torch.testing.assert_close(enc["memory_plus_embed"],
                               (enc["memory"] + model.encoder(src, mask)[1]) * math.sqrt(0.5))
    logits, attention = model.decode(tgt, enc, return_attention=True)
    changed = dict(enc, memory_plus_embed=enc["memory_plus_embed"] + torch.randn_like(enc["memory"]))
    logits2, attention2 = model.decode(tgt, changed, return_attention=True)
    torch.testing.assert_close(attention2[:, 0], attention[:, 0])  # first layer's weights depend on z only
    assert not torch.allclose(logits2, logits)


def test_weight_norm_everywhere_and_paper_init():
    model = ConvS2S(SRC_VOCAB, TGT_VOCAB, embed_dim=256, encoder_layers=[[256, 3]] * 2,
                    decoder_layers=[[256, 3], [512, 3]], out_embed_dim=256, dropout=0.1)
    layers = [m for m in model.modules() if isinstance(m, (nn.Linear, nn.Conv1d))]
    # encoder: 2 convs, fc_in, fc_out; decoder: 2 convs, fc_in, fc_out, 2 x attention in/out, 1 residual proj, output
    assert len(layers) == 4 + 4 + 4 + 1 + 1
    assert all(parametrize.is_parametrized(m, "weight") for m in layers)
    conv = model.encoder.convs[0]
    assert conv.weight.std().item() == pytest.approx(math.sqrt(4 * 0.9 / (3 * 256)), rel=0.05)  # feeds a GLU
    assert model.fc_in.weight.std().item() == pytest.approx(math.sqrt(0.9 / 256), rel=0.05)  # dropped-out input
    assert model.layers[1].residual.weight.std().item() == pytest.approx(math.sqrt(1 / 256), rel=0.05)
    assert model.tgt_embed.tokens.weight[1:].std().item() == pytest.approx(0.1, rel=0.05)
    assert model.tgt_embed.tokens.weight[PAD_ID].abs().max() == 0


def test_encoder_gradient_scaled_by_attention_count():
    model = build_tiny_model("cnn_kernel5")  # three decoder layers -> 1 / 6
    src, mask, _ = _batch()
    z0 = {}

    def leaf(_, __, output):
        z0["z"] = output[0].detach().requires_grad_()
        return z0["z"], output[1]

    model.encoder.register_forward_hook(leaf)
    enc = model.encode(src, mask)
    torch.testing.assert_close(enc["memory"], z0["z"], atol=0, rtol=0)  # identity in the forward pass
    enc["memory"].sum().backward()
    torch.testing.assert_close(z0["z"].grad, torch.full_like(z0["z"], 1 / 6))


def test_flops_per_token_counts_every_weight_once():
    model = build_tiny_model("cnn_kernel5")
    S, T = 11, 7

    def matmul_weights(module):
        return sum(m.weight.numel() for m in module.modules() if isinstance(m, (nn.Linear, nn.Conv1d)))

    decoder = matmul_weights(model) - matmul_weights(model.encoder)
    attention = len(model.layers) * 4 * S * model.embed_dim
    expected = 2 * decoder + attention + 2 * matmul_weights(model.encoder) * S / T
    assert model.flops_per_token(S, T) == pytest.approx(expected)


def _compose(preset: str):
    return compose_train([f"model={preset}"])


@pytest.mark.parametrize("preset", ["cnn", "convs2s_wmt_en_de"])
def test_presets_compose_validate_and_instantiate(preset):
    from seqbench.config.checks import validate
    from seqbench.models.interface import build_model

    cfg = _compose(preset)
    validate(cfg)
    assert cfg.model.name == "cnn"
    torch.manual_seed(0)
    model = build_model(cfg.model, 50, 60).eval()
    assert isinstance(model, ConvS2S)
    src, mask, tgt = _batch(lengths=(5, 3), tgt_len=4)
    src, tgt = src % 50, tgt % 60
    with torch.no_grad():
        assert model(src, mask, tgt).shape == (2, 4, 60)


def test_wmt_preset_size_matches_the_paper():
    """fconv_wmt_en_de: 15 + 15 blocks (9x512, 4x1024, 2x2048 1x1), 768-d embeddings; with a 40k joint BPE vocabulary
    about 210M parameters (~126M outside the embeddings and the output layer). Built on the meta device (no memory)."""
    from seqbench.models.interface import build_model

    cfg = _compose("convs2s_wmt_en_de")
    assert len(cfg.model.encoder_layers) == len(cfg.model.decoder_layers) == 15
    with torch.device("meta"):
        model = build_model(cfg.model, 40000, 40000)
    total = model.num_parameters()
    print(f"convs2s_wmt_en_de parameters with a 40k vocabulary: {total:,}")
    assert 190e6 < total < 230e6
