"""notebooks/compare.ipynb runs end to end (nbclient) on synthetic run directories and shows every plot."""
from __future__ import annotations

from pathlib import Path

import nbformat
from nbclient import NotebookClient

from report_fixtures import make_multirun

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "compare.ipynb"


def test_compare_notebook_executes(tmp_path, monkeypatch):
    runs = make_multirun(tmp_path / "multirun", seeds=(1, 2))
    monkeypatch.setenv("SEQBENCH_RUNS", str(runs))  # the kernel inherits the environment
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    NotebookClient(notebook, timeout=120, kernel_name="python3",
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    outputs = [o for cell in notebook.cells if cell.cell_type == "code" for o in cell.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    # BLEU by length, learning curves, throughput, and 2 attention examples for each of 2 models with attention
    assert len(images) == 3 + 4
    markdown = "".join(o["data"].get("text/markdown", "") for o in outputs if "data" in o)
    assert "p vs transformer" in markdown and "61+" in markdown
