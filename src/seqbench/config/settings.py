"""Typed checks of the keys a user sets outside the model: project, Trainer, optimizer, scheduler, data, decoding.

One table (`SPECS`) maps each key to the values it accepts, so a new key is one line, not another `if`. Only keys
present in the composed config are checked: a preset that does not use a key (e.g. `scheduler.total_steps` outside
the cosine schedule) is not asked for it. Every `_target_` node is also checked against its callable's signature,
so an added key the target does not accept (`+trainer.max_step=5`) fails here with the closest valid name instead of
as a TypeError after the data is built. Messages are one line: `<key>=<value>: <what is allowed>`.
"""
from __future__ import annotations

import difflib
import inspect
import re
from dataclasses import dataclass
from typing import Any, Callable, get_args

from omegaconf import DictConfig, ListConfig, OmegaConf

from seqbench.common.errors import ConfigError, is_int
from seqbench.common.nested import lookup

UINT32_MAX = 2**32 - 1  # numpy's seed range, which Lightning's seed_everything enforces
MAX_TIME = re.compile(r"\d+:\d\d:\d\d:\d\d")  # Lightning's Timer format DD:HH:MM:SS


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


@dataclass(frozen=True)
class Spec:
    ok: Callable[[Any], bool]
    allowed: str  # completes "<key>=<value>: must be ..."


def integer(low: int, high: int | None = None, none: bool = False, note: str = "") -> Spec:
    bound = f">= {low}" if high is None else f"in [{low}, {high}]"
    return Spec(lambda v: (none and v is None) or is_int(v) and v >= low and (high is None or v <= high),
                f"an integer {bound}" + (" or null" if none else "") + note)


def number(low: float, strict: bool = False, high: float | None = None, none: bool = False, note: str = "") -> Spec:
    bound = (f"> {low}" if strict else f">= {low}") + (f" and <= {high}" if high is not None else "")
    return Spec(lambda v: (none and v is None) or _is_number(v) and (v > low if strict else v >= low)
                and (high is None or v <= high), f"a number {bound}" + (" or null" if none else "") + note)


def boolean(none: bool = False, extra: tuple = ()) -> Spec:
    allowed = "true or false" + "".join(f" or {e}" for e in extra) + (" or null" if none else "")
    return Spec(lambda v: isinstance(v, bool) or v in extra or (none and v is None), allowed)


def one_of(*choices) -> Spec:
    return Spec(lambda v: v in choices, "one of " + ", ".join(str(c) for c in choices))


def batches_limit(none: bool = True) -> Spec:
    """Lightning's limit_*_batches / val_check_interval: a fraction of the epoch (float in [0, 1]) or a count."""
    return Spec(lambda v: (none and v is None) or is_int(v) and v >= 0 or isinstance(v, float) and 0.0 <= v <= 1.0,
                "a fraction in [0.0, 1.0] or a whole number of batches >= 0")


def _max_time(value) -> bool:
    if value is None:
        return True
    if isinstance(value, str):
        return MAX_TIME.fullmatch(value.strip()) is not None
    return isinstance(value, DictConfig) and set(value) <= {"days", "hours", "minutes", "seconds"} \
        and all(_is_number(v) and v >= 0 for v in value.values())


def _devices(value) -> bool:
    if value == "auto" or is_int(value) and (value >= 1 or value == -1):
        return True
    if isinstance(value, str):  # "0,1" or "2": Lightning's device-string forms
        return re.fullmatch(r"-1|\d+|\d+(,\d+)*,?", value.strip()) is not None
    return isinstance(value, ListConfig) and len(value) > 0 and all(is_int(v) and v >= 0 for v in value)


def _precisions() -> tuple:
    from lightning.fabric.plugins.precision.precision import (
        _PRECISION_INPUT_INT,
        _PRECISION_INPUT_STR,
        _PRECISION_INPUT_STR_ALIAS,
    )

    return (*get_args(_PRECISION_INPUT_STR), *get_args(_PRECISION_INPUT_STR_ALIAS), *get_args(_PRECISION_INPUT_INT))


def _strategy_spec() -> Spec:
    from lightning.pytorch.strategies import StrategyRegistry

    names = ("auto", *sorted(StrategyRegistry.available_strategies()))
    return Spec(lambda v: v in names or isinstance(v, DictConfig) and "_target_" in v,
                "a Lightning strategy name (auto, ddp, ddp_spawn, fsdp, deepspeed, ...; see "
                "lightning.pytorch.strategies.StrategyRegistry) or a _target_ node")


def _precision_spec() -> Spec:
    choices = _precisions()
    return Spec(lambda v: v in choices, "one of " + ", ".join(str(c) for c in choices if isinstance(c, str)))


