"""Broken files, odd lines, unwritable places and Ctrl-C after training.

Every file a command reads from a run directory or an export is checked as it is read: a missing, empty, cut-short or
foreign one is one `error:` line naming it (seqbench.rundir.loading). translate gives one output line per input line
whatever a line holds (lines end at "\\n" only), and invalid UTF-8 on stdin is one line. An output that cannot be
written is one line naming the cause its errno gives, before any work (seqbench.common.io.check_writable), never a
full disk guessed from free space. Ctrl-C during translate: exit 130, no traceback, the lines translated so far
written (integration tier: a real process and a real signal).

Everything copies the session's shared tiny run (conftest.trained_run) or an export of it before breaking anything.
"""
from __future__ import annotations

import errno
import io
import json
import os
import select
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from seqbench.common.errors import DiskFullError, InputError
from seqbench.common.io import atomic_write_bytes

from conftest import seqbench_cli


@pytest.fixture(scope="module")
def exported(trained_run, tmp_path_factory) -> Path:
    from seqbench.rundir.export import export

    return export(trained_run, tmp_path_factory.mktemp("export") / "model")


@pytest.fixture
def read_only(monkeypatch):
    """make(folder): the folder refuses new files. Its mode says so; where the tests run as root, whom modes do not
    stop, os.open also refuses to create files in it, with the errno the kernel gives everyone else."""
    folders = []
    real_open = os.open

    def refusing(path, flags, *args, **kwargs):
        if flags & os.O_CREAT and Path(path).absolute().parent in folders:
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(path))
        return real_open(path, flags, *args, **kwargs)

    def make(folder: Path) -> Path:
        folder.chmod(0o555)
        folders.append(folder.absolute())
        if os.geteuid() == 0:
            monkeypatch.setattr(os, "open", refusing)
        return folder

    yield make
    for folder in folders:
        folder.chmod(0o755)


def _one_error_line(status, out, err) -> str:
    lines = err.strip().splitlines()
    assert status == 2 and out == "" and len(lines) == 1 and lines[0].startswith("error: "), err
    return lines[0]


def _with_a_later_setting(path: Path) -> None:
    """model.json as a later seqbench might write it: with a decoding setting this one does not know."""
    spec = json.loads(path.read_text())
    spec["decoding"]["temperature"] = 0.7
    path.write_text(json.dumps(spec))


DAMAGE = {
    "missing": lambda path: path.unlink(),
    "empty": lambda path: path.write_bytes(b""),
    "cut": lambda path: path.write_bytes(path.read_bytes()[:40]),  # a copy that stopped after 40 bytes
    "foreign": lambda path: path.write_text('{"these": "are not the bytes the run wrote"}\n'),
    "other_vocabulary": lambda path: path.write_bytes((path.parent / "src.json").read_bytes()),
    "notes": lambda path: path.write_text("here are my notes, saved over the file\n"),
    "newer": lambda path: _with_a_later_setting(path),
}
DAMAGES = ("missing", "empty", "cut", "foreign")
BROKEN = [
    *(("export", file, damage) for file in ("model.json", "model.safetensors", "tokenizers/src.json",
                                            "tokenizers/tgt.json") for damage in DAMAGES),
    ("export", "tokenizers/tgt.json", "other_vocabulary"),
    ("export", "model.json", "newer"),
    *(("run", file, damage) for file in ("model.json", "tokenizers/tgt.json") for damage in DAMAGES),
    ("run", "tokenizers/tgt.json", "other_vocabulary"),
    *(("run", "checkpoints/best-*.ckpt", damage) for damage in (*DAMAGES, "notes")),
]


@pytest.mark.parametrize("kind, file, damage", BROKEN, ids=["-".join(case) for case in BROKEN])
def test_a_broken_file_of_a_run_or_an_export_is_one_line_naming_it(kind, file, damage, trained_run, exported,
                                                                    tmp_path, capsys):
    root = tmp_path / kind
    shutil.copytree(exported if kind == "export" else trained_run, root)
    broken = next(root.glob(file))
    DAMAGE[damage](broken)
    source = tmp_path / "src.txt"
    source.write_text("a sentence to translate\n")
    line = _one_error_line(*seqbench_cli(["translate", str(root), "--input", str(source)], capsys))
    assert broken.name in line or (damage == "other_vocabulary" and broken.parent.name in line), line


