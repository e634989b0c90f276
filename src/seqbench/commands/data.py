"""Prepare, describe or generate a corpus:

    seqbench data prepare data=files data.corpus.train=... (the Hydra overrides of a training run)
    seqbench data describe data=bible data.corpus.pair=en-fr [--json]
    seqbench data generate OUT --pairs 4500000
    seqbench data benchmark --pairs 50000 4500000 --work WORK --out docs/results/scale/NAME

prepare builds what a training run would build on first use (the cached corpus, the BPE tokenizers, the prepared
store every process maps, the training batch plan of the config's seed) and prints the store's size; do it once
before a multi-GPU or cluster run. describe prints what seqbench.data.describe reports: pairs per split, length
histograms in words by bucket (1-10, ..., 61+) for source and target, and vocabulary sizes. generate writes a
WMT-sized synthetic TSV corpus (train/valid/test.tsv) for the data-path benchmark (seqbench.data.wmt_like):
`data=files data.corpus.format=tsv data.corpus.train=OUT/train.tsv ...`. benchmark measures, per corpus size,
preparing (time, peak memory, store size) and a second start under 2-process DDP (time to the first update, each
rank's peak memory) into OUT/scale.json (seqbench.measure.scale).
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from seqbench.commands.cli import ArgumentParser
from seqbench.config.compose import compose


def print_report(report: dict) -> None:
    from rich.console import Console
    from rich.table import Table

    from seqbench.data.stats import BUCKET_LABELS

    console = Console(width=120)
    splits = report["splits"]
    sizes = Table(title=f"corpus {report['corpus']}")
    for column in ("split", "pairs", "before length filters", "removed", "src words mean/median/p95/max",
                   "tgt words mean/median/p95/max", "BPE tokens src/tgt (mean)"):
        sizes.add_column(column, justify="left" if column == "split" else "right")
    for split, entry in splits.items():
        words = {side: "{mean:.1f} / {median} / {p95} / {max}".format(**entry[side]["words"])
                 for side in ("src", "tgt")}
        bpe = (f"{entry['src'].get('bpe_tokens_mean', 0):.1f} / {entry['tgt'].get('bpe_tokens_mean', 0):.1f}")
        sizes.add_row(split, f"{entry['pairs']:,}", f"{entry['before_length_filters']:,}",
                      f"{entry['removed_by_length_filters']:,}", words["src"], words["tgt"], bpe)
    console.print(sizes)

    histogram = Table(title="length histogram (words per sentence)")
    histogram.add_column("bucket")
    for split in splits:
        for side in ("src", "tgt"):
            histogram.add_column(f"{split} {side}", justify="right")
    for label in BUCKET_LABELS:
        histogram.add_row(label, *(f"{splits[split][side]['buckets'][label]:,}" for split in splits
                                   for side in ("src", "tgt")))
    console.print(histogram)

    vocab = report["vocabulary"]
    console.print(f"vocabulary: train word types src {vocab['word_types']['src']:,}, "
                  f"tgt {vocab['word_types']['tgt']:,}; "
                  f"BPE src {vocab['bpe']['src']:,}, tgt {vocab['bpe']['tgt']:,}"
                  f"{' (shared)' if vocab['bpe']['shared'] else ''}")


def print_store(summary: dict) -> None:
    splits = ", ".join(f"{split} {entry['pairs']:,} pairs ({entry['tokens']['src']:,} + {entry['tokens']['tgt']:,} "
                       f"tokens)" for split, entry in summary["splits"].items())
    print(f"corpus {summary['corpus']}: prepared store {summary['store']} in the cache "
          f"({summary['seconds']:.1f} s): {splits}; {summary['bytes'] / 2**20:,.1f} MiB, "
          f"{summary['bytes_per_token']} bytes per token ({summary['ids_type']} ids); "
          f"{summary['training_batches']:,} training batches planned")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The command's arguments (one convention for every command: the tests parse the documented commands)."""
    parser = ArgumentParser(prog="seqbench data", description=__doc__.split("\n\n")[0])
    parser.add_argument("action", choices=["prepare", "describe", "generate", "benchmark"],
                        help="prepare: build the cached corpus, tokenizers and prepared store now; describe: sizes, "
                             "length histograms, vocabularies; generate: a WMT-sized synthetic TSV corpus; "
                             "benchmark: the data path's cost at several corpus sizes")
    parser.add_argument("overrides", nargs="*", help="prepare, describe: Hydra overrides, e.g. data=bible "
                                                     "data.corpus.pair=en-fr; generate: the output folder")
    parser.add_argument("--json", action="store_true", help="prepare, describe: print the report as JSON")
    parser.add_argument("--pairs", type=int, nargs="+", help="generate: training pairs (WMT14 en-de: 4500000); "
                                                             "benchmark: one corpus size or more")
    parser.add_argument("--work", type=Path, help="benchmark: a folder for corpora, cache and runs (large)")
    parser.add_argument("--out", type=Path, help="benchmark: the record's folder")
    parser.add_argument("--eval-pairs", type=int, default=3000, help="generate: pairs of valid and of test")
    parser.add_argument("--vocab", type=int, default=30_000, help="generate: word types per side")
    parser.add_argument("--seed", type=int, default=0, help="generate: the corpus's seed")
    args = parser.parse_intermixed_args(argv)  # --json anywhere among the overrides
    if args.action == "generate":
        if len(args.overrides) != 1 or args.pairs is None or len(args.pairs) != 1:
            parser.error("generate takes one output folder and --pairs N")
        args.out, args.pairs = Path(args.overrides[0]), args.pairs[0]
    elif args.action == "benchmark":
        if args.overrides or args.pairs is None or args.work is None or args.out is None:
            parser.error("benchmark takes --pairs N [N ...] --work WORK --out OUT and no overrides")
    elif args.pairs is not None or args.work is not None or args.out is not None:
        parser.error(f"--pairs, --work and --out are options of generate and benchmark, not of {args.action}")
    if args.pairs is not None and min([*([args.pairs] if isinstance(args.pairs, int) else args.pairs),
                                       args.eval_pairs, args.vocab]) < 1:
        parser.error("--pairs, --eval-pairs and --vocab must be positive")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.action == "generate":
        from seqbench.common.progress import progress_bar
        from seqbench.data.wmt_like import generate

        total = args.pairs + 2 * args.eval_pairs
        with progress_bar("generating", total=total, unit="pairs") as advance:
            paths = generate(args.out, args.pairs, args.eval_pairs, args.vocab, args.seed, advance)
        print(" ".join(f"data.corpus.{split}={path}" for split, path in paths.items()))
        return 0

    if args.action == "benchmark":
        from seqbench.measure.scale import benchmark

        record = benchmark(args.pairs, args.work, args.out)
        print(json.dumps(record, indent=1))
        return 0

    from hydra.utils import instantiate

    from seqbench.config.checks import validate
    from seqbench.data.describe import describe, prepare

    cfg = compose(args.overrides)
    validate(cfg)  # the corpus's keys among them: one line before any corpus is built or opened
    datamodule = instantiate(cfg.data)
    if args.action == "prepare":
        start = time.perf_counter()
        report = prepare(datamodule)
        report["seconds"] = time.perf_counter() - start
        if args.json:
            print(json.dumps(report, indent=2))
        else:
            print_store(report)
        return 0
    report = describe(datamodule)
    if args.json:
        print(json.dumps(report, indent=2, ensure_ascii=False))
    else:
        print_report(report)
    return 0
