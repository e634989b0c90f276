"""One matmul peak per machine: measured once, cached, reused by every run and benchmark as MFU's denominator.

A peak measured at the end of every run, on cores that other processes may be using, differs from run to run
(0.15-0.31 TFLOP/s were measured for one 2-core machine), so MFUs of two runs were not comparable. Here the peak is
measured once per (device, dtype, threads), with its provenance, and kept in `<paths.cache_dir>/machine_peaks.json`:

    {"version": 1, "peaks": {"<device> | <dtype> | <threads> threads": {
        "device", "dtype", "threads", "flops_per_s", "matrix_size" (seqbench.benchmark.matmul_peak_flops),
        "measured_at" (UTC, ISO 8601), "measure_seconds" (time spent measuring), "torch" (version),
        "load_average_1min" (before measuring; null where the OS has none), "cpu_busy_fraction" (share of all
        cores busy during the IDLE_CHECK_SECONDS before measuring, from /proc/stat; null without it), "cpu_count",
        "cores_idle" (cpu_busy_fraction below IDLE_BUSY, or where it is unknown the load average below IDLE_LOAD:
        nothing else was running)}}}

`python -m seqbench.bench --measure-peak [--force]` measures (or re-measures) them on purpose, ideally on an idle
machine; a run that finds no cached peak measures it once and caches it (`source` says which happened).

On GPU, MFU is also reported against the datasheet peak (`datasheet_peak`): what the hardware promises, as papers
quote MFU, next to what PyTorch reaches here.
"""
from __future__ import annotations

import datetime
import json
import os
import platform
import re
import time
from pathlib import Path

import torch

from seqbench import benchmark
from seqbench.io import atomic_write_text

CACHE_FILE = "machine_peaks.json"
CACHE_VERSION = 1
IDLE_CHECK_SECONDS = 0.5  # how long the cores are watched before measuring
IDLE_BUSY = 0.1  # cores busy less than this share of that time: idle
IDLE_LOAD = 0.5  # where /proc/stat is missing: a 1-minute load average below this (it lags a minute behind)


def device_name(device: torch.device) -> str:
    """The GPU's name, or the CPU model (/proc/cpuinfo), so a cache copied to another machine is not reused."""
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        for line in cpuinfo.read_text(errors="ignore").splitlines():
            if line.lower().startswith("model name"):
                return " ".join(line.split(":", 1)[1].split())
    return platform.processor() or platform.machine() or "unknown CPU"


def cache_key(name: str, dtype: str, threads: int) -> str:
    return f"{name} | {dtype} | {threads} threads"


def _load_average() -> float | None:
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):  # not available on this OS
        return None


def _cpu_times() -> tuple[int, int] | None:
    """(busy, total) jiffies of all cores since boot, from the first line of /proc/stat; None where it is missing."""
    try:
        fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    except (OSError, ValueError):
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    return sum(fields) - idle, sum(fields)


def _busy_fraction(seconds: float) -> float | None:
    before = _cpu_times()
    if before is None:
        return None
    time.sleep(seconds)
    after = _cpu_times()
    total = after[1] - before[1]
    return (after[0] - before[0]) / total if total > 0 else None


def _read(path: Path) -> dict:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):  # missing or unreadable: start a new cache rather than fail a run
        return {}
    return data.get("peaks", {}) if isinstance(data, dict) and data.get("version") == CACHE_VERSION else {}


def measure_peak(device: torch.device, dtype: str, seconds: float) -> dict:
    """Measures one peak now and returns it with its provenance (see the module docstring)."""
    load, busy = _load_average(), _busy_fraction(IDLE_CHECK_SECONDS)
    idle = busy < IDLE_BUSY if busy is not None else None if load is None else load < IDLE_LOAD
    started = time.perf_counter()
    peak = benchmark.matmul_peak_flops(device, getattr(torch, dtype), seconds)
    threads = torch.get_num_threads()
    return {"device": device_name(device), "dtype": dtype, "threads": threads,
            "flops_per_s": peak["flops_per_s"], "matrix_size": peak["matrix_size"],
            "measured_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "measure_seconds": round(time.perf_counter() - started, 3), "torch": torch.__version__,
            "load_average_1min": load, "cpu_busy_fraction": busy, "cpu_count": os.cpu_count(), "cores_idle": idle}


