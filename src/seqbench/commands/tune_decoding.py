"""`seqbench tune-decoding RUN... --out DIR`: the beam size and length penalty of a model, chosen on validation by
one rule for every family (seqbench.analysis.decoding_tuning). RUN: run directories of one model (its seeds)."""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from seqbench.analysis import decoding_tuning
from seqbench.commands.arguments import ArgumentParser
from seqbench.common.errors import InputError
from seqbench.common.io import atomic_write_text
from seqbench.common.portable import shown
from seqbench.decoding.search import NORMALIZATIONS


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = ArgumentParser(prog="seqbench tune-decoding", description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", type=Path, help="run directories of one model (its seeds)")
    parser.add_argument("--out", type=Path, required=True, help="folder for decoding.json and decoding.md")
    parser.add_argument("--beams", type=int, nargs="+", default=list(decoding_tuning.BEAMS))
    parser.add_argument("--length-penalties", type=float, nargs="+", default=list(decoding_tuning.LENGTH_PENALTIES))
    parser.add_argument("--normalizations", nargs="+", default=list(NORMALIZATIONS), choices=NORMALIZATIONS)
    parser.add_argument("--split", default="valid", help="the split to tune on (never test)")
    parser.add_argument("--threads", type=int, help="torch threads (default: torch's)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.split == "test":
        raise InputError("--split test: decoding is tuned on validation; the test split scores the choice")
    if min(args.beams) < 1 or min(args.length_penalties) < 0:
        raise InputError("--beams are at least 1 and --length-penalties at least 0")
    if args.threads is not None:
        import torch

        torch.set_num_threads(args.threads)
    settings = decoding_tuning.grid(args.beams, args.length_penalties, args.normalizations)
    result = decoding_tuning.tune_decoding(args.runs, settings, args.split)
    # the runs as the record names them: relative to the working directory, else RUNS/<name> (no machine's folders)
    result["runs"] = [shown(path, f"RUNS/{path.resolve().name}") for path in args.runs]
    args.out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(args.out / "decoding.json", json.dumps(result, indent=2) + "\n")
    atomic_write_text(args.out / "decoding.md", decoding_tuning.markdown(result))
    print(" ".join(decoding_tuning.overrides(result["chosen"])))
    print(f"table: {args.out / 'decoding.md'}")
    return 0
