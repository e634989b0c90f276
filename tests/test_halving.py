"""seqbench.sweep.halving: the search file, its rungs, promotions, confirmation and budget; a promoted job continues
its run; the whole search through `seqbench sweep` in the integration tier."""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import pytest
import yaml

from seqbench.config.checks import validate
from seqbench.sweep import halving, launcher, space
from seqbench.sweep.spec import SweepError

from conftest import ROOT, TINY, TINY_MODELS, compose_train, seqbench_cli, train_in_process

SEARCH = ROOT / "searches" / "recipe_halving.yaml"
SETTLED = ROOT / "searches" / "recipe_halving_settled.yaml"  # the second search: family factors settled by the first
CONTROLLED = ROOT / "searches" / "rnn_vs_attention_controlled.yaml"
FAITHFUL = ROOT / "searches" / "rnn_vs_attention_faithful.yaml"  # the reproduction's pair, each with its own recipe


def test_the_recipe_search_gives_every_family_the_same_budget_draws_and_rungs():
    config = halving.load(SEARCH)
    assert halving.keep_counts(config) == [64, 21, 7]
    assert halving.budget(config) == {"search": 64 * 300 + 21 * 600 + 7 * 1500, "confirm": 5 * 2 * 2400}
    assert config["rungs"][-1] == compose_train(["experiment=equal_compute"])["trainer"]["max_steps"], \
        "the last rung is the budget the recipes are used at"
    families = halving.family_configurations(config, 0)
    assert set(families) == {"transformer", "rnnsearch_small", "cnn"}
    shared = list(config["shared"])
    for configs in zip(*families.values()):
        assert len({json.dumps({k: c[k] for k in shared}) for c in configs}) == 1
    lrs = [c["optimizer.lr"] for c in families["transformer"]]
    assert sum(2e-3 <= lr <= 5e-3 for lr in lrs) >= 14  # the region the hand-found recipe lies in: 64 * 0.23 = 15


def test_the_settled_search_gives_every_family_the_same_live_draws_settled_by_the_first_searchs_record():
    """No family has a factor of its own, so the k-th draw is the same for all; each value a family's overrides settle
    is the one every configuration at the first search's last rung had; the first rung is where the first search's
    promoted draws all scored above 10 BLEU; the budget stays that of the first search (within 5%)."""
    settled, first = halving.load(SETTLED), halving.load(SEARCH)
    record = json.loads((ROOT / "docs" / "results" / "recipe_halving" / "summary.json").read_text())
    assert record["search"] == first
    assert not any((body or {}).get("factors") for body in settled["families"].values())
    draws = halving.family_configurations(settled, 0)
    assert draws["transformer"] == draws["rnnsearch_small"] == draws["cnn"]
    for family, body in settled["families"].items():
        state = record["families"][family]
        for name, value in body["overrides"].items():
            if name in (first["families"][family].get("factors") or {}):
                last = state["rungs"][-1]["configurations"]
                assert {state["configurations"][i]["params"][name] for i in last} == {value}, (family, name)
        promoted = {job["key"]: job["metric"] for job in state["jobs"] if job["key"].endswith("/900/1")}
        assert promoted and min(promoted.values()) > 10
    assert settled["rungs"][0] == 900 and settled["rungs"][-1] == first["rungs"][-1]
    assert halving.budget(settled)["search"] <= 1.05 * halving.budget(first)["search"]


