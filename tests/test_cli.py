"""The `seqbench` command itself: its version, its shell completion (the subcommands, and Hydra's for `train`), and
help texts that give each default once."""
from __future__ import annotations

import re

import pytest

from seqbench.commands import COMMANDS

from conftest import seqbench_cli


def test_version_names_the_package_and_the_checkout(capsys):
    from importlib.metadata import version

    from seqbench.rundir.results import source_commit

    status, out, _ = seqbench_cli(["--version"], capsys)
    assert status == 0 and out.startswith(f"seqbench {version('seqbench')}")
    commit = source_commit()
    assert (f"(commit {commit})" in out) if commit else "commit" not in out


def _complete(line: str, capsys, monkeypatch) -> list[str]:
    monkeypatch.setenv("COMP_LINE", line)
    monkeypatch.setenv("COMP_POINT", str(len(line)))
    status, out, _ = seqbench_cli(["-sc", "query=bash"], capsys)
    assert status == 0
    return out.split()


def test_completion_offers_the_commands_then_hydras_overrides_after_train(capsys, monkeypatch):
    assert _complete("seqbench tr", capsys, monkeypatch) == ["train", "translate"]
    assert set(_complete("seqbench ", capsys, monkeypatch)) >= set(COMMANDS) | {"--version"}
    # past `seqbench train`, Hydra completes the line as it does `python train.py ...`
    assert "model=rnnsearch_small" in _complete("seqbench train model=rnn", capsys, monkeypatch)
    assert "experiment=equal_compute_plateau" in _complete("seqbench train experiment=equal", capsys, monkeypatch)


def test_completion_installs_hydras_script_for_seqbench(capsys, monkeypatch):
    monkeypatch.setattr("sys.argv", ["/usr/local/bin/seqbench"])  # as the installed command starts
    status, out, _ = seqbench_cli(["-sc", "install=bash"], capsys)
    assert status == 0 and "complete -p seqbench" in out and "hydra_bash_completion" in out


@pytest.mark.parametrize("command", [c for c in COMMANDS if c != "train"])
def test_help_gives_each_default_once(command, capsys):
    status, out, _ = seqbench_cli([command, "--help"], capsys)
    text = " ".join(out.split())
    assert status == 0 and "usage: seqbench" in text
    assert "(default: None)" not in text
    options = re.split(r" (?=--?[a-z])", text)
    assert not [o for o in options if o.count("default") > 1], command
