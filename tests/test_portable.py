"""Records and documents name no folder of the machine that made them (seqbench.common.portable): a run's results.json
and config.yaml, the commands sweeps and the bench record, and every committed file under docs/ and notebooks/ and
README.md."""
from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from seqbench.common.portable import located, recorded_command, relative, shown

ROOT = Path(__file__).resolve().parents[1]
# an absolute path into a home, work or temporary folder (Linux, macOS), not a relative one such as ../tmp/x
MACHINE_PATH = re.compile(r"(?<![\w.~-])/(?:home|root|work|tmp|Users|var/folders|private/var)/[\w.-]")


def committed_texts() -> list[Path]:
    files = [ROOT / "README.md", *(p for folder in ("docs", "notebooks") for p in (ROOT / folder).rglob("*")
                                   if p.is_file() and ".ipynb_checkpoints" not in p.parts)]
    return [p for p in files if p.suffix not in {".png", ".pt", ".ckpt", ".safetensors", ".pdf", ".svg"}]


def machine_paths(text: str) -> list[str]:
    return [text[max(0, m.start() - 40):m.end() + 40] for m in MACHINE_PATH.finditer(text)]


def test_no_committed_document_or_record_names_a_machines_folder():
    found = {}
    for path in committed_texts():
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        if hits := machine_paths(text):
            found[path.relative_to(ROOT).as_posix()] = hits[0]
    assert not found, f"{len(found)} file(s) name a machine's folder, e.g. {dict(list(found.items())[:5])}"


@pytest.mark.parametrize("text, found", [
    ("cache_dir: /root/.cache/seqbench", True), ('"run_dir": "/work/runs/x"', True), ("`git clone /tmp/ci/c`", True),
    ("/home/user/x", True), ("/Users/me/x", True), ("/var/folders/ab/T/x", True),
    ("run_dir: .", False), ("hydra.run.dir=OUT/trials/001", False), ("cache_dir: ${paths.cache_dir}", False),
    ("/usr/bin/env python train.py", False), ("docs/results/bench/x", False), ("../tmp/x", False),
])
def test_the_scan_finds_machine_paths_and_nothing_else(text, found):
    assert bool(machine_paths(text)) is found


def test_locations_are_written_relative_or_as_interpolations(tmp_path):
    run = tmp_path / "runs" / "a"
    config = {"paths": {"log_dir": str(tmp_path / "runs"), "output_dir": str(run), "cache_dir": str(tmp_path / "c")},
              "ckpt": f"{run}/checkpoints/last.ckpt", "sibling": f"{run}b", "data": [str(tmp_path / "c")]}
    written = located(config)
    assert written["ckpt"] == "${paths.output_dir}/checkpoints/last.ckpt" and written["data"] == ["${paths.cache_dir}"]
    assert written["sibling"] == "${paths.log_dir}/ab", "a folder's name, not a prefix of another name"
    assert located(written) == written and str(tmp_path) not in repr(written)
    assert relative(run / "checkpoints" / "b.ckpt", run) == "checkpoints/b.ckpt" and relative(run, run) == "."
    assert relative("/elsewhere/x.ckpt", run) == "/elsewhere/x.ckpt"  # outside the run: as given
    assert shown(tmp_path / "x", "OUT", cwd=tmp_path) == "x" and shown(tmp_path / "x", "OUT", cwd=ROOT) == "OUT"


def test_a_recorded_command_names_python_and_its_output_folder(tmp_path):
    sweep = tmp_path / "sweep"
    args = ["/usr/bin/env", sys.executable, "train.py", "seed=1", f"hydra.run.dir={sweep / 'trials' / '001'}",
            str(sweep / "args.json")]
    assert recorded_command(args, tmp_path / "sweep", cwd=ROOT) == [
        "/usr/bin/env", "python", "train.py", "seed=1", "hydra.run.dir=OUT/trials/001", "OUT/args.json"]
    assert recorded_command(args, tmp_path / "sweep", cwd=tmp_path)[4] == "hydra.run.dir=sweep/trials/001"


def test_the_bench_record_names_venv_and_out():
    from seqbench.report.bench import recorded_command as bench_command

    assert bench_command(["--threads", "2", "--fairseq", "/work/fairseq-venv", "--out", "/work/bench-out/x"]) == \
        "seqbench bench --threads 2 --fairseq VENV --out OUT"
    assert bench_command(["--fairseq=/opt/v", "--out=logs/b"]) == "seqbench bench --fairseq=VENV --out=logs/b"


def test_a_runs_record_and_config_name_no_folder_of_its_machine(trained_run):
    from seqbench.rundir.checkpoints import best_checkpoint
    from seqbench.rundir.results import read_results

    record = read_results(trained_run)
    machine = str(trained_run.parent)  # the run and its data cache both lie here
    assert record["run_dir"] == "." and record["train"]["best_checkpoint"].startswith("checkpoints/best-")
    assert machine not in (trained_run / "results.json").read_text()
    assert machine not in (trained_run / "config.yaml").read_text()
    assert record["config"]["data"]["cache_dir"] == "${paths.cache_dir}"
    assert best_checkpoint(trained_run) == trained_run / record["train"]["best_checkpoint"]
