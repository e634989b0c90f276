"""The plateau budget (budget=plateau): the rule on hand-built curves, what results.json records of a curve's level
and its cost, the callback's decision and its state across a resume, and whole tiny runs stopped by the rule or by
the cap."""
from __future__ import annotations

import pytest
import torch

from seqbench.analysis.plateau import plateau_record, window_gain
from seqbench.training.plateau import PlateauStopping

from conftest import TINY, TINY_MODELS, compose_train, train_in_process


def test_window_gain_is_the_rise_of_the_best_over_the_last_share_of_the_updates():
    points = [(200, 10.0), (400, 50.0), (600, 80.0), (800, 79.0)]
    # the last quarter of 800 updates starts at 600: best 80 then and now
    assert window_gain(points, 0.25) == (600, 0.0)
    # half: from update 400 (best 50) to 800 (best 80)
    assert window_gain(points, 0.5) == (400, 30.0)
    # a dip at the end does not count as a loss, a noisy peak is kept: the best so far, not the last point
    assert window_gain([(100, 1.0), (200, 5.0), (300, 3.0), (400, 4.0)], 0.25) == (300, 0.0)
    assert window_gain([(200, 10.0)], 0.25) is None  # no point lies before the window yet
    assert window_gain([], 0.25) is None


def test_plateau_record_costs_are_the_first_points_at_each_share_of_the_level():
    curve = [{"step": s, "bleu": b, "train_flops": s * 1e9, "train_seconds": s / 10, "train_cpu_seconds": s / 5}
             for s, b in [(200, 40.0), (400, 89.0), (600, 95.5), (800, 100.0), (1000, 99.0)]]
    record = plateau_record(curve, 0.25, target=90.0)
    assert record["level"] == 100.0 and record["level_step"] == 800
    assert record["window_start"] == 600 and record["window_gain"] == pytest.approx(4.5)
    assert record["reached"]["90%"] == {"step": 600, "train_flops": 6e11, "train_seconds": 60.0,
                                        "train_cpu_seconds": 120.0}  # 89.0 < 90 at 400
    assert record["reached"]["95%"]["step"] == 600 and record["reached"]["99%"]["step"] == 800
    assert record["target"] == {"bleu": 90.0, "cost": record["reached"]["90%"]}
    assert plateau_record(curve, 0.25, target=100.5)["target"]["cost"] is None  # never reached
    assert plateau_record([{"step": 2, "nll": 3.0}], 0.25) is None  # no BLEU curve, no plateau


def _decisions(rule: PlateauStopping, points):
    out = []
    for step, value in points:
        rule._step = step
        out.append(rule._evaluate_stopping_criteria(torch.tensor(value))[0])
    return out


def test_the_rule_stops_at_the_first_levelled_validation_after_its_minimum():
    points = [(200, 10.0), (400, 60.0), (600, 80.0), (800, 80.25), (1000, 80.5), (1200, 80.5)]
    # at 800 the best rose 0.25 since 600: levelled, but below min_steps; at 1000, 0.5 since 600; at 1200, 0.25
    # since 800 (the last quarter of 1200 starts at 900): stops
    assert _decisions(PlateauStopping(min_gain=0.3, min_steps=1000), points) == [False] * 5 + [True]
    assert _decisions(PlateauStopping(min_gain=0.3), points)[:4] == [False, False, False, True]
    assert not any(_decisions(PlateauStopping(min_gain=0.0), points))  # no gain is below 0: runs to the cap


def test_the_rules_history_survives_a_checkpoint():
    """A resumed run stops where the uninterrupted one would: the history is in the callback's state."""
    points = [(200, 10.0), (400, 60.0), (600, 80.0), (800, 80.25)]
    whole = _decisions(PlateauStopping(min_gain=0.3, min_steps=800), points)
    first = PlateauStopping(min_gain=0.3, min_steps=800)
    _decisions(first, points[:2])
    resumed = PlateauStopping(min_gain=0.3, min_steps=800)
    resumed.load_state_dict(first.state_dict())
    assert _decisions(resumed, points[2:]) == whole[2:] == [False, True]
    assert resumed.history == [tuple(p) for p in points]


def test_a_window_outside_zero_to_one_is_refused():
    with pytest.raises(ValueError, match="window=1"):
        PlateauStopping(window=1)


