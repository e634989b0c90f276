"""What a completed run prints: its headline numbers as one table, and its run directory."""
from __future__ import annotations

import os
from pathlib import Path

from seqbench.measure import peaks


def print_summary(results: dict, run_dir: Path) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"seqbench: {results['model']['name']}", show_header=False)
    test = results.get("test", {})
    table.add_row("test BLEU", f"{test.get('bleu', float('nan')):.2f}")
    table.add_row("sacreBLEU signature", test.get("bleu_signature", "-"))
    table.add_row("valid BLEU", f"{results.get('valid', {}).get('bleu', float('nan')):.2f}")
    table.add_row("parameters", f"{results['parameters']:,}")
    tput = results["throughput"]
    if tput.get("measured_steps"):
        table.add_row("train tokens/s", f"{tput['target_tokens_per_s']:,.0f} target (non-pad), "
                                        f"{tput['src_tgt_tokens_per_s']:,.0f} source+target")
    for kind, speed in results.get("decoding", {}).items():
        table.add_row(f"decode ({kind}, beam {speed['beam_size']})",
                      f"{speed['sentences_per_s']:,.1f} sentences/s, {speed['target_tokens_per_s']:,.0f} tokens/s")
    if results.get("flops"):
        table.add_row("MFU", peaks.mfu_text(results["flops"]))
    table.add_row("peak memory", f"{results['peak_memory_mb']:,.0f} MB")
    table.add_row("wall time", f"{results['wall_time_s']:.0f} s")
    Console(width=max(100, int(os.environ.get("COLUMNS", 100)))).print(table)
    print(f"run directory: {run_dir.resolve()}", flush=True)  # outside the table: a long path is never cut
