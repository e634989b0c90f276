"""Peak memory: the process's peak resident set and, on GPU, the CUDA caching allocator's largest allocation, since
`reset_peak_memory` (called when a run starts)."""
from __future__ import annotations

from pathlib import Path

import torch


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


def _cpu_peak_mb() -> float | None:
    status = Path("/proc/self/status")
    if status.is_file():
        for line in status.read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024  # kB
    try:
        import resource  # POSIX only
    except ImportError:  # Windows: neither /proc nor resource; psutil reads the peak working set
        import psutil

        peak = getattr(psutil.Process().memory_info(), "peak_wset", None)
        return None if peak is None else peak / 2**20
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux reports KiB (macOS bytes)


def peak_memory(device: torch.device) -> dict:
    """Peak resident set size of this process since `reset_peak_memory` (VmHWM; ru_maxrss where /proc is missing)
    and, on GPU, the maximum memory the CUDA caching allocator handed out since then."""
    cuda = torch.cuda.max_memory_allocated(device) / 2**20 if device.type == "cuda" else None
    return {"cpu_rss_peak_mb": _cpu_peak_mb(), "cuda_max_allocated_mb": cuda}
