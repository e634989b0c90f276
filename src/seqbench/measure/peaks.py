"""MFU: the machine's matmul peak (measured, once per machine), the analytic training FLOPs, and their ratio.

`matmul_peak_flops` measures the device's achievable matrix-product FLOP/s with square products (the denominator
of MFU: a datasheet peak is neither known for every CPU nor reachable by PyTorch on it); `training_flops` takes the
model's analytic `flops_per_token` (training = 3x forward: the backward pass costs twice the forward) to achieved
FLOP/s and MFU (on GPU also against the datasheet peak).

One matmul peak per machine: measured once, cached, reused by every run and benchmark as MFU's denominator.

A peak measured at the end of every run, on cores that other processes may be using, differs from run to run
(0.15-0.31 TFLOP/s were measured for one 2-core machine), so MFUs of two runs were not comparable. Here the peak is
measured once per (device, dtype, threads), with its provenance, and kept in `<paths.cache_dir>/machine_peaks.json`:

    {"version": 1, "peaks": {"<device> | <dtype> | <threads> threads": {
        "device", "dtype", "threads", "flops_per_s", "matrix_size" (matmul_peak_flops),
        "measured_at" (UTC, ISO 8601), "measure_seconds" (time spent measuring), "torch" (version),
        "load_average_1min" (before measuring; null where the OS has none), "cpu_busy_fraction" (share of all
        cores busy during the IDLE_CHECK_SECONDS before measuring, from /proc/stat; null without it), "cpu_count",
        "cores_idle" (cpu_busy_fraction below IDLE_BUSY, or where it is unknown the load average below IDLE_LOAD:
        nothing else was running)}}}

A peak is only worth caching when it was measured fit (`unfit_reasons`): products of at least MIN_MATRIX (1024 on CPU,
4096 on GPU), at least MIN_SECONDS of measurement per dtype, and cores that were idle. A fit peak is cached; an unfit
one (busy cores, a short measurement) serves only the run that measured it and says why; a cached peak that was not
fit (an older cache, a hand-edited one) is refused and measured again. Tests and `bench --tiny` pass no cache
directory: their toy measurements never reach the user's cache. `seqbench bench --measure-peak [--force]` measures
(or re-measures) them on purpose, ideally on an idle machine; a run that finds no fit cached peak measures it and
caches it if fit (`source` says which happened).

MFU is achieved over peak FLOP/s and cannot pass 100%: `training_flops` refuses a ratio above 1 (the peak is stale,
or was measured on another machine or badly) and gives `mfu_note` instead, with the command that re-measures it.

On GPU, MFU is also reported against the datasheet peak (`datasheet_peak`): what the hardware promises, as papers
quote MFU, next to what PyTorch reaches here.
"""
from __future__ import annotations

import datetime
import json
import math
import os
import platform
import re
import time
from pathlib import Path

import torch

from seqbench.common.io import atomic_write_text
from seqbench.measure.speed import clock
from seqbench.models.interface import Seq2Seq

CACHE_FILE = "machine_peaks.json"
CACHE_VERSION = 1
MIN_MATRIX = {"cpu": 1024, "cuda": 4096}  # smaller products measure overheads, not the arithmetic units
MIN_SECONDS = 1.0  # measurement time per dtype below which a peak is not trusted
REMEASURE = "seqbench bench --measure-peak --force"
IDLE_CHECK_SECONDS = 0.5  # how long the cores are watched before measuring
IDLE_BUSY = 0.1  # cores busy less than this share of that time: idle
IDLE_LOAD = 0.5  # where /proc/stat is missing: a 1-minute load average below this (it lags a minute behind)


def _timed_products(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor, repeats: int) -> float:
    start = clock(a.device)
    for _ in range(repeats):
        torch.matmul(a, b, out=out)
    return clock(a.device) - start


