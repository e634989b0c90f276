"""`seqbench score --hyp H --ref R [--src S] [--baseline B] [--buckets 10,20,...] [--json]`: score any
system's detokenised output (seqbench, fairseq, OpenNMT-py, Joey NMT, ...) exactly as seqbench scores its own runs.

BLEU and chrF with their sacreBLEU signatures; BLEU by source length when the sources are given (the axes of the
report's BLEU-by-length plot); a paired bootstrap test against a baseline system's hypotheses of the same sentences.
Every file holds one sentence per line, in the same order. A missing file, invalid UTF-8 or files whose line counts
differ are reported as one line (`error: ...`) with exit status 2.
"""
from __future__ import annotations

import argparse
import json

from seqbench.commands.arguments import ArgumentParser
from seqbench.common.errors import InputError
from seqbench.common.io import read_lines
from seqbench.common.text import DEFAULT_LENGTH_EDGES
from seqbench.scoring.evaluation import Evaluator


def parse_buckets(text: str) -> tuple[int, ...]:
    """"10,20,30" -> (10, 20, 30): upper edges, in source words, of the length buckets (the last is open-ended)."""
    try:
        edges = tuple(int(part) for part in text.split(","))
        Evaluator(edges)
    except ValueError:
        raise InputError(f"--buckets {text}: give increasing positive word counts, e.g. 10,20,30") from None
    return edges


def score_files(hyp: str, ref: str, src: str | None = None, baseline: str | None = None,
                buckets=DEFAULT_LENGTH_EDGES, bootstrap_samples: int = 1000) -> dict:
    """The Evaluator's record for the files; InputError when one is missing, not UTF-8 or of another length."""
    files = {"--hyp": hyp, "--ref": ref, "--src": src, "--baseline": baseline}
    lines = {flag: read_lines(path) for flag, path in files.items() if path is not None}
    n = len(lines["--hyp"])
    for flag, content in lines.items():
        if len(content) != n:
            raise InputError(f"{flag} {files[flag]} has {len(content)} lines but --hyp {hyp} has {n}: every file "
                             "must hold the same sentences, one per line, in the same order")
    evaluator = Evaluator(buckets, bootstrap_samples)
    return evaluator.score(lines["--hyp"], lines["--ref"], lines.get("--src"), lines.get("--baseline"))


def _by_length_table(scores: dict, baseline: dict | None) -> list[str]:
    header = f"  {'words':>8} {'sentences':>10} {'BLEU':>7}" + (f" {'baseline':>9}" if baseline else "")
    rows = [header]
    base = {b["bucket"]: b for b in baseline["bleu_by_length"]} if baseline else {}
    for bucket in scores["bleu_by_length"]:
        cell = "—" if bucket["bleu"] is None else f"{bucket['bleu']:.2f}"
        row = f"  {bucket['bucket']:>8} {bucket['sentences']:>10} {cell:>7}"
        if baseline:
            other = base[bucket["bucket"]]["bleu"]
            row += f" {'—' if other is None else f'{other:.2f}':>9}"
        rows.append(row)
    return rows


def format_scores(scores: dict) -> str:
    """The record as the few lines a person reads."""
    baseline = scores.get("baseline")
    lines = [f"sentences  {scores['n_sentences']}",
             f"BLEU       {scores['bleu']:.2f}  {scores['bleu_signature']}",
             f"chrF       {scores['chrf']:.2f}  {scores['chrf_signature']}"]
    if baseline:
        test = scores["significance"]
        lines += [f"baseline   BLEU {baseline['bleu']:.2f}, chrF {baseline['chrf']:.2f}",
                  f"paired bootstrap (sacreBLEU paired-bs): BLEU {test['mean']:.2f} ± {test['ci']:.2f} (95% CI), "
                  f"p = {test['p_value']:.4f} against the baseline"]
    if "bleu_by_length" in scores:
        lines += ["BLEU by source length (words):"] + _by_length_table(scores, baseline)
    return "\n".join(lines)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The command's arguments (one convention for every command: the tests parse the documented commands)."""
    parser = ArgumentParser(prog="seqbench score",
                                     description="Score any system's output exactly as seqbench scores its runs.")
    parser.add_argument("--hyp", required=True, help="the system's detokenised hypotheses, one per line")
    parser.add_argument("--ref", required=True, help="the references, one per line")
    parser.add_argument("--src", help="the sources, one per line: adds BLEU by source length")
    parser.add_argument("--baseline", help="another system's hypotheses of the same sentences: paired bootstrap test")
    parser.add_argument("--buckets", default=",".join(map(str, DEFAULT_LENGTH_EDGES)),
                        help="upper edges (source words) of the length buckets, comma-separated (default: %(default)s)")
    parser.add_argument("--bootstrap", type=int, default=1000, help="paired bootstrap resamples (default: 1000)")
    parser.add_argument("--json", action="store_true", help="print the whole record as JSON")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.bootstrap < 1:
        raise InputError(f"--bootstrap {args.bootstrap}: give a positive number of resamples")
    scores = score_files(args.hyp, args.ref, args.src, args.baseline, parse_buckets(args.buckets), args.bootstrap)
    print(json.dumps(scores, indent=2) if args.json else format_scores(scores))
    return 0

