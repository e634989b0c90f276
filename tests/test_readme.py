"""The README cannot drift from the configs: every `python train.py ...` command in it composes and validates
(Hydra's compose API, no training), multiruns job by job; and .ci/run runs the README's test command."""
from __future__ import annotations

import itertools
import re
import shlex
from pathlib import Path

import pytest

from seqbench.config.composed import validate

from conftest import compose_train

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.S | re.M)


def train_commands(text: str) -> list[str]:
    """The argument strings of every `python train.py` command: in code blocks (backslash continuations joined,
    `# comments` and anything after `&&` or `|` dropped) and in inline code spans (which may wrap lines)."""
    commands = []
    for block in FENCE.findall(text):
        for line in block.replace("\\\n", " ").splitlines():
            commands += _after_train_py(line.split(" #", 1)[0])
    for span in re.findall(r"`([^`]+)`", FENCE.sub("", text)):
        commands += _after_train_py(" ".join(span.split()))
    return commands


def _after_train_py(line: str) -> list[str]:
    return [re.split(r"&&|\||;", part, maxsplit=1)[0].strip() for part in line.split("python train.py")[1:]]


def _compose(overrides: list[str], hydra_config: bool = False):
    return compose_train(overrides, hydra_config)


def jobs(arguments: str) -> list[list[str]]:
    """The override lists the command runs: one, or for `-m` every job of the command-line and config sweeps."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    args = shlex.split(arguments)
    if "-m" not in args and "--multirun" not in args:
        return [args]
    args = [a for a in args if a not in ("-m", "--multirun")]
    params = _compose([a for a in args if "," not in a], hydra_config=True).hydra.sweeper.params or {}
    axes = {key: [f"{key}={v}" for v in str(values).split(",")] for key, values in params.items()}
    for override in OverridesParser.create().parse_overrides(args):
        key = override.input_line.split("=", 1)[0]  # with its +/~ prefix, as typed
        axes[key] = ([f"{key}={v}" for v in override.sweep_string_iterator()] if override.is_sweep_override()
                     else [override.input_line])
    return [list(job) for job in itertools.product(*axes.values())]


COMMANDS = train_commands(README)


def test_the_readme_has_train_commands():
    assert len(COMMANDS) >= 15 and "" in COMMANDS  # the quickstart's bare `python train.py` included
    assert any("\\" not in c and "data.vocab_size=37000" in c and "model.share_all_embeddings=true" in c
               for c in COMMANDS), "a backslash-continued command is joined"


@pytest.mark.parametrize("arguments", COMMANDS)
def test_every_readme_train_command_composes(arguments):
    assert not re.search(r"<[^>]*>", arguments), f"placeholder in a train.py command: {arguments}"
    for overrides in jobs(arguments):
        validate(_compose(overrides))


def test_multirun_commands_expand_to_their_jobs():
    assert len(jobs("-m model.n_heads=1,2,4,8")) == 4
    assert len(jobs("-m experiment=arch_comparison")) == 9


def test_ci_runs_the_readme_test_command():
    test_command = next(line.split(" #")[0].strip() for block in FENCE.findall(README) for line in block.splitlines()
                        if line.split(" #")[0].strip().endswith("&& pytest"))
    steps = [step.strip() for step in test_command.split("&&")]
    ci = [" ".join(line.split(" #")[0].replace("--quiet ", "").split())
          for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    assert all(step in ci for step in steps), (steps, ci)  # .ci/run installs quietly, otherwise the same commands
