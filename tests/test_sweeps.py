"""Sweep files (sweeps/*.yaml) and the local sweep runner (`seqbench sweep`) with its report. The runner's trial
processes are proved in the integration tier."""
from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import yaml
from hydra.core.override_parser.overrides_parser import OverridesParser

from seqbench.config.checks import validate
from seqbench.config.compose import CONF_DIR
from seqbench.rundir.results import read_results
from seqbench.sweep import halving, hydra_preset, launcher, runner, spec

from conftest import ROOT, TINY, compose_train, seqbench_cli

pytest.importorskip("optuna")

CONF = str(CONF_DIR)
# sweeps/ holds only files `wandb sweep` accepts; the successive-halving search files live in searches/
# (tests/test_halving.py's)
SWEEPS = sorted((ROOT / "sweeps").glob("*.yaml"))


@pytest.mark.parametrize("path", SWEEPS, ids=lambda p: p.name)
def test_sweep_file_passes_wandb_schema_and_conventions(path):
    config = spec.load(path)
    assert config["project"] == "seqbench" and config["run_cap"] > 0
    assert config["metric"] == {"name": "val/bleu", "goal": "maximize"}
    assert config["command"][:3] == ["${env}", "${interpreter}", "${program}"]
    assert "${args_no_hyphens}" in config["command"] and config["program"] == "train.py"
    constants = spec.constants(config)
    assert constants["trainer.max_steps"] > 0 and constants["trainer.max_time"], "a CPU-sized budget in updates"
    assert "# Budget (CPU-sized" in path.read_text(), "the budget is documented in the file"
    if config["method"] == "grid":
        assert config["run_cap"] == spec.grid_size(config)


@pytest.mark.parametrize("path", SWEEPS, ids=lambda p: p.name)
def test_every_proposal_composes_into_a_valid_config(path):
    """Every value of every parameter (and both ends of every range), one parameter at a time, composes, passes the
    config checks and reaches the key it names."""
    config = spec.load(path)
    proposals = spec.corners(config)
    searched = spec.searched(config).values()
    assert len(proposals) == 1 + sum(len(s["values"]) - 1 if "values" in s else 1 for s in searched)
    for params in proposals:
        overrides = spec.hydra_overrides(config, params)
        cfg = compose_train(overrides)  # Hydra: a group choice with no config
        validate(cfg)
        for name, value in params.items():
            if (Path(CONF) / name).is_dir():
                continue  # a group choice (model=, shape=), not a value
            node = cfg
            for part in name.split("."):
                node = node[part]
            expected = {"null": None, "${model.name}": cfg.model.name}.get(value, value)
            assert node == expected, (name, node, value)


def test_shape_presets_set_both_stacks_and_the_cnn_blocks():
    cfg = compose_train(["shape=transformer", "shape.layers=2"])
    assert (cfg.model.name, cfg.model.encoder_layers, cfg.model.decoder_layers) == ("transformer", 2, 2)
    cfg = compose_train(["shape=cnn", "shape.n_layers=3", "shape.channels=64", "shape.kernel=5"])
    assert cfg.model.name == "cnn"
    assert cfg.model.encoder_layers == cfg.model.decoder_layers == [[64, 5]] * 3
    validate(cfg)


def _sweeper_values(params: dict) -> dict[str, list]:
    """Hydra sweeper params (`1,2,4`, `choice(1,2,4)` or one value) as lists, through Hydra's own override parser."""
    parsed = OverridesParser.create().parse_overrides([f"{k}={v}" for k, v in params.items()])
    return {o.key_or_group: list(o.sweep_iterator()) if o.is_sweep_override() else [o.value()] for o in parsed}


