"""`python -m seqbench.report RUN_DIR... [--out DIR]`: see seqbench.report (a sweep directory: seqbench.report.sweep)."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from seqbench.report import write_report
from seqbench.report.sweep import is_sweep_dir, write_sweep_report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m seqbench.report", description=__doc__.split(":", 1)[0])
    parser.add_argument("runs", nargs="+", help="run or multirun directories (results.json found recursively), or "
                                                "one sweep directory of `python -m seqbench.sweep`")
    parser.add_argument("--out", help="output directory (default: report/ inside the first directory, else ./report)")
    parser.add_argument("--split", default="test", choices=["test", "valid"], help="split of the table and plots")
    parser.add_argument("--bootstrap", type=int, default=1000, help="paired bootstrap resamples")
    args = parser.parse_args(argv)
    first = Path(args.runs[0])
    out = Path(args.out) if args.out else (first if first.is_dir() else Path.cwd()) / "report"
    try:
        if len(args.runs) == 1 and is_sweep_dir(first):
            path = write_sweep_report(first, out)  # its trials differ in shape, not seed: a sweep report
        else:
            path = write_report(args.runs, out, args.split, args.bootstrap)
    except FileNotFoundError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
