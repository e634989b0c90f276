"""Whether a config may run: decided here, in one place, before any data or model is built or anything is written.

`validate(cfg)` runs on the composed config first thing in every job (seqbench.training.run) and in the tests. It
decides what Hydra cannot see; what Hydra can see it reports itself and is not second-guessed: a malformed override
(OverrideParseException), a group choice with no config, swept or not (MissingConfigException, which names the
group's configs), an unknown key (ConfigCompositionException). seqbench.common.errors.one_line words those as one
line from the exceptions' attributes. Every problem found here is a ConfigError whose message is one line,
`<key>=<value>: <what is allowed>`; `seqbench train` prints it after `error: ` and exits with status 2. In order:

- `check_model`: the model's keys, by its family (`validate_config` on the class that `model._target_` names), so a
  new architecture brings its checks along;
- `check_targets`: every `_target_` node against its callable's signature: each key is an argument
  (`+trainer.max_step=5` names trainer.max_steps), and an argument that the callable types as a `Literal` holds one
  of its values (`trainer.precision`, `trainer.deterministic`, `callbacks.lr_monitor.logging_interval`): Lightning's
  own declared list, nothing copied;
- `SPECS`: the table of every other key a user sets (project, Trainer, optimizer, scheduler, data, decoding,
  measure), one line per key in the vocabulary of seqbench.common.specs, checked when the key is present;
- `check_corpus`: the corpus's keys, by its class (`validate_config` on the class that `data.corpus._target_`
  names), before any corpus is built or any of its files is read;
- `check_cross_keys`: relations between keys that each look fine alone;
- with `environment`, this machine (seqbench.config.environment): devices, writable directories.

Besides `validate`: `check_group_overrides`, the one look at the command line before Hydra runs (see there why);
`check_decoding`, the same checks for decoding settings that come from a run's model.json and a command's options
rather than a config; and the config against the tokenised data, which needs the data (seqbench.config.against_data,
before the first batch).
"""
from __future__ import annotations

import difflib
import inspect
import re
import types
import typing
from typing import Callable, Mapping, Sequence

from omegaconf import DictConfig, ListConfig, OmegaConf

from seqbench.common.errors import ConfigError
from seqbench.common.nested import get_path, lookup
from seqbench.common.specs import (
    Spec,
    boolean,
    check,
    check_keys,
    fraction,
    integer,
    is_int,
    is_number,
    number,
    one_of,
    show,
    text,
)
from seqbench.config.compose import compose, group_options, with_config_loader

UINT32_MAX = 2**32 - 1  # numpy's seed range, which Lightning's seed_everything enforces
# The profiler names Trainer(profiler=...) takes (its docs; tests/test_bad_input.py checks that Lightning accepts
# each); "xla" too, but only with torch_xla, which a seqbench run never has. A Profiler _target_ node also works.
LIGHTNING_PROFILERS = ("simple", "advanced", "pytorch")
MAX_TIME = re.compile(r"\d+:\d\d:\d\d:\d\d")  # Lightning's Timer format DD:HH:MM:SS


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
        and all(is_number(v) and v >= 0 for v in value.values())


def _devices(value) -> bool:
    if value == "auto" or is_int(value) and (value >= 1 or value == -1):
        return True
    if isinstance(value, str):  # "0,1" or "2": Lightning's device-string forms
        return re.fullmatch(r"-1|\d+|\d+(,\d+)*,?", value.strip()) is not None
    return isinstance(value, ListConfig) and len(value) > 0 and all(is_int(v) and v >= 0 for v in value)


def _strategy_spec() -> Spec:
    from lightning.pytorch.strategies import StrategyRegistry

    names = ("auto", *sorted(StrategyRegistry.available_strategies()))
    return Spec(lambda v: v in names or isinstance(v, DictConfig) and "_target_" in v,
                "a Lightning strategy name (auto, ddp, ddp_spawn, fsdp, deepspeed, ...; see "
                "lightning.pytorch.strategies.StrategyRegistry) or a _target_ node")