@pytest.mark.parametrize("damage", ["empty", "cut", "notes"])
def test_a_damaged_attention_file_is_one_line_naming_it(damage, trained_run, tmp_path):
    """`seqbench report` draws a run's saved attention maps from attention.pt (seqbench.rundir.reader)."""
    from seqbench.rundir.layout import RunDir
    from seqbench.rundir.reader import Run

    run = tmp_path / "run"
    shutil.copytree(trained_run, run)
    assert Run(run, {}).attention() is not None
    DAMAGE[damage](RunDir(run).attention)
    with pytest.raises(InputError, match="attention.pt"):
        Run(run, {}).attention()


def test_a_damaged_overrides_file_is_one_line_and_no_export(trained_run, tmp_path, capsys):
    run = tmp_path / "run"
    shutil.copytree(trained_run, run)
    (run / ".hydra").mkdir()
    (run / ".hydra" / "overrides.yaml").write_text("- callbacks=ema\n- 'model.d_model=3")  # cut mid-quote
    line = _one_error_line(*seqbench_cli(["export", str(run), str(tmp_path / "out")], capsys))
    assert "overrides.yaml" in line and not (tmp_path / "out").exists()


# Three lines, each holding a character str.splitlines would end a line at; the second ends in CRLF.
ODD_LINES = "a form\ffeed here\nline\u2028separator and a carriage\rreturn\r\nfile\x1cseparator, next\x85line\n"


def _stdin(monkeypatch, data: bytes) -> None:
    """stdin as CPython opens it on POSIX: UTF-8 text split at "\\n", over a byte buffer."""
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data), encoding="utf-8", newline="\n"))


def test_translate_gives_one_line_per_input_line_from_a_file_and_from_stdin(trained_run, tmp_path, capsys,
                                                                           monkeypatch):
    source = tmp_path / "src.txt"
    source.write_bytes(ODD_LINES.encode("utf-8"))
    status, from_file, err = seqbench_cli(["translate", str(trained_run), "--input", str(source), "--beam", "1"],
                                          capsys)
    assert status == 0, err
    assert from_file.endswith("\n") and len(from_file.split("\n")) - 1 == 3, from_file
    _stdin(monkeypatch, ODD_LINES.encode("utf-8"))
    status, from_stdin, err = seqbench_cli(["translate", str(trained_run), "--beam", "1"], capsys)
    assert status == 0 and from_stdin == from_file, err


def test_invalid_utf8_on_stdin_is_one_line_after_the_lines_before_it(trained_run, capsys, monkeypatch):
    first = b"a clean first line\n"  # 19 bytes: the bad byte is at offset 19
    _stdin(monkeypatch, first + b"\xff\xfe not UTF-8\nthird line\n")
    status, out, err = seqbench_cli(["translate", str(trained_run), "--beam", "1"], capsys)
    lines = err.strip().splitlines()
    assert status == 2 and len(lines) == 1 and lines[0].startswith("error: ") and "19" in lines[0], err
    assert len(out.split("\n")) - 1 == 1  # the line before it was translated and written


@pytest.mark.parametrize("code", [errno.EACCES, errno.EROFS, errno.ENOSPC])
def test_a_failed_write_is_named_by_its_errno_not_by_the_free_space(code, tmp_path, monkeypatch):
    """With no room left to guess from, a refused write is still reported as what its errno says."""
    monkeypatch.setattr(shutil, "disk_usage", lambda path: shutil._ntuple_diskusage(10**9, 10**9, 0))

    def refused(self, data):
        raise OSError(code, os.strerror(code), str(self))

    monkeypatch.setattr(Path, "write_bytes", refused)
    with pytest.raises(InputError) as raised:
        atomic_write_bytes(tmp_path / "out.txt", b"text")
    assert isinstance(raised.value, DiskFullError) == (code == errno.ENOSPC)
    assert str(tmp_path / "out.txt") in str(raised.value)
    assert code == errno.ENOSPC or os.strerror(code) in str(raised.value)
    assert list(tmp_path.iterdir()) == []


