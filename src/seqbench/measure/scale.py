"""The data path at scale (`seqbench data benchmark`): what preparing a corpus costs and what a run costs afterwards,
at two or more corpus sizes, so the growth with corpus size shows.

For each size, every step runs as a user runs it, in a process of its own, on a WMT-like corpus
(`seqbench data generate`):

1. `seqbench data prepare`: wall time and peak resident memory (the cached corpus, the tokenizers, the store) and the
   store's size (bytes, and bytes per token);
2. the second start, `python train.py` under `trainer=ddp trainer.accelerator=cpu trainer.devices=2 threads=1` for a
   few updates with the store already prepared: seconds from launch to the first update (results.json's
   throughput.first_update_s), and the peak resident memory of each rank (the kernel's high-water mark, VmHWM,
   read from /proc every 0.1 s while the ranks run).

No update is timed for throughput (throughput_warmup_steps covers every update), so no matmul-peak measurement runs
and the ranks' memory is the data path's and the model's alone. Timings need an idle machine: the load average is
recorded before and after each step.
"""
from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import psutil
import torch

from seqbench.common.io import atomic_write_text, check_folder
from seqbench.measure.peaks import device_name

SECOND_START = ["trainer=ddp", "trainer.accelerator=cpu", "trainer.devices=2", "threads=1", "trainer.precision=32-true",
                "trainer.max_steps=10", "measure.throughput_warmup_steps=10", "test=false",
                "trainer.limit_val_batches=0", "module.val_bleu=false", "logger=csv"]


def _hwm_mb(process: psutil.Process) -> float | None:
    """The process's peak resident memory so far (VmHWM), in MB; None once it has ended."""
    try:
        with open(f"/proc/{process.pid}/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def run_watched(command: list[str], env: dict | None = None, log: Path | None = None) -> dict:
    """Runs `command`, polling the peak memory of it and every process it starts; its wall time, exit status and
    each process's peak memory (by DDP rank where the process has one: LOCAL_RANK, rank 0 the launcher)."""
    start = time.perf_counter()
    with open(log or os.devnull, "w") as out:
        process = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT)
    root = psutil.Process(process.pid)
    peaks: dict[int, float] = {}
    ranks: dict[int, str] = {}
    images: dict[int, tuple] = {}  # what each process runs: a child seen between fork and exec is its parent's image
    while process.poll() is None:
        try:
            family = [root, *root.children(recursive=True)]
        except psutil.NoSuchProcess:
            family = []
        for member in family:
            try:
                image = (member.environ().get("LOCAL_RANK", ""), tuple(member.cmdline()))
            except psutil.Error:
                continue
            if images.get(member.pid) != image:  # (re)started as a new program: its rank and peak start afresh
                images[member.pid] = image
                ranks[member.pid] = "0" if member.pid == process.pid else image[0]
                peaks.pop(member.pid, None)
            peak = _hwm_mb(member)
            if peak is not None:
                peaks[member.pid] = max(peaks.get(member.pid, 0.0), peak)
        time.sleep(0.1)
    by_rank: dict[str, float] = {}  # a rank's own helpers (git, lscpu) inherit its LOCAL_RANK: the largest counts
    for pid, mb in peaks.items():
        if ranks[pid].isdigit():  # helpers started before the ranks exist are no rank's
            by_rank[ranks[pid]] = max(by_rank.get(ranks[pid], 0.0), round(mb, 1))
    return {"returncode": process.returncode, "wall_s": round(time.perf_counter() - start, 2),
            "peak_rss_mb": dict(sorted(by_rank.items()))}


def _load() -> float | None:
    return round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None


def _checked(step: str, result: dict, log: Path) -> dict:
    if result["returncode"] != 0:
        tail = log.read_text(errors="replace").strip().splitlines()[-1:] if log.exists() else []
        raise RuntimeError(f"{step} failed (exit {result['returncode']}): {' '.join(tail)}; see {log}")
    return result


def measure_size(pairs: int, work: Path, cache_dir: Path, vocab_size: int) -> dict:
    """The three steps at one corpus size (the corpus is generated once and kept in `work`)."""
    corpus = work / f"corpus-{pairs}"
    env = {**os.environ, "SEQBENCH_CACHE_DIR": str(cache_dir), "CI": "1"}  # no progress bars in the logs
    entry: dict = {"pairs": pairs}
    if not (corpus / "test.tsv").exists():  # test.tsv is written last: the others are of a generation cut short
        for split in ("train", "valid"):
            (corpus / f"{split}.tsv").unlink(missing_ok=True)
        log = work / f"generate-{pairs}.log"
        entry["generate"] = _checked("generate", run_watched(
            [sys.executable, "-m", "seqbench", "data", "generate", str(corpus), "--pairs", str(pairs)], env, log), log)
    overrides = ["data=files", "data.corpus.format=tsv", f"data.vocab_size={vocab_size}",
                 *(f"data.corpus.{split}={corpus / f'{split}.tsv'}" for split in ("train", "valid", "test"))]
    log = work / f"prepare-{pairs}.log"
    entry["load_before"] = _load()
    prepare = [sys.executable, "-m", "seqbench", "data", "prepare", *overrides, "--json"]
    entry["prepare"] = _checked("prepare", run_watched(prepare, env, log), log)
    summary = json.loads(log.read_text()[log.read_text().index("{"):])
    entry["store"] = {key: summary[key] for key in ("ids_type", "bytes", "tokens", "bytes_per_token", "splits")}
    run_dir = work / f"run-{pairs}"
    log = work / f"second-start-{pairs}.log"
    entry["load_before_second_start"] = _load()
    train = [sys.executable, "-m", "seqbench", "train", *overrides, *SECOND_START, f"hydra.run.dir={run_dir}"]
    entry["second_start"] = _checked("second start", run_watched(train, env, log), log)
    results = json.loads((run_dir / "results.json").read_text())
    entry["second_start"]["first_update_s"] = round(results["throughput"]["first_update_s"], 2)
    entry["second_start"]["pairs_per_rank_epoch"] = results["data"]["sizes"]["train"] // 2
    entry["seqbench_commit"] = results["versions"]["seqbench_commit"]
    entry["load_after"] = _load()
    return entry


def benchmark(sizes: list[int], work: Path, out: Path, vocab_size: int = 8000) -> dict:
    """Every size (smallest first) into `out`/scale.json; the cache is new, so the first prepare of each size
    builds everything. One line before any work where `work` or `out` cannot be written."""
    check_folder(work, "cache")
    check_folder(out, "scale.json")
    work.mkdir(parents=True, exist_ok=True)
    cache_dir = work / "cache"
    machine = {"cpu": device_name(torch.device("cpu")), "cores": os.cpu_count(), "python": platform.python_version(),
               "memory_gb": round(psutil.virtual_memory().total / 2**30, 1)}
    record = {"what": "seqbench data benchmark", "machine": machine,
              "command": "seqbench data benchmark --pairs " + " ".join(map(str, sizes)) + " --work WORK --out OUT",
              "second_start_overrides": SECOND_START, "vocab_size": vocab_size, "sizes": []}
    for pairs in sorted(sizes):
        record["sizes"].append(measure_size(pairs, work, cache_dir, vocab_size))
        atomic_write_text(out / "scale.json", json.dumps(record, indent=1) + "\n")  # each size kept as it ends
    return record
