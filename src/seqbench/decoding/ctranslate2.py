"""CTranslate2, the engine that fairseq, OpenNMT-py, Marian and Eole models are served with: a seqbench Transformer
converted to it, and decoded by it through the same interface as seqbench.decoding.search.

`convert` builds CTranslate2's TransformerSpec from the model's weights (sinusoidal or learned positions, post- or
pre-LN, tied or separate embeddings; the fused query-key-value and key-value projections are laid out as CTranslate2
fuses them) and writes a CTranslate2 model folder, optionally quantised (`quantization`: int8, int8_float32,
int16, float16, ...; CTranslate2's own names). Rotary positions, RNN and ConvS2S models are refused with one line:
CTranslate2 has no encoder-decoder spec for them.

`Engine.generate` takes the source token ids of a batch and a DecodingConfig and returns hypothesis token ids, like
seqbench.decoding.search.generate: greedy with beam_size=1, beam search with CTranslate2's GNMT length penalty
(seqbench's default normalisation), the same per-sentence length limit (max_len_a * source length + max_len_b,
capped at max_len, at least min_len). CTranslate2 takes one limit per call, so sentences are grouped by limit;
`decoding_options` is that call's options, which the bench's engine in a process of its own
(seqbench.measure.ctranslate2_process) decodes with too.
"""
from __future__ import annotations

import itertools
from pathlib import Path

import torch

from seqbench.common.errors import InputError
from seqbench.common.tokens import BOS, EOS, SPECIAL_TOKENS, UNK
from seqbench.decoding.search import DecodingConfig

QUANTIZATIONS = ("int8", "int8_float32", "int8_float16", "int8_bfloat16", "int16", "float16", "bfloat16",
                 "float32")


def _ctranslate2():
    try:
        import ctranslate2
    except ImportError:
        raise InputError("CTranslate2 is not installed: pip install 'seqbench[ctranslate2]'") from None
    return ctranslate2


def check_convertible(model) -> None:
    """One line saying why a model cannot be converted, or nothing."""
    from seqbench.models.transformer import Transformer

    if not isinstance(model, Transformer):
        raise InputError(f"--format ctranslate2: only Transformer models convert (this one is a "
                         f"{type(model).__name__}: CTranslate2 has no RNN or ConvS2S encoder-decoder)")
    if model.src_embed.positions is None:
        raise InputError("--format ctranslate2: rotary positions (model.positions=rope) do not convert: "
                         "CTranslate2's encoder-decoder Transformer takes sinusoidal or learned position tables")


def vocabulary(tokenizer) -> list[str]:
    """A Hugging Face tokenizer's token strings in id order, as CTranslate2 registers a vocabulary."""
    by_id = sorted(tokenizer.get_vocab().items(), key=lambda item: item[1])
    assert [i for _, i in by_id] == list(range(len(by_id))), "token ids must be 0..V-1"
    return [token for token, _ in by_id]


def numbered_vocabulary(size: int) -> list[str]:
    """Token strings for a model trained on bare ids (the bench's generated pairs): the specials, then "t4", "t5"..."""
    return SPECIAL_TOKENS + [f"t{i}" for i in range(len(SPECIAL_TOKENS), size)]


def _numpy(tensor: torch.Tensor):
    return tensor.detach().float().cpu().numpy()


def _set_linear(spec, linear: torch.nn.Linear) -> None:
    spec.weight = _numpy(linear.weight)
    if linear.bias is not None:
        spec.bias = _numpy(linear.bias)


def _set_norm(spec, norm: torch.nn.LayerNorm) -> None:
    spec.gamma, spec.beta = _numpy(norm.weight), _numpy(norm.bias)


def _set_fused(spec, *linears: torch.nn.Linear) -> None:
    """Several projections as CTranslate2's one fused linear: weights and biases stacked in order."""
    spec.weight = _numpy(torch.cat([layer.weight for layer in linears]))
    spec.bias = _numpy(torch.cat([layer.bias for layer in linears]))


def _set_embedding(spec, embedding) -> None:
    """Token table, sqrt(d_model) scaling and the position table (sinusoidal or learned) of one side."""
    tokens = spec.embeddings[0] if isinstance(spec.embeddings, list) else spec.embeddings  # the encoder's: a list
    tokens.weight = _numpy(embedding.tokens.weight)
    spec.scale_embeddings = True  # seqbench multiplies by sqrt(d_model), as the paper does
    spec.position_encodings.encodings = _numpy(embedding.positions)


def _set_sublayer_norm(spec, sublayer) -> None:
    _set_norm(spec.layer_norm, sublayer.norm)


