"""The Transformer of "Attention Is All You Need" (Vaswani et al. 2017), written from scratch.

Attention goes through F.scaled_dot_product_attention (fused kernels on GPU); explicit softmax weights are computed
only when a caller asks for them (visualisation). The cross-attention keys/values are computed once per sentence, in
`encode`; incremental decoding caches each layer's self-attention keys and values in preallocated buffers (KVCache).

Positions (`positions`): "sinusoidal" (the paper's fixed table, added to the embeddings), "learned" (a trained
table, as in ConvS2S and BERT; rows past the longest training sentence stay at their random initialisation), or
"rope" (rotary position embeddings, Su et al. 2021: queries and keys of every self-attention are rotated by their
position, so attention scores depend on relative offsets and no table bounds the length; cross-attention compares
target with source positions, which share no axis, and stays position-free as in relative-position encoder-decoders).
"""
from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping

import torch
import torch.nn.functional as F
from torch import nn

from seqbench.common.errors import ConfigError
from seqbench.common.specs import integer, one_of
from seqbench.common.tokens import PAD_ID
from seqbench.models.interface import Seq2Seq, depth_tag
from seqbench.models.linear import Linear


def sinusoidal_table(max_positions: int, d_model: int) -> torch.Tensor:
    position = torch.arange(max_positions, dtype=torch.float32)[:, None]
    inv_freq = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float32) * (-math.log(10000.0) / d_model))
    table = torch.zeros(max_positions, d_model)
    table[:, 0::2] = torch.sin(position * inv_freq)
    table[:, 1::2] = torch.cos(position * inv_freq)
    return table  # [P, D]


POSITIONS = ("sinusoidal", "learned", "rope")


class Embedding(nn.Module):
    """Token embedding scaled by sqrt(d_model), plus sinusoidal or learned positions (none for rope), then dropout."""

    def __init__(self, vocab_size: int, d_model: int, max_positions: int, positions: str, dropout: float):
        super().__init__()
        self.tokens = nn.Embedding(vocab_size, d_model, padding_idx=PAD_ID)
        nn.init.normal_(self.tokens.weight, std=d_model ** -0.5)
        with torch.no_grad():
            self.tokens.weight[PAD_ID].zero_()
        self.scale = math.sqrt(d_model)
        if positions == "learned":
            self.positions = nn.Parameter(torch.randn(max_positions, d_model) * d_model ** -0.5)
        elif positions == "sinusoidal":
            self.register_buffer("positions", sinusoidal_table(max_positions, d_model), persistent=False)
        else:
            self.positions = None  # rope: positions enter the self-attention (Rotary)
        self.dropout = nn.Dropout(dropout)

    def forward(self, tokens: torch.Tensor, offset: int = 0) -> torch.Tensor:
        # tokens [B,T] -> [B,T,D]
        x = self.tokens(tokens) * self.scale
        if self.positions is not None:
            if offset + tokens.size(1) > self.positions.size(0):
                raise ValueError(f"sequence of {offset + tokens.size(1)} tokens exceeds model.max_positions="
                                 f"{self.positions.size(0)}")
            x = x + self.positions[offset:offset + tokens.size(1)]
        return self.dropout(x)


class Rotary(nn.Module):
    """Rotary position embedding of one head's vectors: each pair of dimensions (i, i + Dh/2) is rotated by the
    angle position * 10000^(-2i/Dh), so q.k depends on the two positions only through their difference."""

    def __init__(self, d_head: int, base: float = 10000.0):
        super().__init__()
        self.register_buffer("inv_freq", base ** (-torch.arange(0, d_head, 2, dtype=torch.float32) / d_head),
                             persistent=False)  # [Dh/2]
        self._table: tuple[torch.Tensor, torch.Tensor] | None = None  # cos, sin [P,Dh/2] for positions 0..P-1

    def _cos_sin(self, end: int, like: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        # Every layer's queries and keys, and every decoding step, read the same angles: computed once, grown
        # (doubled) when a longer sentence comes.
        if self._table is None or self._table[0].size(0) < end or self._table[0].device != like.device \
                or self._table[0].dtype != like.dtype:
            size = max(end, 2 * self._table[0].size(0) if self._table is not None else 256)
            with torch.inference_mode(False):  # grown while decoding, the table must still serve training after
                angle = torch.outer(torch.arange(size, device=like.device, dtype=torch.float32), self.inv_freq)
                self._table = angle.cos().to(like.dtype), angle.sin().to(like.dtype)
        return self._table

    def forward(self, x: torch.Tensor, offset: int = 0) -> torch.Tensor:
        # x [B,H,T,Dh] at positions offset .. offset+T-1
        cos, sin = (t[offset:offset + x.size(2)] for t in self._cos_sin(offset + x.size(2), x))  # [T,Dh/2]
        x1, x2 = x.chunk(2, dim=-1)
        return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)


