"""The documentation cannot drift from the code: every command in README.md and docs/**/*.md runs as written.
`python train.py ...` / `seqbench train ...` commands compose and validate (Hydra's compose API, no training),
multiruns job by job, each distinct command once; every other `seqbench <command> ...` names a command and parses
with that command's own parse_args (nothing runs); .ci/run runs the README's test command; relative links resolve."""
from __future__ import annotations

import importlib
import itertools
import re
import shlex
from pathlib import Path

import pytest

from seqbench.commands import COMMANDS
from seqbench.config.checks import validate

from conftest import compose_train

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
README = (ROOT / "README.md").read_text(encoding="utf-8")
FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.S | re.M)
PLACEHOLDER = re.compile(r"<[^>]*>")


def command_lines(text: str) -> list[str]:
    """Every shell line of the text: lines of code blocks (backslash continuations joined, `# comments` dropped,
    `$ ` prompts removed) and inline code spans (which may wrap lines); a line with `&&`, `|` or `;` is split."""
    lines = []
    for block in FENCE.findall(text):
        for line in block.replace("\\\n", " ").splitlines():
            lines.append(line.split(" #", 1)[0].removeprefix("$ "))
    lines += [" ".join(span.split()) for span in re.findall(r"`([^`]+)`", FENCE.sub("", text))]
    return [part.strip() for line in lines for part in re.split(r"&&|\||;", line) if part.strip()]


def documented(lines: list[str]) -> tuple[list[str], list[list[str]]]:
    """(train.py argument strings, other seqbench command lines as argument lists), each distinct one once."""
    train, other = {}, {}
    for line in lines:
        for prefix in ("python train.py", "seqbench train"):
            if line.startswith(prefix) and (len(line) == len(prefix) or line[len(prefix)] == " "):
                train[line[len(prefix):].strip()] = None
        if line.startswith("seqbench ") and not line.startswith(("seqbench train", "seqbench <")):
            other[line] = None
    return list(train), [shlex.split(line)[1:] for line in other]


TEXTS = {path.relative_to(ROOT).as_posix(): path.read_text(encoding="utf-8") for path in DOCS}
TRAIN, OTHER = documented([line for text in TEXTS.values() for line in command_lines(text)])


def _with_examples(arguments: list[str]) -> list[str]:
    """Synopsis notation made concrete: placeholders (`<time>`, `<run dir>`) become example values, `[--opt X]`
    becomes `--opt X`, `DIR...` `DIR` and a lone `...` goes; the command's shape is what is checked."""
    concrete = [PLACEHOLDER.sub("example", a).strip("[]").removesuffix("...") for a in arguments]
    return [a for a in concrete if a]