@torch.no_grad()
def matmul_peak_flops(device: torch.device, dtype: torch.dtype, seconds: float = 1.0,
                      max_size: int | None = None) -> dict:
    """Best FLOP/s of n x n x n products (2 n^3 FLOPs each) over about `seconds` of measurement.

    n doubles from 256 until one product takes a twentieth of the time budget (smaller products measure launch and
    threading overhead, not the arithmetic units) or reaches `max_size` (8192 on GPU, 4096 on CPU: large enough for
    peak, small enough for memory). Then windows of repeated products run until the budget is spent; the best
    window is the peak. The first product of each size is a warm-up (allocation, kernel selection) and not timed.
    Uses the current torch settings (threads, TF32 via torch.set_float32_matmul_precision), as training does.
    """
    max_size = max_size or (8192 if device.type == "cuda" else 4096)
    deadline = time.perf_counter() + seconds
    n = 256
    while True:
        a = torch.randn(n, n, device=device, dtype=dtype)
        b = torch.randn(n, n, device=device, dtype=dtype)
        out = torch.empty(n, n, device=device, dtype=dtype)
        _timed_products(a, b, out, 1)  # warm-up
        one = _timed_products(a, b, out, 1)
        if one >= seconds / 20 or n >= max_size:
            break
        n *= 2
    repeats = max(1, math.ceil(seconds / 10 / max(one, 1e-9)))  # windows of ~a tenth of the budget
    best = 2 * n ** 3 / one
    while time.perf_counter() < deadline:
        best = max(best, repeats * 2 * n ** 3 / _timed_products(a, b, out, repeats))
    return {"flops_per_s": best, "matrix_size": n}


def peak_dtypes(device: torch.device) -> dict[str, torch.dtype]:
    """The dtypes whose matmul peak is measured: fp32 and bf16 (and fp16 on GPU). bf16 is measured on CPU too (often
    far slower than fp32 there: that is the point of measuring), on GPU only where the hardware supports it
    natively."""
    dtypes = {"float32": torch.float32}
    if device.type != "cuda" or torch.cuda.is_bf16_supported(including_emulation=False):
        dtypes["bfloat16"] = torch.bfloat16
    if device.type == "cuda":
        dtypes["float16"] = torch.float16
    return dtypes


def training_dtype(precision: str) -> str:
    """Lightning precision string -> the dtype of the matrix products it runs ("bf16-mixed" -> "bfloat16")."""
    precision = str(precision)
    if precision.startswith("bf16"):
        return "bfloat16"
    if precision.startswith("16"):
        return "float16"
    return "float32"


def training_flops(model: Seq2Seq, mean_src_tokens: float, mean_tgt_tokens: float, target_tokens_per_s: float,
                   peaks: dict[str, dict], dtype: str, datasheet_peak: float | None = None) -> dict:
    """Model FLOPs utilisation: 3 x forward FLOPs per target token x target tokens/s over the measured peak of the
    dtype training multiplies in (None when that dtype has no measured peak), and over `datasheet_peak` when given.

    FLOPs count useful work (non-pad tokens, average sentence lengths of the training batches), as MFU does.
    `peaks` are seqbench.measure.peaks.cached_peaks entries; their provenance (when, how, whether cached) is kept.
    An MFU above 100% is impossible: it is left out (None) and `mfu_note` says why and how to re-measure the peak;
    an MFU against an unfit peak is kept with a note naming what was unfit.
    """
    forward = model.flops_per_token(round(mean_src_tokens), round(mean_tgt_tokens))
    achieved = 3 * forward * target_tokens_per_s
    entry = peaks.get(dtype, {})
    peak = entry.get("flops_per_s")
    mfu, note = (achieved / peak if peak else None), None
    if mfu is not None and mfu > 1:
        mfu, note = None, (f"not shown: {achieved / peak:.0%} of the {entry.get('source', '')} {dtype} peak "
                           f"({peak / 1e9:,.1f} GFLOP/s) is impossible, so that peak is stale or was measured "
                           f"badly; re-measure it with `{REMEASURE}` on an idle machine")
    elif mfu is not None and entry.get("unfit"):
        note = "against a peak measured unfit (flops.peak_provenance says why)"
    mfu_datasheet = achieved / datasheet_peak if datasheet_peak else None
    if mfu_datasheet is not None and mfu_datasheet > 1:
        mfu_datasheet = None
    return {"forward_per_target_token": forward, "train_per_target_token": 3 * forward,
            "mean_src_tokens": mean_src_tokens, "mean_tgt_tokens": mean_tgt_tokens,
            "achieved_train_flops_per_s": achieved, "peak_dtype": dtype,
            "peak_flops_per_s": {name: p["flops_per_s"] for name, p in peaks.items()},
            "peak_matrix_size": {name: p["matrix_size"] for name, p in peaks.items()},
            "peak_source": entry.get("source"),
            "peak_provenance": {name: {k: v for k, v in p.items() if k not in ("flops_per_s", "matrix_size")}
                                for name, p in peaks.items()},
            "mfu": mfu, "mfu_note": note,
            "datasheet_peak_flops_per_s": datasheet_peak,
            "mfu_datasheet": mfu_datasheet}


