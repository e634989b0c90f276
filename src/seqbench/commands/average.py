"""Checkpoint averaging: `seqbench average RUN_DIR|CKPT... [--last N] --output avg.ckpt`.

The parameters of several checkpoints of one training run, averaged element-wise (seqbench.rundir.averaging). A
run directory contributes its recent checkpoints, kept with `callbacks.recent_checkpoints.save_top_k=N` (one every
`every_n_train_steps` updates, off by default); checkpoint files are taken as given. `--last N` keeps the N newest by
update. The output is the newest input with its weights replaced by the average, so it works wherever a checkpoint
does: `python train.py train=false ckpt_path=avg.ckpt` evaluates it, `seqbench translate RUN_DIR --checkpoint
avg.ckpt` translates with it.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from seqbench.commands.arguments import ArgumentParser
from seqbench.common.io import atomic_torch_save, check_writable
from seqbench.rundir.averaging import average_checkpoints


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The command's arguments (one convention for every command: the tests parse the documented commands)."""
    parser = ArgumentParser(prog="seqbench average", description=__doc__.split("\n\n")[0])
    parser.add_argument("inputs", nargs="+", type=Path, help="run directories and/or .ckpt files of one run")
    parser.add_argument("--last", type=int, help="average only the N newest checkpoints (by update)")
    parser.add_argument("--output", type=Path, required=True, help="the averaged checkpoint to write")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    check_writable(args.output)
    averaged, sources = average_checkpoints(args.inputs, args.last)
    atomic_torch_save(averaged, args.output)
    steps = ", ".join(str(step) for _, step in sources)
    print(f"averaged {len(sources)} checkpoints (updates {steps}) -> {args.output}", file=sys.stderr)