def test_the_faithful_pair_is_the_reproductions_models_each_searched_by_the_same_rule():
    """RNNenc unidirectional and RNNsearch at experiment=rnn_vs_attention's width, the same draws for both, BLEU at
    every validation (the budget curve), and the budget the comment states."""
    config = halving.load(FAITHFUL)
    draws = halving.family_configurations(config, 0)
    assert draws["rnnenc"] == draws["rnnsearch"]
    experiment = compose_train(["experiment=rnn_vs_attention"])
    params = draws["rnnenc"][0]
    models = {}
    for family in ("rnnenc", "rnnsearch"):
        cfg = compose_train(halving.job_overrides(config, params, halving.Job(family, "search", 0, 2200, 1)))
        validate(cfg)
        models[family] = cfg.model
        assert (cfg.model.embed_dim, cfg.model.hidden_size) == (experiment.model.embed_dim,
                                                                 experiment.model.hidden_size)
        assert cfg.module.val_bleu and cfg.trainer.val_check_interval == 1100 and cfg.data.train_max_len == 50
    assert models["rnnenc"].attention == "none" and models["rnnenc"].bidirectional is False
    assert models["rnnsearch"].attention == "bahdanau" and models["rnnsearch"].bidirectional is True
    assert halving.budget(config) == {"search": 8 * 2200 + 2 * 6600, "confirm": 2 * 8800}


@pytest.mark.parametrize("path", [SEARCH, SETTLED, CONTROLLED, FAITHFUL], ids=lambda p: p.stem)
def test_every_configuration_of_the_recipe_search_composes_into_a_valid_config(path):
    """The first configurations and the corners of the space (every dimension at its low, then its high end), for
    every family, compose, pass the config checks and reach the keys they name."""
    config = halving.load(path)
    draws = halving.family_configurations(config, 0)
    for family, body in config["families"].items():
        dimensions = {**config["shared"], **(body.get("factors") or {})}
        corners = [{name: space.value_at(spec, u) for name, spec in dimensions.items()} for u in (0.0, 0.9999)]
        for params in draws[family][:3] + corners:
            job = halving.Job(family, "search", 0, config["rungs"][0], 1)
            cfg = compose_train(halving.job_overrides(config, params, job))
            validate(cfg)
            assert cfg.trainer.max_steps == config["rungs"][0]
            assert cfg.scheduler.total_steps == config["rungs"][-1]
            for name, value in params.items():
                node = cfg
                for part in name.split("."):
                    node = node[part]
                assert node == value, (family, name, node, value)


def _records(config: dict, family: str, scores: dict[tuple[int, int], float | None], seed: int = 1) -> dict:
    """Hand-made job records: {(index, steps): val BLEU or None (a failed job)}."""
    out = {}
    for (index, steps), score in scores.items():
        stage = "search" if seed == 1 else "confirm"
        key = halving.Job(family, stage, index, steps, seed).key
        out[key] = halving.Record(key, "complete" if score is not None else "failed", score, steps, 1.0, "")
    return out


TINY_SEARCH = {"search": "successive_halving", "program": "train.py", "configurations": 8, "rungs": [10, 30, 90],
               "keep": 2, "confirm": {"top": 2, "seeds": [1, 2]},
               "shared": {"optimizer.lr": {"distribution": "log_uniform_values", "min": 1e-4, "max": 1e-2}},
               "families": {"a": {}, "b": {}}, "constants": {"seed": 1}}


def test_each_rung_promotes_its_best_half_failed_jobs_last_ties_to_the_lower_index():
    config = TINY_SEARCH
    scores = {(0, 10): 5.0, (1, 10): None, (2, 10): 9.0, (3, 10): 7.0, (4, 10): 7.0, (5, 10): 1.0, (6, 10): 0.0,
              (7, 10): 8.0}
    records = _records(config, "a", scores)
    state = halving.progress(config, "a", records)
    assert state["rungs"][1]["configurations"] == [2, 7, 3, 4]  # 9, 8, 7, 7 (3 before 4)
    assert [job.index for job in state["pending"]] == [2, 7, 3, 4] and state["pending"][0].steps == 30
    records |= _records(config, "a", {(2, 30): 20.0, (7, 30): 30.0, (3, 30): 10.0, (4, 30): None})
    state = halving.progress(config, "a", records)
    assert state["rungs"][2]["configurations"] == [7, 2]
    records |= _records(config, "a", {(7, 90): 50.0, (2, 90): 60.0})
    state = halving.progress(config, "a", records)
    assert state["finalists"] == [2, 7] and state["chosen"] is None
    assert [(job.stage, job.index, job.seed, job.steps) for job in state["pending"]] == \
        [("confirm", 2, 2, 90), ("confirm", 7, 2, 90)]  # seed 1 of each finalist is its search run
    records |= _records(config, "a", {(2, 90): 40.0, (7, 90): 56.0}, seed=2)
    state = halving.progress(config, "a", records)
    assert state["pending"] == [] and state["chosen"]["index"] == 7  # mean 53 against 50: the best mean, not the
    assert state["chosen"]["scores"] == [50.0, 56.0]                  # best single run


