"""The per-machine matmul peak cache: measured once per (device, dtype, threads) with its provenance, then reused;
and the datasheet table used for GPU MFU."""
from __future__ import annotations

import json

import pytest
import torch

from seqbench.measure import peaks as machine_peaks


@pytest.fixture
def fake_measure(monkeypatch):
    """Counts measurements and returns a fixed, fit peak per dtype (large products, idle cores, the minimum time
    waived), so no real matmul timing runs in these tests."""
    calls = []

    def measure(device, dtype, seconds, max_size=None):
        calls.append((dtype, torch.get_num_threads()))
        return {"flops_per_s": 1e11 if dtype == torch.float32 else 2e10, "matrix_size": 2048}

    monkeypatch.setattr(machine_peaks, "matmul_peak_flops", measure)
    monkeypatch.setattr(machine_peaks, "_busy_fraction", lambda seconds: 0.0)
    monkeypatch.setattr(machine_peaks, "MIN_SECONDS", 0.0)
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
    assert busy == 0.0 and entry["cores_idle"]

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


def test_a_peak_cached_on_a_host_with_other_vector_instructions_is_not_reused(tmp_path, fake_measure, monkeypatch):
    """One CPU model name covers cloud hosts with and without AVX-512: the cache key names what torch runs on."""
    cpu = torch.device("cpu")
    monkeypatch.setattr(torch.backends.cpu, "get_cpu_capability", lambda: "AVX2")
    avx2 = machine_peaks.cached_peaks(cpu, tmp_path, seconds=0.01, dtypes=["float32"])
    assert avx2["float32"]["device"].endswith("(AVX2)")
    monkeypatch.setattr(torch.backends.cpu, "get_cpu_capability", lambda: "AVX512")
    avx512 = machine_peaks.cached_peaks(cpu, tmp_path, seconds=0.01, dtypes=["float32"])
    assert avx512["float32"]["source"] == "measured now" and avx512["float32"]["device"].endswith("(AVX512)")
    assert len(fake_measure) == 2


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


def _poison(cache_dir, **entry) -> None:
    """A cache holding one float32 peak for this machine and thread count, with the given fields."""
    cpu = torch.device("cpu")
    key = machine_peaks.cache_key(machine_peaks.device_name(cpu), "float32", torch.get_num_threads())
    peak = {"device": machine_peaks.device_name(cpu), "dtype": "float32", "threads": torch.get_num_threads(),
            "flops_per_s": 1e6, "matrix_size": 256, "measure_seconds": 0.05, "cores_idle": True, **entry}
    (cache_dir / machine_peaks.CACHE_FILE).write_text(json.dumps({"version": 1, "peaks": {key: peak}}))


def test_an_unfit_cached_peak_is_refused_and_measured_again(tmp_path, fake_measure):
    _poison(tmp_path)  # what `bench --tiny` once cached: 256x256 products for 0.05 s
    out = machine_peaks.cached_peaks(torch.device("cpu"), tmp_path, seconds=0.01, dtypes=["float32"])
    assert out["float32"]["source"] == "measured now" and out["float32"]["flops_per_s"] == 1e11
    assert len(fake_measure) == 1


def test_a_peak_measured_on_busy_cores_serves_its_run_only(tmp_path, fake_measure, monkeypatch):
    monkeypatch.setattr(machine_peaks, "_busy_fraction", lambda seconds: 0.9)
    out = machine_peaks.cached_peaks(torch.device("cpu"), tmp_path, seconds=0.01, dtypes=["float32"])
    assert out["float32"]["unfit"] == ["other work was running on the cores"]
    assert not (tmp_path / machine_peaks.CACHE_FILE).exists()
    assert machine_peaks.cached_peaks(torch.device("cpu"), None, seconds=0.01, dtypes=["float32"])  # no cache at all
    assert not (tmp_path / machine_peaks.CACHE_FILE).exists()


def test_an_mfu_above_100_percent_is_not_a_number():
    from seqbench.models.interface import build_model

    model = build_model({"_target_": "seqbench.models.transformer.Transformer", "d_model": 16, "n_heads": 2,
                         "encoder_layers": 1, "decoder_layers": 1, "d_ff": 32}, 50, 50)
    bogus = {"float32": {"flops_per_s": 1e6, "matrix_size": 2048, "source": "cached"}}
    flops = machine_peaks.training_flops(model, 10, 10, 5000.0, bogus, "float32")
    assert flops["mfu"] is None and "seqbench bench --measure-peak --force" in flops["mfu_note"]
    assert machine_peaks.mfu_text(flops).startswith("n/a: not shown: ") and "%" not in \
        machine_peaks.mfu_text(flops).split("impossible")[1]
    real = {"float32": {"flops_per_s": 1e15, "matrix_size": 2048, "source": "cached"}}
    assert machine_peaks.mfu_text(machine_peaks.training_flops(model, 10, 10, 5000.0, real, "float32")).startswith(
        "0.0% of this machine's float32 matmul peak (1000.00 TFLOP/s)")


def test_a_run_with_a_poisoned_cache_never_prints_an_mfu_above_100_percent(tmp_path, capsys, monkeypatch):
    """A fit-looking but far too low cached peak (measured elsewhere, or edited): the run's summary says the peak is
    stale and how to re-measure it; results.json keeps no MFU."""
    from conftest import TINY, TINY_MODELS, seqbench_cli

    cache = tmp_path / "cache"
    cache.mkdir()
    before = torch.get_num_threads()
    torch.set_num_threads(1)  # the peak is cached per thread count: the run's (TINY's threads=1), whatever an earlier
    _poison(cache, matrix_size=2048, measure_seconds=3.0)  # test of this worker left the process at
    torch.set_num_threads(before)
    monkeypatch.delenv("HYDRA_FULL_ERROR", raising=False)
    monkeypatch.setenv("COLUMNS", "400")
    status, out, err = seqbench_cli(["train", f"paths.cache_dir={cache}", f"hydra.run.dir={tmp_path / 'run'}",
                                     *TINY, *TINY_MODELS["transformer"]], capsys)
    assert status == 0, err
    mfu = next(line for line in out.splitlines() if "MFU" in line)
    assert "n/a: not shown:" in mfu and "seqbench bench --measure-peak --force" in mfu
    record = json.loads((tmp_path / "run" / "results.json").read_text())
    assert record["flops"]["mfu"] is None and record["flops"]["mfu_note"]
