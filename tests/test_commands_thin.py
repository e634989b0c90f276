"""Commands parse, call one function of a lower layer and print (issue 52): a command module that grows past MAX_LINES
holds work that belongs in a layer below (averaging in seqbench.rundir.averaging, the model card in
seqbench.rundir.model_card, a multirun's failed jobs in seqbench.training.jobs, bench's option checks in
seqbench.measure.bench_options, corpus tables in seqbench.report.corpus, ...). The import contracts in
pyproject.toml keep libraries out of commands; this keeps work out."""
from __future__ import annotations

from pathlib import Path

import seqbench.commands

COMMANDS_DIR = Path(seqbench.commands.__file__).parent
MAX_LINES = 100


def _lines(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def test_every_command_module_is_thin():
    too_long = {path.name: _lines(path) for path in sorted(COMMANDS_DIR.glob("*.py")) if _lines(path) > MAX_LINES}
    assert not too_long, (f"command modules over {MAX_LINES} lines: {too_long}; move the work into the layer that "
                          f"owns it and leave the command parsing, calling and printing")
