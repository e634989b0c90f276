"""A W&B sweep file, read and checked as W&B would, and translated into an Optuna study.

The schema is W&B's own (wandb_sweep_schema.json, copied from the `sweeps` package 0.3.0, MIT licence beside it):
the `sweeps` package itself pins numpy<2 and so cannot be installed next to this project's stack.
Translation, one W&B concept to one Optuna one:
  method grid                    -> every grid point enqueued in the file's order (`grid_points`), so trials that run
                                    at once never repeat one (Optuna's GridSampler may, in parallel)
  method random / bayes          -> RandomSampler / TPESampler (a Bayesian optimiser: tree-structured Parzen
                                    estimators where W&B's controller fits a Gaussian process)
  values / value                 -> suggest_categorical / a fixed argument
  int_uniform, uniform           -> suggest_int, suggest_float
  log_uniform_values             -> suggest_float(log=True)
  log_uniform (bounds in log)    -> suggest_float(log=True) between exp(min) and exp(max)
  q_uniform                      -> suggest_float(step=q)
  early_terminate: hyperband     -> HyperbandPruner(min_resource=min_iter, max_resource=max_iter, reduction_factor=eta)
Anything else (normal, beta, nested or weighted parameters) is refused with one line rather than approximated.
"""
from __future__ import annotations

import json
import math
import numbers
import os
import sys
from pathlib import Path
from typing import Any

import yaml

from seqbench.common.errors import ConfigError, InputError

SCHEMA_PATH = Path(__file__).with_name("wandb_sweep_schema.json")


class SweepError(ConfigError):
    """A sweep file W&B would reject, or one this runner cannot translate faithfully: one line, exit status 2."""



def require_optuna() -> None:
    """Local sweeps and searches propose and prune with Optuna and build trials' commands with W&B's helpers, both of
    the `sweep` extra: one line when either is missing."""
    for module, name in (("optuna", "Optuna"), ("wandb", "W&B's command builder")):
        try:
            __import__(module)
        except ImportError:
            raise InputError(f"local sweeps need {name}: pip install 'seqbench[sweep]'") from None

def load(path: str | Path) -> dict:
    """The sweep file as a dict, checked against W&B's schema."""
    path = Path(path)
    if not path.is_file():
        raise SweepError(f"{path}: no such sweep file")
    try:
        config = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as error:
        raise SweepError(f"{path}: not valid YAML ({str(error).splitlines()[0]})") from None
    validate(config, str(path))
    return config


def validate(config: Any, where: str = "sweep") -> None:
    """W&B's JSON schema (with its `float`/`integer` formats) and its min < max rule; first violation as one line."""
    import jsonschema

    if not isinstance(config, dict):
        raise SweepError(f"{where}: a sweep file is a mapping with method, metric and parameters")
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    formats = jsonschema.FormatChecker()
    formats.checks("float")(lambda value: isinstance(value, float))
    formats.checks("integer")(lambda value: isinstance(value, int))
    errors = sorted(jsonschema.Draft7Validator(schema, format_checker=formats).iter_errors(config),
                    key=lambda e: list(e.absolute_path))
    if errors:
        error = errors[0]
        location = ".".join(map(str, error.absolute_path)) or "top level"
        detail = error.message if len(error.message) < 200 else error.message[:200] + "..."
        raise SweepError(f"{where}: {location}: {detail} (W&B's sweep schema)")
    for name, spec in config.get("parameters", {}).items():
        low, high = spec.get("min"), spec.get("max")
        if isinstance(low, numbers.Real) and isinstance(high, numbers.Real) and low >= high:
            raise SweepError(f"{where}: parameters.{name}: min {low} is not less than max {high}")


def kind(spec: dict) -> str:
    """The parameter's distribution as W&B infers it when `distribution` is left out."""
    if "value" in spec:
        return "constant"
    if "values" in spec:
        return "categorical"
    if "distribution" in spec:
        return spec["distribution"]
    return "int_uniform" if isinstance(spec.get("min"), int) and isinstance(spec.get("max"), int) else "uniform"


SUPPORTED = ("constant", "categorical", "int_uniform", "uniform", "log_uniform_values", "log_uniform", "q_uniform")


def searched(config: dict) -> dict[str, dict]:
    """The parameters the search varies (not the constants), each checked to be translatable."""
    out = {}
    for name, spec in config["parameters"].items():
        distribution = kind(spec)
        if distribution not in SUPPORTED:
            raise SweepError(f"parameters.{name}: distribution {distribution!r} is not supported by local sweeps "
                             f"(supported: {', '.join(SUPPORTED)})")
        if "probabilities" in spec or "parameters" in spec:
            raise SweepError(f"parameters.{name}: weighted or nested parameters are not supported by local sweeps")
        if distribution == "categorical" and not all(v is None or isinstance(v, (bool, int, float, str))
                                                     for v in spec["values"]):
            raise SweepError(f"parameters.{name}: local sweeps take numbers and strings as values, "
                             f"not {spec['values']}")
        if distribution != "constant":
            out[name] = spec
    if config["method"] == "grid":
        loose = [n for n, s in out.items() if kind(s) != "categorical"]
        if loose:
            raise SweepError(f"parameters.{loose[0]}: method grid needs a list of values for every parameter")
    return out


def constants(config: dict) -> dict[str, Any]:
    return {name: spec["value"] for name, spec in config["parameters"].items() if kind(spec) == "constant"}