def mfu_text(flops: dict) -> str:
    """How every command prints MFU, in plain words: "19.8% of this machine's float32 matmul peak (0.18 TFLOP/s)",
    and only where that peak was measured now and unfit, that the share is rough and how to measure the peak well;
    the note instead of an impossible number."""
    if flops.get("mfu") is None:
        return f"n/a: {flops['mfu_note']}" if flops.get("mfu_note") else "n/a"
    dtype = flops["peak_dtype"]
    text = (f"{flops['mfu']:.1%} of this machine's {dtype} matmul peak "
            f"({flops['peak_flops_per_s'][dtype] / 1e12:.2f} TFLOP/s)")
    if flops.get("mfu_datasheet") is not None:
        text += f"; {flops['mfu_datasheet']:.1%} of the datasheet peak"
    unfit = (flops.get("peak_provenance") or {}).get(dtype, {}).get("unfit")
    if unfit:  # a cached peak is fit by construction: only a peak measured now for this run can be rough
        how = "under load" if "other work was running on the cores" in unfit else "in a short test"
        text += f"; that peak was measured now {how}, so the share is rough: see `{REMEASURE}`"
    return text


def device_name(device: torch.device) -> str:
    """The GPU's name, or the CPU model (/proc/cpuinfo) with the vector instructions torch uses on it, so a cache
    copied to another machine is not reused: one model name ("AMD EPYC" on a cloud VM) covers hosts with and without
    AVX-512, whose fp32 peaks differ (a peak cached on the AVX2 host gave MFU against 178 GFLOP/s where the AVX-512
    host's products ran at 210)."""
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    model = platform.processor() or platform.machine() or "unknown CPU"
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        for line in cpuinfo.read_text(errors="ignore").splitlines():
            if line.lower().startswith("model name"):
                model = " ".join(line.split(":", 1)[1].split())
                break
    return f"{model} ({torch.backends.cpu.get_cpu_capability()})"


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


def _read(path: Path | None) -> dict:
    if path is None:
        return {}
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
    peak = matmul_peak_flops(device, getattr(torch, dtype), seconds)
    threads = torch.get_num_threads()
    return {"device": device_name(device), "device_type": device.type, "dtype": dtype, "threads": threads,
            "flops_per_s": peak["flops_per_s"], "matrix_size": peak["matrix_size"],
            "measured_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "measure_seconds": round(time.perf_counter() - started, 3), "torch": torch.__version__,
            "load_average_1min": load, "cpu_busy_fraction": busy, "cpu_count": os.cpu_count(), "cores_idle": idle}


def unfit_reasons(peak: dict) -> list[str]:
    """Why a measured peak is not to be trusted as a machine's peak (nothing when it is fit)."""
    kind = "cuda" if peak.get("device_type", "cpu") == "cuda" else "cpu"
    reasons = []
    if (peak.get("matrix_size") or 0) < MIN_MATRIX[kind]:
        reasons.append(f"{peak.get('matrix_size')}x{peak.get('matrix_size')} products (fit: {MIN_MATRIX[kind]} or "
                       "more)")
    if (peak.get("measure_seconds") or 0) < MIN_SECONDS:
        reasons.append(f"{peak.get('measure_seconds')} s of measurement (fit: {MIN_SECONDS:g} s or more)")
    if peak.get("cores_idle") is False:
        reasons.append("other work was running on the cores")
    return reasons


def cached_peaks(device: torch.device, cache_dir: str | Path | None, seconds: float = 1.0, force: bool = False,
                 dtypes: list[str] | None = None) -> dict[str, dict]:
    """{dtype: peak with provenance and "source": "cached" | "measured now"} for the device's dtypes
    (peak_dtypes) at the current torch thread count. A fit cached peak is used (unless `force`); otherwise the peak
    is measured now, and cached when the measurement was fit, else used for this call only and marked "unfit" with
    the reasons. `cache_dir` None: nothing is read or written (tests, `bench --tiny`)."""
    path = Path(cache_dir) / CACHE_FILE if cache_dir is not None else None
    name, threads = device_name(device), torch.get_num_threads()
    cached = _read(path) if path is not None else {}
    out, measured = {}, {}
    for dtype in dtypes or list(peak_dtypes(device)):
        key = cache_key(name, dtype, threads)
        if key in cached and not force and not unfit_reasons(cached[key]):
            out[dtype] = {**cached[key], "source": "cached"}
            continue
        peak = measure_peak(device, dtype, seconds)
        reasons = unfit_reasons(peak)
        if reasons:
            out[dtype] = {**peak, "source": "measured now", "unfit": reasons}
        else:
            measured[key] = peak
            out[dtype] = {**peak, "source": "measured now"}
    if measured and path is not None:
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
