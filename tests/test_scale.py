"""The data benchmark's instruments on hand-built cases: the peak memory of a process and of the processes it starts,
by rank, and the table generated from a record."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from seqbench.measure.scale import run_watched
from seqbench.report.headline import render

ALLOCATE = """
import os, subprocess, sys, time
mb = int(sys.argv[1])
block = bytearray(mb * 2**20)  # touched: resident
for i in range(0, len(block), 4096):
    block[i] = 1
if len(sys.argv) > 2:  # a "rank": a child with LOCAL_RANK holding sys.argv[3] MB, and a helper of rank 0 holding little
    env = {**os.environ, "LOCAL_RANK": "1"}
    # between fork and exec the child runs with this process's environment (no LOCAL_RANK) and memory: held there
    # for 0.3 s, every poll in that window sees it so
    child = subprocess.Popen([sys.executable, "-c", sys.argv[2], sys.argv[3]], env=env,
                             preexec_fn=lambda: time.sleep(0.3))
    subprocess.run(["sleep", "0.5"], env={**os.environ, "LOCAL_RANK": "0"})
    child.wait()
time.sleep(0.5)
"""

HOLD = """
import sys, time
block = bytearray(int(sys.argv[1]) * 2**20)
for i in range(0, len(block), 4096):
    block[i] = 1
time.sleep(0.8)
"""


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads VmHWM from /proc")
@pytest.mark.parametrize("launcher_mb, rank_mb", [(150, 300), (300, 100)])
def test_peak_memory_is_measured_per_rank(launcher_mb, rank_mb):
    """Each rank's own peak: the launcher's block (and Python), not its small helper's; the child's once it runs its
    own program, not the launcher's memory it shared between fork and exec."""
    result = run_watched([sys.executable, "-c", ALLOCATE, str(launcher_mb), HOLD, str(rank_mb)])
    assert result["returncode"] == 0 and set(result["peak_rss_mb"]) == {"0", "1"}
    peaks = result["peak_rss_mb"]
    assert launcher_mb < peaks["0"] < launcher_mb + 80
    assert rank_mb < peaks["1"] < rank_mb + 80


def _record(tmp_path: Path) -> Path:
    size = lambda pairs, ranks, seconds: {  # noqa: E731
        "pairs": pairs, "load_before": 0.4, "load_after": 1.2,
        "prepare": {"wall_s": seconds, "peak_rss_mb": {"0": 800.0}},
        "store": {"ids_type": "uint16", "bytes": 3 * 2**20 * pairs // 1000, "tokens": 1, "bytes_per_token": 2.47},
        "second_start": {"first_update_s": 12.34, "peak_rss_mb": ranks}}
    record = {"machine": {"cpu": "Test CPU", "cores": 2}, "vocab_size": 8000, "command": "seqbench data benchmark",
              "second_start_overrides": ["trainer=ddp"],
              "sizes": [size(50_000, {"0": 1300.0, "1": 1250.0}, 30), size(4_500_000, {"0": 1390.0, "1": 1300.0}, 900)]}
    folder = tmp_path / "docs" / "results" / "scale" / "x"
    folder.mkdir(parents=True)
    (folder / "scale.json").write_text(json.dumps(record))
    return folder


def test_the_scale_table_is_generated_from_its_record(tmp_path):
    _record(tmp_path)
    text = "<!-- headline: docs/results/scale/x --scale -->\nstale\n<!-- /headline -->\n"
    rendered = render(text, tmp_path)
    assert "stale" not in rendered
    assert "| 50,000 | 0.5 min | 800 | 150.0 | 2.47 | 12.3 s | 1,300 / 1,250 |" in rendered
    assert "| 4,500,000 | 15.0 min | 800 | 13,500.0 | 2.47 | 12.3 s | 1,390 / 1,300 |" in rendered
    assert "+90 / +50 MB" in rendered and "load average 0.4-1.2" in rendered
    assert render(rendered, tmp_path) == rendered


def test_the_throughput_ab_beside_the_record_is_rendered(tmp_path):
    folder = _record(tmp_path)
    rounds = [{"version": v, "target_tokens_per_s": t, "load_average_max": 1.5} for v, t in
              (("old", 100.0), ("new", 101.0), ("new", 99.0), ("old", 100.0))]
    (folder / "ab.json").write_text(json.dumps({"what": "quickstart training throughput, new / old, interleaved",
                                                "command": "python train.py", "rounds": rounds,
                                                "ratio_of_medians": 1.0, "round_ratios": [1.01, 0.99],
                                                "loader_ms_per_batch": {"old": 2.0, "new": 0.5},
                                                "loader_command": "the loader"}))
    rendered = render("<!-- headline: docs/results/scale/x --scale -->\n<!-- /headline -->\n", tmp_path)
    assert "`ab.json`: quickstart training throughput, new / old, interleaved (target tokens/s after warm-up, in " \
           "one run): ratio of medians 1.000 over 2 rounds (each round's ratio: 1.010, 0.990; highest 1-minute load " \
           "average while timed 1.5)" in rendered
    assert "Loading alone (the loader): 0.50 ms a batch against 2.00 ms." in rendered