def test_transformer_shape_is_one_space_for_wandb_and_the_hydra_grid():
    """sweeps/transformer_shape.yaml is the space's one definition: Hydra's grid preset is what it generates, and the
    Optuna preset searches the grid's shapes at its first seed; both compose to the W&B trials' budget and the
    Transformer's recipe from the equal search (no schedule of their own; not the quickstart's, which differs in lr,
    schedule and layer norm)."""
    path = ROOT / "sweeps" / "transformer_shape.yaml"
    assert (CONF_DIR / "hparams_search" / "transformer_shape.yaml").read_text() == hydra_preset.preset(path), \
        "the preset is generated from the sweep file: regenerate it (python -m seqbench.sweep.hydra_preset)"
    wandb = spec.load(path)
    space = {name: s["values"] for name, s in spec.searched(wandb).items()}
    assert space["seed"] == [1, 2, 3]
    recipe = yaml.safe_load((CONF_DIR / "recipe" / "equal_search" / "transformer.yaml").read_text())
    from_wandb = compose_train(spec.hydra_overrides(wandb, spec.corners(wandb)[0]))
    assert from_wandb["optimizer"]["lr"] == recipe["optimizer"]["lr"]
    assert {k: from_wandb["scheduler"][k] for k in recipe["scheduler"]} == recipe["scheduler"]
    assert {k: from_wandb["model"][k] for k in recipe["model"]} == recipe["model"]
    assert from_wandb["scheduler"]["total_steps"] == from_wandb["trainer"]["max_steps"] == 1000
    for preset, expected in (("transformer_shape", space),):
        from_preset = compose_train([f"hparams_search={preset}"], hydra_config=True)
        assert _sweeper_values(from_preset.hydra.sweeper.params) == expected, preset
        for key in ("trainer", "scheduler", "optimizer", "test"):
            assert from_preset[key] == from_wandb[key], (preset, key)
        assert from_preset["data"]["max_src_len"] == from_wandb["data"]["max_src_len"] == 20
        assert {k: from_preset["model"][k] for k in recipe["model"]} == recipe["model"], preset
    assert compose_train(["hparams_search=transformer_shape"])["task_name"] == from_wandb["task_name"]


def test_trial_command_is_the_wandb_agents(tmp_path):
    config = spec.load(ROOT / "sweeps" / "transformer_shape.yaml")
    params = spec.corners(config)[0]
    args = spec.command(config, params, tmp_path / "args.json")
    assert args[:4] == ["/usr/bin/env", sys.executable, "train.py", "logger=[csv,wandb]"]
    assert args[4:] == [f"{name}={value}" for name, value in params.items()]


def test_both_engines_run_their_trials_through_the_one_launcher(tmp_path, monkeypatch):
    """A W&B sweep file's trials and a successive-halving search's jobs are each one launcher.launch call (the
    process, its command.txt, its line), whose outcome the engine records in its own summary."""
    launched = []

    def launch(name, command, run_dir, sweep_dir, env, stopping=None, should_stop=None, updates=None):
        launched.append(name)
        bleu = float(len(launched))  # every trial scores better than the ones before it
        return launcher.Outcome("complete", bleu, {"valid": {"bleu": bleu}, "train": {"steps": updates}}, 0.1,
                                run_dir.relative_to(sweep_dir).as_posix(), command)

    monkeypatch.setattr(launcher, "launch", launch)
    program = tmp_path / "train.py"
    program.write_text("")
    (tmp_path / "sweep.yaml").write_text(yaml.safe_dump({
        "name": "grid", "program": str(program), "method": "grid", "metric": {"name": "val/bleu", "goal": "maximize"},
        "parameters": {"x": {"values": [1, 2]}}, "command": ["${env}", "${interpreter}", "${program}", "${args}"]}))
    (tmp_path / "search.yaml").write_text(yaml.safe_dump({
        "search": "successive_halving", "program": str(program), "configurations": 2, "rungs": [5, 10], "keep": 2,
        "confirm": {"top": 1, "seeds": [1]}, "shared": {"optimizer.lr": {"values": [1e-3, 2e-3]}},
        "families": {"a": {}}, "constants": {"seed": 1}}))
    trials = json.loads((runner.run_sweep(tmp_path / "sweep.yaml", out=tmp_path / "sweep") / "summary.json")
                        .read_text())["trials"]
    jobs = json.loads((halving.run_search(tmp_path / "search.yaml", tmp_path / "search") / "summary.json")
                      .read_text())["jobs"]
    assert launched == ["trial 0", "trial 1", "a/search/0/5/1", "a/search/1/5/1", "a/search/1/10/1"]
    assert [(t["state"], t["metric"], t["run_dir"]) for t in trials] == [("complete", 1.0, "trials/000"),
                                                                         ("complete", 2.0, "trials/001")]
    assert [(j["key"], j["metric"], j["updates"], j["run_dir"]) for j in jobs] == [
        ("a/search/0/5/1", 3.0, 5, "a/000"), ("a/search/1/5/1", 4.0, 5, "a/001"), ("a/search/1/10/1", 5.0, 10, "a/001")]