def test_the_summary_shows_each_rungs_median_and_the_lowest_score_it_promoted(tmp_path):
    """summary.md's rung table: the median (a failed job counts 0), the best, and how many went on with the lowest
    score among them, so a promotion resting on scores near zero shows; a rung still running has no median."""
    config = TINY_SEARCH
    scores = {(0, 10): 5.0, (1, 10): None, (2, 10): 9.0, (3, 10): 7.0, (4, 10): 7.0, (5, 10): 1.0, (6, 10): 0.0,
              (7, 10): 8.0}
    records = _records(config, "a", scores) | _records(config, "a", {(2, 30): 20.0, (7, 30): 30.0})
    halving.write_summary(tmp_path, config, 0, halving.family_configurations(config, 0), records, 1.0,
                          {"parallel": 1, "threads_per_trial": None})
    text = (tmp_path / "summary.md").read_text()
    # 0 (failed), 0, 1, 5, 7, 7, 8, 9: median 6; 2, 7, 3, 4 promoted (9, 8, 7, 7)
    assert "| 10 | 8 | 8 | 6.00 | 9.00 (2) | 4: 7.00 |" in text
    assert "| 30 | 4 | 2 | — | 30.00 (7) | — |" in text


SEARCH_RECORDS = sorted(path.parent for path in (ROOT / "docs" / "results").glob("*/summary.json")
                        if halving.is_search_file(json.loads(path.read_text(encoding="utf-8")).get("search")))


@pytest.mark.parametrize("record", SEARCH_RECORDS, ids=[path.name for path in SEARCH_RECORDS])
def test_a_committed_searchs_summary_md_is_its_summary_json_rendered(record):
    """The page docs cite is the record's, rendered by today's code: a number on it cannot drift from summary.json."""
    summary = json.loads((record / "summary.json").read_text(encoding="utf-8"))
    assert (record / "summary.md").read_text(encoding="utf-8") == halving.summary_markdown(summary), \
        f"re-render {record.name}/summary.md with seqbench.sweep.halving.summary_markdown"


def test_levelling_is_the_expected_best_of_k_configurations_per_finished_rung():
    config = TINY_SEARCH
    scores = {(0, 10): 5.0, (1, 10): None, (2, 10): 9.0, (3, 10): 7.0, (4, 10): 7.0, (5, 10): 1.0, (6, 10): 0.0,
              (7, 10): 8.0}
    records = _records(config, "a", scores)
    (rung,) = halving.levelling(config, "a", records)  # rung 1 not in yet: only rung 0
    assert rung["updates_spent"] == 8 * 10 and rung["best"] == 9.0 and list(rung["expected_best"]) == [1, 2, 4, 8]
    # k = 1: the mean trial, the failed one counted as 0; k = 2: the mean of max(a, b) over all 64 ordered pairs
    assert rung["expected_best"][1] == pytest.approx(37 / 8)
    values = [5, 0, 9, 7, 7, 1, 0, 8]
    assert rung["expected_best"][2] == pytest.approx(sum(max(a, b) for a in values for b in values) / 64)
    assert rung["expected_best"][8] < 9.0
    records |= _records(config, "a", {(2, 30): 20.0, (7, 30): 30.0, (3, 30): 10.0, (4, 30): None})
    rungs = halving.levelling(config, "a", records)
    assert [r["updates_spent"] for r in rungs] == [80, 80 + 4 * 20] and rungs[1]["best"] == 30.0
    # promoted 2, 7, 3, 4 scored 9, 8, 7, 7 at rung 0 and 20, 30, 10, 0 (failed) at rung 1: ranks (4, 3, 1.5, 1.5)
    # against (3, 4, 2, 1), Spearman's rho by hand: the Pearson correlation of the ranks, deviations from 2.5
    # (1.5, 0.5, -1, -1) and (0.5, 1.5, -0.5, -1.5): 3.5 / sqrt(4.5 * 5)
    assert "rank_correlation" not in rungs[0]
    assert rungs[1]["rank_correlation"] == pytest.approx(3.5 / math.sqrt(4.5 * 5))
    text = "\n".join(halving._levelling_table(rungs))
    assert "| 30 | 160 | 1: 15.00, 2: 21.25, 4: 26.17 | 30.00 | 0.74 |" in text