FEW_QUERIES = 8  # new positions per row up to which CPU inference takes explicit_attention (a search step has 1)


def explicit_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None,
                       dropout: float = 0.0) -> tuple[torch.Tensor, torch.Tensor]:
    """softmax(q k^T / sqrt(Dh)) v as two batched matmuls: q [B,H,T,Dh], k, v [B,H,S,Dh] (a cache's strided prefix
    is read in place: bmm takes it as it is, where 4-d matmul copies it); mask broadcasts to [B,H,T,S], True where
    attending is allowed. -> (y [B,H,T,Dh], weights [B,H,T,S])"""
    b, h, t, d = q.shape
    scores = torch.bmm(q.reshape(b * h, t, d), k.flatten(0, 1).transpose(1, 2)).view(b, h, t, -1) / math.sqrt(d)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = scores.softmax(-1)
    y = torch.bmm(F.dropout(weights, dropout, dropout > 0).flatten(0, 1), v.flatten(0, 1))
    return y.view(b, h, t, d), weights


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model: int, n_heads: int, dropout: float, rotary: Rotary | None = None):
        super().__init__()
        self.n_heads, self.d_head, self.dropout = n_heads, d_model // n_heads, dropout
        self.query = Linear(d_model, d_model)
        self.key_value = Linear(d_model, 2 * d_model)
        self.out = Linear(d_model, d_model)
        self.rotary = rotary  # self-attention with rope only

    def _split(self, x: torch.Tensor) -> torch.Tensor:  # [B,T,D] -> [B,H,T,Dh]
        return x.view(x.size(0), x.size(1), self.n_heads, self.d_head).transpose(1, 2)

    def keys_values(self, x: torch.Tensor, offset: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
        # [B,S,D] at positions offset.. -> 2 x [B,H,S,Dh]; rotary keys are cached already rotated
        k, v = self.key_value(x).chunk(2, dim=-1)
        k = self._split(k)
        return (self.rotary(k, offset) if self.rotary is not None else k), self._split(v)

    def forward(self, x: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None = None,
                causal: bool = False, return_attention: bool = False,
                offset: int = 0) -> tuple[torch.Tensor, torch.Tensor | None]:
        """x [B,T,D] (at positions offset..) attends over k, v [B,H,S,Dh]; mask [B,1,1,S] or [B,1,T,S] is True where
        attending is allowed. causal: query t sees keys up to its own position, the T queries being the last T of the
        S keys (keys before them come from a cache). -> (y [B,T,D], weights [B,H,T,S] when return_attention)
        Beam search's cross-attention: x has `beam` rows per row of the keys, values and mask (x [B*beam,T,D],
        k [B,H,S,Dh]): a sentence's hypotheses are beam * T queries of one call over its one copy of the keys."""
        q = self._split(self.query(x))
        if self.rotary is not None:
            q = self.rotary(q, offset)
        beam = x.size(0) // k.size(0)
        if beam > 1:  # [B*k,H,T,Dh] -> [B,H,k*T,Dh]
            q = q.view(k.size(0), beam, self.n_heads, -1, self.d_head).transpose(1, 2).flatten(2, 3)
        weights = None
        dropout = self.dropout if self.training else 0.0
        t, s = q.size(2), k.size(2)
        # CPU decoding steps have a few queries per row (times the beam in cross-attention): there SDPA's fused
        # kernel costs more than the matmuls (3-4x on a search step's shapes, docs/speed.md); explicit weights also
        # take this path.
        explicit = return_attention or (x.size(1) <= FEW_QUERIES and not self.training and x.device.type == "cpu")
        if causal and (explicit or t != s):  # SDPA's is_causal aligns the queries to the first keys
            mask, causal = torch.ones(t, s, dtype=torch.bool, device=x.device).tril(s - t), False
        if explicit:
            y, weights = explicit_attention(q, k, v, mask, dropout)
            weights = weights if return_attention else None
        else:
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout, is_causal=causal)
        if beam > 1:  # [B,H,k*T,.] -> [B*k,H,T,.]
            y = y.unflatten(2, (beam, -1)).transpose(1, 2).flatten(0, 1)
            weights = None if weights is None else weights.unflatten(2, (beam, -1)).transpose(1, 2).flatten(0, 1)
        y = y.transpose(1, 2).reshape(x.size(0), x.size(1), -1)  # [B,T,D]
        return self.out(y), weights