@pytest.mark.parametrize("edit, message", [
    ({"method": "annealing"}, "method"),
    ({"parameters": {"model.d_ff": {"distribution": "uniform", "min": 4, "max": 2.0}}}, "model.d_ff"),
    ({"parameters": {"model.d_ff": {"min": 3.0, "max": 1.0}}}, "min 3.0 is not less than max 1.0"),
    ({"early_terminate": {"type": "hyperband", "eta": 3}}, "early_terminate"),
    ({"colour": "blue"}, "colour"),
])
def test_schema_violations_are_one_line(tmp_path, edit, message):
    config = {"method": "random", "metric": {"name": "val/bleu", "goal": "maximize"},
              "parameters": {"model.d_ff": {"values": [256]}}, **edit}
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(config))
    with pytest.raises(spec.SweepError) as error:
        spec.load(path)
    assert message in str(error.value) and "\n" not in str(error.value)


def test_cli_reports_a_bad_sweep_file_in_one_line(tmp_path, capsys):
    path = tmp_path / "bad.yaml"
    path.write_text("method: random\nmetric: {name: val/bleu, goal: maximize}\nrun_cap: 2\n"
                    "parameters: {model.d_ff: {distribution: normal, mu: 1, sigma: 1}}\n")
    status, _, err = seqbench_cli(["sweep", str(path)], capsys)
    assert status == 2 and err.count("\n") == 1 and err.startswith("error: ") and "model.d_ff" in err


FAKE_TRAIN = '''
import json, sys, time
from pathlib import Path
args = dict(a.split("=", 1) for a in sys.argv[1:])
run_dir = Path(args["hydra.run.dir"])
counter = run_dir.parent / "count"
n = int(counter.read_text()) if counter.exists() else 0
counter.write_text(str(n + 1))
quality = 10.0 - n                       # every trial is worse than the ones before it
(run_dir / "csv").mkdir(parents=True)
with open(run_dir / "csv" / "metrics.csv", "w") as f:
    f.write("step,val/bleu,val/tokens_seen\\n")
for i in range(1, 5):
    with open(run_dir / "csv" / "metrics.csv", "a") as f:
        f.write(f"{i * 10},{quality * i},{i * 1000}\\n")
    time.sleep(0.3)
(run_dir / "results.json").write_text(json.dumps({"schema_version": 1, "valid": {"bleu": quality * 4},
                                                 "parameters": 1, "seed": 0}))
'''