def transformer_spec(model, src_tokens: list[str], tgt_tokens: list[str]):
    """CTranslate2's TransformerSpec holding the model's weights and both vocabularies (token strings in id order)."""
    _ctranslate2()
    from ctranslate2.specs import TransformerSpec

    check_convertible(model)
    norm_first = isinstance(model.encoder_norm, torch.nn.LayerNorm)
    spec = TransformerSpec.from_config((len(model.encoder_layers), len(model.decoder_layers)), model.n_heads,
                                       pre_norm=norm_first)
    encoder, decoder = spec.encoder, spec.decoder
    _set_embedding(encoder, model.src_embed)
    for layer_spec, layer in zip(encoder.layer, model.encoder_layers):
        _set_fused(layer_spec.self_attention.linear[0], layer.attn.query, layer.attn.key_value)
        _set_linear(layer_spec.self_attention.linear[1], layer.attn.out)
        _set_sublayer_norm(layer_spec.self_attention, layer.sub_attn)
        _set_linear(layer_spec.ffn.linear_0, layer.ff[0])
        _set_linear(layer_spec.ffn.linear_1, layer.ff[3])
        _set_sublayer_norm(layer_spec.ffn, layer.sub_ff)
    _set_embedding(decoder, model.tgt_embed)
    for layer_spec, layer in zip(decoder.layer, model.decoder_layers):
        _set_fused(layer_spec.self_attention.linear[0], layer.self_attn.query, layer.self_attn.key_value)
        _set_linear(layer_spec.self_attention.linear[1], layer.self_attn.out)
        _set_sublayer_norm(layer_spec.self_attention, layer.sub_self)
        _set_linear(layer_spec.attention.linear[0], layer.cross_attn.query)
        _set_linear(layer_spec.attention.linear[1], layer.cross_attn.key_value)  # keys then values, fused already
        _set_linear(layer_spec.attention.linear[2], layer.cross_attn.out)
        _set_sublayer_norm(layer_spec.attention, layer.sub_cross)
        _set_linear(layer_spec.ffn.linear_0, layer.ff[0])
        _set_linear(layer_spec.ffn.linear_1, layer.ff[3])
        _set_sublayer_norm(layer_spec.ffn, layer.sub_ff)
    _set_linear(decoder.projection, model.output)
    if norm_first:
        _set_norm(encoder.layer_norm, model.encoder_norm)
        _set_norm(decoder.layer_norm, model.decoder_norm)
    spec.register_source_vocabulary(src_tokens)
    spec.register_target_vocabulary(tgt_tokens)
    config = spec.config
    config.bos_token, config.eos_token, config.unk_token = BOS, EOS, UNK
    config.decoder_start_token = BOS  # seqbench's decoder starts from <bos>; the source has no special tokens
    config.layer_norm_epsilon = model.encoder_layers[0].sub_attn.norm.eps  # torch's 1e-5, not CTranslate2's 1e-6
    return spec


def convert(model, src_tokens: list[str], tgt_tokens: list[str], out: str | Path,
            quantization: str | None = None) -> Path:
    """Write the model as a CTranslate2 model folder `out` (which must not exist)."""
    _ctranslate2()  # one line when the extra is missing, before anything is imported from it
    from ctranslate2.converters.converter import Converter

    if quantization is not None and quantization not in QUANTIZATIONS:
        raise InputError(f"--quantization {quantization}: one of {', '.join(QUANTIZATIONS)}")
    spec = transformer_spec(model, src_tokens, tgt_tokens)

    class _FromSpec(Converter):  # CTranslate2's converter API: _load returns the filled spec
        def _load(self):
            return spec

    return Path(_FromSpec().convert(str(out), quantization=quantization))


def decoding_options(cfg: DecodingConfig, limit: int) -> dict:
    """translate_batch's options for sentences whose length limit is `limit` (plain values: they also travel as
    JSON to an engine in a process of its own)."""
    if cfg.length_normalization != "gnmt":
        raise InputError(f"length_normalization={cfg.length_normalization}: CTranslate2 normalises beam scores "
                         "as GNMT does (seqbench's default); use gnmt with --engine ctranslate2")
    return {"beam_size": cfg.beam_size, "length_penalty": cfg.length_penalty if cfg.beam_size > 1 else 0.0,
            "max_decoding_length": limit, "min_decoding_length": min(cfg.min_len, limit), "return_scores": False}


class Engine:
    """A converted model loaded in CTranslate2, decoding token ids like seqbench.decoding.search.generate."""

    def __init__(self, model_dir: str | Path, src_tokens: list[str], tgt_tokens: list[str], device: str = "cpu",
                 threads: int | None = None, compute_type: str = "default"):
        ctranslate2 = _ctranslate2()
        threads = threads or torch.get_num_threads()
        self.translator = ctranslate2.Translator(str(model_dir), device=device, compute_type=compute_type,
                                                 intra_threads=threads, inter_threads=1)
        self.src_tokens = src_tokens
        self.tgt_ids = {token: i for i, token in enumerate(tgt_tokens)}

    @classmethod
    def for_tokenizers(cls, model_dir: str | Path, tokenizers, **options) -> Engine:
        return cls(model_dir, vocabulary(tokenizers.src), vocabulary(tokenizers.tgt), **options)

    def generate(self, sources: list[list[int]], cfg: DecodingConfig) -> list[list[int]]:
        limits = [max(cfg.min_len, min(int(len(s) * cfg.max_len_a + cfg.max_len_b),
                                       cfg.max_len if cfg.max_len is not None else 1 << 30)) for s in sources]
        out: list[list[int]] = [[] for _ in sources]
        order = sorted(range(len(sources)), key=limits.__getitem__)
        for limit, group in itertools.groupby(order, key=limits.__getitem__):
            group = list(group)
            results = self.translator.translate_batch([[self.src_tokens[i] for i in sources[j]] for j in group],
                                                      **decoding_options(cfg, limit))
            for j, result in zip(group, results):
                out[j] = [self.tgt_ids[token] for token in result.hypotheses[0]]
        return out
