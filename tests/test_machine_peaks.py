"""The per-machine matmul peak cache: measured once per (device, dtype, threads) with its provenance, then reused;
and the datasheet table used for GPU MFU."""
from __future__ import annotations

import json

import pytest
import torch

from seqbench.measure import peaks as machine_peaks


@pytest.fixture
def fake_measure(monkeypatch):
    """Counts measurements and returns a fixed peak per dtype, so no real matmul timing runs in these tests."""
    calls = []

    def measure(device, dtype, seconds, max_size=None):
        calls.append((dtype, torch.get_num_threads()))
        return {"flops_per_s": 1e11 if dtype == torch.float32 else 2e10, "matrix_size": 512}

    monkeypatch.setattr(machine_peaks, "matmul_peak_flops", measure)
    return calls


def _refuse(*args, **kwargs):
    raise AssertionError("a cached peak must not be measured again")


def test_peak_is_measured_once_then_read_from_the_cache(tmp_path, monkeypatch, fake_measure):
    cpu = torch.device("cpu")
    first = machine_peaks.cached_peaks(cpu, tmp_path, seconds=0.01)
    assert set(first) == {"float32", "bfloat16"} and len(fake_measure) == 2
    assert first["float32"]["flops_per_s"] == 1e11 and first["float32"]["source"] == "measured now"
    entry = first["float32"]
    assert entry["threads"] == torch.get_num_threads() and entry["device"] == machine_peaks.device_name(cpu)
    for key in ("measured_at", "measure_seconds", "matrix_size", "torch", "load_average_1min", "cores_idle"):
        assert key in entry
    busy = entry["cpu_busy_fraction"]  # /proc/stat exists where the tests run (Linux)
    assert 0 <= busy <= 1 and entry["cores_idle"] == (busy < machine_peaks.IDLE_BUSY)

    monkeypatch.setattr(machine_peaks, "matmul_peak_flops", _refuse)
    second = machine_peaks.cached_peaks(cpu, tmp_path, seconds=0.01)
    assert second["float32"]["source"] == "cached" and second["float32"]["flops_per_s"] == 1e11
    assert {k: v for k, v in second["bfloat16"].items() if k != "source"} == \
        {k: v for k, v in first["bfloat16"].items() if k != "source"}
    stored = json.loads((tmp_path / machine_peaks.CACHE_FILE).read_text())
    assert stored["version"] == machine_peaks.CACHE_VERSION and len(stored["peaks"]) == 2
    assert all("source" not in entry for entry in stored["peaks"].values())  # the source is per read, not stored


def test_peaks_are_keyed_by_thread_count(tmp_path, fake_measure):
    cpu, threads = torch.device("cpu"), torch.get_num_threads()
    machine_peaks.cached_peaks(cpu, tmp_path, seconds=0.01, dtypes=["float32"])
    other = 1 if threads != 1 else 2
    try:
        torch.set_num_threads(other)
        again = machine_peaks.cached_peaks(cpu, tmp_path, seconds=0.01, dtypes=["float32"])
    finally:
        torch.set_num_threads(threads)
    assert again["float32"]["source"] == "measured now" and again["float32"]["threads"] == other
    assert fake_measure == [(torch.float32, threads), (torch.float32, other)]
    keys = set(json.loads((tmp_path / machine_peaks.CACHE_FILE).read_text())["peaks"])
    name = machine_peaks.device_name(cpu)
    assert keys == {machine_peaks.cache_key(name, "float32", n) for n in (threads, other)}


def test_force_remeasures_and_a_corrupt_cache_is_replaced(tmp_path, fake_measure):
    cpu = torch.device("cpu")
    (tmp_path / machine_peaks.CACHE_FILE).write_text("{not json")
    machine_peaks.cached_peaks(cpu, tmp_path, seconds=0.01, dtypes=["float32"])
    forced = machine_peaks.cached_peaks(cpu, tmp_path, seconds=0.01, dtypes=["float32"], force=True)
    assert forced["float32"]["source"] == "measured now" and len(fake_measure) == 2


def test_measure_peak_cli_writes_the_cache(tmp_path, monkeypatch, fake_measure, capsys):
    from seqbench.commands.bench import main

    monkeypatch.setenv("SEQBENCH_CACHE_DIR", str(tmp_path))
    assert main(["--measure-peak", "--threads", str(torch.get_num_threads())]) == 0
    assert json.loads(capsys.readouterr().out)["float32"]["source"] == "measured now"
    monkeypatch.setattr(machine_peaks, "matmul_peak_flops", _refuse)
    assert main(["--measure-peak", "--threads", str(torch.get_num_threads())]) == 0
    assert json.loads(capsys.readouterr().out)["float32"]["source"] == "cached"


@pytest.mark.parametrize("name, dtype, expected", [
    ("NVIDIA H100 80GB HBM3", "bfloat16", 989.5e12),
    ("NVIDIA H100 PCIe", "bfloat16", 756.5e12),
    ("NVIDIA H200", "float16", 989.5e12),
    ("NVIDIA A100-SXM4-80GB", "float32", 19.5e12),
    ("NVIDIA A10", "bfloat16", 125e12),
    ("NVIDIA L4", "bfloat16", 121e12),
    ("Tesla V100-SXM2-16GB", "bfloat16", None),
    ("Intel(R) Xeon(R) CPU @ 2.20GHz", "float32", None),
])
def test_datasheet_peaks(name, dtype, expected):
    assert machine_peaks.datasheet_peak(name, dtype) == expected


def test_datasheet_float32_counts_as_tf32_when_allowed():
    before = torch.get_float32_matmul_precision()
    try:
        torch.set_float32_matmul_precision("high")
        assert machine_peaks.datasheet_peak("NVIDIA A100-PCIE-40GB", "float32") == 156e12
    finally:
        torch.set_float32_matmul_precision(before)