@pytest.mark.slow  # races the runner's polling against a fake trainer: failed on a loaded 2-core machine, passed alone
def test_hyperband_stops_trials_behind_the_others(tmp_path, monkeypatch):
    """Intermediate val/bleu from a trial's metrics.csv reaches Optuna's HyperbandPruner, which stops the trial."""
    (tmp_path / "fake_train.py").write_text(FAKE_TRAIN)
    (tmp_path / "sweep.yaml").write_text(textwrap.dedent(f"""
        name: fake
        program: {tmp_path / 'fake_train.py'}
        method: random
        run_cap: 6
        metric: {{name: val/bleu, goal: maximize}}
        early_terminate: {{type: hyperband, min_iter: 1, max_iter: 4, eta: 2}}
        parameters:
          x: {{values: [1, 2, 3]}}
        command: ["${{env}}", "${{interpreter}}", "${{program}}", "${{args_no_hyphens}}"]
        """))
    monkeypatch.setattr(launcher, "POLL_SECONDS", 0.05)
    monkeypatch.setattr(launcher, "KILL_DELAY", 5.0)
    sweep_dir = runner.run_sweep(tmp_path / "sweep.yaml", out=tmp_path / "sweep")
    trials = json.loads((sweep_dir / "summary.json").read_text())["trials"]
    assert len(trials) == 6 and trials[0]["state"] == "complete"
    stopped = [t for t in trials if t["state"] == "stopped"]
    assert stopped, [t["state"] for t in trials]
    for trial in stopped:
        assert not (sweep_dir / trial["run_dir"] / "results.json").exists(), "a stopped trial was killed before the end"
        assert trial["metric"] == trial["intermediate"][-1] and len(trial["intermediate"]) < 4


PARALLEL_TRAIN = '''
import json, os, sys, time
from pathlib import Path
args = dict(a.split("=", 1) for a in sys.argv[1:])
run_dir = Path(args["hydra.run.dir"])
start = time.time()
(run_dir / "started").write_text("")
while not any(p != run_dir and (p / "started").exists() for p in run_dir.parent.iterdir()) \\
        and time.time() - start < 20:  # wait (bounded) until another trial is running too
    time.sleep(0.05)
(run_dir / "results.json").write_text(json.dumps({"schema_version": 1, "valid": {"bleu": float(args["x"])},
                                                 "parameters": 1, "seed": 0,
                                                 "threads": os.environ.get("OMP_NUM_THREADS"),
                                                 "saw_another": time.time() - start < 20}))
'''


def test_parallel_trials_run_at_once_with_a_share_of_the_cores_and_cover_the_grid(tmp_path, monkeypatch):
    """--parallel 2 runs two trials at the same time (each fake trial waits until it sees another one started),
    each with OMP_NUM_THREADS = cores // 2; a grid's points each run exactly once; the summary says how it ran."""
    (tmp_path / "fake_train.py").write_text(PARALLEL_TRAIN)
    (tmp_path / "sweep.yaml").write_text(textwrap.dedent(f"""
        name: parallel
        program: {tmp_path / 'fake_train.py'}
        method: grid
        metric: {{name: val/bleu, goal: maximize}}
        parameters:
          x: {{values: [1, 2, 3, 4]}}
          y: {{value: 0}}
        command: ["${{env}}", "${{interpreter}}", "${{program}}", "${{args_no_hyphens}}"]
        """))
    monkeypatch.setattr(launcher, "POLL_SECONDS", 0.05)
    monkeypatch.setattr(launcher, "usable_cores", lambda: 4)
    sweep_dir = runner.run_sweep(tmp_path / "sweep.yaml", out=tmp_path / "sweep", parallel=2)
    summary = json.loads((sweep_dir / "summary.json").read_text())
    assert summary["parallel"] == 2 and summary["threads_per_trial"] == 2
    assert sorted(t["params"]["x"] for t in summary["trials"]) == [1, 2, 3, 4]  # every point once
    assert [t["number"] for t in summary["trials"]] == [0, 1, 2, 3]
    for trial in summary["trials"]:
        results = json.loads((sweep_dir / trial["run_dir"] / "results.json").read_text())
        assert results["threads"] == "2" and results["saw_another"], trial
    assert "2 trial(s) at a time, 2 thread(s) each" in (sweep_dir / "summary.md").read_text()


