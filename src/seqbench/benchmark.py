"""Speed, memory and compute-efficiency measurements taken at the end of every run (seqbench.run).

- `decode_speed`: sentences/s and target tokens/s of greedy or beam search over fixed batches; warm-up batches are
  decoded first and not timed, the device is synchronised before each clock read.
- `matmul_peak_flops`: the device's achievable matrix-product FLOP/s, measured with square products (the
  denominator of MFU: a datasheet peak is neither known for every CPU nor reachable by PyTorch on it). Runs take it
  from the per-machine cache of seqbench.machine_peaks rather than measuring it again on possibly busy cores.
- `training_flops`: analytic FLOPs per target token from the model's `flops_per_token` (training = 3x forward:
  the backward pass costs twice the forward), achieved FLOP/s and MFU (on GPU also against the datasheet peak).
- `peak_memory`: peak resident memory of the process and, on GPU, the CUDA caching allocator's max allocation,
  since `reset_peak_memory` (called when a run starts).
"""
from __future__ import annotations

import math
import resource
import time
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Callable

import torch

from seqbench.decoding import DecodingConfig, generate
from seqbench.models.interface import Seq2Seq


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def clock(device: torch.device) -> float:
    """time.perf_counter() after the device has finished its queued work."""
    synchronize(device)
    return time.perf_counter()


@torch.no_grad()
def decode_speed(model: Seq2Seq, batches: list[dict], decoding: DecodingConfig, device: torch.device,
                 warmup_batches: int = 1,
                 context: Callable[[], AbstractContextManager] = nullcontext,
                 search: Callable[..., list[list[int]]] = generate) -> dict:
    """Decodes every batch once, timed, after decoding the first `warmup_batches` once untimed.

    `context` wraps the decoding (the trainer's autocast), so the speed is that of the precision used for testing.
    `search(model, src, src_mask, decoding)` is the search timed (greedy or beam search by default).
    Target tokens are the hypotheses' tokens, <eos> excluded.
    """
    model.eval()
    batches = [{k: batch[k].to(device) for k in ("src", "src_mask")} for batch in batches]
    with context():
        for batch in batches[:warmup_batches]:
            search(model, batch["src"], batch["src_mask"], decoding)
        sentences = tokens = 0
        start = clock(device)
        for batch in batches:
            hypotheses = search(model, batch["src"], batch["src_mask"], decoding)
            sentences += len(hypotheses)
            tokens += sum(len(h) for h in hypotheses)
        seconds = clock(device) - start
    return {"beam_size": decoding.beam_size, "sentences": sentences, "target_tokens": tokens, "seconds": seconds,
            "sentences_per_s": sentences / seconds, "target_tokens_per_s": tokens / seconds}


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


def peak_flops(device: torch.device, seconds: float = 1.0) -> dict[str, dict]:
    """The matmul peak of every `peak_dtypes` dtype, measured now."""
    return {name: matmul_peak_flops(device, dtype, seconds) for name, dtype in peak_dtypes(device).items()}


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
    `peaks` are seqbench.machine_peaks.cached_peaks entries; their provenance (when, how, whether cached) is kept.
    """
    forward = model.flops_per_token(round(mean_src_tokens), round(mean_tgt_tokens))
    achieved = 3 * forward * target_tokens_per_s
    peak = peaks.get(dtype, {}).get("flops_per_s")
    return {"forward_per_target_token": forward, "train_per_target_token": 3 * forward,
            "mean_src_tokens": mean_src_tokens, "mean_tgt_tokens": mean_tgt_tokens,
            "achieved_train_flops_per_s": achieved, "peak_dtype": dtype,
            "peak_flops_per_s": {name: p["flops_per_s"] for name, p in peaks.items()},
            "peak_matrix_size": {name: p["matrix_size"] for name, p in peaks.items()},
            "peak_source": peaks.get(dtype, {}).get("source"),
            "peak_provenance": {name: {k: v for k, v in p.items() if k not in ("flops_per_s", "matrix_size")}
                                for name, p in peaks.items()},
            "mfu": achieved / peak if peak else None,
            "datasheet_peak_flops_per_s": datasheet_peak,
            "mfu_datasheet": achieved / datasheet_peak if datasheet_peak else None}


def reset_peak_memory() -> None:
    """Starts a new peak-memory window. Hydra's multirun runs its jobs one after another in one process, so without
    this every job would report the largest peak of the jobs before it. Linux resets the resident-set high-water
    mark through /proc/self/clear_refs; CUDA peaks are reset where CUDA is already initialised (a fresh process
    starts from zero anyway, and initialising CUDA here would break fork-based launchers)."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:  # not Linux, or not permitted: the CPU peak then covers the whole process
        pass
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        for i in range(torch.cuda.device_count()):
            torch.cuda.reset_peak_memory_stats(i)


def _cpu_peak_mb() -> float:
    status = Path("/proc/self/status")
    if status.is_file():
        for line in status.read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024  # kB
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux reports KiB (macOS bytes)


def peak_memory(device: torch.device) -> dict:
    """Peak resident set size of this process since `reset_peak_memory` (VmHWM; ru_maxrss where /proc is missing)
    and, on GPU, the maximum memory the CUDA caching allocator handed out since then."""
    cuda = torch.cuda.max_memory_allocated(device) / 2**20 if device.type == "cuda" else None
    return {"cpu_rss_peak_mb": _cpu_peak_mb(), "cuda_max_allocated_mb": cuda}


def fixed_subset(n_total: int, n: int | None) -> list[int]:
    """n indices spread evenly over range(n_total) (all of them when n is None or >= n_total): a subset that keeps
    the composition of a test set stored in any order (e.g. by length stratum)."""
    if n is None or n >= n_total:
        return list(range(n_total))
    return sorted({math.floor(i * n_total / n) for i in range(n)})


def test_batches(split, n_sentences: int | None) -> list[dict]:
    """The decode benchmark's input: a fixed subset of an evaluation split (seqbench.data.eval_split.EvalSplit),
    batched exactly like the test pass."""
    return split.batches(fixed_subset(len(split), n_sentences))