def test_families_interleave_and_a_family_waits_for_its_whole_rung():
    config = TINY_SEARCH
    jobs = halving.pending(config, {})
    assert [(j.family, j.index) for j in jobs[:4]] == [("a", 0), ("b", 0), ("a", 1), ("b", 1)]
    records = _records(config, "a", {(i, 10): float(i) for i in range(7)})  # a's job 7 still missing
    jobs = halving.pending(config, records)
    assert [(j.family, j.steps) for j in jobs if j.family == "a"] == [("a", 10)]


def test_no_family_waits_while_the_others_run():
    config = {**TINY_SEARCH, "families": {"a": {}, "b": {}, "c": {}}}
    running = [halving.Job("a", "search", 0, 10, 1), halving.Job("b", "search", 0, 10, 1)]
    assert halving.next_job(config, {}, running) == halving.Job("c", "search", 0, 10, 1)
    records = _records(config, "a", {(0, 10): 1.0})
    running = [halving.Job("b", "search", 0, 10, 1), halving.Job("c", "search", 0, 10, 1)]
    assert halving.next_job(config, records, running) == halving.Job("a", "search", 1, 10, 1)
    # a and c idle, a with jobs done and c with none: c goes first, though a comes first in the file
    records = _records(config, "a", {(i, 10): 1.0 for i in range(3)}) | _records(config, "b", {(0, 10): 1.0})
    running = [halving.Job("b", "search", 1, 10, 1)]
    assert halving.next_job(config, records, running) == halving.Job("c", "search", 0, 10, 1)


def test_budget_is_the_same_whatever_the_family_learns():
    assert halving.budget(TINY_SEARCH) == {"search": 8 * 10 + 4 * 20 + 2 * 60, "confirm": 2 * 1 * 90}
    spent = {r: halving._spent(TINY_SEARCH, halving.Record(f"a/search/0/{r}/1", "complete", 1.0, r, 1.0, ""))
             for r in (10, 30, 90)}
    assert spent == {10: 10, 30: 20, 90: 60}


def test_a_job_trains_to_its_rung_on_the_schedule_of_the_last_rung():
    job = halving.Job("a", "search", 3, 30, 1)
    overrides = halving.job_overrides({**TINY_SEARCH, "families": {"a": {"overrides": {"model": "cnn"}}}},
                                      {"optimizer.lr": 0.001}, job)
    assert overrides[0] == "model=cnn"
    assert overrides[-2:] == ["trainer.max_steps=30", "scheduler.total_steps=90"]
    assert halving._override("optimizer.betas", [0.9, 0.98]) == "optimizer.betas=[0.9,0.98]"
    assert halving._override("model.norm_first", True) == "model.norm_first=true"
    assert halving._override("trainer.check_val_every_n_epoch", None) == "trainer.check_val_every_n_epoch=null"