def test_average_into_a_read_only_run_is_one_line_and_writes_nothing(trained_run, tmp_path, capsys, read_only):
    run = tmp_path / "run"
    shutil.copytree(trained_run, run)
    before = sorted(run.iterdir())
    read_only(run)
    line = _one_error_line(*seqbench_cli(["average", str(run), "--last", "2", "--output", str(run / "avg.ckpt")],
                                         capsys))
    assert str(run / "avg.ckpt") in line and os.strerror(errno.EACCES) in line
    assert sorted(run.iterdir()) == before


def test_translate_output_in_a_read_only_folder_is_one_line(trained_run, tmp_path, capsys, read_only):
    folder = tmp_path / "out"
    folder.mkdir()
    read_only(folder)
    line = _one_error_line(*seqbench_cli(["translate", str(trained_run), "--input",
                                          str(trained_run / "sources.test.txt"), "--output",
                                          str(folder / "hyp.txt")], capsys))
    assert os.strerror(errno.EACCES) in line and list(folder.iterdir()) == []


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="no /proc here")
def test_export_where_nothing_can_be_created_names_the_cause_not_a_full_disk(trained_run, capsys):
    out = Path("/proc/seqbench-export")
    line = _one_error_line(*seqbench_cli(["export", str(trained_run), str(out)], capsys))
    assert str(out) in line and os.strerror(errno.ENOENT) in line and "no space" not in line.lower()


def test_export_into_a_read_only_folder_is_one_line(trained_run, tmp_path, capsys, read_only):
    folder = tmp_path / "models"
    folder.mkdir()
    read_only(folder)
    line = _one_error_line(*seqbench_cli(["export", str(trained_run), str(folder / "model")], capsys))
    assert os.strerror(errno.EACCES) in line and list(folder.iterdir()) == []


def _drain(proc: subprocess.Popen, timeout: float) -> tuple[str, str]:
    """stdout and stderr until the process ends, stdin left open (communicate() would close it: an EOF, not a ^C)."""
    import threading

    out: dict[str, str] = {}
    readers = [threading.Thread(target=lambda name=name: out.__setitem__(name, getattr(proc, name).read()))
               for name in ("stdout", "stderr")]
    for reader in readers:
        reader.start()
    proc.wait(timeout=timeout)
    for reader in readers:
        reader.join(timeout=30)
    return out.get("stdout", ""), out.get("stderr", "")


@pytest.mark.integration
def test_ctrl_c_while_translate_reads_stdin_exits_130_without_a_traceback(trained_run, tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    env = dict(os.environ, HOME=str(home), HF_HUB_OFFLINE="1", OMP_NUM_THREADS="1")
    proc = subprocess.Popen([sys.executable, "-m", "seqbench", "translate", str(trained_run), "--beam", "1"],
                            env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True,  # xdist workers ignore SIGINT and a child inherits that: restore a shell's
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        proc.stdin.write("a sentence to translate\n")
        proc.stdin.flush()
        ready, _, _ = select.select([proc.stdout], [], [], 240)
        assert ready, "no translation came back"
        first = proc.stdout.readline()
        proc.send_signal(signal.SIGINT)  # while it waits for the next line, stdin open as a terminal keeps it
        rest, err = _drain(proc, timeout=120)  # reading both pipes: a full stderr pipe must not block its exit
    finally:
        proc.kill()
    assert proc.returncode == 130, err[-3000:]
    assert first.endswith("\n") and rest == ""
    assert "Traceback" not in err and [line for line in err.splitlines() if line.startswith("error:")] == \
        [err.strip().splitlines()[-1]], err


def test_data_benchmark_into_a_read_only_folder_refuses_before_any_work(tmp_path, capsys, read_only, monkeypatch):
    from seqbench.measure import scale

    monkeypatch.setattr(scale, "measure_size", lambda *args: pytest.fail("work began before the refusal"))
    (tmp_path / "out").mkdir()
    out = read_only(tmp_path / "out")
    line = _one_error_line(*seqbench_cli(["data", "benchmark", "--pairs", "10", "--work", str(tmp_path / "work"),
                                          "--out", str(out)], capsys))
    assert str(out / "scale.json") in line and os.strerror(errno.EACCES) in line and not (tmp_path / "work").exists()
