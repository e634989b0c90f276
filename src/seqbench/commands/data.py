"""Prepare, describe or generate a corpus:

    seqbench data prepare data=files data.corpus.train=... (the Hydra overrides of a training run)
    seqbench data describe data=bible data.corpus.pair=en-fr [--json]
    seqbench data generate OUT --pairs 4500000
    seqbench data benchmark --pairs 50000 4500000 --work WORK --out docs/results/scale/NAME

prepare builds what a training run would build on first use (the cached corpus, the BPE tokenizers, the prepared store
every process maps, the training batch plan of the config's seed) and prints the store's size; do it once before a
multi-GPU or cluster run. describe prints what seqbench.data.describe reports (as tables: seqbench.report.corpus): pairs
per split, length histograms in words by bucket (1-10, ..., 61+) for source and target, and vocabulary sizes. generate
writes a WMT-sized synthetic TSV corpus (train/valid/test.tsv, into a folder without them: it never replaces them)
for the data-path benchmark (seqbench.data.wmt_like): `data=files data.corpus.format=tsv data.corpus.train=OUT/train.tsv
...`. benchmark measures, per corpus size, preparing (time, peak memory, store size) and a second start under 2-process
DDP (time to the first update, each rank's peak memory) into OUT/scale.json (seqbench.measure.scale).
"""
from __future__ import annotations

import argparse
import json
import shlex
from pathlib import Path

from seqbench.commands.arguments import ArgumentParser
from seqbench.config.compose import compose


def positive_int(text: str, low: int = 1) -> int:
    """argparse's type for a count: `argument --pairs: must be a positive integer, not '0'` for anything else."""
    if not text.strip().isdecimal() or int(text) < low:
        raise argparse.ArgumentTypeError(f"must be a {'positive' if low else 'non-negative'} integer, not {text!r}")
    return int(text)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The command's arguments (one convention for every command: the tests parse the documented commands)."""
    parser = ArgumentParser(prog="seqbench data", description=__doc__.split("\n\n")[0])
    actions = parser.add_subparsers(dest="action", required=True)
    prepare, describe, generate, benchmark = (actions.add_parser(name, help=text, description=text) for name, text in (
        ("prepare", "build the cached corpus, tokenizers and prepared store now"),
        ("describe", "sizes, length histograms and vocabularies of the corpus"),
        ("generate", "a WMT-sized synthetic TSV corpus"),
        ("benchmark", "the data path's cost at several corpus sizes")))
    for action in (prepare, describe):
        action.add_argument("overrides", nargs="*", help="Hydra overrides, e.g. data=bible data.corpus.pair=en-fr")
        action.add_argument("--json", action="store_true", help="print the report as JSON")
    generate.add_argument("out", type=Path, help="the output folder")
    generate.add_argument("--pairs", type=positive_int, required=True, help="training pairs (WMT14 en-de: 4500000)")
    generate.add_argument("--eval-pairs", type=positive_int, default=3000, help="pairs of valid and of test")
    generate.add_argument("--vocab", type=positive_int, default=30_000, help="word types per side")
    generate.add_argument("--seed", type=lambda text: positive_int(text, low=0), default=0, help="the corpus's seed")
    benchmark.add_argument("--pairs", type=positive_int, nargs="+", required=True, help="one corpus size or more")
    benchmark.add_argument("--work", type=Path, required=True, help="a folder for corpora, cache and runs (large)")
    benchmark.add_argument("--out", type=Path, required=True, help="the record's folder")
    args, rest = parser.parse_known_args(argv)  # prepare, describe: --json anywhere among the overrides
    if rest and (args.action not in ("prepare", "describe") or any(arg.startswith("-") for arg in rest)):
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    args.overrides = [*getattr(args, "overrides", []), *rest]
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.action == "generate":
        from seqbench.common.progress import progress_bar
        from seqbench.data.wmt_like import generate

        with progress_bar("generating", total=args.pairs + 2 * args.eval_pairs, unit="pairs") as advance:
            paths = generate(args.out, args.pairs, args.eval_pairs, args.vocab, args.seed, advance)
        print(shlex.join(["seqbench", "train", "data=files", *(f"data.corpus.{s}={p}" for s, p in paths.items())]))
        return 0
    if args.action == "benchmark":
        from seqbench.measure.scale import benchmark

        print(json.dumps(benchmark(args.pairs, args.work, args.out), indent=1))
        return 0

    from hydra.utils import instantiate

    from seqbench.config.checks import validate
    from seqbench.data.describe import describe, prepare

    cfg = compose(args.overrides)
    validate(cfg)  # the corpus's keys among them: one line before any corpus is built or opened
    report = (prepare if args.action == "prepare" else describe)(instantiate(cfg.data))
    if args.json:
        print(json.dumps(report, indent=2, ensure_ascii=False))
        return 0
    from rich.console import Console

    from seqbench.report.corpus import description, store_line  # not with --json: `data benchmark` times prepare

    if args.action == "prepare":
        print(store_line(report))
    else:
        Console(width=120).print(*description(report))
    return 0