@pytest.mark.parametrize("change, message", [
    ({"configurations": 48}, "a power of two"),
    ({"rungs": [30, 10]}, "increasing positive update counts"),
    ({"keep": 1}, "an integer >= 2"),
    ({"confirm": {"top": 2, "seeds": [2, 3]}}, "the search's own seed"),
    ({"families": {"a": {"factors": {"optimizer.lr": {"values": [1e-3]}}}}}, "also a shared dimension"),
    ({"extra": 1}, "unknown key 'extra'"),
    ({"metric": {"name": "val/nll", "goal": "minimize"}}, "maximises val/bleu"),
])
def test_a_bad_search_file_is_one_line(tmp_path, change, message):
    path = tmp_path / "search.yaml"
    path.write_text(yaml.safe_dump({**TINY_SEARCH, **change}))
    with pytest.raises(SweepError, match=message):
        halving.load(path)


def test_a_directory_of_another_search_is_refused(tmp_path):
    (tmp_path / "summary.json").write_text(json.dumps({"search": {**TINY_SEARCH, "keep": 3}, "seed": 0, "jobs": []}))
    with pytest.raises(SweepError, match="holds another search"):
        halving.recorded(tmp_path, TINY_SEARCH, 0)


def test_a_search_without_a_confirmation_chooses_its_last_rungs_best_and_summarises_it(tmp_path):
    config = {key: value for key, value in TINY_SEARCH.items() if key != "confirm"} | {"rungs": [10]}
    records = _records(config, "a", {(i, 10): float(i) for i in range(8)})
    records |= _records(config, "b", {(i, 10): float(8 - i) for i in range(8)})
    assert halving.progress(config, "a", records)["chosen"]["index"] == 7
    configurations = halving.family_configurations(config, 0)
    halving.write_summary(tmp_path, config, 0, configurations, records, 1.0, {"parallel": 1, "threads_per_trial": None})
    assert "| 7 **chosen** | 7.00 |" in (tmp_path / "summary.md").read_text()
    assert (tmp_path / "recipes" / "b.yaml").is_file()


def test_the_chosen_configuration_is_written_as_a_recipe_file():
    text = halving.recipe_yaml({"optimizer.lr": 0.00257, "scheduler.kind": "cosine", "model.norm_first": True})
    assert text.startswith("# @package _global_\n")
    assert yaml.safe_load(text) == {"optimizer": {"lr": 0.00257}, "scheduler": {"kind": "cosine"},
                                    "model": {"norm_first": True}}


def test_a_promoted_job_continues_its_run_to_the_uninterrupted_result(tmp_path, caplog):
    """Rung 1 to 4 updates, then promoted to 8 in the same run directory, on a cosine schedule defined for 8: the
    same validation NLL at update 8 and the same validation BLEU as one run of 8 updates."""
    common = [*(o for o in TINY if not o.startswith(("trainer.max_steps", "debug="))), *TINY_MODELS["transformer"],
              "trainer.max_epochs=-1", "trainer.check_val_every_n_epoch=null", "trainer.val_check_interval=4",
              "scheduler.kind=cosine", "scheduler.warmup_steps=2", "scheduler.total_steps=8", "test=false",
              "module.val_bleu=false", "logger=csv"]
    train_in_process(tmp_path / "promoted", [*common, "trainer.max_steps=4"])
    caplog.clear()
    with caplog.at_level("INFO"):
        promoted = train_in_process(tmp_path / "promoted", [*common, "trainer.max_steps=8"])
    assert "Restored all states from the checkpoint" in caplog.text  # it continued, and did not start again
    whole = train_in_process(tmp_path / "whole", [*common, "trainer.max_steps=8"])
    assert promoted["train"]["steps"] == whole["train"]["steps"] == 8
    assert (promoted["train"]["resumed_at"], whole["train"]["resumed_at"]) == ([4], [])  # the record says so
    assert [p["nll"] for p in promoted["curve"]] == [p["nll"] for p in whole["curve"]]
    assert promoted["valid"]["bleu"] == whole["valid"]["bleu"]