def jobs(arguments: str) -> list[list[str]]:
    """The override lists the command runs: one, or for `-m` every job of the command-line and config sweeps."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    args = shlex.split(arguments)
    if "-m" not in args and "--multirun" not in args:
        return [args]
    args = [a for a in args if a not in ("-m", "--multirun")]
    params = compose_train([a for a in args if "," not in a], hydra_config=True).hydra.sweeper.params or {}
    axes = {key: [f"{key}={v}" for v in str(values).split(",")] for key, values in params.items()}
    for override in OverridesParser.create().parse_overrides(args):
        key = override.input_line.split("=", 1)[0]  # with its +/~ prefix, as typed
        axes[key] = ([f"{key}={v}" for v in override.sweep_string_iterator()] if override.is_sweep_override()
                     else [override.input_line])
    return [list(job) for job in itertools.product(*axes.values())]


def test_the_docs_hold_the_commands_users_run():
    """The extraction finds what is there: the quickstart's bare `python train.py`, a backslash-continued command,
    a multirun preset, and every `seqbench` command at least once."""
    assert "" in TRAIN and any(a.startswith("-m experiment=") for a in TRAIN)
    assert any("\\" not in a and "data.vocab_size=37000" in a and "model.share_all_embeddings=true" in a
               for a in TRAIN), "a backslash-continued command is joined"
    assert {args[0] for args in OTHER} | {"train"} == set(COMMANDS)
    assert len(TRAIN) == len(set(TRAIN))


@pytest.mark.parametrize("arguments", TRAIN)
def test_every_documented_train_command_composes(arguments):
    assert not PLACEHOLDER.search(arguments), f"placeholder in a train command: {arguments}"
    for overrides in jobs(arguments):
        validate(compose_train(overrides))


@pytest.mark.parametrize("argv", OTHER, ids=[" ".join(a) for a in OTHER])
def test_every_documented_seqbench_command_parses(argv):
    assert argv[0] in COMMANDS, f"seqbench {argv[0]}: no such command (commands: {', '.join(COMMANDS)})"
    if len(argv) > 1:  # a bare `seqbench average` in prose names the command; it is not a command line
        module = importlib.import_module(f"seqbench.commands.{COMMANDS[argv[0]][0]}")
        module.parse_args(_with_examples(argv[1:]))  # InputError (one line) on an unknown or missing argument


def test_a_broken_command_line_is_caught():
    """The check above can fail: an unknown option and a missing required one both stop argparse."""
    from seqbench.commands import score
    from seqbench.common.errors import InputError

    for argv in (["--hyp", "h", "--ref", "r", "--no-such-option"], ["--hyp", "h"]):
        with pytest.raises(InputError):
            score.parse_args(argv)


def test_multirun_commands_expand_to_their_jobs():
    assert len(jobs("-m model.n_heads=1,2,4,8")) == 4
    assert len(jobs("-m experiment=arch_comparison")) == 9


@pytest.mark.parametrize("name", list(TEXTS))
def test_relative_links_resolve(name):
    path = ROOT / name
    for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", TEXTS[name]):
        if not re.match(r"[a-z]+://", target):
            assert (path.parent / target).exists(), f"{name}: link to {target}, which does not exist"


def test_ci_runs_the_readme_test_command():
    test_command = next(line.split(" #")[0].strip() for block in FENCE.findall(README) for line in block.splitlines()
                        if line.split(" #")[0].strip().endswith("&& pytest"))
    steps = [step.strip() for step in test_command.split("&&")]
    ci = [" ".join(line.split(" #")[0].replace("--quiet ", "").split())
          for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    assert all(step in ci for step in steps), (steps, ci)  # .ci/run installs quietly, otherwise the same commands


def test_the_readmes_figures_are_generated_from_the_committed_records():
    """Every headline block of the README (and the docs) is what `seqbench report --headline` generates from the
    records it names: a number typed into a block, or records changed without regenerating it, fails here."""
    from seqbench.report.headline import BLOCK, render

    for path in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        text = path.read_text(encoding="utf-8")
        if BLOCK.search(text):
            assert render(text, ROOT) == text, f"{path.relative_to(ROOT)}: run `seqbench report --headline " \
                                               f"{path.relative_to(ROOT)}` after the records changed"
    assert len(BLOCK.findall(README)) == 1  # the README's one headline table; the rest live with their experiments


def test_a_headline_block_that_disagrees_with_its_records_is_caught():
    from seqbench.report.headline import BLOCK, render

    block = BLOCK.search(README).group(0)
    typed = block.replace("97.89 ± 2.91", "98.89 ± 2.91") if "97.89 ± 2.91" in block else block.replace("|", "| x", 1)
    assert render(typed, ROOT) != typed


def test_the_readmes_figure_is_the_report_of_the_records_its_table_names():
    """The README's figure is one `seqbench report DIR --out DIR/report` draws (report.md beside it shows it) from the
    records its headline table is generated from, so figure and table cannot come from different runs;
    notebooks/families.ipynb draws the same figure from those records (tests/test_notebook.py)."""
    from seqbench.report.headline import BLOCK

    figures = re.findall(r"!\[[^\]]*\]\(([^)]+\.png)\)", README)
    tabled = {d for m in BLOCK.finditer(README) for d in shlex.split(m.group("args")) if not d.startswith("-")}
    assert figures, "the README shows its headline figure"
    for figure in figures:
        path = Path(figure)
        assert path.parent.name == "report" and path.parent.parent.as_posix() in tabled, figure
        assert f"]({path.name})" in (ROOT / path.parent / "report.md").read_text(encoding="utf-8"), figure