SPECS: dict[str, Spec | Callable[[], Spec]] = {
    # project
    "seed": integer(0, UINT32_MAX),
    "threads": integer(1, none=True, note=" (null: torch's default)"),
    "onednn_linear": boolean(),
    "train": boolean(),
    "test": boolean(),
    "quiet": boolean(),
    "time_budget": boolean(),
    "ckpt_path": text("a checkpoint file path", none=True),
    "init_from": text("a run directory, checkpoint or exported model", none=True),
    # Lightning Trainer (precision and deterministic: the values its signature declares, checked by check_targets)
    "trainer.max_steps": integer(-1, note=" (-1: no step limit)"),
    "trainer.max_epochs": integer(-1, none=True, note=" (-1: no epoch limit)"),
    "trainer.min_steps": integer(0, none=True),
    "trainer.min_epochs": integer(0, none=True),
    "trainer.max_time": Spec(_max_time, 'a duration "DD:HH:MM:SS" (e.g. "00:00:07:00"), '
                                        "{days,hours,minutes,seconds} or null"),
    "trainer.devices": Spec(_devices, 'a positive integer, -1 (all), "auto", or a list of device indices'),
    "trainer.num_nodes": integer(1),
    "trainer.strategy": _strategy_spec,
    "trainer.profiler": Spec(lambda v: v is None or v in LIGHTNING_PROFILERS
                             or isinstance(v, DictConfig) and "_target_" in v,
                             f"one of {', '.join(LIGHTNING_PROFILERS)}, null or a _target_ node (a Profiler)"),
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
                            and all(is_number(b) and 0 <= b < 1 for b in v), "two numbers in [0, 1)"),
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
    "data.tokenizer_sample": integer(1, none=True),
    "data.seed": integer(0, UINT32_MAX),
    # decoding and measurements
    "module.val_bleu": boolean(),
    "module.test_greedy": boolean(),
    "module.val_beam_size": integer(1),
    "module.label_smoothing": fraction(),
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
    "measure.target_bleu": number(0, high=100, none=True),
    "callbacks.plateau.window": Spec(lambda v: is_number(v) and 0 < v < 1, "a share of the updates in (0, 1)"),
    "callbacks.plateau.min_gain": number(0),
    "callbacks.plateau.min_steps": integer(0),
    "compare.param_budget": integer(1, none=True),
}
# The keys run.py reads from `measure:`; a preset that merges another key there (a misplaced line) is a mistake
# Hydra cannot see, because presets may add keys.
MEASURE_KEYS = ("length_buckets", "decode_sentences", "decode_tokens", "decode_warmup_batches",
                "peak_flops_seconds", "attention_examples", "throughput_warmup_steps", "target_bleu")

# Keys a `_target_` node may hold that its callable does not take: run.py removes them before instantiating.
NOT_ARGUMENTS = {"model": {"name"}}


def _check_length_bounds(decoding: Mapping, names: Mapping[str, str] = types.MappingProxyType({})) -> None:
    min_len, max_len = decoding.get("min_len"), decoding.get("max_len")
    if min_len is not None and max_len is not None and min_len > max_len:
        name = {key: names.get(key, f"module.decoding.{key}") for key in ("min_len", "max_len")}
        raise ConfigError(f"{name['min_len']}={min_len}: must not exceed {name['max_len']}={max_len}")


def check_decoding(decoding: Mapping, names: Mapping[str, str] = types.MappingProxyType({})) -> None:
    """Decoding settings that reach a decoder without a config, by the checks of `module.decoding` above: a run's
    model.json with a command's options over it (`seqbench translate`). `names`: how a message names a key, e.g.
    {"beam_size": "--beam"} (default: module.decoding.<key>)."""
    for key, value in decoding.items():
        spec = SPECS.get(f"module.decoding.{key}")
        if spec is not None:
            check(names.get(key, f"module.decoding.{key}"), value, spec)
    _check_length_bounds(decoding, names)


