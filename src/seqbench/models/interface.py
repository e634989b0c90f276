"""The one contract every architecture implements, so one training module and one beam search serve them all.

Shapes: B batch, S source length, T target length, V target vocabulary, L layers, H heads.
Masks are boolean and True on real (non-pad) tokens.

    encode(src [B,S], src_mask [B,S]) -> encoder_out
        encoder_out: a dict (nesting dicts/lists/tuples) of batch-first tensors, always with "mask" [B,S]; everything
        the decoder derives from the source alone (e.g. cross-attention keys/values) is computed here, once per
        sentence, so the decoding state below never holds it
    decode(tgt_in [B,T], encoder_out, state=None, return_attention=False)
        -> logits [B,T,V]                         causal: logits[:, t] sees tgt_in[:, :t+1] only
        -> (logits, attention [B,L,H,T,S])        when return_attention (None for a family without attention)
        state=None: tgt_in is the whole teacher-forced target (training, scoring, attention maps).
        state from init_state: tgt_in continues the tokens the state has consumed (T=1 per search step, or more),
        the state is updated in place, and the logits are those of the full sequence at the same positions:
        decode(tgt[:, :a], enc, state) then decode(tgt[:, a:], enc, state) give decode(tgt, enc)[:, :a] and [:, a:].
        Attention weights are computed only when asked, so search stays on fused kernels.
    init_state(encoder_out) -> state              a dict: what decoding accumulates, before the first token
    reorder_state(state, indices [B'])            in place: row i of the state becomes row indices[i] of the old one
    expand_encoder_out(encoder_out, k) -> encoder_out that decodes k rows per sentence: decoder row b*k+j is
                                                  hypothesis j of sentence b (tgt_in and state have B*k rows)
    reorder_encoder_out(encoder_out, indices [B']) -> encoder_out of the sentences indices (each with its k rows)

Beam search calls `expand_encoder_out` once, then `init_state`, and `reorder_state` after every step with each new
row taken from a row of the same sentence. When finished sentences leave the batch, search says so explicitly: it
calls `reorder_encoder_out` with the sentences it keeps, and its `reorder_state` indices have fewer rows. As the
state holds nothing derived from the source alone, `reorder_state` is the same row gather either way, and nothing
has to be inferred from row counts. By default the expansion repeats every tensor's rows k times (the key "beam"
records k); a family whose decoder can read one copy per sentence keeps it unexpanded (the Transformer's
cross-attention takes a sentence's k hypotheses as k queries of one attention call: k times less key/value memory
read per step).

A model may update a state's tensors in place (the Transformer writes each step into preallocated key/value
buffers), so only the latest state is valid: decode one branch per state.

Attention rows are probability distributions over source positions: non-negative, zero on padding, summing to 1.

Besides the tensors, each family answers what the harness needs to know about it (fairseq keeps such knowledge
beside each architecture), so a new family is one model file plus one YAML:

    config_specs                what each config key takes, in the vocabulary of seqbench.common.specs
    validate_config(cfg)        that table and the relations between keys, one-line ConfigErrors, run on the
                                config before any data or model is built
    width(cfg) -> (width, step) the one integer knob that param-budget sizing scales, and its grid
    with_width(cfg, width)      a copy of cfg with its widths scaled to that knob
    run_label(preset, cfg)      the run's name in reports (e.g. "rnn-luong_dot")
    flops_per_token(...)        analytic forward FLOPs per target token, for MFU (on the instance)

The harness finds the family from the model config's `_target_` (`family_of`).
"""
from __future__ import annotations

import copy
import inspect
from typing import Any, Mapping

import torch
from torch import nn

from seqbench.common.errors import ConfigError
from seqbench.common.specs import Spec, check_keys, fraction


def index_batch(tree: Any, indices: torch.Tensor) -> Any:
    """index_select(0, indices) on every tensor in a nest of dicts/lists/tuples; other leaves are kept as they are."""
    if isinstance(tree, torch.Tensor):
        return tree.index_select(0, indices)
    if isinstance(tree, dict):
        return {k: index_batch(v, indices) for k, v in tree.items()}
    if isinstance(tree, (list, tuple)):
        return type(tree)(index_batch(v, indices) for v in tree)
    return tree


