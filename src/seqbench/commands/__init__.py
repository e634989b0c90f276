"""The `seqbench` command: `seqbench <command> [arguments]`, one module here per command, each `main(argv)` run under
one error wrapper (seqbench.commands.cli.run_command). `python -m seqbench <command>` is the same."""
from __future__ import annotations

import importlib
import os
import sys
from typing import Sequence

# command -> (module under seqbench.commands, one line of help)
COMMANDS = {
    "train": ("train", "train, evaluate and record a run (Hydra overrides, e.g. model=rnn trainer.max_steps=500)"),
    "translate": ("translate", "translate stdin or a file with a trained run or an exported model"),
    "score": ("score", "score any system's output as seqbench scores its runs (BLEU, chrF, by length, bootstrap)"),
    "average": ("average", "average a run's recent checkpoints"),
    "export": ("export", "export a trained run as a standalone model folder"),
    "bench": ("bench", "training and decoding speed of the reference models beside plain PyTorch"),
    "sweep": ("sweep", "run a W&B sweep file's trials locally, or a successive-halving recipe search"),
    "tune-decoding": ("tune_decoding", "choose a model's beam size and length penalty on validation"),
    "report": ("report", "compare finished runs: tables, significance, plots"),
    "data": ("data", "prepare a corpus once for every process, describe it, or generate a WMT-sized one"),
}


def usage() -> str:
    width = max(map(len, COMMANDS))
    lines = ["usage: seqbench <command> [arguments]   (seqbench <command> --help for its arguments)",
             "       seqbench --version | -sc install=bash (shell completion, as `seqbench train -sc ...`)", "",
             "commands:"]
    return "\n".join(lines + [f"  {name:<{width}}  {text}" for name, (_, text) in COMMANDS.items()])


def version() -> str:
    """`seqbench X.Y.Z`, and the commit of the checkout it runs from where there is one (as records name it)."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed

    from seqbench.rundir.results import source_commit

    try:
        number = installed("seqbench")
    except PackageNotFoundError:  # run from a source tree that was never installed
        number = "(not installed)"
    commit = source_commit()
    return f"seqbench {number}" + (f" (commit {commit})" if commit else "")


def _completion(argv: list[str]) -> int:
    """Hydra's shell completion for `seqbench`: its installed script asks `seqbench -sc query=<shell>` with the line
    in COMP_LINE. A line past `seqbench train ` is Hydra's to complete, as the line `seqbench ...` without the
    command; otherwise the word being typed is a command's name. install/uninstall print Hydra's script."""
    from seqbench.commands.train import main as train

    line = os.environ.get("COMP_LINE", "")
    words = line.split()
    if not any(a.startswith("query=") for a in argv[1:]) or words[1:2] == ["train"] and (len(words) > 2
                                                                                         or line.endswith(" ")):
        if words[1:2] == ["train"]:
            cut = line.index("train") + len("train")
            os.environ["COMP_LINE"] = line[:line.index("train")].rstrip() + line[cut:]
            point = int(os.environ.get("COMP_POINT", len(line)))
            os.environ["COMP_POINT"] = str(max(0, point - (len(line) - len(os.environ["COMP_LINE"]))))
        return train(argv)
    typed = words[1] if len(words) > 1 and not line.endswith(" ") else ""
    print(" ".join(name for name in [*COMMANDS, "--version", "--help"] if name.startswith(typed)))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    from seqbench.commands.cli import run_command
    from seqbench.common.third_party import silence_known_warnings

    silence_known_warnings()  # before any command imports the libraries that warn
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(usage(), file=sys.stdout if argv else sys.stderr)
        return 0 if argv else 2
    if argv[0] in ("-V", "--version"):
        print(version())
        return 0
    if argv[0] in ("-sc", "--shell-completion"):
        return _completion(argv)
    name, rest = argv[0], argv[1:]
    if name not in COMMANDS and "=" in name and os.environ.get("LOCAL_RANK"):
        # A DDP rank that Lightning started: it re-runs this process's command line, which Hydra saw without the
        # command name (`seqbench train a=b` -> `seqbench a=b`)
        name, rest = "train", argv
    if name not in COMMANDS:
        print(f"error: {name}: no such command (commands: {', '.join(COMMANDS)}); see seqbench --help",
              file=sys.stderr)
        return 2
    module = importlib.import_module(f"seqbench.commands.{COMMANDS[name][0]}")
    return run_command(module.main, rest, hydra=name == "train")