def test_a_full_disk_while_the_trial_list_is_written_names_it_and_leaves_the_previous_one_whole(tmp_path,
                                                                                                  monkeypatch):
    """summary.json is what a rerun resumes from: a write the disk cuts short (an OSError without a file name, as
    write() raises it) is one line naming the file, and the file keeps its previous jobs."""
    import errno
    import pathlib

    from seqbench.common.errors import DiskFullError

    configurations = halving.family_configurations(TINY_SEARCH, 0)
    running = {"parallel": 1, "threads_per_trial": None}
    halving.write_summary(tmp_path, TINY_SEARCH, 0, configurations, _records(TINY_SEARCH, "a", {(0, 10): 1.0}), 1.0,
                          running)
    before = (tmp_path / "summary.json").read_text()
    write_bytes = pathlib.Path.write_bytes

    def full(path, data):
        write_bytes(path, data[: len(data) // 2])
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(pathlib.Path, "write_bytes", full)
    records = _records(TINY_SEARCH, "a", {(0, 10): 1.0, (1, 10): 2.0})
    with pytest.raises(DiskFullError, match="summary.json: cannot be written, no space left"):
        halving.write_summary(tmp_path, TINY_SEARCH, 0, configurations, records, 2.0, running)
    assert (tmp_path / "summary.json").read_text() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["summary.json", "summary.md"]  # no temporary left


FULL_DISK_TRAIN = """
import json, sys
from pathlib import Path
args = dict(a.split("=", 1) for a in sys.argv[1:])
run_dir = Path(args["hydra.run.dir"])
run_dir.mkdir(parents=True, exist_ok=True)
if run_dir.name == "001" and Path(sys.argv[0]).with_name("full").exists():  # what train.py records on a full disk
    error = f"{run_dir}/checkpoints/last.ckpt: cannot be written, no space left on its file system"
    (run_dir / "results.json").write_text(json.dumps({"schema_version": 1, "status": "failed",
                                                     "error": f"DiskFullError: {error}",
                                                     "resume_checkpoint": "checkpoints/last.ckpt"}))
    sys.exit(f"error: {error}")
steps = int(args["trainer.max_steps"])
bleu = float(args["optimizer.lr"]) * 1000 * steps
(run_dir / "results.json").write_text(json.dumps({"schema_version": 1, "valid": {"bleu": bleu}, "parameters": 1,
                                                 "seed": int(args["seed"]), "train": {"steps": steps}}))
"""


def test_a_trial_failed_by_a_full_disk_stops_the_search_unrecorded_and_the_same_command_resumes_it(tmp_path,
                                                                                                   monkeypatch):
    """A full disk is the machine's failure, not the configuration's: recorded as failed, the configuration would
    score 0 for good. The search stops with one line naming the trial and the disk, records only what completed,
    and, once there is room, the same command runs the trial again and ends as the uninterrupted search."""
    monkeypatch.setattr(launcher, "POLL_SECONDS", 0.05)
    program = tmp_path / "train.py"
    program.write_text(FULL_DISK_TRAIN)
    (tmp_path / "search.yaml").write_text(yaml.safe_dump({
        "search": "successive_halving", "program": str(program), "configurations": 2, "rungs": [5, 10], "keep": 2,
        "confirm": {"top": 1, "seeds": [1]}, "shared": {"optimizer.lr": {"values": [1e-3, 2e-3]}},
        "families": {"a": {}}, "constants": {"seed": 1}}))
    whole = halving.run_search(tmp_path / "search.yaml", tmp_path / "whole")
    (tmp_path / "full").touch()
    with pytest.raises(launcher.MachineFailure, match=r"^a/search/1/5/1: .*001/checkpoints/last.ckpt: cannot be "
                       r"written, no space left.*the same command resumes it"):
        halving.run_search(tmp_path / "search.yaml", tmp_path / "cut")
    recorded = json.loads((tmp_path / "cut" / "summary.json").read_text())["jobs"]
    assert [(j["key"], j["state"]) for j in recorded] == [("a/search/0/5/1", "complete")]

    (tmp_path / "full").unlink()
    cut = halving.run_search(tmp_path / "search.yaml", tmp_path / "cut")
    jobs = lambda folder: [(j["key"], j["state"], j["metric"], j["updates"])  # noqa: E731
                           for j in json.loads((folder / "summary.json").read_text())["jobs"]]
    assert jobs(cut) == jobs(whole) and ("a/search/1/10/1", "complete", 20.0, 10) in jobs(whole)


def test_count_is_refused_for_a_search_file(capsys):
    status, _, err = seqbench_cli(["sweep", str(SEARCH), "--count", "3"], capsys)
    assert status == 2 and err.strip().splitlines() == [
        "error: --count: a successive-halving search runs its file's configurations and rungs; set configurations "
        "in the file instead"]


@pytest.mark.integration
def test_a_tiny_search_runs_promotes_confirms_and_resumes(tmp_path):
    """`seqbench sweep` over a two-configuration search: both train to the first rung, the better one continues from
    its last.ckpt, the second seed confirms it, the recipe file is written; a rerun runs nothing, and a job whose
    record is lost runs again."""
    constants = {o.split("=", 1)[0]: o.split("=", 1)[1] for o in
                 [*(o for o in TINY if not o.startswith(("trainer.max_steps", "debug="))), *TINY_MODELS["transformer"]]
                 if not o.startswith("model=")}
    config = {**TINY_SEARCH, "configurations": 2, "rungs": [4, 8], "confirm": {"top": 1, "seeds": [1, 2]},
              "families": {"transformer": {"overrides": {"model": "transformer"},
                                           "factors": {"model.norm_first": {"values": [False, True]}}}},
              "constants": {**constants, "recipe": "none", "seed": 1, "trainer.max_epochs": -1,
                            "trainer.check_val_every_n_epoch": None, "trainer.val_check_interval": 4,
                            "module.val_bleu": False, "test": False, "logger": "csv"}}
    search = tmp_path / "search.yaml"
    search.write_text(yaml.safe_dump(config, sort_keys=False))
    out = tmp_path / "out"
    env = {**os.environ, "SEQBENCH_CACHE_DIR": str(tmp_path / "cache")}
    command = [sys.executable, "-m", "seqbench", "sweep", str(search), "--out", str(out)]
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    summary = json.loads((out / "summary.json").read_text())
    state = summary["families"]["transformer"]
    assert [r["configurations"] for r in state["rungs"]] == [[0, 1], [state["finalists"][0]]]
    best = state["finalists"][0]
    assert state["chosen"]["index"] == best and len(state["chosen"]["scores"]) == 2
    log = (out / "transformer" / f"{best:03d}" / "stdout.log").read_text()
    assert "Restored all states from the checkpoint" in log  # rung 2 continued rung 1's run
    assert state["updates_spent"] == 2 * 4 + 4 + 8
    recipe = yaml.safe_load((out / "recipes" / "transformer.yaml").read_text())
    assert recipe["model"]["norm_first"] == state["configurations"][best]["params"]["model.norm_first"]

    again = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0 and "4 jobs recorded" in again.stdout and ": complete" not in again.stdout
    summary["jobs"] = [j for j in summary["jobs"] if "/confirm/" not in j["key"]]
    (out / "summary.json").write_text(json.dumps(summary))
    third = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert third.returncode == 0 and third.stdout.count(": complete") == 1 and "confirm" in third.stdout
    assert math.isclose(json.loads((out / "summary.json").read_text())["families"]["transformer"]["chosen"]["mean"],
                        state["chosen"]["mean"])