def test_a_resumed_or_extended_search_makes_the_uninterrupted_proposals(tmp_path, monkeypatch):
    """A random search run to run_cap 3, then extended to 5 in the same directory, runs only trials 3 and 4 and
    proposes exactly what one uninterrupted 5-trial search proposes, and so does one that runs 2 trials at a time
    (the sampler made slow, so concurrent trials would interleave their draws); another seed's search is refused
    there."""
    import optuna

    (tmp_path / "fake_train.py").write_text(FAKE_TRAIN)

    def sweep_file(run_cap: int) -> Path:
        path = tmp_path / f"sweep{run_cap}.yaml"
        path.write_text(textwrap.dedent(f"""
            name: resume
            program: {tmp_path / 'fake_train.py'}
            method: random
            run_cap: {run_cap}
            metric: {{name: val/bleu, goal: maximize}}
            parameters:
              lr: {{distribution: log_uniform_values, min: 1.0e-4, max: 1.0e-2}}
              kind: {{values: [a, b, c]}}
            command: ["${{env}}", "${{interpreter}}", "${{program}}", "${{args_no_hyphens}}"]
            """))
        return path

    monkeypatch.setattr(launcher, "POLL_SECONDS", 0.05)
    runner.run_sweep(sweep_file(3), out=tmp_path / "extended")
    runner.run_sweep(sweep_file(5), out=tmp_path / "extended")
    runner.run_sweep(sweep_file(5), out=tmp_path / "whole")
    draw = optuna.samplers.RandomSampler.sample_independent

    def slow_draw(*args, **kwargs):
        time.sleep(0.05)
        return draw(*args, **kwargs)

    monkeypatch.setattr(optuna.samplers.RandomSampler, "sample_independent", slow_draw)
    runner.run_sweep(sweep_file(5), out=tmp_path / "parallel", parallel=2)
    extended, whole, parallel = (json.loads((tmp_path / d / "summary.json").read_text())["trials"]
                                 for d in ("extended", "whole", "parallel"))
    assert [t["params"] for t in extended] == [t["params"] for t in whole] and len(whole) == 5
    assert [t["params"] for t in parallel] == [t["params"] for t in whole]
    assert (tmp_path / "extended" / "trials" / "count").read_text() == "5"  # 3 + 2 trainings, none repeated
    with pytest.raises(spec.SweepError, match="holds another sweep"):
        runner.run_sweep(sweep_file(5), out=tmp_path / "extended", seed=1)


RESUMABLE_TRAIN = '''
import json, sys
from pathlib import Path
args = dict(a.split("=", 1) for a in sys.argv[1:])
run_dir = Path(args["hydra.run.dir"])
with open(run_dir / "starts", "a") as f:  # one line per process started in this run directory
    f.write("start\\n")
(run_dir / "results.json").write_text(json.dumps({"schema_version": 1, "valid": {"bleu": float(args["lr"]) * 1e3},
                                                 "parameters": 1, "seed": 0}))
'''


def test_a_trial_cut_off_by_a_stopped_sweep_runs_again_with_its_proposal_in_its_run_directory(tmp_path, monkeypatch):
    """A sweep that stopped while trial 1 ran (no record of it in summary.json, its run directory left behind) is
    resumed: trial 1 runs again with the proposal it had, in its own run directory (where train.py would resume from
    last.ckpt), the recorded trials do not run again, and the search ends with the uninterrupted search's trials."""
    (tmp_path / "resumable_train.py").write_text(RESUMABLE_TRAIN)
    (tmp_path / "sweep.yaml").write_text(textwrap.dedent(f"""
        name: cut
        program: {tmp_path / 'resumable_train.py'}
        method: random
        run_cap: 4
        metric: {{name: val/bleu, goal: maximize}}
        parameters:
          lr: {{distribution: log_uniform_values, min: 1.0e-4, max: 1.0e-2}}
        command: ["${{env}}", "${{interpreter}}", "${{program}}", "${{args_no_hyphens}}"]
        """))
    monkeypatch.setattr(launcher, "POLL_SECONDS", 0.05)
    whole = json.loads((runner.run_sweep(tmp_path / "sweep.yaml", out=tmp_path / "whole") / "summary.json")
                       .read_text())["trials"]
    cut_dir = runner.run_sweep(tmp_path / "sweep.yaml", out=tmp_path / "cut", parallel=2)
    summary = json.loads((cut_dir / "summary.json").read_text())
    summary["trials"] = [t for t in summary["trials"] if t["number"] != 1]  # as the sweep left it: 1 still running
    (cut_dir / "summary.json").write_text(json.dumps(summary))
    (cut_dir / "trials" / "001" / "results.json").unlink()

    runner.run_sweep(tmp_path / "sweep.yaml", out=cut_dir, parallel=2)
    resumed = json.loads((cut_dir / "summary.json").read_text())["trials"]
    assert [(t["number"], t["state"], t["params"], t["metric"]) for t in resumed] == \
        [(t["number"], t["state"], t["params"], t["metric"]) for t in whole]
    starts = {d.name: (d / "starts").read_text().count("start") for d in (cut_dir / "trials").iterdir()}
    assert starts == {"000": 1, "001": 2, "002": 1, "003": 1}


