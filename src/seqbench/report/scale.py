"""The data path's cost by corpus size, from a `seqbench data benchmark` record (seqbench.measure.scale): the table
of a `<!-- headline: DIR --scale -->` block."""
from __future__ import annotations

import json
from pathlib import Path

from seqbench.common.errors import InputError
from seqbench.report.markdown import markdown_rows


def _record(directory: Path) -> dict:
    path = Path(directory) / "scale.json"
    if not path.is_file():
        raise InputError(f"{directory}: no scale.json (written by `seqbench data benchmark`)")
    return json.loads(path.read_text())


def _ranks(peaks: dict) -> str:
    return " / ".join(f"{peaks[rank]:,.0f}" for rank in sorted(peaks, key=int))


def scale_headline(directory: str | Path, shown: str | None = None) -> str:
    """One row per corpus size: preparing (time, peak memory, the store's size) and the second start under 2-process
    DDP (time to the first update, each rank's peak memory); then the growth from the smallest to the largest size."""
    record = _record(Path(directory))
    sizes = record["sizes"]
    header = ["training pairs", "prepare: time", "prepare: peak memory (MB)", "store (MiB)", "bytes per token",
              "second start: time to first update", "second start: peak memory per rank (MB)"]
    rows = [[f"{s['pairs']:,}", f"{s['prepare']['wall_s'] / 60:.1f} min",
             f"{max(s['prepare']['peak_rss_mb'].values()):,.0f}", f"{s['store']['bytes'] / 2**20:,.1f}",
             f"{s['store']['bytes_per_token']:.2f}", f"{s['second_start']['first_update_s']:.1f} s",
             _ranks(s["second_start"]["peak_rss_mb"])] for s in sizes]
    first, last = sizes[0]["second_start"]["peak_rss_mb"], sizes[-1]["second_start"]["peak_rss_mb"]
    growth = " / ".join(f"{last[rank] - first[rank]:+,.0f}" for rank in sorted(first, key=int) if rank in last)
    loads = sorted(v for s in sizes for k, v in s.items() if k.startswith("load_") and v is not None)
    machine = record["machine"]
    footer = (f"Peak memory per rank from {sizes[0]['pairs']:,} to {sizes[-1]['pairs']:,} pairs: {growth} MB "
              f"(rank 0 / rank 1). {machine['cpu']}, {machine['cores']} cores; 1-minute load average "
              f"{loads[0]:.1f}-{loads[-1]:.1f} at the steps' starts and end (above 2, other work shared the machine "
              f"and the times are upper bounds). Vocabulary {record['vocab_size']:,} per side, ids "
              f"{sizes[-1]['store']['ids_type']}; second start: `{' '.join(record['second_start_overrides'])}`. "
              f"Command: `{record['command']}`; record: `{shown or directory}`.")
    return "\n".join([markdown_rows(header, rows), "", footer, *_throughput(Path(directory))]) + "\n"


def _throughput(directory: Path) -> list[str]:
    """The record's interleaved A/B runs of quickstart training throughput (ab*.json beside scale.json), each one."""
    lines = []
    for path in sorted(directory.glob("ab*.json")):
        ab = json.loads(path.read_text())
        rounds = ", ".join(f"{ratio:.3f}" for ratio in ab["round_ratios"])
        loads = [r["load_average_max"] for r in ab["rounds"] if r.get("load_average_max") is not None]
        loading = (f" Loading alone ({ab['loader_command']}): {ab['loader_ms_per_batch']['new']:.2f} ms a batch "
                   f"against {ab['loader_ms_per_batch']['old']:.2f} ms." if "loader_ms_per_batch" in ab else "")
        lines += ["", f"`{path.name}`: {ab['what']} (target tokens/s after warm-up, in one run): ratio of medians "
                      f"{ab['ratio_of_medians']:.3f} over {len(ab['round_ratios'])} rounds (each round's ratio: "
                      f"{rounds}; highest 1-minute load average while timed {max(loads):.1f}). Command: "
                      f"`{ab['command']}`{' (' + ab['command_note'] + ')' if 'command_note' in ab else ''}.{loading}"]
    return lines