def check_cross_keys(cfg: DictConfig) -> None:
    """Relations between keys that each look fine alone."""
    if lookup(cfg, "scheduler.kind")[1] == "cosine":
        total, epochs = lookup(cfg, "scheduler.total_steps")[1], lookup(cfg, "trainer.max_epochs")[1]
        if not (is_int(total) and total >= 1) and not (is_int(epochs) and epochs >= 1):
            raise ConfigError(f"scheduler.total_steps={show(total)}: the cosine schedule needs the update it ends at "
                              "(default trainer.max_steps, else the updates of trainer.max_epochs; neither is set): "
                              "set scheduler.total_steps=N")
    _check_length_bounds(lookup(cfg, "module.decoding")[1] or {})
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
        raise ConfigError(f"measure.length_buckets={show(edges)}: must be increasing positive word counts "
                          f"(bucket upper edges)")


def _locate(path: str, key: str):
    from hydra.utils import get_object

    try:
        return get_object(path)
    except Exception as error:  # noqa: BLE001 - any import failure is the same mistake: a wrong _target_
        raise ConfigError(f"{key}._target_={path}: cannot be imported ({type(error).__name__})") from None


def _walk_targets(node, prefix: str = ""):
    """(key, node) of every `_target_` node, each where it is written: an interpolation (module.optimizer:
    ${optimizer}) is not followed, so a node is checked once, under its own key."""
    if isinstance(node, DictConfig):
        if "_target_" in node:
            yield prefix.rstrip("."), node
        for key in node:
            if key != "hydra" and not OmegaConf.is_interpolation(node, key) and not OmegaConf.is_missing(node, key):
                yield from _walk_targets(node[key], f"{prefix}{key}.")


def _literal_values(annotation) -> tuple | None:
    """The values an argument typed `Literal[...]` accepts (also inside a Union or Optional, which add None, and
    beside bool, which adds true and false); None when the type is not such an enumeration (nothing to check)."""
    union = typing.get_origin(annotation) in (typing.Union, types.UnionType)
    members = typing.get_args(annotation) if union else (annotation,)
    if not any(typing.get_origin(m) is typing.Literal for m in members):
        return None
    values: list = []
    for member in members:
        if typing.get_origin(member) is typing.Literal:
            values += typing.get_args(member)
        elif member is type(None):
            values.append(None)
        elif member is bool:
            values += [True, False]
        else:  # another type beside the Literal: not an enumeration
            return None
    return tuple(values)


def _word(value) -> str:
    """A value as it is written in a config: null, true, false, 32, bf16-mixed."""
    return value if isinstance(value, str) else show(value)


def _parameters(target) -> Mapping[str, inspect.Parameter] | None:
    """The callable's parameters with their annotations evaluated (as strings when they cannot be); None for a
    builtin without a signature."""
    try:
        return inspect.signature(target, eval_str=True).parameters
    except (TypeError, ValueError):
        return None
    except Exception:  # noqa: BLE001 - an annotation that names what only type checkers import: compare names only
        return inspect.signature(target).parameters


def check_targets(cfg: DictConfig) -> None:
    """Every key of a `_target_` node must be an argument of the callable it builds, and hold one of the values of
    an argument typed as a Literal."""
    for key, node in _walk_targets(cfg):
        target = _locate(node._target_, key)
        parameters = _parameters(target)
        if parameters is None or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
            continue
        allowed = set(parameters) | NOT_ARGUMENTS.get(key, set())
        for name in node:
            if name.startswith("_") or name in allowed:
                continue
            close = difflib.get_close_matches(name, sorted(allowed), n=1)
            hint = f"did you mean {key}.{close[0]}?" if close else \
                f"{node._target_} takes: {', '.join(sorted(p for p in allowed if not p.startswith('_')))}"
            raise ConfigError(f"{key}.{name}={show(node[name])}: not an argument of {node._target_}; {hint}")
        for name in node:
            values = _literal_values(parameters[name].annotation) if name in parameters else None
            if values is not None and node[name] not in values:
                words = ", ".join(dict.fromkeys(_word(v) for v in values))
                raise ConfigError(f"{key}.{name}={show(node[name])}: must be one of {words} (as {node._target_} "
                                  f"declares it)")


