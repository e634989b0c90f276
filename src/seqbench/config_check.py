"""Validation of the composed config, in one place, before any data or model is built.

Every problem is a `ConfigError` whose message is one line naming the key, the bad value and what is allowed;
train.py prints it and exits with status 2.
"""
from __future__ import annotations

from omegaconf import DictConfig

MODELS = ("transformer", "rnn", "cnn")
RNN_CELLS = ("gru", "lstm")
RNN_ATTENTION = ("none", "bahdanau", "luong_dot", "luong_general", "luong_concat")
# The keys run.py reads from `measure:`; a preset that merges another key there (a misplaced line) is a mistake
# Hydra cannot see, because presets may add keys.
MEASURE_KEYS = ("length_buckets", "decode_sentences", "decode_warmup_batches", "peak_flops_seconds",
                "attention_examples")


class ConfigError(ValueError):
    pass


def _get(cfg: DictConfig, key: str, default=None):
    node = cfg
    for part in key.split("."):
        if not isinstance(node, DictConfig) or part not in node:
            return default
        node = node[part]
    return node


def _require(ok: bool, message: str) -> None:
    if not ok:
        raise ConfigError(message)


def _positive_int(cfg, key: str, allow_none: bool = False) -> None:
    value = _get(cfg, key)
    if value is None and allow_none:
        return
    _require(isinstance(value, int) and not isinstance(value, bool) and value > 0,
             f"{key}={value!r}: must be a positive integer")


def _probability(cfg, key: str) -> None:
    value = _get(cfg, key)
    if value is not None:
        _require(isinstance(value, (int, float)) and 0 <= value < 1, f"{key}={value!r}: must be in [0, 1)")


def _choice(cfg, key: str, allowed: tuple[str, ...]) -> None:
    value = _get(cfg, key)
    _require(value in allowed, f"{key}={value!r}: allowed values are {', '.join(allowed)}")


def validate(cfg: DictConfig) -> None:
    _choice(cfg, "model.name", MODELS)
    name = cfg.model.name
    if name == "transformer":
        for key in ("d_model", "n_heads", "encoder_layers", "decoder_layers", "d_ff", "max_positions"):
            _positive_int(cfg, f"model.{key}")
        d_model, n_heads = cfg.model.d_model, cfg.model.n_heads
        _require(d_model % n_heads == 0, f"model.n_heads={n_heads}: must divide model.d_model={d_model}")
        _require(d_model % 2 == 0 or cfg.model.learned_positions,
                 f"model.d_model={d_model}: sinusoidal positions need an even d_model")
    elif name == "rnn":
        _choice(cfg, "model.cell", RNN_CELLS)
        _choice(cfg, "model.attention", RNN_ATTENTION)
        for key in ("embed_dim", "hidden_size", "encoder_layers", "decoder_layers"):
            _positive_int(cfg, f"model.{key}")
    elif name == "cnn":
        for key in ("embed_dim", "max_positions", "out_embed_dim"):
            _positive_int(cfg, f"model.{key}")
        for side in ("encoder", "decoder"):
            layers = _get(cfg, f"model.{side}_layers")
            _require(bool(layers), f"model.{side}_layers={layers!r}: must be a non-empty list of [channels, kernel]")
            for i, layer in enumerate(layers):
                ok = not isinstance(layer, (int, str)) and len(layer) == 2 \
                    and all(isinstance(v, int) and v > 0 for v in layer)
                _require(ok, f"model.{side}_layers[{i}]={layer!r}: must be [channels, kernel_width], positive ints")
    for key in ("model.dropout", "model.attention_dropout", "module.label_smoothing"):
        _probability(cfg, key)
    _positive_int(cfg, "data.max_tokens")
    _positive_int(cfg, "data.eval_max_tokens", allow_none=True)
    _positive_int(cfg, "data.train_max_len", allow_none=True)
    vocab = _get(cfg, "data.vocab_size")
    _require(isinstance(vocab, int) and vocab >= 16, f"data.vocab_size={vocab!r}: must be an integer >= 16")
    _positive_int(cfg, "module.decoding.beam_size")
    alpha = _get(cfg, "module.decoding.length_penalty", 0.0)
    _require(isinstance(alpha, (int, float)) and alpha >= 0,
             f"module.decoding.length_penalty={alpha!r}: must be >= 0")
    _positive_int(cfg, "compare.param_budget", allow_none=True)
    unknown = sorted(set(_get(cfg, "measure", {})) - set(MEASURE_KEYS))
    _require(not unknown, f"measure.{', measure.'.join(unknown)}: unknown key (known: {', '.join(MEASURE_KEYS)})")
    _positive_int(cfg, "measure.decode_sentences", allow_none=True)
    edges = _get(cfg, "measure.length_buckets")
    _require(edges is not None and all(isinstance(e, int) and e > 0 for e in edges)
             and all(b > a for a, b in zip(edges, list(edges)[1:])),
             f"measure.length_buckets={edges!r}: must be increasing positive word counts (bucket upper edges)")
    threads = _get(cfg, "threads")
    _require(threads is None or isinstance(threads, int) and threads > 0,
             f"threads={threads!r}: must be a positive integer or null (torch's default)")


def check_group_choices(argv: list[str], conf_dir: str) -> None:
    """A malformed override, or a group choice with no conf/<group>/<choice>.yaml, as one line naming the choices.

    `argv` is the command line after the program name; its overrides are read by Hydra's own argument and override
    parsers, so whatever Hydra composes passes: lists (`logger=[csv,wandb]`), sweeps (`model=transformer,cnn`,
    `choice(...)`, `range(...)`, `glob(...)`), `+`/`~` prefixes, `group@package=...`. Hydra would report a bad choice
    too, but over several lines; this runs before Hydra composes anything.
    """
    import argparse
    from pathlib import Path

    from hydra._internal.utils import get_args_parser  # the parser @hydra.main uses: flags vs overrides
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.core.override_parser.types import ValueType
    from hydra.errors import OverrideParseException

    parser = get_args_parser()
    parser.exit_on_error = False
    try:
        overrides = parser.parse_known_args(argv)[0].overrides
    except argparse.ArgumentError:
        return  # a bad flag: Hydra's own usage message says it
    override_parser = OverridesParser.create()
    for text in overrides:
        try:
            (override,) = override_parser.parse_overrides([text])
        except OverrideParseException as error:
            raise ConfigError(f"cannot parse override {text!r}: {str(error).splitlines()[0]}") from None
        group = Path(conf_dir) / override.key_or_group
        if override.is_delete() or not group.is_dir():
            continue  # a config key (model.n_heads=...), a group outside conf/ (hydra/launcher) or a deletion
        available = sorted(p.stem for p in group.glob("*.yaml"))
        if override.value_type == ValueType.GLOB_CHOICE_SWEEP:
            if not override.value().filter(available):
                raise ConfigError(f"{text}: matches no {override.key_or_group} (allowed values are "
                                  f"{', '.join(available)})")
            continue
        if override.value_type == ValueType.INTERVAL_SWEEP:
            raise ConfigError(f"{text}: a config group takes names, not an interval (allowed values are "
                              f"{', '.join(available)})")
        values = list(override.sweep_iterator()) if override.is_sweep_override() else [override.value()]
        for value in values:
            for choice in value if isinstance(value, list) else [value]:  # logger=[csv,wandb]: two choices
                if choice is not None and str(choice) not in available:
                    raise ConfigError(f"{override.key_or_group}={str(choice)!r}: allowed values are "
                                      f"{', '.join(available)}")
