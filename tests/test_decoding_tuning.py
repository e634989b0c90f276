"""seqbench.analysis.decoding_tuning and `seqbench tune-decoding`: the grid, the rule, and scores that are the run's
own when the setting is the run's."""
from __future__ import annotations

import json

import pytest

from seqbench.analysis import decoding_tuning
from seqbench.rundir.results import read_results

from conftest import seqbench_cli


def test_the_grid_has_greedy_once_and_no_normalisation_twice():
    settings = decoding_tuning.grid((1, 4), (0.0, 0.6), ("gnmt", "fairseq"))
    assert settings == [
        {"beam_size": 1, "length_penalty": 0.0, "length_normalization": "gnmt"},
        {"beam_size": 4, "length_penalty": 0.0, "length_normalization": "gnmt"},
        {"beam_size": 4, "length_penalty": 0.6, "length_normalization": "gnmt"},
        {"beam_size": 4, "length_penalty": 0.6, "length_normalization": "fairseq"},
    ]


def test_the_rule_takes_the_best_mean_and_breaks_ties_toward_the_cheaper_setting():
    rows = [{"beam_size": 8, "length_penalty": 0.0, "length_normalization": "gnmt", "mean": 50.0},
            {"beam_size": 4, "length_penalty": 1.0, "length_normalization": "fairseq", "mean": 50.0},
            {"beam_size": 4, "length_penalty": 1.0, "length_normalization": "gnmt", "mean": 50.0},
            {"beam_size": 1, "length_penalty": 0.0, "length_normalization": "gnmt", "mean": 49.9}]
    assert min(rows, key=decoding_tuning._choice_key) == rows[2]


def test_the_runs_own_setting_scores_its_own_validation_bleu(trained_run, tmp_path, capsys):
    record = read_results(trained_run)
    own = {key: record["config"]["module"]["decoding"][key]
           for key in ("beam_size", "length_penalty", "length_normalization")}
    status, out, err = seqbench_cli(["tune-decoding", str(trained_run), "--out", str(tmp_path), "--beams", "1",
                                     str(own["beam_size"]), "--length-penalties", "0", str(own["length_penalty"])],
                                    capsys)
    assert status == 0, err
    result = json.loads((tmp_path / "decoding.json").read_text())
    same = next(s for s in result["settings"] if {k: s[k] for k in own} == own)
    assert same["bleu"] == [pytest.approx(record["valid"]["bleu"])]
    assert result["chosen"] == min(result["settings"], key=decoding_tuning._choice_key)
    assert out.splitlines()[0] == " ".join(decoding_tuning.overrides(result["chosen"]))
    assert "| beam | length penalty |" in (tmp_path / "decoding.md").read_text()
    assert result["runs"] == [f"RUNS/{trained_run.name}"], "a run outside the working directory: no machine's folder"


def test_a_terminal_gets_a_bar_over_the_decoding_passes(trained_run, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr("seqbench.common.progress.enabled", lambda: True)  # as on a terminal
    status, _, err = seqbench_cli(["tune-decoding", str(trained_run), "--out", str(tmp_path), "--beams", "1", "2",
                                   "--length-penalties", "0", "1"], capsys)
    assert status == 0, err
    passes = len(json.loads((tmp_path / "decoding.json").read_text())["settings"])  # one run: a pass per setting
    assert passes == 4 and "decoding valid" in err and "4/4 passes" in err


def test_tuning_on_the_test_split_is_refused(trained_run, tmp_path, capsys):
    status, _, err = seqbench_cli(["tune-decoding", str(trained_run), "--out", str(tmp_path), "--split", "test"],
                                  capsys)
    assert status == 2 and err.startswith("error: --split test")