def check_model(model: Mapping) -> None:
    """The model config's keys, by its family's own checks (seqbench.models.interface.Seq2Seq.validate_config)."""
    from seqbench.models.interface import family_of  # imports torch: not before a bad override has been reported

    family_of(model).validate_config(model)


def check_corpus(cfg: DictConfig) -> None:
    """The corpus's keys, by its class's own checks (`validate_config` on the class that `data.corpus._target_`
    names, as a model family's), so the corpus is neither built nor opened with a bad key. A corpus class of the
    user's without such checks gets only check_targets' (each key an argument of its constructor)."""
    corpus = lookup(cfg, "data.corpus")[1]
    if isinstance(corpus, DictConfig) and "_target_" in corpus:
        validate_config = getattr(_locate(corpus._target_, "data.corpus"), "validate_config", None)
        if validate_config is not None:
            validate_config(corpus)


def preset_config(name: str) -> dict:
    """conf/model/<name>.yaml as Hydra composes it for `python train.py model=<name>`, checked by its family."""
    config = OmegaConf.to_container(compose([f"model={name}"]).model, resolve=True)  # Hydra: no such preset
    check_model(config)
    return config


def validate(cfg: DictConfig, environment: bool = False) -> None:
    """All the checks above; with `environment`, also this machine's devices and directories."""
    check_model(get_path(cfg, "model"))
    check_targets(cfg)
    check_keys(cfg, SPECS)
    check_corpus(cfg)
    check_cross_keys(cfg)
    if environment:
        from seqbench.config.environment import check_environment

        check_environment(cfg)


def _names(value) -> bool:
    """Whether an override's value is what a config group takes: a config name, a list of names or a dict."""
    return isinstance(value, (str, dict)) or isinstance(value, list) and all(isinstance(v, str) for v in value)


def check_group_overrides(argv: Sequence[str]) -> None:
    """The one look at the command line before Hydra runs, for what Hydra does not report in a way one line can be
    made of, from a config group override: a value that is no config name (`logger=null`, `model=1`, the numbers of
    `-m model=range(1,3)`) fails inside Hydra with a bare ValueError, and `glob(...)` matching no config
    (`-m model=glob(lstm*)`) makes a multirun of no jobs that exits 0 without a word. A name with no config, swept
    or not, Hydra reports itself before any job starts (its basic sweeper composes every job before launching one),
    as a MissingConfigException (seqbench.config.compose.missing_config).

    `argv` is the command line after the program name. Only its words that Hydra's own override parser reads as a
    non-name value or a glob are looked at (Hydra's flags and their values are never such an override; a malformed
    override is left to Hydra, which reports it), and only for a config group, whose configs Hydra's config loader
    lists (conf/)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.core.override_parser.types import ValueType
    from hydra.errors import OverrideParseException

    parser = OverridesParser.create()
    suspects = []
    for word in argv:
        try:
            (override,) = parser.parse_overrides([word])
        except OverrideParseException:
            continue
        if override.is_delete() or "." in override.key_or_group:  # a config key (trainer.max_steps=10), no group
            continue
        kind = override.value_type
        if kind is ValueType.GLOB_CHOICE_SWEEP:
            suspects.append((word, override))
        elif kind in (ValueType.RANGE_SWEEP, ValueType.INTERVAL_SWEEP) or not all(
                map(_names, override.sweep_iterator() if override.is_sweep_override() else [override.value()])):
            suspects.append((word, override))
    if not suspects:
        return

    def check_suspects(loader) -> None:
        for word, override in suspects:
            group = override.key_or_group
            options = group_options(group, loader)
            if not options:  # a top-level config key (seed=1): Hydra's business
                continue
            allowed = f"allowed values are {', '.join(options)}"
            if override.value_type is ValueType.GLOB_CHOICE_SWEEP:
                if not override.value().filter(options):
                    raise ConfigError(f"{word}: matches no {group} config ({allowed})")
                continue
            remove = f"; ~{group} removes it" if override.value() is None else ""
            raise ConfigError(f"{word}: {group} is a config group, its values are config names ({allowed}){remove}")

    with_config_loader(check_suspects)
