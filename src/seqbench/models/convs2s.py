"""Convolutional sequence-to-sequence learning (ConvS2S; Gehring et al. 2017, "Convolutional Sequence to Sequence
Learning", arXiv:1705.03122), written from scratch.

Both stacks are 1-D convolutions with gated linear units (GLU) and residual connections; the decoder's are causal and
every decoder layer attends over the source on its own ("multi-step attention"):

    d_i = (W_d h_i + b_d + g_i) * sqrt(.5)            g: target embedding (token + position)
    a_ij = softmax_j(d_i . z_j)                        z: encoder output (keys)
    c_i = sum_j a_ij (z_j + e_j) * sqrt(.5) * m sqrt(1/m)   e: source embedding, m real source tokens (values)
    h_i <- (h_i + W_c c_i) * sqrt(.5)

The sqrt(.5) on the conditional input and on (z + e) follows the authors' fairseq code (fconv.py); they keep the
variance of a sum of two unit-variance terms at one, like the residual scaling of the paper (section 3.5).
Weights are weight-normalised and initialised as in section 3.5 of the paper. Incremental decoding keeps, per decoder
layer, only the last kernel_width - 1 layer inputs: a rolling buffer, so a step costs the same at any position.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils.parametrizations import weight_norm

from seqbench.common.specs import Spec, integer, is_int, is_list
from seqbench.common.tokens import PAD_ID
from seqbench.models.interface import Seq2Seq, copy_config, depth_tag, scaled
from seqbench.models.linear import Linear

SQRT_HALF = math.sqrt(0.5)


def linear(in_features: int, out_features: int, input_dropout: float = 0.0) -> nn.Module:
    """Weight-normalised linear layer, W ~ N(0, sqrt(p / fan_in)) with p the probability of keeping its inputs.

    The paper scales the init by the retain probability only for layers whose input goes through dropout, so the
    variance of the output is the same with and without dropout; layers fed undropped activations get p = 1.
    """
    layer = Linear(in_features, out_features)
    nn.init.normal_(layer.weight, std=math.sqrt((1.0 - input_dropout) / in_features))
    nn.init.zeros_(layer.bias)
    return weight_norm(layer)  # per output unit: w = g * v / |v|


def glu_conv(in_channels: int, out_channels: int, kernel_width: int, input_dropout: float) -> nn.Module:
    """Weight-normalised Conv1d to 2 * out_channels (GLU halves it); N(0, sqrt(4p / fan_in)) since the GLU gate
    roughly quarters the variance. No padding: callers pad (centred in the encoder, on the left in the decoder)."""
    conv = nn.Conv1d(in_channels, 2 * out_channels, kernel_width)
    nn.init.normal_(conv.weight, std=math.sqrt(4.0 * (1.0 - input_dropout) / (kernel_width * in_channels)))
    nn.init.zeros_(conv.bias)
    return weight_norm(conv)  # weight [2C, Cin, K], normalised per output channel (dim 0)


def residual_projection(in_channels: int, out_channels: int) -> nn.Module:
    """The residual path needs a projection only where a block changes the width."""
    return linear(in_channels, out_channels) if in_channels != out_channels else nn.Identity()


def _layer_list(value) -> bool:
    return is_list(value) and len(value) > 0 and all(
        is_list(layer) and len(layer) == 2 and all(is_int(n) and n > 0 for n in layer) for layer in value)


LAYERS = Spec(_layer_list, "a non-empty list of [channels, kernel_width] pairs of positive integers")


def parse_layers(layers: Sequence[Sequence[int]]) -> list[tuple[int, int]]:
    """[[channels, kernel_width], ...] from YAML (lists or ListConfig) -> list of int pairs."""
    return [(int(channels), int(kernel)) for channels, kernel in layers]


class Embedding(nn.Module):
    """Token + learned position embeddings, N(0, 0.1) as in the paper, then dropout. Positions count from 0 at the
    first token; pads sit after the last real token (right padding) and are masked by the encoder."""

    def __init__(self, vocab_size: int, dim: int, max_positions: int, dropout: float):
        super().__init__()
        self.tokens = nn.Embedding(vocab_size, dim, padding_idx=PAD_ID)
        self.positions = nn.Embedding(max_positions, dim)
        nn.init.normal_(self.tokens.weight, std=0.1)
        nn.init.normal_(self.positions.weight, std=0.1)
        with torch.no_grad():
            self.tokens.weight[PAD_ID].zero_()
        self.dropout = nn.Dropout(dropout)

    def forward(self, tokens: torch.Tensor, offset: int = 0) -> torch.Tensor:
        # tokens [B,T] -> [B,T,E]; offset = position of tokens[:, 0] (the step counter when decoding incrementally)
        end = offset + tokens.size(1)
        if end > self.positions.num_embeddings:
            raise ValueError(f"sequence of {end} tokens exceeds model.max_positions={self.positions.num_embeddings}")
        positions = torch.arange(offset, end, device=tokens.device)
        return self.dropout(self.tokens(tokens) + self.positions(positions))


class Encoder(nn.Module):
    def __init__(self, vocab_size: int, embed_dim: int, layers: list[tuple[int, int]], max_positions: int,
                 dropout: float):
        super().__init__()
        self.embed = Embedding(vocab_size, embed_dim, max_positions, dropout)
        widths = [layers[0][0]] + [c for c, _ in layers]  # input width of every block, then the output width
        self.fc_in = linear(embed_dim, widths[0], dropout)
        self.convs = nn.ModuleList(glu_conv(widths[i], c, k, dropout) for i, (c, k) in enumerate(layers))
        self.residuals = nn.ModuleList(residual_projection(widths[i], c) for i, (c, _) in enumerate(layers))
        self.fc_out = linear(widths[-1], embed_dim)
        self.dropout = nn.Dropout(dropout)

    def forward(self, src: torch.Tensor, src_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        pad = ~src_mask[..., None]  # [B,S,1]
        e = self.embed(src).masked_fill(pad, 0.0)  # [B,S,E]
        x = self.fc_in(e)  # [B,S,C0]
        for conv, residual in zip(self.convs, self.residuals):
            r = residual(x)
            # Zeroing pads before every conv makes them indistinguishable from the conv's zero border padding, so
            # a sentence gets the same encoding alone as inside a padded batch.
            x = self.dropout(x.masked_fill(pad, 0.0)).transpose(1, 2)  # [B,Cin,S]
            k = conv.kernel_size[0]
            x = F.pad(x, ((k - 1) // 2, k // 2))  # "same" output length; even widths lean right, like fairseq
            x = F.glu(conv(x), dim=1).transpose(1, 2)  # [B,S,C]
            x = (x + r) * SQRT_HALF
        z = self.fc_out(x).masked_fill(pad, 0.0)  # [B,S,E]
        return z, e


class DecoderLayer(nn.Module):
    """Causal GLU convolution, then its own attention over the source, inside a residual block."""

    def __init__(self, in_channels: int, channels: int, kernel_width: int, embed_dim: int, dropout: float):
        super().__init__()
        self.kernel_width = kernel_width
        self.conv = glu_conv(in_channels, channels, kernel_width, dropout)
        self.residual = residual_projection(in_channels, channels)
        self.attn_in = linear(channels, embed_dim)  # W_d: decoder state -> embedding space of z
        self.attn_out = linear(embed_dim, channels)  # conditional input c -> conv width
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor, g: torch.Tensor, encoder_out: dict[str, torch.Tensor],
                history: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """x [B,T,Cin] layer input, g [B,T,E] target embeddings. Full sequence: history None, the conv input is
        left-padded with k-1 zeros (causal). Incremental: history [B,k-1,Cin] holds the previous k-1 inputs.
        Returns the output [B,T,C], attention [B,T,S] and the last k-1 conv inputs (the next step's history).
        Incremental with T>1 works the same way: the window is the history followed by the T new inputs."""
        r = self.residual(x)
        x = self.dropout(x)
        k = self.kernel_width
        window = F.pad(x, (0, 0, k - 1, 0)) if history is None else torch.cat([history, x], dim=1)  # [B,T+k-1,Cin]
        h = F.glu(self.conv(window.transpose(1, 2)), dim=1).transpose(1, 2)  # [B,T,C]

        mask = encoder_out["mask"]  # [B,S]
        d = (self.attn_in(h) + g) * SQRT_HALF  # [B,T,E]
        scores = d @ encoder_out["memory"].transpose(1, 2)  # [B,T,S]
        attention = scores.float().masked_fill(~mask[:, None, :], float("-inf")).softmax(-1).type_as(scores)
        c = attention @ encoder_out["memory_plus_embed"]  # [B,T,E]
        # A weighted mean of m vectors has ~1/m of their variance; m * sqrt(1/m) = sqrt(m) undoes it for uniform a.
        c = c * mask.sum(1).to(c.dtype).sqrt()[:, None, None]
        h = (h + self.attn_out(c)) * SQRT_HALF
        return (h + r) * SQRT_HALF, attention, window[:, window.size(1) - (k - 1):]


class ConvS2S(Seq2Seq):
    def __init__(self, src_vocab_size: int, tgt_vocab_size: int, embed_dim: int = 256,
                 encoder_layers: Sequence[Sequence[int]] = ((256, 3),) * 4,
                 decoder_layers: Sequence[Sequence[int]] = ((256, 3),) * 4, out_embed_dim: int = 256,
                 dropout: float = 0.1, max_positions: int = 1024):
        super().__init__()
        self.src_vocab_size, self.tgt_vocab_size = src_vocab_size, tgt_vocab_size
        self.embed_dim, self.out_embed_dim = embed_dim, out_embed_dim
        # one line for a bad layer list, not an unpacking error in parse_layers
        self.validate_config({"encoder_layers": encoder_layers, "decoder_layers": decoder_layers})
        self.encoder_spec, self.decoder_spec = parse_layers(encoder_layers), parse_layers(decoder_layers)
        self.encoder = Encoder(src_vocab_size, embed_dim, self.encoder_spec, max_positions, dropout)

        self.tgt_embed = Embedding(tgt_vocab_size, embed_dim, max_positions, dropout)
        widths = [self.decoder_spec[0][0]] + [c for c, _ in self.decoder_spec]
        self.fc_in = linear(embed_dim, widths[0], dropout)
        self.layers = nn.ModuleList(DecoderLayer(widths[i], c, k, embed_dim, dropout)
                                    for i, (c, k) in enumerate(self.decoder_spec))
        self.fc_out = linear(widths[-1], out_embed_dim)
        self.dropout = nn.Dropout(dropout)
        self.output = linear(out_embed_dim, tgt_vocab_size, dropout)

    def encode(self, src: torch.Tensor, src_mask: torch.Tensor) -> dict[str, torch.Tensor]:
        z, e = self.encoder(src, src_mask)
        # The paper scales the encoder's gradients down by the number of attention mechanisms that read it; fairseq
        # uses 1 / (2 L) since every layer reads z twice (keys, and values z + e). Identity in the forward pass:
        # z - z.detach() is exactly zero, so only the gradient is scaled. Embeddings e are excluded, as in the paper.
        scale = 1.0 / (2 * len(self.layers))
        z = z.detach() + (z - z.detach()) * scale
        return {"memory": z, "memory_plus_embed": (z + e) * SQRT_HALF, "mask": src_mask}

    def decode(self, tgt_in: torch.Tensor, encoder_out: dict, state: dict | None = None,
               return_attention: bool = False) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor | None]:
        history = None if state is None else state["history"]  # each layer's last k-1 inputs [B,k-1,Cin]
        g = self.tgt_embed(tgt_in, 0 if state is None else state["step"])  # [B,T,E], also every layer's g_i
        x = self.fc_in(g)
        attention = []
        for i, layer in enumerate(self.layers):
            x, a, h = layer(x, g, encoder_out, None if history is None else history[i])
            attention.append(a)  # [B,T,S]: computed anyway (it feeds the layer's output)
            if state is not None:
                history[i] = h
        if state is not None:
            state["step"] += tgt_in.size(1)
        logits = self.output(self.dropout(self.fc_out(x)))  # [B,T,V]
        return (logits, torch.stack(attention, dim=1)[:, :, None]) if return_attention else logits  # [B,L,1,T,S]

    def init_state(self, encoder_out: dict) -> dict:
        # Zeros stand for the causal left padding before the first token, as in the full-sequence convolution.
        memory = encoder_out["memory"]
        history = [memory.new_zeros(memory.size(0), layer.kernel_width - 1, layer.conv.in_channels)
                   for layer in self.layers]  # [B,k-1,Cin] per layer
        return {"step": 0, "history": history}

    # reorder_state: the generic index_select(0) over the history buffers is exactly right (step is an int).

    config_specs = {**Seq2Seq.config_specs, "embed_dim": integer(1), "out_embed_dim": integer(1),
                    "max_positions": integer(1), "encoder_layers": LAYERS, "decoder_layers": LAYERS}

    @classmethod
    def width(cls, cfg: Mapping) -> tuple[int, int]:
        return cls.config_value(cfg, "encoder_layers")[0][0], 1

    @classmethod
    def with_width(cls, cfg: Mapping, width: int) -> dict:
        """The first encoder block's channels = width; every block's channels, embed_dim and out_embed_dim keep
        their ratios to it (kernels and depth stay)."""
        out = copy_config(cfg)
        factor = width / cls.config_value(cfg, "encoder_layers")[0][0]
        for side in ("encoder_layers", "decoder_layers"):
            out[side] = [[scaled(channels, factor), kernel] for channels, kernel in cls.config_value(cfg, side)]
        for key in ("embed_dim", "out_embed_dim"):
            out[key] = scaled(cls.config_value(cfg, key), factor)
        return out

    @classmethod
    def shape_tags(cls, cfg: Mapping) -> list[str]:
        encoder, decoder = cls.config_value(cfg, "encoder_layers"), cls.config_value(cfg, "decoder_layers")
        channels, kernel = encoder[0]
        return [depth_tag(len(encoder), len(decoder)), f"k{kernel}", f"c{channels}"]

    def flops_per_token(self, src_len: int, tgt_len: int) -> float:
        """Forward matmul FLOPs per target token (2 per multiply-add): convolutions, projections, attention scores
        and mixing, output layer; the encoder's cost per source token is amortised as src_len / tgt_len."""
        e = self.embed_dim

        def stack(spec: list[tuple[int, int]], out_dim: int) -> float:
            """fc_in, convolutions (+ residual projections), fc_out."""
            widths = [spec[0][0]] + [c for c, _ in spec]
            flops = 2 * e * widths[0] + 2 * widths[-1] * out_dim
            for cin, (c, k) in zip(widths, spec):
                flops += 2 * k * cin * 2 * c + (2 * cin * c if cin != c else 0)
            return flops

        attention = sum(2 * c * e + 2 * e * c + 4 * src_len * e for c, _ in self.decoder_spec)
        output = 2 * self.out_embed_dim * self.tgt_vocab_size
        decoder = stack(self.decoder_spec, self.out_embed_dim) + attention + output
        return decoder + stack(self.encoder_spec, e) * src_len / max(tgt_len, 1)
