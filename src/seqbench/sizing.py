"""Matching parameter budgets across architectures (`compare.param_budget`, the arch_comparison experiment).

Each family's widths are scaled together by one integer "width" knob, keeping the preset's depth and proportions:

  transformer  d_model (a multiple of n_heads, even for sinusoidal positions); d_ff keeps its ratio to d_model
  rnn          hidden_size; embed_dim keeps its ratio to hidden_size
  cnn          the first encoder block's channels; every block's channels, embed_dim and out_embed_dim keep their
               ratios to it

The parameter count is monotone in the knob, so a bisection finds the width whose count is closest to the budget.
Counts come from instantiating the model on the meta device (no memory, no initialisation cost) with the real
vocabulary sizes, so embeddings and output layers (which dominate small models) are counted exactly.
"""
from __future__ import annotations

import copy
import functools
import math

import torch
from hydra.utils import instantiate

from seqbench.config_check import ConfigError

TOLERANCE = 0.10  # a sized model's parameter count is within +-10% of the budget, or sizing fails


def _scale(value: int, factor: float, multiple: int = 1) -> int:
    return max(multiple, multiple * round(value * factor / multiple))


def _with_width(model_cfg: dict, width: int) -> dict:
    """A copy of model_cfg (with "name") whose widths are scaled so the family's knob equals `width`."""
    cfg = copy.deepcopy(model_cfg)
    name = cfg["name"]
    if name == "transformer":
        factor = width / cfg["d_model"]
        cfg["d_model"], cfg["d_ff"] = width, _scale(cfg["d_ff"], factor)
    elif name == "rnn":
        factor = width / cfg["hidden_size"]
        cfg["hidden_size"], cfg["embed_dim"] = width, _scale(cfg["embed_dim"], factor)
    elif name == "cnn":
        factor = width / cfg["encoder_layers"][0][0]
        for side in ("encoder_layers", "decoder_layers"):
            cfg[side] = [[_scale(channels, factor), kernel] for channels, kernel in cfg[side]]
        cfg["embed_dim"], cfg["out_embed_dim"] = _scale(cfg["embed_dim"], factor), _scale(cfg["out_embed_dim"], factor)
    else:
        raise ConfigError(f"model.name={name!r}: no parameter-budget sizing for this family")
    return cfg


def _width_and_step(model_cfg: dict) -> tuple[int, int]:
    name = model_cfg["name"]
    if name == "transformer":
        # heads split d_model evenly; sinusoidal tables interleave sin/cos, so d_model must be even
        step = math.lcm(model_cfg["n_heads"], 1 if model_cfg.get("learned_positions") else 2)
        return model_cfg["d_model"], step
    if name == "rnn":
        return model_cfg["hidden_size"], 1
    if name == "cnn":
        return model_cfg["encoder_layers"][0][0], 1
    raise ConfigError(f"model.name={name!r}: no parameter-budget sizing for this family")


def count_parameters(model_cfg: dict, src_vocab_size: int, tgt_vocab_size: int) -> int:
    cfg = {k: v for k, v in model_cfg.items() if k != "name"}
    with torch.device("meta"):
        model = instantiate(cfg, src_vocab_size=src_vocab_size, tgt_vocab_size=tgt_vocab_size)
    return model.num_parameters()


def fit_to_budget(model_cfg: dict, budget: int, src_vocab_size: int, tgt_vocab_size: int) -> dict:
    """model_cfg resized so its parameter count is as close to `budget` as its width grid allows (within TOLERANCE).

    Raises ConfigError when no width gets within the tolerance, e.g. a budget smaller than the embeddings alone.
    """
    _, step = _width_and_step(model_cfg)

    @functools.cache  # the bisection and the final choice revisit widths
    def params(units: int) -> int:  # width = units * step
        return count_parameters(_with_width(model_cfg, units * step), src_vocab_size, tgt_vocab_size)

    lo, hi = 1, 2
    while params(hi) < budget:  # grow the bracket: params(lo) < budget <= params(hi), or lo = 1 already above
        lo, hi = hi, hi * 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if params(mid) < budget else (lo, mid)
    units = min((lo, hi), key=lambda u: abs(params(u) - budget))
    count = params(units)
    if abs(count - budget) > TOLERANCE * budget:
        raise ConfigError(f"compare.param_budget={budget}: the closest {model_cfg['name']} width gives {count:,} "
                          f"parameters, more than {TOLERANCE:.0%} away (vocabularies {src_vocab_size}/"
                          f"{tgt_vocab_size}); change the budget or the preset's depth")
    return _with_width(model_cfg, units * step)