SPECS: dict[str, Spec | Callable[[], Spec]] = {
    # project
    "seed": integer(0, UINT32_MAX),
    "threads": integer(1, none=True, note=" (null: torch's default)"),
    "train": boolean(),
    "test": boolean(),
    "ckpt_path": Spec(lambda v: v is None or isinstance(v, str) and v != "", "a checkpoint file path or null"),
    # Lightning Trainer
    "trainer.max_steps": integer(-1, note=" (-1: no step limit)"),
    "trainer.max_epochs": integer(-1, none=True, note=" (-1: no epoch limit)"),
    "trainer.min_steps": integer(0, none=True),
    "trainer.min_epochs": integer(0, none=True),
    "trainer.max_time": Spec(_max_time, 'a duration "DD:HH:MM:SS" (e.g. "00:00:07:00"), '
                                        "{days,hours,minutes,seconds} or null"),
    "trainer.precision": _precision_spec,
    "trainer.devices": Spec(_devices, 'a positive integer, -1 (all), "auto", or a list of device indices'),
    "trainer.num_nodes": integer(1),
    "trainer.strategy": _strategy_spec,
    "trainer.gradient_clip_val": number(0, none=True, note=" (0 or null: no clipping)"),
    "trainer.gradient_clip_algorithm": one_of(None, "norm", "value"),
    "trainer.accumulate_grad_batches": integer(1),
    "trainer.check_val_every_n_epoch": integer(1, none=True),
    "trainer.val_check_interval": Spec(lambda v: v is None or is_int(v) and v >= 1
                                       or isinstance(v, float) and 0.0 < v <= 1.0,
                                       "a fraction of the epoch in (0.0, 1.0] or a number of batches >= 1"),
    "trainer.limit_train_batches": batches_limit(),
    "trainer.limit_val_batches": batches_limit(),
    "trainer.limit_test_batches": batches_limit(),
    "trainer.num_sanity_val_steps": integer(-1, none=True, note=" (-1: the whole validation set)"),
    "trainer.log_every_n_steps": integer(1, none=True),
    "trainer.deterministic": boolean(none=True, extra=("warn",)),
    "trainer.benchmark": boolean(none=True),
    "trainer.use_distributed_sampler": boolean(),
    "trainer.sync_batchnorm": boolean(),
    # optimizer (torch.optim) and scheduler (seqbench.training.schedules)
    "optimizer.lr": number(0, strict=True),
    "optimizer.weight_decay": number(0),
    "optimizer.eps": number(0, strict=True),
    "optimizer.momentum": number(0),
    "optimizer.rho": number(0, high=1),
    "optimizer.betas": Spec(lambda v: isinstance(v, ListConfig) and len(v) == 2
                            and all(_is_number(b) and 0 <= b < 1 for b in v), "two numbers in [0, 1)"),
    "scheduler.kind": one_of("inverse_sqrt", "cosine", "constant"),
    "scheduler.warmup_steps": integer(0, note=" (updates; 0: no warm-up)"),
    "scheduler.min_factor": number(0, high=1),
    # data (the model's keys are checked by its family)
    "data.vocab_size": integer(16),
    "data.max_tokens": integer(1),
    "data.eval_max_tokens": integer(1, none=True),
    "data.train_max_len": integer(1, none=True),
    "data.max_sentences": integer(1, none=True),
    "data.max_src_len": integer(1, none=True),
    "data.max_tgt_len": integer(1, none=True),
    "data.num_workers": integer(0),
    "data.shared_vocab": boolean(),
    "data.seed": integer(0, UINT32_MAX),
    # decoding and measurements
    "module.val_bleu": boolean(),
    "module.test_greedy": boolean(),
    "module.val_beam_size": integer(1),
    "module.label_smoothing": Spec(lambda v: _is_number(v) and 0 <= v < 1, "a number in [0, 1)"),
    "module.decoding.beam_size": integer(1),
    "module.decoding.length_penalty": number(0),
    "module.decoding.length_normalization": one_of("gnmt", "fairseq"),
    "module.decoding.min_len": integer(0),
    "module.decoding.max_len": integer(1, none=True),
    "module.decoding.max_len_a": number(0),
    "module.decoding.max_len_b": integer(0),
    "measure.decode_sentences": integer(1, none=True, note=" (null: the whole test set)"),
    "measure.decode_tokens": integer(1),
    "measure.decode_warmup_batches": integer(0),
    "measure.peak_flops_seconds": number(0, strict=True),
    "measure.attention_examples": integer(0),
    "measure.throughput_warmup_steps": integer(0),
    "compare.param_budget": integer(1, none=True),
}
# The keys run.py reads from `measure:`; a preset that merges another key there (a misplaced line) is a mistake
# Hydra cannot see, because presets may add keys.
MEASURE_KEYS = ("length_buckets", "decode_sentences", "decode_tokens", "decode_warmup_batches",
                "peak_flops_seconds", "attention_examples", "throughput_warmup_steps")

