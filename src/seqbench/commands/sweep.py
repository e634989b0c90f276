"""`seqbench sweep SWEEP.yaml [--count N] [--out DIR] [--seed S] [--parallel N]`: a W&B sweep file's trials
(seqbench.sweep.runner) or a successive-halving search file's jobs (seqbench.sweep.halving)."""
from __future__ import annotations

import argparse
import signal
import sys

from seqbench.commands.arguments import ArgumentParser
from seqbench.common.errors import InputError


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The command's arguments (one convention for every command: the tests parse the documented commands)."""
    parser = ArgumentParser(prog="seqbench sweep",
                                     description="Run a W&B sweep file's trials locally, without a W&B server, "
                                                 "or a successive-halving recipe search (search: successive_halving).")
    parser.add_argument("sweep", help="a W&B sweep file, e.g. sweeps/transformer_shape.yaml, or a search file, "
                                      "e.g. searches/recipe_halving.yaml")
    parser.add_argument("--count", type=int, help="at most this many trials (like `wandb agent --count`); the file's "
                                                  "run_cap and a grid's size also limit them")
    parser.add_argument("--out", help="sweep directory (default: logs/sweeps/<name>/<time>/)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random and Bayesian samplers, or of a "
                                                            "search file's Sobol draws")
    parser.add_argument("--parallel", type=int, default=1, metavar="N",
                        help="trials at once, each with 1/N of the cores (default 1)")
    args = parser.parse_args(argv)
    if args.count is not None and args.count < 1:
        parser.error("--count must be a positive integer")
    if args.parallel < 1:
        parser.error("--parallel must be a positive integer")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    from seqbench.sweep import halving
    from seqbench.sweep.spec import require_optuna

    require_optuna()
    from seqbench.sweep.runner import default_sweep_dir, run_sweep

    try:
        if halving.is_search_file(_read_yaml(args.sweep)):
            if args.count is not None:
                raise InputError("--count: a successive-halving search runs its file's configurations and rungs; "
                                 "set configurations in the file instead")
            config = halving.load(args.sweep)
            sweep_dir = halving.run_search(args.sweep, args.out or default_sweep_dir(config), args.seed,
                                           parallel=args.parallel)
        else:
            sweep_dir = run_sweep(args.sweep, args.count, args.out, args.seed, parallel=args.parallel)
    except KeyboardInterrupt as error:  # Ctrl-C or SIGTERM: the running trials were stopped, their last.ckpt kept
        print("sweep interrupted: the same command resumes it; the trials it cut continue from their last.ckpt",
              file=sys.stderr)
        return 128 + getattr(error, "signum", signal.SIGINT)
    print(f"summary: {sweep_dir / 'summary.md'}")
    return 0



def _read_yaml(path: str):
    """The file's YAML, or None when it is missing or unreadable (the runner then says what is wrong)."""
    import yaml

    try:
        with open(path, encoding="utf-8") as f:
            return yaml.safe_load(f)
    except (OSError, yaml.YAMLError):
        return None
