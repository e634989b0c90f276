"""A run directory is never lost: one run at a time holds it (seqbench.rundir.lock), a later failure never overwrites
a completed record, and a full disk is one line naming the file (seqbench.common.io). The same with real processes
and a real full file system in the integration tier."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from seqbench.common.errors import DiskFullError
from seqbench.common.io import atomic_torch_save
from seqbench.rundir.lock import run_directory_lock
from seqbench.rundir.results import read_results

from conftest import ROOT, TINY, TINY_MODELS, seqbench_cli

RUN = [*TINY, *TINY_MODELS["transformer"]]


def _train(run_dir: Path, capsys, monkeypatch, *extra: str) -> tuple[int, str]:
    monkeypatch.delenv("HYDRA_FULL_ERROR", raising=False)
    from conftest import _DATA_CACHE

    status, _, err = seqbench_cli(["train", f"paths.cache_dir={_DATA_CACHE[0]}", f"hydra.run.dir={run_dir}", *RUN,
                                   *extra], capsys)
    return status, err


def test_a_second_run_in_a_directory_in_use_refuses_naming_the_process(tmp_path, capsys, monkeypatch):
    run_dir = tmp_path / "run"
    with run_directory_lock(run_dir):
        status, err = _train(run_dir, capsys, monkeypatch)
    assert status == 2
    assert err.strip().splitlines()[-1] == (f"error: {run_dir}: in use by process {os.getpid()} on "
                                            f"{os.uname().nodename}, since "
                                            f"{(run_dir / '.lock').read_text().split('since ')[1].strip()}; "
                                            "wait for that run to end, or choose another hydra.run.dir")
    assert not (run_dir / "results.json").exists() and not (run_dir / "checkpoints").exists()
    status, err = _train(run_dir, capsys, monkeypatch)  # the lock went with the first run
    assert status == 0, err


def test_a_later_failure_never_overwrites_a_completed_record(tmp_path, capsys, monkeypatch):
    run_dir = tmp_path / "run"
    assert _train(run_dir, capsys, monkeypatch)[0] == 0
    completed = (run_dir / "results.json").read_text()

    def crash(*args, **kwargs):
        raise RuntimeError("a bug in a later attempt")

    monkeypatch.setattr("seqbench.training.run.measure", crash)  # after training and testing, before the record
    status, err = _train(run_dir, capsys, monkeypatch, "module.decoding.beam_size=1")  # changed: it runs again
    assert status != 0 and "a bug in a later attempt" in err
    assert (run_dir / "results.json").read_text() == completed


def test_a_full_disk_is_one_line_naming_the_file_and_a_real_error_keeps_its_traceback(tmp_path, monkeypatch):
    target = tmp_path / "checkpoints" / "best.ckpt"

    def full(obj, path):  # what torch.save raises when the disk fills mid-write: not an OSError
        Path(path).write_bytes(b"partial")
        raise RuntimeError("[enforce fail at inline_container.cc:672] . unexpected pos 57280 vs 57174")

    monkeypatch.setattr("torch.save", full)
    monkeypatch.setattr(shutil, "disk_usage", lambda path: shutil._ntuple_diskusage(10**9, 10**9 - 1024, 1024))
    with pytest.raises(DiskFullError, match=f"{target}: cannot be written, no space left"):
        atomic_torch_save({}, target)
    assert list(target.parent.iterdir()) == []  # no partial file left
    monkeypatch.setattr(shutil, "disk_usage", lambda path: shutil._ntuple_diskusage(10**12, 10**9, 10**12 - 10**9))
    with pytest.raises(RuntimeError, match="unexpected pos"):  # with room to spare it is not a full disk
        atomic_torch_save({}, target)


def test_a_full_disk_during_training_is_one_line(tmp_path, capsys, monkeypatch):
    def enospc(obj, path):
        raise OSError(28, "No space left on device", str(path))

    monkeypatch.setattr("torch.save", enospc)
    status, err = _train(tmp_path / "run", capsys, monkeypatch)
    lines = [line for line in err.splitlines() if line.startswith(("error:", "Traceback"))]
    assert status == 2 and len(lines) == 1, err
    assert "checkpoints/" in lines[0] and "no space left on its file system" in lines[0]
    assert read_results(tmp_path / "run")["status"] == "failed"  # recorded where it could be: here, the disk
                                                                  # had room for the small record


@pytest.mark.integration
def test_two_real_runs_in_one_directory_and_a_real_full_file_system(tmp_path):
    """Two `python train.py` started in one run directory a few seconds apart: the second refuses in one line, the
    first completes and keeps its record. Then a run on a 600 KB tmpfs (where mounting one is allowed): one line."""
    env = {**os.environ, "SEQBENCH_CACHE_DIR": str(tmp_path / "cache"), "OMP_NUM_THREADS": "1"}
    run_dir = tmp_path / "run"
    command = [sys.executable, "train.py", f"hydra.run.dir={run_dir}",  # tens of seconds: the second starts meanwhile
               *(o for o in RUN if not o.startswith("trainer.max_steps")), "trainer.max_epochs=-1",
               "trainer.max_steps=400"]
    first = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 120
    while not (run_dir / ".lock").is_file() or not (run_dir / ".lock").read_text():
        assert time.time() < deadline and first.poll() is None
        time.sleep(0.2)
    second = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    errors = [line for line in second.stderr.splitlines() if line.startswith(("error:", "Traceback"))]
    assert second.returncode == 2 and errors == [errors[0]] and f"in use by process {first.pid}" in errors[0]
    assert first.wait(timeout=600) == 0, first.stderr.read()[-2000:]
    assert read_results(run_dir)["status"] == "completed"

    full = tmp_path / "full"
    full.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=600k", "tmpfs", str(full)],
                                           capture_output=True).returncode != 0:
        pytest.skip("no tmpfs can be mounted here (needs root)")
    try:
        done = subprocess.run([sys.executable, "train.py", f"hydra.run.dir={full}/run",
                               *(o for o in RUN if not o.startswith("trainer.max_steps")), "trainer.max_steps=10"],
                              cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
        errors = [line for line in done.stderr.splitlines() if line.startswith(("error:", "Traceback"))]
        assert done.returncode == 2 and len(errors) == 1, done.stderr[-3000:]
        assert f"{full}/run/" in errors[0] and "no space left on its file system" in errors[0]
        assert not list((full / "run" / "checkpoints").glob("*.ckpt"))  # no half-written checkpoint
        json.loads((full / "run" / "results.json").read_text()) if (full / "run" / "results.json").exists() \
            else None  # recorded where it could be, or not at all; never a half-written record
    finally:
        subprocess.run(["umount", str(full)], capture_output=True)


def test_a_record_names_the_commit_of_the_checkout_it_ran_from(tmp_path):
    """versions.seqbench_commit: HEAD of the checkout whose src/ holds the package, +dirty when a tracked file
    differs; None for a package outside a src/ layout (an installed wheel inside someone else's repository)."""
    import subprocess

    from seqbench.rundir.results import source_commit

    def git(*args):
        return subprocess.run(["git", "-C", str(tmp_path / "repo"), *args], check=True, capture_output=True,
                              text=True).stdout.strip()

    package = tmp_path / "repo" / "src" / "seqbench"
    package.mkdir(parents=True)
    (tmp_path / "repo" / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    (package / "__init__.py").write_text("")
    git("init", "-q")
    git("-c", "user.email=a@b", "-c", "user.name=a", "commit", "-q", "--allow-empty", "-m", "empty")
    git("add", ".")
    git("-c", "user.email=a@b", "-c", "user.name=a", "commit", "-q", "-m", "files")
    head = git("rev-parse", "--short=12", "HEAD")
    assert source_commit(package) == head
    (package / "__init__.py").write_text("x = 1\n")
    assert source_commit(package) == f"{head}+dirty"
    (package / "new.py").write_text("")  # untracked files do not make a checkout dirty
    git("checkout", "-q", "--", ".")
    assert source_commit(package) == head
    wheel = tmp_path / "repo" / "venv" / "lib" / "site-packages" / "seqbench"
    wheel.mkdir(parents=True)
    assert source_commit(wheel) is None
    assert source_commit(tmp_path / "elsewhere" / "src" / "seqbench") is None  # no pyproject.toml, no git
