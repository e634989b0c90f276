"""W&B logging (seqbench.loggers.wandb_logger): one run per job with the resolved config and the tables, W&B's own mode
and credential rules, a bounded wait for an unreachable server, failed jobs marked failed, readable run names.

Nothing here contacts a network: runs are offline, and the unreachable server is a closed port on 127.0.0.1.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from seqbench.rundir.results import read_results

from conftest import ROOT, TINY, TINY_MODELS, compose_train
from wandb_files import read_run


# Environment of a machine that never logged in to W&B: no WANDB_* variables, an empty home (no netrc, no settings).
def _clean_env(home: Path, **extra: str) -> dict:
    home.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("WANDB_") and k != "NETRC"}
    return env | {"HOME": str(home), "OMP_NUM_THREADS": "1", **extra}


@pytest.mark.integration
def test_multirun_logs_one_wandb_run_per_job_with_config_and_tables(tmp_path):
    """`experiment=arch_comparison` without -m still sweeps (its hydra.mode), here over two seeds of a tiny
    Transformer, with logger=[csv,wandb]: two W&B runs, each with its job's resolved config, name, tables, images
    and summary, and the CSV logger's hparams.yaml beside it."""
    multirun = tmp_path / "multi"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "train.py"), f"paths.cache_dir={tmp_path / 'cache'}",
         f"hydra.sweep.dir={multirun}", "experiment=arch_comparison", "model=transformer", "seed=1,2",
         "compare.param_budget=null", "trainer.max_time=null", "logger=[csv,wandb]", *TINY,
         "trainer.val_check_interval=2",  # validations at steps 2 and 4 of training: learning-curve points
         *TINY_MODELS["transformer"][1:]],
        cwd=tmp_path, env=_clean_env(tmp_path / "home", WANDB_MODE="offline"), capture_output=True, text=True,
        timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    jobs = sorted(p for p in multirun.iterdir() if p.is_dir() and p.name.isdigit())
    assert [j.name for j in jobs] == ["0", "1"]
    for job, seed in zip(jobs, (1, 2)):
        results = read_results(job)
        (wandb_dir,) = (job / "wandb").glob("offline-run-*")  # exactly one W&B run per job
        run = read_run(wandb_dir)
        assert run["exit_code"] == 0
        assert run["name"] == f"transformer-h2-L1-ff64-s{seed}"
        config = run["config"]  # the whole resolved config, nested as in results.json
        assert config["seed"] == seed and config["model"]["d_model"] == 32
        assert config["task_name"] == results["config"]["task_name"]
        # results.json records locations as ${paths.<key>} (portable); W&B gets them resolved, for this machine
        assert {**config["data"], "cache_dir": "${paths.cache_dir}"} == results["config"]["data"]
        assert config["data"]["cache_dir"] == str(tmp_path / "cache")
        assert run["summary"]["test/bleu"] == pytest.approx(results["test"]["bleu"])
        assert run["summary"]["parameters"] == results["parameters"]
        media = wandb_dir / "files" / "media"
        # the synthetic pair records its agreement dependencies: the test pass adds the length x distance table
        for split, extra in (("val", set()), ("test", {"targeted_by_length_distance"})):
            assert {p.name.rsplit("_", 2)[0] for p in (media / "table" / split).glob("*.table.json")} \
                == {"bleu_by_length", "samples", *extra}
        by_length = json.loads(next((media / "table" / "val").glob("bleu_by_length_*.table.json")).read_text())
        assert by_length["columns"] == ["bucket", "sentences", "bleu"]
        assert [row[0] for row in by_length["data"]] == [b["bucket"] for b in results["valid"]["bleu_by_length"]]
        samples = json.loads(next((media / "table" / "test").glob("samples_*.table.json")).read_text())
        assert samples["columns"] == ["index", "source", "reference", "hypothesis"]
        hypotheses = (job / "hypotheses.test.txt").read_text().splitlines()
        assert all(hypotheses[index] == hypothesis for index, _, _, hypothesis in samples["data"])
        assert list((media / "images" / "test").glob("bleu_by_length_plot_*.png"))
        assert list((media / "images" / "test").glob("attention_*.png"))
        hparams = yaml.safe_load((job / "csv" / "hparams.yaml").read_text())
        assert hparams["seed"] == seed and hparams["model"]["d_model"] == 32
        # learning-curve points in results.json, whatever the logger
        assert [p["step"] for p in results["curve"]] == [2, 4]
        assert all(p["tokens_seen"] > 0 and "bleu" in p and "nll" in p for p in results["curve"])


def _python(snippet: str, env: dict, cwd: Path, timeout: int = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(snippet)], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)


