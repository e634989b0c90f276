"""The notebooks run end to end (nbclient): on the committed records under docs/results/ by default, where they
reproduce the outputs they are committed with (tables and figures from the records, none typed), and on any run
directory (`RUNS`, which SEQBENCH_RUNS overrides)."""
from __future__ import annotations

import copy
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
FIGURES = {"rnn_vs_attention.ipynb": 5, "families.ipynb": 3}  # the figures each draws


def execute(notebook):
    notebook = copy.deepcopy(notebook)
    NotebookClient(notebook, timeout=180, kernel_name="python3", record_timing=False,
                   resources={"metadata": {"path": str(NOTEBOOKS)}}).execute()  # Jupyter starts in notebooks/
    return notebook


def outputs(notebook) -> list:
    return [output for cell in notebook.cells if cell.cell_type == "code" for output in cell.outputs]


def images(notebook) -> int:
    return sum("image/png" in output.get("data", {}) for output in outputs(notebook))


def texts(notebook) -> list[str]:
    """What the notebook prints and the tables it shows (figures aside: their bytes depend on matplotlib's build)."""
    return [output.get("text") or output["data"].get("text/markdown", "") for output in outputs(notebook)
            if output.output_type == "stream" or "text/markdown" in output.get("data", {})]


def test_every_notebook_is_tested():
    assert sorted(p.name for p in NOTEBOOKS.glob("*.ipynb")) == sorted(FIGURES)


@pytest.mark.parametrize("name", FIGURES)
def test_a_notebook_reproduces_its_committed_outputs_from_the_committed_records(name, monkeypatch):
    monkeypatch.delenv("SEQBENCH_RUNS", raising=False)
    monkeypatch.delenv("SEQBENCH_CONTROLLED", raising=False)
    monkeypatch.delenv("SEQBENCH_FAITHFUL", raising=False)
    committed = nbformat.read(NOTEBOOKS / name, as_version=4)
    assert images(committed) == FIGURES[name], "committed with its figures rendered"
    executed = execute(committed)
    assert not [o for o in outputs(executed) if o.output_type == "error"]
    assert images(executed) == FIGURES[name]
    assert texts(executed) == texts(committed), f"re-run notebooks/{name} and commit it with its outputs"
    assert any("| model | seeds |" in text for text in texts(executed))


def test_the_families_notebook_reads_the_records_of_the_readmes_headline():
    """notebooks/families.ipynb is the README's headline comparison at length: by default it reads the records the
    README's headline table is generated from."""
    from seqbench.report.headline import BLOCK

    readme = (NOTEBOOKS.parent / "README.md").read_text(encoding="utf-8")
    records = [word for word in BLOCK.search(readme).group("args").split() if word.startswith("docs/")]
    source = "".join(cell.source for cell in nbformat.read(NOTEBOOKS / "families.ipynb", as_version=4).cells
                     if cell.cell_type == "code")
    assert records and all(f'"../{directory}"' in source for directory in records), records


@pytest.mark.parametrize("name", FIGURES)
def test_a_notebook_reads_any_run_directory(name, trained_run, monkeypatch):
    """RUNS set to another run directory (here the session's tiny trained run, through SEQBENCH_RUNS): its tables
    and figures, not the committed records'."""
    from seqbench.rundir.results import read_results

    monkeypatch.setenv("SEQBENCH_RUNS", str(trained_run))  # the kernel inherits the environment
    monkeypatch.setenv("SEQBENCH_CONTROLLED", str(trained_run))  # rnn_vs_attention's controlled pair
    monkeypatch.setenv("SEQBENCH_FAITHFUL", str(trained_run))  # and its faithful pair
    executed = execute(nbformat.read(NOTEBOOKS / name, as_version=4))
    assert not [o for o in outputs(executed) if o.output_type == "error"]
    assert images(executed) == FIGURES[name]
    shown = "".join(texts(executed))
    assert f"1 run(s) of 1 model(s): {read_results(trained_run)['label']}" in shown
    assert str(trained_run) in shown and "docs/results" not in shown
