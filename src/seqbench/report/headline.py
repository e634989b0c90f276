"""A headline generated from committed records, never typed: `seqbench report DIR --headline FILE.md`.

The block names what a reader needs to weigh the numbers: the axis (the models compared and their sizes), the budget
(updates, as the records hold it), the seeds, the test and the command that made the runs; then one row per model
with its test BLEU, greedy BLEU, BLEU on the longest sentences, the difference from the best model with Welch's
interval and the permutation p over seeds (Holm-adjusted, with the floor the design allows), and the training FLOPs
to a validation BLEU (machine-independent) where the runs recorded learning curves.

A document holds blocks between `<!-- headline: ARGS -->` and `<!-- /headline -->`, ARGS being the records'
directories (one preset's, several whose models share one table, or a successive-halving search's: its families'
chosen recipes) and options (--target-bleu BLEU, --by-length for BLEU by source length, --length-tests for that with
the per-bucket and slope tests over seeds, --train-flops for what a fixed update budget does and does not hold equal:
each model's training target tokens and analytic training FLOPs, throughput.tokens_seen and throughput.train_flops),
or several
directories and --by-budget: the same models trained for different numbers of updates, one column per budget
(`budget_headline`), or `seqbench bench` records and --bench: their speed ratios, one column per record
(seqbench.report.bench.speed_headline), or decoding A/B records (JSON files) and --decode-ab: one checkout's
decoding against another's and against CTranslate2 (seqbench.report.bench.decode_ab_headline), or a `seqbench data
benchmark` record and --scale: the data path's cost by corpus size (seqbench.report.scale), or --curve: validation
BLEU at every validation during training, overall and on the shortest sentences, with the last quarter's gain
(seqbench.report.curve), or a `seqbench bench --table1` record and --table1: Table 1 of Vaswani et al. measured
(seqbench.report.table1).
`--headline FILE` rewrites every block of the file from its records, and tests/test_readme.py fails when a block and
its records disagree.
"""
from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

from seqbench.analysis.compute import compute_to_target, has_compute_curves
from seqbench.analysis.plateau import capped_before_plateau, trained_to_plateau
from seqbench.analysis.runs import (
    check_one_budget_per_model,
    group_by_label,
    is_search_dir,
    runs_of,
    timed_while_shared,
)
from seqbench.analysis.seeds import spread
from seqbench.analysis.summary import (
    BY_LENGTH,
    bucket_significance,
    length_slope,
    seed_significance,
    slope_significance,
    summary_rows,
)
from seqbench.common.errors import InputError
from seqbench.common.io import atomic_write_text
from seqbench.common.nested import get_path
from seqbench.report.bench import decode_ab_headline, speed_headline
from seqbench.report.curve import curve_headline
from seqbench.report.markdown import (
    cell,
    difference_text,
    holm_text,
    markdown_bucket_tests,
    markdown_by_bucket,
    markdown_rows,
    seed_test,
)
from seqbench.report.scale import scale_headline
from seqbench.report.table1 import table1_headline
from seqbench.rundir.reader import load_runs, named_path

BLOCK = re.compile(r"(<!-- headline: (?P<args>[^>]*?) -->\n)(?P<body>.*?)(<!-- /headline -->)", re.S)


def _last_bucket(runs) -> tuple[str, list[float]]:
    """The longest-sentence bucket of BLEU by length, and each run's BLEU in it."""
    name = BY_LENGTH.entries(runs[0], "test")[-1]["bucket"]
    return name, [next(b["bleu"] for b in BY_LENGTH.entries(r, "test") if b["bucket"] == name) for r in runs]


PLATEAU_COLUMNS = ["level at update", "FLOPs to 99% of level", "CPU min to 99% of level",
                   "gain over last quarter"]