class FeedForward(nn.Sequential):
    def __init__(self, d_model: int, d_ff: int, dropout: float):
        super().__init__(Linear(d_model, d_ff), nn.ReLU(), nn.Dropout(dropout), Linear(d_ff, d_model))


class Sublayer(nn.Module):
    """Residual + LayerNorm around one sublayer: post-LN (paper) norms after the residual, pre-LN before it."""

    def __init__(self, d_model: int, dropout: float, norm_first: bool):
        super().__init__()
        self.norm, self.dropout, self.norm_first = nn.LayerNorm(d_model), nn.Dropout(dropout), norm_first

    def forward(self, x: torch.Tensor, fn: Callable[[torch.Tensor], torch.Tensor]) -> torch.Tensor:
        if self.norm_first:
            return x + self.dropout(fn(self.norm(x)))
        return self.norm(x + self.dropout(fn(x)))


class EncoderLayer(nn.Module):
    def __init__(self, d_model: int, n_heads: int, d_ff: int, dropout: float, attention_dropout: float,
                 norm_first: bool, rotary: Rotary | None = None):
        super().__init__()
        self.attn = MultiHeadAttention(d_model, n_heads, attention_dropout, rotary)
        self.ff = FeedForward(d_model, d_ff, dropout)
        self.sub_attn, self.sub_ff = Sublayer(d_model, dropout, norm_first), Sublayer(d_model, dropout, norm_first)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        x = self.sub_attn(x, lambda h: self.attn(h, *self.attn.keys_values(h), mask=mask)[0])
        return self.sub_ff(x, self.ff)


class DecoderLayer(nn.Module):
    def __init__(self, d_model: int, n_heads: int, d_ff: int, dropout: float, attention_dropout: float,
                 norm_first: bool, rotary: Rotary | None = None):
        super().__init__()
        self.self_attn = MultiHeadAttention(d_model, n_heads, attention_dropout, rotary)
        self.cross_attn = MultiHeadAttention(d_model, n_heads, attention_dropout)
        self.ff = FeedForward(d_model, d_ff, dropout)
        self.sub_self, self.sub_cross, self.sub_ff = (Sublayer(d_model, dropout, norm_first) for _ in range(3))

    def forward(self, x: torch.Tensor, cross_kv: tuple[torch.Tensor, torch.Tensor], src_mask: torch.Tensor,
                cache: KVCache | None = None,
                return_attention: bool = False) -> tuple[torch.Tensor, torch.Tensor | None]:
        """x [B,T,D] -> (x [B,T,D], cross-attention weights [B,H,T,S] or None). With a cache (incremental decoding)
        x holds the newest positions: their keys and values are appended to the cache, and they attend over it."""
        def self_attention(h: torch.Tensor) -> torch.Tensor:
            offset = 0 if cache is None else cache.length  # positions already cached
            k, v = self.self_attn.keys_values(h, offset)
            if cache is not None:
                k, v = cache.append(k, v)
            # A single new position may see the whole cache; several need the causal mask.
            return self.self_attn(h, k, v, causal=h.size(1) > 1, offset=offset)[0]

        def cross_attention(h: torch.Tensor) -> torch.Tensor:
            y, w = self.cross_attn(h, *cross_kv, mask=src_mask, return_attention=return_attention)
            weights.append(w)
            return y

        weights = []
        x = self.sub_self(x, self_attention)
        x = self.sub_cross(x, cross_attention)
        return self.sub_ff(x, self.ff), weights[0]


