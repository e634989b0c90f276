"""Validation of the composed config, in one place, before any data or model is built.

Every problem is a `ConfigError` whose message is one line naming the key, the bad value and what is allowed;
train.py prints it and exits with status 2. The model's own keys are checked by its family
(`validate_config` on the class that `model._target_` names), so a new architecture brings its checks along.
"""
from __future__ import annotations

from omegaconf import DictConfig

from seqbench.errors import ConfigError, positive_int, probability, require  # noqa: F401 - ConfigError re-exported
from seqbench.nested import get_path

# The keys run.py reads from `measure:`; a preset that merges another key there (a misplaced line) is a mistake
# Hydra cannot see, because presets may add keys.
MEASURE_KEYS = ("length_buckets", "decode_sentences", "decode_warmup_batches", "peak_flops_seconds",
                "attention_examples")


def _positive_int(cfg, key: str, allow_none: bool = False) -> None:
    positive_int(get_path(cfg, key), key, allow_none)


def validate(cfg: DictConfig) -> None:
    from seqbench.models.interface import family_of  # imports torch: not before a bad override has been reported

    model = get_path(cfg, "model")
    family_of(model).validate_config(model)
    probability(get_path(cfg, "module.label_smoothing"), "module.label_smoothing")
    _positive_int(cfg, "data.max_tokens")
    _positive_int(cfg, "data.eval_max_tokens", allow_none=True)
    _positive_int(cfg, "data.train_max_len", allow_none=True)
    vocab = get_path(cfg, "data.vocab_size")
    require(isinstance(vocab, int) and vocab >= 16, f"data.vocab_size={vocab!r}: must be an integer >= 16")
    _positive_int(cfg, "module.decoding.beam_size")
    alpha = get_path(cfg, "module.decoding.length_penalty", 0.0)
    require(isinstance(alpha, (int, float)) and alpha >= 0,
            f"module.decoding.length_penalty={alpha!r}: must be >= 0")
    min_len, max_len = get_path(cfg, "module.decoding.min_len", 0), get_path(cfg, "module.decoding.max_len")
    require(isinstance(min_len, int) and not isinstance(min_len, bool) and min_len >= 0,
            f"module.decoding.min_len={min_len!r}: must be an integer >= 0")
    _positive_int(cfg, "module.decoding.max_len", allow_none=True)
    require(max_len is None or min_len <= max_len,
            f"module.decoding.min_len={min_len}: must not exceed module.decoding.max_len={max_len}")
    _positive_int(cfg, "compare.param_budget", allow_none=True)
    unknown = sorted(set(get_path(cfg, "measure", {})) - set(MEASURE_KEYS))
    require(not unknown, f"measure.{', measure.'.join(unknown)}: unknown key (known: {', '.join(MEASURE_KEYS)})")
    _positive_int(cfg, "measure.decode_sentences", allow_none=True)
    edges = get_path(cfg, "measure.length_buckets")
    require(edges is not None and all(isinstance(e, int) and e > 0 for e in edges)
            and all(b > a for a, b in zip(edges, list(edges)[1:])),
            f"measure.length_buckets={edges!r}: must be increasing positive word counts (bucket upper edges)")
    threads = get_path(cfg, "threads")
    require(threads is None or isinstance(threads, int) and threads > 0,
            f"threads={threads!r}: must be a positive integer or null (torch's default)")
    from seqbench.settings_check import check_settings  # Trainer/optimizer/scheduler/data keys (a typed table)

    check_settings(cfg)


def _search_dirs(overrides: list[str], conf_dir: str) -> list:
    """conf/ plus the local folders of a `hydra.searchpath=[file://...]` override (a user's own configs)."""
    from pathlib import Path

    dirs = [Path(conf_dir)]
    for override in overrides:
        key, _, value = override.partition("=")
        if key.lstrip("+") == "hydra.searchpath":
            for entry in value.strip("[]").split(","):
                entry = entry.strip().strip("'\"")
                if entry.startswith("file://"):
                    dirs.append(Path(entry[len("file://"):]))
    return dirs


def check_group_choices(overrides: list[str], conf_dir: str) -> None:
    """`model=foo` where no model/foo.yaml exists in conf/ (or a searchpath folder): one line with the choices.

    Hydra would report it too, but over several lines; this runs before Hydra composes anything.
    """
    dirs = _search_dirs(overrides, conf_dir)
    for override in overrides:
        key, sep, value = override.lstrip("+~").partition("=")
        groups = [d / key for d in dirs if (d / key).is_dir()]
        if not sep or "." in key or not groups or value in ("", "null"):
            continue
        choices = sorted({p.stem for group in groups for p in group.glob("*.yaml")})
        for choice in value.strip("[]").split(","):  # multirun: model=a,b; several configs: logger=[csv,wandb]
            if choice not in choices:
                raise ConfigError(f"{key}={choice!r}: allowed values are {', '.join(choices)}")