def cached_peaks(device: torch.device, cache_dir: str | Path, seconds: float = 1.0, force: bool = False,
                 dtypes: list[str] | None = None) -> dict[str, dict]:
    """{dtype: peak with provenance and "source": "cached" | "measured now"} for the device's dtypes
    (benchmark.peak_dtypes) at the current torch thread count; missing ones (all of them with `force`) are
    measured and written to the cache."""
    path = Path(cache_dir) / CACHE_FILE
    name, threads = device_name(device), torch.get_num_threads()
    cached = _read(path)
    out, measured = {}, {}
    for dtype in dtypes or list(benchmark.peak_dtypes(device)):
        key = cache_key(name, dtype, threads)
        if key in cached and not force:
            out[dtype] = {**cached[key], "source": "cached"}
        else:
            measured[key] = measure_peak(device, dtype, seconds)
            out[dtype] = {**measured[key], "source": "measured now"}
    if measured:
        # Read again just before writing: another process may have cached other devices or thread counts meanwhile.
        peaks = {**_read(path), **measured}
        atomic_write_text(path, json.dumps({"version": CACHE_VERSION, "peaks": peaks}, indent=2) + "\n")
    return out


# Dense (no structured sparsity) peak FLOP/s from NVIDIA's datasheets, by dtype. "float32" is the non-tensor-core
# FP32 rate; "tfloat32" is what float32 matmuls reach with torch.set_float32_matmul_precision("high"). Where a
# datasheet quotes "with sparsity" figures, the dense rate is half of them. Patterns are matched in order against
# torch.cuda.get_device_name, so the more specific ones come first (H100 PCIe before H100, A100 before A10).
# Sources:
#   H100 SXM5 / PCIe: NVIDIA H100 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/h100/), SXM5 67 TF FP32,
#     989 TF TF32 / 1,979 TF BF16 and FP16 with sparsity; PCIe 51 / 756 / 1,513.
#   H200: NVIDIA H200 datasheet (nvidia.com/en-us/data-center/h200/), same compute as H100 SXM.
#   A100: NVIDIA A100 datasheet (nvidia.com/en-us/data-center/a100/), 19.5 TF FP32, 156 TF TF32, 312 TF BF16/FP16.
#   L40S: NVIDIA L40S datasheet, 91.6 TF FP32, 366 TF TF32 / 733 TF BF16 and FP16 with sparsity.
#   L4: NVIDIA L4 datasheet, 30.3 TF FP32, 120 TF TF32 / 242 TF BF16 and FP16 with sparsity.
#   A10: NVIDIA A10 datasheet, 31.2 TF FP32, 125 TF TF32 / 250 TF BF16 and FP16 with sparsity.
#   V100 SXM2: NVIDIA V100 datasheet, 15.7 TF FP32, 125 TF FP16 tensor (no BF16, no TF32).
#   T4: NVIDIA T4 datasheet, 8.1 TF FP32, 65 TF FP16 tensor (no BF16, no TF32).
_T = 1e12
DATASHEET_PEAKS: list[tuple[str, dict[str, float]]] = [
    (r"H100.*PCIe", {"float32": 51 * _T, "tfloat32": 378 * _T, "bfloat16": 756.5 * _T, "float16": 756.5 * _T}),
    (r"H100|H200|GH200", {"float32": 67 * _T, "tfloat32": 494.5 * _T, "bfloat16": 989.5 * _T,
                          "float16": 989.5 * _T}),
    (r"A100", {"float32": 19.5 * _T, "tfloat32": 156 * _T, "bfloat16": 312 * _T, "float16": 312 * _T}),
    (r"L40S", {"float32": 91.6 * _T, "tfloat32": 183 * _T, "bfloat16": 366.5 * _T, "float16": 366.5 * _T}),
    (r"\bL4\b", {"float32": 30.3 * _T, "tfloat32": 60 * _T, "bfloat16": 121 * _T, "float16": 121 * _T}),
    (r"\bA10\b", {"float32": 31.2 * _T, "tfloat32": 62.5 * _T, "bfloat16": 125 * _T, "float16": 125 * _T}),
    (r"V100", {"float32": 15.7 * _T, "float16": 125 * _T}),
    (r"\bT4\b", {"float32": 8.1 * _T, "float16": 65 * _T}),
]


def datasheet_peak(name: str, dtype: str) -> float | None:
    """The datasheet's dense peak FLOP/s of a GPU (by torch.cuda.get_device_name) for the dtype its matmuls run in:
    float32 counts as TF32 when torch is allowed to use it. None for CPUs and unlisted GPUs."""
    if dtype == "float32" and torch.get_float32_matmul_precision() != "highest":
        dtype = "tfloat32"
    for pattern, peaks in DATASHEET_PEAKS:
        if re.search(pattern, name):
            return peaks.get(dtype)
    return None