STOPPABLE_TRAIN = '''
import json, os, signal, sys, time
from pathlib import Path
args = dict(a.split("=", 1) for a in sys.argv[1:])
run_dir = Path(args["hydra.run.dir"])
if (run_dir / "last.ckpt").exists():  # resumed: finish at once
    (run_dir / "results.json").write_text(json.dumps({"schema_version": 1, "valid": {"bleu": float(args["x"])},
                                                     "parameters": 1, "seed": 0}))
    sys.exit(0)

def save_and_exit(signum, frame):  # what train.py does on SIGTERM
    (run_dir / "last.ckpt").write_text("")
    sys.exit(143)

signal.signal(signal.SIGTERM, save_and_exit)
(run_dir / "pid").write_text(str(os.getpid()))
time.sleep(120)
'''


@pytest.mark.integration
def test_a_sigterm_to_the_sweep_stops_its_trials_and_a_rerun_finishes_them(tmp_path, monkeypatch):
    """SIGTERM to a sweep running two trials at once (as a scheduler or `kill` sends it) stops both trainings, which
    save their last.ckpt, records neither, and raises KeyboardInterrupt (the command exits 143); rerun, the sweep
    resumes both from their checkpoints. Before, the sweep died and left its trainings running."""
    import signal
    import threading

    (tmp_path / "stoppable_train.py").write_text(STOPPABLE_TRAIN)
    (tmp_path / "sweep.yaml").write_text(textwrap.dedent(f"""
        name: stoppable
        program: {tmp_path / 'stoppable_train.py'}
        method: grid
        metric: {{name: val/bleu, goal: maximize}}
        parameters:
          x: {{values: [1, 2]}}
        command: ["${{env}}", "${{interpreter}}", "${{program}}", "${{args_no_hyphens}}"]
        """))
    monkeypatch.setattr(launcher, "POLL_SECONDS", 0.05)
    out = tmp_path / "sweep"
    pid_files = [out / "trials" / f"{n:03d}" / "pid" for n in (0, 1)]

    def terminate_once_both_run():
        deadline = time.time() + 60
        while not all(f.exists() for f in pid_files) and time.time() < deadline:
            time.sleep(0.05)
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=terminate_once_both_run, daemon=True).start()
    started, handler = time.time(), signal.getsignal(signal.SIGTERM)
    with pytest.raises(KeyboardInterrupt) as error:
        runner.run_sweep(tmp_path / "sweep.yaml", out=out, parallel=2)
    assert error.value.signum == signal.SIGTERM and time.time() - started < 60
    for pid_file in pid_files:
        with pytest.raises(ProcessLookupError):
            os.kill(int(pid_file.read_text()), 0)  # the training is gone
        assert (pid_file.parent / "last.ckpt").exists()
    assert not (out / "summary.json").exists()  # neither trial recorded
    assert signal.getsignal(signal.SIGTERM) == handler  # the sweep's own handler is gone with it

    runner.run_sweep(tmp_path / "sweep.yaml", out=out, parallel=2)
    trials = json.loads((out / "summary.json").read_text())["trials"]
    assert [(t["params"]["x"], t["state"], t["metric"]) for t in trials] == [(1, "complete", 1.0), (2, "complete", 2.0)]


