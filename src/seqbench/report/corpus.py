"""`seqbench data describe` and `seqbench data prepare` as a reader sees them, from the dicts seqbench.data.describe
returns: the description as rich tables (sizes and words per sentence by split, the length histogram by bucket) and a
vocabulary line, the prepared store as one line. The command prints them (or the dicts as JSON)."""
from __future__ import annotations

from rich.table import Table

from seqbench.data.stats import BUCKET_LABELS

SIDES = ("src", "tgt")


def description(report: dict) -> list[Table | str]:
    """What seqbench.data.describe.describe reported, to print in turn on a console 120 columns wide."""
    splits = report["splits"]
    sizes = Table(title=f"corpus {report['corpus']}")
    for column in ("split", "pairs", "before length filters", "removed", "src words mean/median/p95/max",
                   "tgt words mean/median/p95/max", "BPE tokens src/tgt (mean)"):
        sizes.add_column(column, justify="left" if column == "split" else "right")
    for split, entry in splits.items():
        words = ["{mean:.1f} / {median} / {p95} / {max}".format(**entry[side]["words"]) for side in SIDES]
        tokens = " / ".join(f"{entry[side].get('bpe_tokens_mean', 0):.1f}" for side in SIDES)
        sizes.add_row(split, f"{entry['pairs']:,}", f"{entry['before_length_filters']:,}",
                      f"{entry['removed_by_length_filters']:,}", *words, tokens)

    histogram = Table(title="length histogram (words per sentence)")
    histogram.add_column("bucket")
    for split in splits:
        for side in SIDES:
            histogram.add_column(f"{split} {side}", justify="right")
    for label in BUCKET_LABELS:
        histogram.add_row(label, *(f"{splits[split][side]['buckets'][label]:,}" for split in splits for side in SIDES))

    types, bpe = report["vocabulary"]["word_types"], report["vocabulary"]["bpe"]
    return [sizes, histogram, f"vocabulary: train word types src {types['src']:,}, tgt {types['tgt']:,}; BPE src "
                              f"{bpe['src']:,}, tgt {bpe['tgt']:,}{' (shared)' if bpe['shared'] else ''}"]


def store_line(summary: dict) -> str:
    """What seqbench.data.describe.prepare reported: the prepared store's splits, size and training batch plan."""
    splits = ", ".join(f"{split} {entry['pairs']:,} pairs ({entry['tokens']['src']:,} + {entry['tokens']['tgt']:,} "
                       f"tokens)" for split, entry in summary["splits"].items())
    return (f"corpus {summary['corpus']}: prepared store {summary['store']} in the cache "
            f"({summary['seconds']:.1f} s): {splits}; {summary['bytes'] / 2**20:,.1f} MiB, "
            f"{summary['bytes_per_token']} bytes per token ({summary['ids_type']} ids); "
            f"{summary['training_batches']:,} training batches planned")
