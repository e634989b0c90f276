"""The package as `pip install .` leaves it (not editable), run from a directory outside the checkout: the configs
ship inside the package, so `seqbench` composes them from anywhere (integration tier: a real install and processes)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> tuple[Path, dict]:
    """seqbench built as a wheel and installed into a fresh target folder (dependencies from this environment), and
    an environment in which that copy, not the checkout, is the one imported."""
    source, target = tmp_path_factory.mktemp("source"), tmp_path_factory.mktemp("installed")
    for name in ("pyproject.toml", "README.md", "src", "conf"):  # a copy: building writes build/ beside the sources
        copy = shutil.copytree if (ROOT / name).is_dir() else shutil.copy
        copy(ROOT / name, source / name, **({"ignore": shutil.ignore_patterns("*.egg-info", "__pycache__")}
                                            if (ROOT / name).is_dir() else {}))
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                    "--target", str(target), str(source)], check=True, timeout=600)
    env = dict(os.environ, PYTHONPATH=str(target), OMP_NUM_THREADS="1", WANDB_MODE="offline")
    return target, env


def run(installed, tmp_path, *args: str) -> subprocess.CompletedProcess:
    target, env = installed
    return subprocess.run([sys.executable, str(target / "bin" / "seqbench"), *args], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=600)


def test_the_installed_copy_is_the_one_imported(installed, tmp_path):
    target, env = installed
    where = subprocess.run([sys.executable, "-c", "import seqbench; print(seqbench.__file__)"], cwd=tmp_path,
                           env=env, capture_output=True, text=True, check=True).stdout.strip()
    assert Path(where).is_relative_to(target) and not Path(where).is_relative_to(ROOT)
    assert (target / "seqbench" / "conf" / "train.yaml").is_file()  # the top-level conf/, mapped into the wheel
    assert (target / "seqbench" / "conf" / "model" / "transformer.yaml").is_file()


def test_the_packages_pyproject_names_are_every_package_under_src():
    from setuptools import find_packages

    tomllib = pytest.importorskip("tomllib")  # Python 3.11+

    listed = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    assert sorted(listed) == sorted([*find_packages(str(ROOT / "src")), "seqbench.conf"])
    # one copy of the configs: the top-level conf/, shipped as seqbench/conf by the build's package-dir mapping
    assert (ROOT / "conf" / "train.yaml").is_file() and not (ROOT / "src" / "seqbench" / "conf").exists()


def test_help_lists_every_command(installed, tmp_path):
    from seqbench.commands import COMMANDS

    done = run(installed, tmp_path, "--help")
    assert done.returncode == 0 and all(f"  {name} " in done.stdout for name in COMMANDS), done.stdout


def test_bench_and_data_describe_run_outside_the_checkout(installed, tmp_path):
    cache = f"paths.cache_dir={tmp_path / 'cache'}"
    done = run(installed, tmp_path, "data", "describe", "--json", cache, "data.corpus.train_size=200",
               "data.corpus.valid_per_bucket=2", "data.corpus.test_per_bucket=2", "data.vocab_size=64")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["splits"]["test"]["pairs"] == 2 * 7
    done = run(installed, tmp_path, "bench", "--tiny", "--threads", "1", "--out", str(tmp_path / "bench"))
    assert done.returncode == 0, done.stderr
    bench = json.loads((tmp_path / "bench" / "bench.json").read_text())
    assert bench["tiny"] and {"transformer", "rnn", "cnn"} <= {row["name"] for row in bench["training"]}
    assert all(row["greedy"]["sentences_per_s"] > 0 for row in bench["decoding"])