def test_a_grid_runs_its_points_in_the_files_order():
    config = {"method": "grid", "parameters": {"a": {"values": [1, 2]}, "b": {"value": 0}, "c": {"values": ["x", "y"]}}}
    assert spec.grid_points(config) == [{"a": 1, "c": "x"}, {"a": 1, "c": "y"}, {"a": 2, "c": "x"}, {"a": 2, "c": "y"}]


@pytest.mark.integration
def test_local_sweep_end_to_end_with_report(tmp_path, capsys):
    """A tiny grid of three trials through `seqbench sweep` (trials are processes): two train, one has heads that do
    not divide d_model and fails with train.py's one-line error; the sweep records it and goes on; the report plots
    the rest."""
    constants = [o.split("=", 1) for o in TINY + [f"paths.cache_dir={tmp_path / 'cache'}", "model.d_model=32",
                                                  "test=false"]]
    parameters = {"model.n_heads": {"values": [1, 2, 3]}, "shape.layers": {"values": [1]},
                  "model.d_ff": {"values": [64]}, "shape": {"value": "transformer"},
                  **{k: {"value": yaml.safe_load(v) if v != "null" else "null"} for k, v in constants}}
    sweep = {"name": "tiny", "project": "seqbench", "program": "train.py", "method": "grid", "run_cap": 3,
             "metric": {"name": "val/bleu", "goal": "maximize"}, "parameters": parameters,
             "command": ["${env}", "${interpreter}", "${program}", "${args_no_hyphens}"]}
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(sweep, sort_keys=False))
    env = dict(os.environ, OMP_NUM_THREADS="1", WANDB_MODE="offline", HYDRA_FULL_ERROR="0")
    proc = subprocess.run([sys.executable, "-m", "seqbench", "sweep", str(path), "--out", str(tmp_path / "sweep")],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    summary = json.loads((tmp_path / "sweep" / "summary.json").read_text())
    by_heads = {t["params"]["model.n_heads"]: t for t in summary["trials"]}
    assert sorted(by_heads) == [1, 2, 3]
    assert by_heads[3]["state"] == "failed" and by_heads[3]["error"].startswith("error: model.n_heads=3")
    for heads in (1, 2):
        trial = by_heads[heads]
        assert trial["state"] == "complete", trial
        results = read_results(tmp_path / "sweep" / trial["run_dir"])
        assert trial["metric"] == results["valid"]["bleu"] and results["model"]["config"]["n_heads"] == heads
        # recorded without this machine's folders: relative to the sweep directory, the interpreter as `python`
        assert trial["run_dir"] == f"trials/{trial['number']:03d}"
        machine = [word for word in trial["command"] if not word.startswith("paths.cache_dir=")]  # the file's own
        assert trial["command"][1:3] == ["python", "train.py"] and str(tmp_path) not in " ".join(machine)
        assert trial["command"][-1] == f"hydra.run.dir=OUT/trials/{trial['number']:03d}"
        assert str(tmp_path) not in (tmp_path / "sweep" / trial["run_dir"] / "results.json").read_text()
    with open(tmp_path / "sweep" / "summary.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert [r["state"] for r in rows].count("complete") == 2 and "val/bleu" in rows[0]
    assert "| trial | state | model.n_heads |" in (tmp_path / "sweep" / "summary.md").read_text()

    status, _, err = seqbench_cli(["report", str(tmp_path / "sweep")], capsys)
    assert status == 0, err[-3000:]
    out = tmp_path / "sweep" / "report"
    for name in ("heatmap", "lines", "pareto"):
        assert (out / f"{name}.png").stat().st_size > 1000, name
    text = (out / "report.md").read_text()
    assert "| model.n_heads | shape.layers | model.d_ff | seeds |" in text and "error: model.n_heads=3" in text


def test_sweep_report_folds_seeds_and_finds_the_pareto_front():
    from seqbench.report.sweep import configurations, pareto_front

    def trial(heads, seed, bleu, speed):
        return {"params": {"model.n_heads": heads, "seed": seed}, "seed": seed, "bleu": bleu,
                "tokens_per_s": speed, "parameters": 10}

    trials = [trial(2, 1, 10.0, 900.0), trial(2, 2, 14.0, 1100.0),   # one configuration, two seeds
              trial(4, 1, 20.0, 500.0), trial(8, 1, 5.0, 400.0)]    # heads=8 is beaten on both axes
    rows = configurations(trials, ["model.n_heads"])
    by_heads = {r["key"][0]: r for r in rows}
    assert by_heads[2]["seeds"] == [1, 2] and by_heads[2]["bleu"][0] == 12.0 and by_heads[2]["bleu"][2] == 2
    # 10 and 14: std 2.8284, 95% CI 12.706 x 2.8284 / sqrt(2): two seeds say little
    assert by_heads[2]["bleu"].std == pytest.approx(2.8284, abs=1e-3) and by_heads[4]["bleu"].ci is None
    assert by_heads[2]["bleu"].ci == pytest.approx(12.706205 * 2.8284 / 2 ** 0.5, abs=1e-3)
    assert [r["key"][0] for r in pareto_front(rows)] == [4, 2]


def test_sweep_plots_label_each_cell_with_its_mean_and_seed_count():
    """The heatmap writes every cell's mean over seeds and other axes with n; the lines plot one series per setting
    of the other axes (in-process: the end-to-end sweep test is in the integration tier)."""
    from seqbench.report.sweep import configurations, plot_heatmap, plot_lines

    def trial(heads, layers, seed, bleu):
        return {"params": {"model.n_heads": heads, "shape.layers": layers}, "seed": seed, "bleu": bleu,
                "tokens_per_s": 1000.0 * layers, "parameters": 10}

    trials = [trial(2, 1, 1, 10.0), trial(2, 1, 2, 14.0), trial(4, 1, 1, 20.0), trial(2, 3, 1, 30.0)]
    heatmap = plot_heatmap(trials, "model.n_heads", "shape.layers")
    texts = {t.get_text() for ax in heatmap.axes for t in ax.texts}
    assert {"12.0\n(n=2)", "20.0\n(n=1)", "30.0\n(n=1)", "1,000\n(n=2)"} <= texts
    assert not any(t.startswith("nan") for t in texts)  # (4, 3) was not run: an empty cell, no text
    lines = plot_lines(configurations(trials, ["model.n_heads", "shape.layers"]), ["model.n_heads", "shape.layers"],
                       "shape.layers")
    assert len(lines.axes[0].get_legend_handles_labels()[1]) == 2  # heads=2 and heads=4


def test_summary_cells_keep_a_learning_rates_digits():
    """A log-uniform learning rate (3e-4 to 1e-2) must not print as 0.00 in summary.md."""
    from seqbench.sweep.runner import _fmt

    assert [_fmt(v) for v in (0.000853825, 0.0063, 0.3, 30.97, 1644544.0, 1000, None)] == [
        "0.000854", "0.0063", "0.30", "30.97", "1,644,544", "1,000", "—"]


def test_sweep_report_says_when_trials_shared_the_machine():
    from seqbench.report.sweep import _sharing_note

    assert _sharing_note({"parallel": 1, "threads_per_trial": 2}) == ""
    assert _sharing_note({"threads_per_trial": 2}) == ""  # summaries written before --parallel existed
    note = _sharing_note({"parallel": 2, "threads_per_trial": 1})
    assert "2 at a time with 1 thread(s) each" in note and "not speeds measured alone" in note