@pytest.mark.integration
def test_unreachable_server_goes_offline_with_one_warning(tmp_path):
    """An API key, but the server (a closed port on this machine) does not answer: after init_timeout the run goes
    on offline with a one-line warning instead of waiting W&B's default 90 s and dying with a traceback."""
    env = _clean_env(tmp_path / "home", WANDB_API_KEY="0" * 40, WANDB_BASE_URL="http://127.0.0.1:9")
    proc = _python(f"""
        from seqbench.loggers.wandb_logger import WandbLogger, finish_run
        logger = WandbLogger(project="seqbench", save_dir={str(tmp_path)!r})  # the default init_timeout
        logger.log_metrics({{"x": 1.0}}, step=0)
        print("mode", logger.experiment.settings.mode)
        finish_run(0)
    """, env, tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "mode offline" in proc.stdout
    warnings = [line for line in proc.stderr.splitlines() if line.startswith("warning: W&B server")]
    assert len(warnings) == 1 and "127.0.0.1:9" in warnings[0] and "wandb sync" in warnings[0]
    (offline,) = (tmp_path / "wandb").glob("offline-run-*")
    assert read_run(offline)["exit_code"] == 0


@pytest.mark.integration
def test_a_failed_job_finishes_its_run_as_failed(tmp_path):
    """seqbench.training.run.run ends the job's W&B run even when the job raises, with a non-zero exit code (W&B:
    failed), so the next job of a multirun starts a run of its own."""
    proc = _python(f"""
        import wandb
        import seqbench.training.run
        from seqbench.loggers.wandb_logger import WandbLogger

        def failing_job(cfg):
            WandbLogger(project="seqbench", save_dir={str(tmp_path)!r}).log_metrics({{"x": 1.0}}, step=0)
            raise RuntimeError("the job failed")

        seqbench.training.run._recorded_run = failing_job  # what run() wraps: validation, status record, training
        try:
            seqbench.training.run.run(None)
        except RuntimeError:
            print("raised; open run:", wandb.run)
    """, _clean_env(tmp_path / "home", WANDB_MODE="offline"), tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "raised; open run: None" in proc.stdout
    (offline,) = (tmp_path / "wandb").glob("offline-run-*")
    assert read_run(offline)["exit_code"] == 1


def _mode(config_mode=None) -> str:
    import wandb

    from seqbench.loggers.wandb_logger import init_mode

    wandb.teardown()
    return init_mode(config_mode)


@pytest.mark.parametrize("value", ["online", "offline", "disabled", "dryrun", "run", "shared"])
def test_every_wandb_mode_value_is_respected(wandb_env, value):
    wandb_env.setenv("WANDB_MODE", value)
    assert _mode() == value
    assert _mode("offline") == "offline"  # the config's mode wins


def test_mode_follows_the_credentials_wandb_would_find(wandb_env, tmp_path):
    from urllib.parse import urlsplit

    import wandb

    assert _mode() == "offline"  # never logged in: offline, no prompt, no wait
    wandb_env.setenv("WANDB_API_KEY", "0" * 40)
    assert _mode() == "online"
    wandb_env.delenv("WANDB_API_KEY")
    # a netrc entry counts for the host W&B talks to: its default server ...
    default_host = urlsplit(wandb.setup().settings.base_url).netloc
    (tmp_path / "home" / ".netrc").write_text(f"machine {default_host}\n  login user\n  password {'1' * 40}\n")
    assert _mode() == "online"
    # ... or a self-hosted one (WANDB_BASE_URL), in the file $NETRC names; an entry for another host does not count
    (tmp_path / "home" / ".netrc").unlink()
    netrc = tmp_path / "netrc"
    netrc.write_text(f"machine wandb.example.org\n  login user\n  password {'2' * 40}\n")
    netrc.chmod(0o600)
    wandb_env.setenv("NETRC", str(netrc))
    assert _mode() == "offline"
    wandb_env.setenv("WANDB_BASE_URL", "https://wandb.example.org")
    assert _mode() == "online"


def test_wandb_offline_command_is_respected(wandb_env, tmp_path):
    """`wandb offline` (W&B's setting for this directory) keeps runs offline even with credentials."""
    wandb_env.chdir(tmp_path)
    wandb_env.setenv("WANDB_API_KEY", "0" * 40)
    assert _mode() == "online"
    subprocess.run([str(Path(sys.executable).parent / "wandb"), "offline"], cwd=tmp_path, check=True,
                   capture_output=True, timeout=120)
    assert _mode() == "offline"


def test_bad_modes_are_one_line_errors(wandb_env):
    from seqbench.common.errors import ConfigError, InputError
    from seqbench.loggers.wandb_logger import WandbLogger

    wandb_env.setenv("WANDB_MODE", "onlin")
    with pytest.raises(InputError, match=r"WANDB_MODE='onlin': allowed values are online, offline"):
        _mode()
    with pytest.raises(ConfigError, match=r"logger.wandb.mode='ofline': allowed values are null, online"):
        WandbLogger(mode="ofline")


@pytest.mark.parametrize("overrides, name", [
    (["model=transformer"], "transformer-h4-L3-ff512-s42"),
    (["model=transformer", "model.decoder_layers=1", "seed=1"], "transformer-h4-enc3-dec1-ff512-s1"),
    (["model=rnnsearch_small"], "rnnsearch_small-bahdanau-gru256-L1-s42"),
    (["model=rnn", "model.attention=luong_dot", "model.cell=lstm"], "rnn-luong_dot-lstm256-L1-s42"),
    (["model=cnn"], "cnn-L4-k3-c256-s42"),
])
def test_run_names_show_label_shape_and_seed(overrides, name):
    cfg = compose_train([*overrides, "logger=wandb"], hydra_config=True)
    from hydra.core.hydra_config import HydraConfig

    HydraConfig.instance().set_config(cfg)  # ${hydra:runtime.choices.model} in the label
    assert cfg.logger.wandb.name == name


def test_a_resumed_run_continues_the_newest_wandb_run_in_its_folder(tmp_path):
    from seqbench.common.lightning_adapter import wandb_init_args
    from seqbench.loggers.wandb_logger import WandbLogger

    fresh = WandbLogger(project="seqbench", save_dir=str(tmp_path))
    fresh.resume_from(10)  # nothing logged here before: a new W&B run
    assert fresh.version is None
    for name in ("offline-run-20261201_235959-older111", "run-20261202_090000-newest22",
                 "offline-run-20261202_080000-middle33", "latest-run"):
        (tmp_path / "wandb" / name).mkdir(parents=True)
    resumed = WandbLogger(project="seqbench", save_dir=str(tmp_path))
    resumed.resume_from(10)
    assert resumed.version == "newest22" and wandb_init_args(resumed)["resume"] == "allow"