def test_budget_plateau_replaces_a_presets_update_budget():
    """Applied after the presets: equal_compute_settled's 2,400 updates become the 12,000-update cap, its cosine
    schedule ends at the cap, the rule and the best-BLEU checkpoint are in."""
    cfg = compose_train(["experiment=equal_compute_settled", "model=transformer", "seed=4", "budget=plateau"])
    assert cfg.trainer.max_steps == 12000 and cfg.scheduler.kind == "cosine" and cfg.scheduler.total_steps == 12000
    assert cfg.callbacks.plateau.min_steps == 2400 and cfg.callbacks.model_checkpoint.monitor == "val/bleu"
    assert cfg.optimizer.lr == 0.00174  # the settled recipe otherwise unchanged
    assert "plateau" not in compose_train(["experiment=equal_compute_settled", "model=transformer"]).callbacks


PLATEAU_RUN = [*TINY, *TINY_MODELS["transformer"], "test=false", "budget=plateau", "trainer.max_steps=12",
               "trainer.val_check_interval=2", "callbacks.plateau.min_steps=4", "measure.target_bleu=0",
               "data.max_tokens=256"]


def test_a_plateau_run_stops_by_the_rule_and_records_its_level_and_costs(tmp_path):
    """With any gain counted as levelled off (min_gain 1000), the first validation at or after min_steps whose
    window is covered stops the run: update 4 (the last quarter of 4 starts at 3, after the validation at 2)."""
    record = train_in_process(tmp_path / "run", [*PLATEAU_RUN, "callbacks.plateau.min_gain=1000"])
    train = record["train"]
    assert train["stopped_by"] == "plateau" and train["steps"] == 4 and train["max_steps"] == 12
    assert train["plateau_rule"] == {"monitor": "val/bleu", "window": 0.25, "min_gain": 1000.0, "min_steps": 4}
    assert [p["step"] for p in record["curve"]] == [2, 4]
    plateau = train["plateau"]
    assert plateau["level"] == max(p["bleu"] for p in record["curve"]) and plateau["window_start"] == 2
    assert plateau["target"]["cost"]["step"] == 2  # BLEU >= 0 at the first validation
    assert 0 < plateau["target"]["cost"]["train_cpu_seconds"] and 0 < plateau["target"]["cost"]["train_flops"]
    assert 0 < train["final_lr_factor"] <= 1


def test_a_plateau_run_that_never_levels_off_stops_at_the_cap_and_says_so(tmp_path):
    record = train_in_process(tmp_path / "run", [*PLATEAU_RUN, "callbacks.plateau.min_gain=0"])
    assert record["train"]["stopped_by"] == "max_steps" and record["train"]["steps"] == 12
    assert record["train"]["plateau_rule"]["min_gain"] == 0


def test_committed_plateau_records_stopped_as_the_rule_says():
    """Every record of experiment=equal_compute_plateau committed so far trained under the preset's rule, and one that
    the rule stopped had levelled off by it (its best rose by less than min_gain over the last window, after
    min_steps); one that did not was stopped by the cap, which the tables then mark."""
    import json
    from pathlib import Path

    import yaml

    from seqbench.analysis.plateau import window_gain

    root = Path(__file__).resolve().parents[1]
    rule = yaml.safe_load((root / "conf/budget/plateau.yaml").read_text())["callbacks"]["plateau"]
    records = sorted((root / "docs/results/equal_compute_plateau").glob("*/results.json"))
    assert records, "the first record landed with the rule (rnn-seed9)"
    for path in records:
        train = json.loads(path.read_text())["train"]
        assert {k: train["plateau_rule"][k] for k in ("window", "min_gain", "min_steps")} == \
               {k: rule[k] for k in ("window", "min_gain", "min_steps")}, path
        if train["stopped_by"] == "plateau":
            curve = [(p["step"], p["bleu"]) for p in json.loads(path.read_text())["curve"]]
            _, gain = window_gain([p for p in curve if p[0] <= train["steps"]], rule["window"])
            assert gain < rule["min_gain"] and train["steps"] >= rule["min_steps"], path
        else:
            assert train["stopped_by"] == "max_steps" and train["steps"] == train["max_steps"], path
