"""Describe a corpus as a training run would see it:

    seqbench data describe data=bible data.corpus.pair=en-fr

Composes conf/train.yaml with the given Hydra overrides, builds the data module (the cached corpus, the length
filters, the BPE tokenizers: built and cached if missing) and prints what seqbench.data.describe reports: pairs per
split, length histograms in words by bucket (1-10, ..., 61+) for source and target, and vocabulary sizes. `--json`
prints the same as JSON.
"""
from __future__ import annotations

import argparse
import json

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


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The command's arguments (one convention for every command: the tests parse the documented commands)."""
    parser = ArgumentParser(prog="seqbench data", description=__doc__.split("\n\n")[0])
    parser.add_argument("action", choices=["describe"], help="describe: sizes, length histograms, vocabularies")
    parser.add_argument("overrides", nargs="*", help="Hydra overrides, e.g. data=bible data.corpus.pair=en-fr")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    return parser.parse_intermixed_args(argv)  # --json anywhere among the overrides


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    as_json, overrides = args.json, args.overrides

    from hydra.utils import instantiate

    from seqbench.data.describe import describe

    report = describe(instantiate(compose(overrides).data))
    if as_json:
        print(json.dumps(report, indent=2, ensure_ascii=False))
    else:
        print_report(report)
    return 0

