"""`seqbench report RUN_DIR... [--out DIR] [--external NAME=HYP_FILE ...]`: see seqbench.report (a sweep
directory: seqbench.report.sweep)."""
from __future__ import annotations

import argparse
from pathlib import Path

from seqbench.analysis.compute import DEFAULT_TARGETS
from seqbench.commands.arguments import ArgumentParser
from seqbench.common.errors import InputError
from seqbench.common.io import atomic_write_text
from seqbench.report import write_report
from seqbench.report.sweep import is_sweep_dir, write_sweep_report
from seqbench.report.tuning import write_tuning_report


def _external(items: list[str]) -> dict[str, str]:
    out = {}
    for item in items:
        name, sep, path = item.partition("=")
        if not sep or not name or not path:
            raise InputError(f"--external {item}: write NAME=HYP_FILE, e.g. --external fairseq=gen.detok.txt")
        if name in out:
            raise InputError(f"--external {name} is given twice")
        out[name] = path
    return out


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The command's arguments (one convention for every command: the tests parse the documented commands)."""
    parser = ArgumentParser(prog="seqbench report", description=__doc__.split(":", 1)[0])
    parser.add_argument("runs", nargs="*", help="run or multirun directories (results.json found recursively; "
                                                "LABEL=DIR compares DIR's runs as the model LABEL, e.g. two recipes "
                                                "of one model), one sweep directory of `seqbench sweep`, or several "
                                                "(recipe searches side by side); a search's directory as "
                                                "'{family}-50=DIR' names each family's model (rnnenc-50, ...)")
    parser.add_argument("--out", help="output directory (default: report/ inside the first directory, else ./report)")
    parser.add_argument("--split", default="test", choices=["test", "valid"], help="split of the table and plots")
    parser.add_argument("--bootstrap", type=int, default=1000, help="paired bootstrap resamples")
    parser.add_argument("--external", action="append", default=[], metavar="NAME=HYP_FILE",
                        help="another system's detokenised hypotheses of the first run's sentences, one per line, "
                             "as an extra row (repeatable)")
    parser.add_argument("--target-bleu", nargs="+", type=float, default=list(DEFAULT_TARGETS), metavar="BLEU",
                        help="validation BLEUs of the compute-to-target table (default: %(default)s)")
    parser.add_argument("--by-budget", action="store_true",
                        help="the runs are the same models trained for different numbers of updates (e.g. "
                             "docs/results/budget_sweep docs/results/equal_compute): one column pair per budget, "
                             "written to OUT/budget.md")
    parser.add_argument("--headline", metavar="FILE", help="rewrite the generated headline blocks of FILE (e.g. "
                                                           "README.md) from the records each names, and nothing else: "
                                                           "`<!-- headline: DIR... [--by-length | --by-budget | "
                                                           "--bench] -->` ... `<!-- /headline -->`")
    args = parser.parse_args(argv)
    if not args.runs and not args.headline:
        parser.error("give run directories, or --headline FILE")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.headline:
        from seqbench.report.headline import update

        print(f"{args.headline}: {update(args.headline)} headline block(s) generated from their records")
        return 0
    first = Path(args.runs[0])
    out = Path(args.out) if args.out else (first if first.is_dir() else Path.cwd()) / "report"
    if args.by_budget:
        from seqbench.report.headline import budget_headline

        out.mkdir(parents=True, exist_ok=True)
        atomic_write_text(out / "budget.md", budget_headline(args.runs))
        print(out / "budget.md")
        return 0
    if len(args.runs) == 1 and is_sweep_dir(first):
        path = write_sweep_report(first, out)  # its trials differ in shape, not seed: a sweep report
    elif all(is_sweep_dir(p) for p in args.runs):
        path = write_tuning_report(args.runs, out)  # several searches: tuning effort side by side
    else:
        path = write_report(args.runs, out, args.split, args.bootstrap, _external(args.external), args.target_bleu)
    print(path)
    return 0

