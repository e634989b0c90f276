"""Multiruns through Hydra's submitit launcher (the cluster extra): hydra/launcher=slurm composes to the sbatch
script a cluster needs, and a submitit_local multirun runs each job in its own process, then reports."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from conftest import ROOT, TINY, TINY_MODELS, compose_train, seqbench_cli

pytest.importorskip("hydra_plugins.hydra_submitit_launcher")


def test_slurm_launcher_asks_slurm_for_sigterm_before_the_limit(tmp_path):
    """The run saves last.ckpt on SIGTERM; submitit's own warning signal (USR2) would end it without one, so the
    slurm config replaces the sbatch --signal line, which submitit writes as asked."""
    from submitit.slurm.slurm import _make_sbatch_string

    launcher = compose_train(["hydra/launcher=slurm", "hydra.launcher.partition=gpu"], hydra_config=True).hydra.launcher
    assert launcher._target_.endswith("SlurmLauncher") and launcher.partition == "gpu"
    assert launcher.max_num_timeout == 0 and launcher.timeout_min == 240
    script = _make_sbatch_string("python -u train.py", tmp_path, partition=launcher.partition,
                                 time=launcher.timeout_min, signal_delay_s=launcher.signal_delay_s,
                                 additional_parameters=dict(launcher.additional_parameters))
    assert "#SBATCH --signal=TERM@120" in script and "USR2" not in script
    assert "#SBATCH --partition=gpu" in script and "#SBATCH --time=240" in script


@pytest.mark.integration
def test_a_submitit_local_multirun_runs_jobs_as_processes_and_reports(tmp_path, capsys):
    sweep_dir = tmp_path / "sweep"
    args = [sys.executable, str(ROOT / "train.py"), "-m", "hydra/launcher=submitit_local",
            "hydra.launcher.timeout_min=20", f"hydra.sweep.dir={sweep_dir}", f"paths.cache_dir={tmp_path / 'cache'}",
            *TINY, *TINY_MODELS["transformer"], "seed=1,2"]
    env = dict(os.environ, OMP_NUM_THREADS="1", WANDB_MODE="offline", HYDRA_FULL_ERROR="0")
    done = subprocess.run(args, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    jobs = sorted(p for p in sweep_dir.iterdir() if p.name.isdigit())
    assert [j.name for j in jobs] == ["0", "1"]
    assert [json.loads((j / "results.json").read_text())["seed"] for j in jobs] == [1, 2]
    logs = list((sweep_dir / ".submitit").rglob("*_log.out"))
    assert len(logs) == 2  # each job ran in a process of its own, with submitit's log
    status, out, err = seqbench_cli(["report", str(sweep_dir), "--out", str(tmp_path / "report")], capsys)
    assert status == 0, err[-2000:]
    assert "2 runs, 1 models: transformer (2 seeds)" in (tmp_path / "report" / "report.md").read_text()