def _plateau_cells(members) -> list[str]:
    """Per model, from each run's train.plateau: the update of its best validation BLEU (its level), the training
    FLOPs and CPU minutes it took to first reach 99% of that level, and the rise of its best over the last quarter of
    its updates (what the plateau rule read), each mean ± 95% CI over seeds."""
    plateaus = [get_path(r.results, "train.plateau") or {} for r in members]
    reached = [(p.get("reached") or {}).get("99%") or {} for p in plateaus]
    cpu = [r.get("train_cpu_seconds") for r in reached]
    return [cell(spread([p.get("level_step") for p in plateaus]), 0, True),
            f"{spread([r.get('train_flops') for r in reached]).mean:.2e}" if all(reached) else "—",
            cell(spread([None if s is None else s / 60 for s in cpu]), 1), cell(spread([p.get("window_gain")
                                                                                     for p in plateaus]), 2)]


def headline(directories: str | Path | list[str | Path], target: float = 80.0, shown: list[str] | None = None,
             by_length: bool = False, train_flops: bool = False, length_tests: bool = False,
             plateau: bool = False) -> str:
    """The generated block for the records under `directories` (a preset's multirun, seeds of several models; more
    directories add models, e.g. another recipe of one family as its own label); `shown`: how the block names the
    directories (default: as given); `by_length`: BLEU by source length too; `train_flops`: each model's training
    target tokens and analytic training FLOPs over the whole budget (means over seeds), so a table at equal updates
    shows what was and was not equal; `length_tests`: BLEU by length with, per bucket, the seed-level test of every
    pair (Holm across the pair's buckets) and the test of the slope of BLEU over length; `plateau`: runs trained to
    their plateau (budget=plateau), with where each levelled off and what reaching it cost (_plateau_cells). A
    successive-halving search's directory shows each family's chosen recipe with its confirmation seeds."""
    directories = [directories] if isinstance(directories, (str, Path)) else list(directories)
    runs = runs_of(directories)
    groups = group_by_label(runs, "test")
    check_one_budget_per_model(groups)
    rows = summary_rows(groups, "test")
    tests = seed_significance(groups, "test")
    best = rows[0]["label"]
    compute = {row["label"]: row for row in compute_to_target(groups, [target])} if has_compute_curves(groups) else {}
    bucket = _last_bucket(runs)[0]
    header = ["model", "seeds", "params", "test BLEU", "greedy BLEU", f"{bucket} words", f"Δ vs {best} [Welch 95% CI]",
              "p over seeds (Holm; floor)", *([f"FLOPs to {target:g}", f"updates to {target:g}"] if compute else []),
              *(["train tokens", "train FLOPs"] if train_flops else []), *(PLATEAU_COLUMNS if plateau else []),
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
        if train_flops:
            tokens = spread([get_path(r.results, "throughput.tokens_seen") for r in members])
            spent = spread([get_path(r.results, "throughput.train_flops") for r in members])
            cells += [cell(tokens, 0, True), f"{spent.mean:.2e}" if spent.mean is not None else "—"]
        if plateau:
            cells += _plateau_cells(members)
        shared = any(timed_while_shared(r) for r in members)  # a speed measured beside other work is no speed
        body.append(cells + ["shared CPU" if shared else cell(row["train_tok_s"], 0, True)])
    steps = sorted({get_path(r.results, "train.steps") for r in runs})
    stopped = sorted({s for r in runs if (s := get_path(r.results, "train.stopped_by"))})
    seeds = sorted({r.seed for r in runs})
    shown = shown or [Path(d).as_posix() for d in directories]
    floor = next(iter(tests.values()))["p_floor"] if tests else None
    lengths = ["", "Test BLEU by source length (words; sentences per bucket), means ± 95% CI over seeds:", "",
               markdown_by_bucket(groups, "test", BY_LENGTH)] if by_length or length_tests else []
    if length_tests:
        lengths += _length_tests(groups)
    lines = [markdown_rows(header, body), *lengths, "",
             f"Axis: {', '.join(rows_['label'] for rows_ in rows)} on {runs[0].results['data']['corpus']}. "
             f"Budget: {_budget(runs, steps, stopped)}. "
             f"Seeds: {', '.join(map(str, seeds))}. Test: the difference of seed means with Welch's t 95% interval "
             f"and a two-sided permutation test over seeds, Holm-adjusted across the {len(tests)} pairs"
             + (f"; the smallest p this design can reach is {floor:.2g}" if floor is not None else "")
             + ". Means ± 95% CI over seeds"
             + ("; train tok/s is not given where a run trained while other work shared the CPU (its load average)"
                if any(timed_while_shared(r) for r in runs) else "")
             + ("; train tokens and train FLOPs: the target tokens trained on and the analytic training FLOPs (3x the "
                "forward FLOPs per target token, summed over the updates) of the whole budget, means over seeds"
                if train_flops else "")
             + ("; level: the best greedy validation BLEU, whose checkpoint the test decodes; FLOPs and CPU minutes "
                "(the process's CPU time in training steps, which other work sharing the machine changes far less "
                "than wall time) to the first validation at 99% of the run's own level; gain over the last quarter: "
                "the rise of the best validation BLEU over the last 25% of the updates, which the plateau rule read"
                if plateau else "")
             + f". {_commands(directories, shown)}; generated by `seqbench report --headline FILE`."]
    return "\n".join(lines) + "\n"


def _budget(runs, steps: list[int], stopped: list[str]) -> str:
    """The budget as the records hold it: the update count(s) and what stopped training, or for runs trained to
    their plateau the rule, the range of updates it took and the runs the cap stopped first (by name)."""
    if not any(trained_to_plateau(r.results) for r in runs):
        return f"{', '.join(f'{s:,}' for s in steps)} updates" + (f" (stopped by {', '.join(stopped)})" if stopped
                                                                   else "")
    rules = {json.dumps(r.results["train"].get("plateau_rule"), sort_keys=True) for r in runs}
    if len(rules) > 1:
        raise InputError("runs trained to a plateau by different rules (or beside fixed-budget runs) are not one "
                         "table: report them apart")
    rule, caps = runs[0].results["train"]["plateau_rule"], {r.results["train"]["max_steps"] for r in runs}
    capped = [f"{r.label} seed {r.seed}" for r in runs if capped_before_plateau(r.results)]
    return (f"each run to its plateau (its best greedy validation BLEU rose by less than {rule['min_gain']:g} over the "
            f"last {rule['window']:.0%} of its updates; at least {rule['min_steps']:,}, at most "
            f"{', '.join(f'{c:,}' for c in sorted(caps))} updates): {steps[0]:,}-{steps[-1]:,} updates, "
            + (f"{len(capped)} of {len(runs)} runs stopped by the cap before their plateau ({', '.join(capped)})"
               if capped else f"all {len(runs)} runs stopped by the plateau rule"))


def _length_tests(groups: dict) -> list[str]:
    """Per bucket, every pair's difference over seeds (Holm across the pair's buckets), and the slopes of BLEU over
    length per model with the test between them."""
    buckets = [b["bucket"] for b in BY_LENGTH.entries(next(iter(groups.values()))[0], "test")]
    slopes = slope_significance(groups, "test")
    per_model = {label: spread([length_slope(r) for r in members]) for label, members in groups.items()}
    rows = [[f"{a} − {b}", "all" if test["within"] is None else f"1-{test['within']}",
             " / ".join(f"{v:.2f}" for v in test["slopes"][0]),
             " / ".join(f"{v:.2f}" for v in test["slopes"][1]), difference_text(test), holm_text(test)]
            for (a, b), test in slopes.items()]
    return ["", "The same, each pair per bucket: the difference of seed means (first minus second) with Welch's 95% "
                "interval and the permutation p over seeds, Holm-adjusted across the pair's buckets:", "",
            markdown_bucket_tests(bucket_significance(groups, "test", BY_LENGTH), buckets), "",
            "The slope of BLEU over source length (BLEU per 10 words, least squares over each run's closed buckets "
            "at their midpoints, those within the lengths it trained on (data.train_max_len); "
            + ", ".join(f"{label} {cell(stat, 2)}" for label, stat in per_model.items())
            + "), compared over seeds, each pair's slopes fitted on the buckets within both models' training "
              "lengths (Holm across the pairs):", "",
            markdown_rows(["pair", "words fitted", "slopes of the first (per seed)", "slopes of the second (per seed)",
                           "Δ slope [Welch 95% CI]", "p over seeds (Holm; floor)"], rows)]


def _commands(directories: list[str | Path], shown: list[str]) -> str:
    """What made each directory's runs: the search command of a search's directory, the command each run recorded
    (command.txt) where every run has one (runs of a preset with overrides), else the preset's multirun."""
    parts = []
    for directory, name in zip(directories, shown):
        directory = named_path(directory)[1]
        if is_search_dir(directory):
            name = named_path(name)[1].as_posix()
            seed = json.loads((directory / "summary.json").read_text(encoding="utf-8"))["seed"]
            parts.append(f"`{name}`: `seqbench sweep {name}/sweep.yaml --out {name} --seed {seed}` (each run's "
                         "command.txt)")
            continue
        runs = load_runs([directory])
        if runs and all((run.path / "command.txt").is_file() for run in runs):
            parts.append(f"`{name}`: each run's command.txt")
        else:
            tasks = sorted({run.results["config"]["task_name"] for run in runs})
            parts.append(f"`{name}`: " + ", ".join(map(_preset_command, tasks)))
    if len(parts) == 1:
        return "Command: " + parts[0].split(": ", 1)[1] + f"; records: `{shown[0]}`"
    return "Commands and records: " + "; ".join(parts)


def _preset_command(task: str) -> str:
    """The multirun of the experiment preset named `task`; unknown where no preset has that name (runs of train.yaml
    with overrides, whose task is `train`, that recorded no command.txt): a command that does not exist misleads."""
    from seqbench.config.compose import CONF_DIR

    if (CONF_DIR / "experiment" / f"{task}.yaml").is_file():
        return f"`python train.py -m experiment={task}`"
    return f"unknown (the runs recorded no command.txt, and their task `{task}` is no experiment preset)"


def budget_headline(directories: list[str | Path], shown: list[str] | None = None) -> str:
    """Does a ranking hold at other budgets? The runs under `directories` (the same models trained for different
    numbers of updates) as one row per model and, per budget, its test BLEU over the seeds that every model has at
    every budget, and its difference from that budget's best with Welch's interval and the permutation p over seeds,
    Holm-adjusted across all the comparisons of the table."""
    from seqbench.analysis.seeds import compare_seeds, spread, with_holm

    runs = load_runs(directories)
    if not runs:
        raise InputError(f"{', '.join(map(str, directories))}: no completed results.json")
    cells: dict[tuple[int, str], dict[int, float]] = {}
    for run in runs:
        cells.setdefault((get_path(run.results, "train.steps"), run.label), {})[run.seed] = run.results["test"]["bleu"]
    seeds = sorted(set.intersection(*(set(scores) for scores in cells.values())))
    if len(seeds) < 2:
        raise InputError(f"{', '.join(map(str, directories))}: fewer than two seeds that every model has at every "
                         "budget")
    budgets = sorted({steps for steps, _ in cells})
    labels = sorted({label for _, label in cells}, key=lambda lab: -spread(
        [cells.get((budgets[-1], lab), {}).get(s) for s in seeds]).mean)
    scores = {key: [per_seed[s] for s in seeds] for key, per_seed in cells.items()}
    best = {b: max((lab for lab in labels if (b, lab) in scores), key=lambda lab: sum(scores[(b, lab)]))
            for b in budgets}
    tests = {(b, lab): compare_seeds(scores[(b, lab)], scores[(b, best[b])])._asdict()
             for b in budgets for lab in labels if (b, lab) in scores and lab != best[b]}
    with_holm(tests)
    header = ["model"]
    for b in budgets:
        header += [f"{b:,} updates: test BLEU", f"Δ vs {best[b]} [Welch 95% CI]; p (Holm; floor)"]
    body = []
    for label in labels:
        row = [label]
        for b in budgets:
            if (b, label) not in scores:
                row += ["—", "—"]
                continue
            test = tests.get((b, label))
            row += [cell(spread(scores[(b, label)]), 2),
                    "best" if test is None else f"{difference_text(test)}; {holm_text(test)}"]
        body.append(row)
    shown = shown or [Path(d).as_posix() for d in directories]
    tasks = sorted({r.results["config"]["task_name"] for r in runs})
    floor = next(iter(tests.values()))["p_floor"] if tests else None
    footer = (f"Axis: {', '.join(labels)} on {runs[0].results['data']['corpus']}, by update budget. "
              f"Budget: {', '.join(f'{b:,}' for b in budgets)} updates. Seeds: {', '.join(map(str, seeds))} (those "
              f"every model has at every budget). Test: each model against the best at its budget, the difference "
              f"of seed means with Welch's t 95% interval and a two-sided permutation test over seeds, "
              f"Holm-adjusted across the table's {len(tests)} comparisons"
              + (f"; the smallest p this design can reach is {floor:.2g}" if floor is not None else "")
              + ". Means ± 95% CI over seeds. Commands: "
              + ", ".join(f"`python train.py -m experiment={task}`" for task in tasks)
              + f"; records: {', '.join(f'`{s}`' for s in shown)}; generated by `seqbench report --headline FILE`.")
    return "\n".join([markdown_rows(header, body), "", footer]) + "\n"


def _block_args(args: str) -> tuple[list[str], float, set[str]]:
    """A block's directories, target BLEU (--target-bleu, default 80) and its other options: --by-length (BLEU by
    source length), --length-tests (that with per-bucket and slope tests), --train-flops (training tokens and FLOPs of
    the whole budget), --by-budget (the directories are budgets of the same models), --bench (the directories are
    `seqbench bench` records), --decode-ab (the arguments are decoding A/B records), --scale (the directory is a
    `seqbench data benchmark` record), --curve (validation BLEU over training), --table1 (the directory is a
`seqbench bench --table1` record), --plateau (runs trained to their plateau: where and at what cost)."""
    words = shlex.split(args)
    target = float(words[words.index("--target-bleu") + 1]) if "--target-bleu" in words else 80.0
    directories = [w for i, w in enumerate(words) if not w.startswith("--")
                   and (i == 0 or words[i - 1] != "--target-bleu")]
    return directories, target, {w for w in words if w.startswith("--")}


def _at(root: Path, word: str) -> str | Path:
    """A block's run directory under `root`; a `LABEL=DIR` argument keeps its label (a folder whose own name has a
    `=` in it stays a path, as load_runs reads it)."""
    label, path = named_path(word)
    return f"{label}={root / path}" if label and not (root / word).exists() else root / word


def render(text: str, root: Path = Path(".")) -> str:
    """`text` with every headline block regenerated from its records (paths relative to `root`)."""
    def replace(match: re.Match) -> str:
        directories, target, options = _block_args(match.group("args"))
        if "--bench" in options:
            body = speed_headline([root / d for d in directories], directories)
        elif "--decode-ab" in options:
            body = decode_ab_headline([root / d for d in directories], directories)
        elif "--table1" in options:
            body = table1_headline(root / directories[0], directories[0])
        elif "--scale" in options:
            body = scale_headline(root / directories[0], directories[0])
        elif "--by-budget" in options:
            body = budget_headline([_at(root, d) for d in directories], directories)
        elif "--curve" in options:
            body = curve_headline([_at(root, d) for d in directories], directories)
        else:
            body = headline([_at(root, d) for d in directories], target, directories, "--by-length" in options,
                            "--train-flops" in options, "--length-tests" in options, "--plateau" in options)
        return match.group(1) + body + match.group(4)

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