def grid_size(config: dict) -> int | None:
    if config["method"] != "grid":
        return None
    return math.prod(len(spec["values"]) for spec in searched(config).values())


def suggest(trial, config: dict) -> dict[str, Any]:
    """One trial's parameters (searched and constant), in the file's order, from an Optuna trial."""
    params = {}
    for name, spec in config["parameters"].items():
        distribution = kind(spec)
        if distribution == "constant":
            params[name] = spec["value"]
        elif distribution == "categorical":
            params[name] = trial.suggest_categorical(name, spec["values"])
        elif distribution == "int_uniform":
            params[name] = trial.suggest_int(name, spec["min"], spec["max"])
        elif distribution == "uniform":
            params[name] = trial.suggest_float(name, spec["min"], spec["max"])
        elif distribution == "log_uniform_values":
            params[name] = trial.suggest_float(name, spec["min"], spec["max"], log=True)
        elif distribution == "log_uniform":
            params[name] = trial.suggest_float(name, math.exp(spec["min"]), math.exp(spec["max"]), log=True)
        elif distribution == "q_uniform":
            params[name] = trial.suggest_float(name, spec["min"], spec["max"], step=spec.get("q", 1.0))
    return params


def corners(config: dict) -> list[dict[str, Any]]:
    """Proposals a test composes to prove that whatever the search picks is a valid config: the first value of every
    parameter (the low end of a range), then each other categorical value and each range's other end, one parameter
    at a time (a range's inside composes if its ends do). One factor at a time, so a file with many parameters stays a
    few dozen compositions; parameters whose values constrain each other (heads that must divide the width) belong
    in one categorical list of their combinations."""
    axes = {}
    for name, spec in config["parameters"].items():
        distribution = kind(spec)
        if distribution == "constant":
            axes[name] = [spec["value"]]
        elif distribution == "categorical":
            axes[name] = list(spec["values"])
        elif distribution == "log_uniform":
            axes[name] = [math.exp(spec["min"]), math.exp(spec["max"])]
        else:
            axes[name] = [spec["min"], spec["max"]]
    base = {name: values[0] for name, values in axes.items()}
    return [base] + [{**base, name: value} for name, values in axes.items() for value in values[1:]]


def grid_points(config: dict) -> list[dict[str, Any]]:
    """Every combination of a grid sweep's values, the first parameter varying slowest (the file's order)."""
    import itertools

    space = {name: spec["values"] for name, spec in searched(config).items()}
    return [dict(zip(space, values)) for values in itertools.product(*space.values())]


def sampler(config: dict, seed: int | None):
    import optuna

    method = config["method"]
    if method in ("grid", "random"):  # grid: every trial's parameters are fixed by grid_points; nothing is sampled
        return optuna.samplers.RandomSampler(seed=seed)
    if method == "bayes":
        return optuna.samplers.TPESampler(seed=seed)
    raise SweepError(f"method {method!r}: local sweeps run grid, random and bayes")


def pruner(config: dict):
    """W&B's hyperband early termination as Optuna's HyperbandPruner; iterations are validations (val/bleu points),
    as W&B counts the times the metric was logged."""
    import optuna

    stopping = config.get("early_terminate")
    if not stopping:
        return optuna.pruners.NopPruner()
    eta = stopping.get("eta", 3)
    if eta != int(eta):
        raise SweepError(f"early_terminate.eta={eta}: local sweeps need an integer eta (Optuna's reduction_factor)")
    eta = int(eta)
    if "min_iter" in stopping:
        min_iter, max_iter = stopping["min_iter"], stopping.get("max_iter", "auto")
    else:  # W&B: brackets at max_iter / eta^k for k = s, ..., 1
        max_iter = stopping["max_iter"]
        min_iter = max(1, int(max_iter / eta ** stopping["s"]))
    return optuna.pruners.HyperbandPruner(min_resource=min_iter, max_resource=max_iter, reduction_factor=eta)


def direction(config: dict) -> str:
    return config.get("metric", {}).get("goal", "minimize")  # W&B's default goal


def command(config: dict, params: dict[str, Any], args_json_file: Path) -> list[str]:
    """The trial's command line exactly as `wandb agent` builds it (W&B's own helpers fill in the macros), with
    ${interpreter} as this Python (the agent uses `python` from PATH: the same in an activated environment)."""
    from wandb.sdk.launch.sweeps.utils import create_sweep_command, create_sweep_command_args

    template = list(config.get("command") or ["${env}", "${interpreter}", "${program}", "${args}"])
    macros = create_sweep_command_args({"args": {name: {"value": value} for name, value in params.items()}})
    macros["interpreter"] = [sys.executable]
    macros["program"] = [str(config["program"])] if "program" in config else []
    macros["args_json_file"] = [str(args_json_file)]
    if os.name != "nt":
        macros["env"] = ["/usr/bin/env"]
    if "${args_json_file}" in template:
        args_json_file.write_text(macros["args_json"][0], encoding="utf-8")
    out = []
    for chunk in create_sweep_command(template):
        chunk = str(chunk)
        out += (macros.get(chunk[2:-1]) or []) if chunk.startswith("${") and chunk.endswith("}") else [chunk]
    return out


def hydra_overrides(config: dict, params: dict[str, Any]) -> list[str]:
    """The Hydra overrides a trial's command passes to train.py (everything after the program)."""
    args = command(config, params, Path(os.devnull))
    program = str(config.get("program", ""))
    return args[args.index(program) + 1:] if program in args else args
