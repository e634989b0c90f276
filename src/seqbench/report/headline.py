"""A headline generated from committed records, never typed: `seqbench report DIR --headline FILE.md`.

The block names what a reader needs to weigh the numbers: the axis (the models compared and their sizes), the budget
(updates, as the records hold it), the seeds, the test and the command that made the runs; then one row per model
with its test BLEU, greedy BLEU, BLEU on the longest sentences, the difference from the best model with Welch's
interval and the permutation p over seeds (Holm-adjusted, with the floor the design allows), and the training FLOPs
to a validation BLEU (machine-independent) where the runs recorded learning curves.

A document holds blocks between `<!-- headline: ARGS -->` and `<!-- /headline -->`, ARGS being the records'
directory and options (--target-bleu BLEU, --by-length for BLEU by source length). `--headline FILE` rewrites every
block of the file from its records, and tests/test_readme.py fails when a block and its records disagree.
"""
from __future__ import annotations

import re
import shlex
from pathlib import Path

from seqbench.analysis.compute import compute_to_target, has_compute_curves
from seqbench.analysis.runs import group_by_label
from seqbench.analysis.summary import BY_LENGTH, seed_significance, summary_rows
from seqbench.common.errors import InputError
from seqbench.common.io import atomic_write_text
from seqbench.common.nested import get_path
from seqbench.report.markdown import (
    cell,
    difference_text,
    holm_text,
    markdown_by_bucket,
    markdown_rows,
    seed_test,
)
from seqbench.rundir.reader import load_runs

BLOCK = re.compile(r"(<!-- headline: (?P<args>[^>]*?) -->\n)(?P<body>.*?)(<!-- /headline -->)", re.S)


def _last_bucket(runs) -> tuple[str, list[float]]:
    """The longest-sentence bucket of BLEU by length, and each run's BLEU in it."""
    name = BY_LENGTH.entries(runs[0], "test")[-1]["bucket"]
    return name, [next(b["bleu"] for b in BY_LENGTH.entries(r, "test") if b["bucket"] == name) for r in runs]


def headline(directory: str | Path, target: float = 80.0, shown: str | None = None, by_length: bool = False) -> str:
    """The generated block for the records under `directory` (a preset's multirun, seeds of several models);
    `shown`: how the block names the directory (default: as given); `by_length`: BLEU by source length too."""
    from seqbench.analysis.seeds import spread

    runs = load_runs([directory])
    if not runs:
        raise InputError(f"{directory}: no completed results.json")
    groups = group_by_label(runs, "test")
    rows = summary_rows(groups, "test")
    tests = seed_significance(groups, "test")
    best = rows[0]["label"]
    compute = {row["label"]: row for row in compute_to_target(groups, [target])} if has_compute_curves(groups) else {}
    bucket = _last_bucket(runs)[0]
    header = ["model", "seeds", "params", "test BLEU", "greedy BLEU", f"{bucket} words", f"Δ vs {best} [Welch 95% CI]",
              "p over seeds (Holm; floor)", *([f"FLOPs to {target:g}", f"updates to {target:g}"] if compute else []),
              "train tok/s"]
    body = []
    for row in rows:
        label, members = row["label"], groups[row["label"]]
        test = seed_test(tests, label, best) if label != best else None
        cells = [label, str(len(members)), f"{row['params'][0] / 1e6:.2f}M", cell(row["bleu"], 2),
                 cell(row["greedy_bleu"], 2), cell(spread(_last_bucket(members)[1]), 1),
                 "—" if label == best else difference_text(test), "—" if label == best else holm_text(test)]
        if compute:
            hit = compute[label]["targets"][target]
            flops = f"{hit['train_flops'].mean:.2e}" if hit["train_flops"].mean is not None else "—"
            cells += [f"{flops} ({hit['reached']}/{compute[label]['seeds']} seeds)", cell(hit["updates"], 0, True)]
        body.append(cells + [cell(row["train_tok_s"], 0, True)])
    steps = sorted({get_path(r.results, "train.steps") for r in runs})
    stopped = sorted({s for r in runs if (s := get_path(r.results, "train.stopped_by"))})
    seeds = sorted({r.seed for r in runs})
    task = runs[0].results["config"]["task_name"]
    shown = shown or Path(directory).as_posix()
    floor = next(iter(tests.values()))["p_floor"] if tests else None
    lengths = ["", "Test BLEU by source length (words; sentences per bucket), means ± 95% CI over seeds:", "",
               markdown_by_bucket(groups, "test", BY_LENGTH)] if by_length else []
    lines = [markdown_rows(header, body), *lengths, "",
             f"Axis: {', '.join(rows_['label'] for rows_ in rows)} on {runs[0].results['data']['corpus']}. "
             f"Budget: {', '.join(f'{s:,}' for s in steps)} updates"
             + (f" (stopped by {', '.join(stopped)})" if stopped else "") + ". "
             f"Seeds: {', '.join(map(str, seeds))}. Test: the difference of seed means with Welch's t 95% interval "
             f"and a two-sided permutation test over seeds, Holm-adjusted across the {len(tests)} pairs"
             + (f"; the smallest p this design can reach is {floor:.2g}" if floor is not None else "")
             + f". Means ± 95% CI over seeds. Command: `python train.py -m experiment={task}`; records: "
             f"`{shown}`; generated by `seqbench report --headline FILE`."]
    return "\n".join(lines) + "\n"


def _block_args(args: str) -> tuple[str, float, bool]:
    """A block's directory, target BLEU (--target-bleu, default 80) and whether it shows BLEU by length
    (--by-length)."""
    words = shlex.split(args)
    target = float(words[words.index("--target-bleu") + 1]) if "--target-bleu" in words else 80.0
    return words[0], target, "--by-length" in words


def render(text: str, root: Path = Path(".")) -> str:
    """`text` with every headline block regenerated from its records (paths relative to `root`)."""
    def replace(match: re.Match) -> str:
        directory, target, by_length = _block_args(match.group("args"))
        return match.group(1) + headline(root / directory, target, directory, by_length) + match.group(4)

    return BLOCK.sub(replace, text)


def update(path: str | Path, root: Path = Path(".")) -> int:
    """Rewrites the headline blocks of a file; returns how many it holds."""
    path = Path(path)
    text = path.read_text(encoding="utf-8")
    count = len(BLOCK.findall(text))
    if not count:
        raise InputError(f"--headline {path}: no `<!-- headline: DIR -->` ... `<!-- /headline -->` block in it")
    atomic_write_text(path, render(text, root))
    return count