class KVCache:
    """One decoder layer's self-attention keys and values during incremental decoding, in buffers [B,H,capacity,Dh]
    that double when full: a step writes its position in place, and a beam's reordering gathers the filled prefix
    into a second pair of buffers that is then swapped in. (Concatenating a new tensor every step, then
    index-selecting another, allocated and copied the whole cache twice per step: on CPU the allocations page-fault,
    and that was 60% of beam search's time at 60 tokens.) It changes in place: only the latest state is valid."""

    def __init__(self, capacity: int = 32):
        self.capacity, self.length = capacity, 0
        self.k = self.v = self.spare_k = self.spare_v = None

    def append(self, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """k, v [B,H,n,Dh] at the next n positions -> views of every cached key and value [B,H,length,Dh]."""
        n = k.size(2)
        if self.k is None or self.length + n > self.k.size(2):
            self._grow(k, max(self.capacity, 2 * self.length, self.length + n))
        self.k[:, :, self.length:self.length + n] = k
        self.v[:, :, self.length:self.length + n] = v
        self.length += n
        return self.k[:, :, :self.length], self.v[:, :, :self.length]

    def _grow(self, like: torch.Tensor, capacity: int) -> None:
        shape = (like.size(0), like.size(1), capacity, like.size(3))
        k, v = like.new_empty(shape), like.new_empty(shape)
        if self.k is not None:
            k[:, :, :self.length], v[:, :, :self.length] = self.k[:, :, :self.length], self.v[:, :, :self.length]
        self.k, self.v, self.spare_k, self.spare_v = k, v, None, None

    def reorder(self, indices: torch.Tensor) -> None:
        """Row i becomes row indices[i] (indices [B'], any B')."""
        if self.k is None:
            return
        if self.k.requires_grad:  # decoding outside no_grad: an out= argument cannot record gradients
            self.k, self.v = self.k.index_select(0, indices), self.v.index_select(0, indices)
            self.spare_k = self.spare_v = None
            return
        shape = (indices.size(0), *self.k.shape[1:])
        if self.spare_k is None or self.spare_k.shape != shape:
            self.spare_k, self.spare_v = self.k.new_empty(shape), self.v.new_empty(shape)
        filled = slice(0, self.length)
        torch.index_select(self.k[:, :, filled], 0, indices, out=self.spare_k[:, :, filled])
        torch.index_select(self.v[:, :, filled], 0, indices, out=self.spare_v[:, :, filled])
        self.k, self.spare_k, self.v, self.spare_v = self.spare_k, self.k, self.spare_v, self.v


class Transformer(Seq2Seq):
    def __init__(self, src_vocab_size: int, tgt_vocab_size: int, d_model: int = 256, n_heads: int = 4,
                 encoder_layers: int = 3, decoder_layers: int = 3, d_ff: int = 1024, dropout: float = 0.1,
                 attention_dropout: float = 0.0, norm_first: bool = False, positions: str = "sinusoidal",
                 max_positions: int = 1024, tie_output_embeddings: bool = True, share_all_embeddings: bool = False):
        super().__init__()
        # the keys whose bad values would otherwise fail obscurely, deep in a layer
        self.validate_config({"d_model": d_model, "n_heads": n_heads, "positions": positions})
        self.src_vocab_size, self.tgt_vocab_size = src_vocab_size, tgt_vocab_size
        self.d_model, self.n_heads, self.d_ff = d_model, n_heads, d_ff
        self.src_embed = Embedding(src_vocab_size, d_model, max_positions, positions, dropout)
        self.tgt_embed = Embedding(tgt_vocab_size, d_model, max_positions, positions, dropout)
        rotary = Rotary(d_model // n_heads) if positions == "rope" else None  # shared: it holds no weights
        if share_all_embeddings:
            if src_vocab_size != tgt_vocab_size:
                raise ValueError("model.share_all_embeddings needs a shared vocabulary (data.shared_vocab=true)")
            self.tgt_embed.tokens = self.src_embed.tokens
        layer_args = (d_model, n_heads, d_ff, dropout, attention_dropout, norm_first, rotary)
        self.encoder_layers = nn.ModuleList(EncoderLayer(*layer_args) for _ in range(encoder_layers))
        self.decoder_layers = nn.ModuleList(DecoderLayer(*layer_args) for _ in range(decoder_layers))
        # Pre-LN leaves the residual stream un-normalised, so both stacks end with a LayerNorm.
        self.encoder_norm = nn.LayerNorm(d_model) if norm_first else nn.Identity()
        self.decoder_norm = nn.LayerNorm(d_model) if norm_first else nn.Identity()
        self.output = Linear(d_model, tgt_vocab_size, bias=False)
        for name, p in self.named_parameters():
            if p.dim() > 1 and "embed" not in name:
                nn.init.xavier_uniform_(p)
            elif name.endswith(".bias") and "norm" not in name:
                nn.init.zeros_(p)
        if tie_output_embeddings:
            self.output.weight = self.tgt_embed.tokens.weight

    def encode(self, src: torch.Tensor, src_mask: torch.Tensor) -> dict:
        attn_mask = src_mask[:, None, None, :]  # [B,1,1,S]
        x = self.src_embed(src)  # [B,S,D]
        for layer in self.encoder_layers:
            x = layer(x, attn_mask)
        memory = self.encoder_norm(x)  # [B,S,D]
        # Every decoder layer's cross-attention keys and values: 2 x [B,H,S,Dh] per layer, once per sentence.
        cross_kv = [layer.cross_attn.keys_values(memory) for layer in self.decoder_layers]
        if not self.training:  # contiguous, so every decoding step's bmm reads them in place (training: SDPA)
            cross_kv = [(k.contiguous(), v.contiguous()) for k, v in cross_kv]
        return {"mask": src_mask, "cross_kv": cross_kv}

    def decode(self, tgt_in: torch.Tensor, encoder_out: dict, state: dict | None = None,
               return_attention: bool = False) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor | None]:
        src_mask = encoder_out["mask"][:, None, None, :]  # [B,1,1,S]
        caches = state["self_kv"] if state is not None else [None] * len(self.decoder_layers)
        x = self.tgt_embed(tgt_in, offset=0 if state is None else state["step"])  # [B,T,D]
        weights = []
        for layer, cross_kv, cache in zip(self.decoder_layers, encoder_out["cross_kv"], caches):
            # Explicit weights take the unfused path: only when a caller wants to see them.
            x, w = layer(x, cross_kv, src_mask, cache=cache, return_attention=return_attention)
            weights.append(w)
        if state is not None:
            state["step"] += tgt_in.size(1)
        logits = self.output(self.decoder_norm(x))  # [B,T,V]
        return (logits, torch.stack(weights, dim=1)) if return_attention else logits  # attention [B,L,H,T,S]

    def init_state(self, encoder_out: dict) -> dict:
        return {"step": 0, "self_kv": [KVCache() for _ in self.decoder_layers]}  # step: target positions consumed

    def expand_encoder_out(self, encoder_out: dict, k: int) -> dict:
        # One copy per sentence: cross-attention reads the k hypotheses' queries against it (MultiHeadAttention),
        # and reorder_encoder_out's default selects sentences as it is.
        return encoder_out

    def reorder_state(self, state: dict, indices: torch.Tensor) -> None:
        for cache in state["self_kv"]:
            cache.reorder(indices)

    config_specs = {**Seq2Seq.config_specs, "positions": one_of(*POSITIONS),
                    **{key: integer(1) for key in ("d_model", "n_heads", "encoder_layers", "decoder_layers", "d_ff",
                                                   "max_positions")}}

    @classmethod
    def validate_config(cls, cfg: Mapping) -> None:
        super().validate_config(cfg)
        d_model, n_heads = cls.config_value(cfg, "d_model"), cls.config_value(cfg, "n_heads")
        positions = cls.config_value(cfg, "positions")
        if d_model % n_heads:
            raise ConfigError(f"model.n_heads={n_heads}: must divide model.d_model={d_model}")
        if positions == "sinusoidal" and d_model % 2:
            raise ConfigError(f"model.d_model={d_model}: sinusoidal positions need an even d_model")
        if positions == "rope" and (d_model // n_heads) % 2:
            raise ConfigError(f"model.n_heads={n_heads}: rope rotates pairs of dimensions, so d_model / n_heads must "
                              f"be even (d_model={d_model})")

    @classmethod
    def position_limit(cls, cfg: Mapping) -> int | None:
        return None if cls.config_value(cfg, "positions") == "rope" else cls.config_value(cfg, "max_positions")

    width_key, scaled_with_width = "d_model", ("d_ff",)  # param-budget sizing: d_ff keeps its ratio to d_model

    @classmethod
    def shape_tags(cls, cfg: Mapping) -> list[str]:
        value = functools.partial(cls.config_value, cfg)
        return [f"h{value('n_heads')}", depth_tag(value("encoder_layers"), value("decoder_layers")),
                f"ff{value('d_ff')}"]

    @classmethod
    def width(cls, cfg: Mapping) -> tuple[int, int]:
        # heads split d_model evenly; sinusoidal tables interleave sin/cos, so d_model must be even; rope rotates
        # pairs within each head, so every head's width must be even
        heads, positions = cls.config_value(cfg, "n_heads"), cls.config_value(cfg, "positions")
        step = {"sinusoidal": math.lcm(heads, 2), "learned": heads, "rope": 2 * heads}[positions]
        return cls.config_value(cfg, "d_model"), step

    def flops_per_token(self, src_len: int, tgt_len: int) -> float:
        """Forward matmul FLOPs per target token (nanoGPT-style: 2 per weight, plus attention scores and mixing)."""
        d, ff = self.d_model, self.d_ff
        n_enc, n_dec = len(self.encoder_layers), len(self.decoder_layers)
        enc_per_src_token = n_enc * (2 * (4 * d * d + 2 * d * ff) + 4 * src_len * d)
        dec = n_dec * (2 * (8 * d * d + 2 * d * ff) + 4 * tgt_len * d / 2 + 4 * src_len * d) \
            + 2 * d * self.tgt_vocab_size
        return dec + enc_per_src_token * src_len / max(tgt_len, 1)