class Seq2Seq(nn.Module):
    """Base class: subclasses implement encode/decode/init_state; reordering is generic by default."""

    src_vocab_size: int
    tgt_vocab_size: int

    def encode(self, src: torch.Tensor, src_mask: torch.Tensor) -> dict:
        raise NotImplementedError

    def decode(self, tgt_in: torch.Tensor, encoder_out: dict, state: dict | None = None,
               return_attention: bool = False) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor | None]:
        raise NotImplementedError

    def init_state(self, encoder_out: dict) -> dict:
        raise NotImplementedError

    def reorder_state(self, state: dict, indices: torch.Tensor) -> None:
        state.update(index_batch(state, indices))

    def expand_encoder_out(self, encoder_out: dict, k: int) -> dict:
        rows = torch.arange(encoder_out["mask"].size(0), device=encoder_out["mask"].device).repeat_interleave(k)
        return {**index_batch(encoder_out, rows), "beam": k}

    def reorder_encoder_out(self, encoder_out: dict, indices: torch.Tensor) -> dict:
        k = encoder_out.get("beam", 1)
        if k > 1:  # the rows of each kept sentence
            indices = (indices[:, None] * k + torch.arange(k, device=indices.device)).view(-1)
        return index_batch(encoder_out, indices)

    def forward(self, src: torch.Tensor, src_mask: torch.Tensor, tgt_in: torch.Tensor) -> torch.Tensor:
        return self.decode(tgt_in, self.encode(src, src_mask))

    def flops_per_token(self, src_len: int, tgt_len: int) -> float:
        """Forward FLOPs per target token (matrix products only), for the MFU estimate. Subclasses refine it."""
        return 2.0 * sum(p.numel() for p in self.parameters() if p.dim() > 1)

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())

    # --- the family's knowledge, asked by config.checks, sizing and the reports ----------------------------------

    @classmethod
    def config_value(cls, cfg: Mapping, key: str) -> Any:
        """cfg[key], or the constructor's default when the config leaves the key out."""
        if key in cfg:
            return cfg[key]
        return inspect.signature(cls.__init__).parameters[key].default

    # The family's keys, each with what it takes (seqbench.common.specs): a family extends the table with its own.
    config_specs: Mapping[str, Spec] = {"dropout": fraction(none=True), "attention_dropout": fraction(none=True)}

    @classmethod
    def validate_config(cls, cfg: Mapping) -> None:
        """Each key the config holds against `config_specs`; a family adds the relations between its keys (and calls
        this first)."""
        check_keys(cfg, cls.config_specs, prefix="model.")

    # Param-budget sizing scales one config key (the width knob); these keys keep their ratio to it. A family with a
    # different rule overrides `width`/`with_width`; one without a knob cannot be sized (compare.param_budget).
    width_key: str | None = None
    scaled_with_width: tuple[str, ...] = ()

    @classmethod
    def width(cls, cfg: Mapping) -> tuple[int, int]:
        """(the current value of the family's width knob, the step its values must be multiples of)."""
        if cls.width_key is None:
            raise ConfigError(f"model._target_={cfg.get('_target_')}: this family has no parameter-budget sizing "
                              "(compare.param_budget); set compare.param_budget=null")
        return cls.config_value(cfg, cls.width_key), 1

    @classmethod
    def with_width(cls, cfg: Mapping, width: int) -> dict:
        """A copy of cfg with the knob at `width` and the `scaled_with_width` keys scaled by the same factor."""
        current, _ = cls.width(cfg)
        out = copy_config(cfg)
        out[cls.width_key] = width
        for key in cls.scaled_with_width:
            out[key] = scaled(cls.config_value(cfg, key), width / current)
        return out

    @classmethod
    def position_limit(cls, cfg: Mapping) -> int | None:
        """The most tokens a sentence may have on either side (a position table's rows), None when any length
        goes; checked against the data before training (seqbench.config.environment)."""
        return cfg.get("max_positions")

    @classmethod
    def run_label(cls, preset: str, cfg: Mapping) -> str:
        return preset

    @classmethod
    def shape_tags(cls, cfg: Mapping) -> list[str]:
        """Short tags of the shape settings a sweep varies, for run names (e.g. ["h4", "L3", "ff512"])."""
        return []


def depth_tag(encoder_layers: int, decoder_layers: int) -> str:
    """"L3" when both stacks are 3 deep, else "enc3-dec1"."""
    return f"L{encoder_layers}" if encoder_layers == decoder_layers else f"enc{encoder_layers}-dec{decoder_layers}"


def scaled(value: int, factor: float, multiple: int = 1) -> int:
    """value * factor rounded to a positive multiple of `multiple`: widths that keep their ratio to the knob."""
    return max(multiple, multiple * round(value * factor / multiple))


def copy_config(cfg: Mapping) -> dict:
    from omegaconf import DictConfig, OmegaConf

    return OmegaConf.to_container(cfg, resolve=True) if isinstance(cfg, DictConfig) else copy.deepcopy(dict(cfg))


def build_model(model_cfg: Mapping, src_vocab_size: int, tgt_vocab_size: int) -> Seq2Seq:
    """The model a (resolved) model config describes, for these vocabulary sizes (its `name` key is a label, not an
    argument)."""
    from hydra.utils import instantiate

    kwargs = {k: v for k, v in copy_config(model_cfg).items() if k != "name"}
    return instantiate(kwargs, src_vocab_size=src_vocab_size, tgt_vocab_size=tgt_vocab_size)


def family_of(cfg: Mapping) -> type[Seq2Seq]:
    """The model class a model config's `_target_` names; one line when it is missing or not a `Seq2Seq`."""
    from hydra.utils import get_class

    target = cfg.get("_target_") if cfg is not None else None
    if not target:
        raise ConfigError("model._target_ is not set: a model config names its class, e.g. "
                          "seqbench.models.transformer.Transformer")
    try:
        cls = get_class(str(target))
    except Exception as error:  # noqa: BLE001 - ImportError, AttributeError, Hydra's wrapping of both
        raise ConfigError(f"model._target_={target}: cannot import it ({' '.join(str(error).split())[:200]})") \
            from None
    if not (isinstance(cls, type) and issubclass(cls, Seq2Seq)):
        raise ConfigError(f"model._target_={target}: not a seqbench.models.interface.Seq2Seq subclass")
    return cls