# Keys a `_target_` node may hold that its callable does not take: run.py removes them before instantiating.
NOT_ARGUMENTS = {"model": {"name"}}


def _show(value) -> str:
    if isinstance(value, (DictConfig, ListConfig)):
        value = OmegaConf.to_container(value)
    return repr(value) if isinstance(value, str) else str(value)


def check_specs(cfg: DictConfig) -> None:
    for key, spec in SPECS.items():
        present, value = lookup(cfg, key)
        if not present:
            continue
        spec = spec() if not isinstance(spec, Spec) else spec
        if not spec.ok(value):
            raise ConfigError(f"{key}={_show(value)}: must be {spec.allowed}")


def check_cross_keys(cfg: DictConfig) -> None:
    """Relations between keys that each look fine alone."""
    if lookup(cfg, "scheduler.kind")[1] == "cosine":
        total, epochs = lookup(cfg, "scheduler.total_steps")[1], lookup(cfg, "trainer.max_epochs")[1]
        if not (is_int(total) and total >= 1) and not (is_int(epochs) and epochs >= 1):
            raise ConfigError(f"scheduler.total_steps={_show(total)}: the cosine schedule needs the update it ends at "
                              "(default trainer.max_steps, else the updates of trainer.max_epochs; neither is set): "
                              "set scheduler.total_steps=N")
    min_len, max_len = lookup(cfg, "module.decoding.min_len")[1], lookup(cfg, "module.decoding.max_len")[1]
    if min_len is not None and max_len is not None and min_len > max_len:
        raise ConfigError(f"module.decoding.min_len={min_len}: must not exceed module.decoding.max_len={max_len}")
    if lookup(cfg, "module.val_bleu")[1] is False:
        for name, callback in (lookup(cfg, "callbacks")[1] or {}).items():
            if isinstance(callback, DictConfig) and callback.get("monitor") == "val/bleu":
                raise ConfigError(f"callbacks.{name}.monitor=val/bleu: needs module.val_bleu=true (validation BLEU "
                                  f"is only computed then), or monitor val/nll")
    unknown = sorted(set(lookup(cfg, "measure")[1] or {}) - set(MEASURE_KEYS))
    if unknown:
        raise ConfigError(f"measure.{', measure.'.join(unknown)}: unknown key (known: {', '.join(MEASURE_KEYS)})")
    edges = lookup(cfg, "measure.length_buckets")[1]
    if edges is None or not all(is_int(e) and e > 0 for e in edges) \
            or not all(b > a for a, b in zip(edges, list(edges)[1:])):
        raise ConfigError(f"measure.length_buckets={_show(edges)}: must be increasing positive word counts "
                          f"(bucket upper edges)")


def _locate(path: str, key: str):
    from hydra.utils import get_object

    try:
        return get_object(path)
    except Exception as error:  # noqa: BLE001 - any import failure is the same mistake: a wrong _target_
        raise ConfigError(f"{key}._target_={path}: cannot be imported ({type(error).__name__})") from None


def _walk_targets(node, prefix: str = ""):
    if isinstance(node, DictConfig):
        if "_target_" in node:
            yield prefix.rstrip("."), node
        for key in node:
            if key != "hydra":
                yield from _walk_targets(node._get_node(key), f"{prefix}{key}.")


def check_targets(cfg: DictConfig) -> None:
    """Every key of a `_target_` node must be an argument of the callable it builds."""
    for key, node in _walk_targets(cfg):
        target = _locate(node._target_, key)
        try:
            parameters = inspect.signature(target).parameters
        except (TypeError, ValueError):  # builtins without a signature: nothing to compare against
            continue
        if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
            continue
        allowed = set(parameters) | NOT_ARGUMENTS.get(key, set())
        for name in node:
            if name.startswith("_") or name in allowed:
                continue
            close = difflib.get_close_matches(name, sorted(allowed), n=1)
            hint = f"did you mean {key}.{close[0]}?" if close else \
                f"{node._target_} takes: {', '.join(sorted(p for p in allowed if not p.startswith('_')))}"
            raise ConfigError(f"{key}.{name}={_show(node[name])}: not an argument of {node._target_}; {hint}")


def check_settings(cfg: DictConfig) -> None:
    check_targets(cfg)
    check_specs(cfg)
    check_cross_keys(cfg)
