"""What a finished run prints: its headline numbers as one table (on stdout and in the run's log, train.log), whether
its training stopped short of its budget, its run directory, and last one line of JSON for scripts (with quiet=true
the only line on stdout)."""
from __future__ import annotations

import json
import logging
import os
from pathlib import Path

from seqbench.common.logs import quiet, show
from seqbench.measure import peaks

log = logging.getLogger("seqbench.training.run")  # the run's logger: the summary is the run's last word


def stopped_short(results: dict) -> str | None:
    """"stopped by the time guard at 8 of 20 updates (trainer.max_time=00:00:20:00)" when the time guard ended
    training before its budget (status "cut_short"), else None."""
    if results.get("status") != "cut_short":
        return None
    train = results["train"]
    budget = f" of {train['max_steps']:,} updates" if (train.get("max_steps") or 0) > 0 else " updates"
    max_time = ((results.get("config") or {}).get("trainer") or {}).get("max_time")
    return f"stopped by the time guard at {train['steps']:,}{budget} (trainer.max_time={max_time})"


def print_summary(results: dict, run_dir: Path) -> None:
    """The table (stdout and log), the cut-short warning (console and log), the run directory and the JSON line."""
    show(log, _table(results), width=max(100, int(os.environ.get("COLUMNS", 100))))
    if (short := stopped_short(results)) is not None:
        log.warning("%s: results.json status \"cut_short\"; rerun with hydra.run.dir=%s and a longer trainer.max_time "
                    "to finish its updates, or make the time the budget with budget=time", short, run_dir)
    log.info("run directory: %s", run_dir.resolve(), extra={"console": False})
    if not quiet():
        print(f"run directory: {run_dir.resolve()}", flush=True)  # outside the table: a long path is never cut
    print(json.dumps(summary_line(results, run_dir)), flush=True)


def summary_line(results: dict, run_dir: Path) -> dict:
    """The machine-readable summary, one JSON object: status, scores, updates, what stopped training, the run's
    directory and its record."""
    train = results.get("train", {})
    return {"status": results.get("status"), "model": results["model"]["name"],
            "test_bleu": results.get("test", {}).get("bleu"), "valid_bleu": results.get("valid", {}).get("bleu"),
            "steps": train.get("steps"), "max_steps": train.get("max_steps"), "stopped_by": train.get("stopped_by"),
            "target_tokens_per_s": results["throughput"].get("target_tokens_per_s"),
            "wall_time_s": round(results["wall_time_s"], 1), "run_dir": str(run_dir.resolve()),
            "results": str((run_dir / "results.json").resolve())}


def _table(results: dict):
    from rich.table import Table

    table = Table(title=f"seqbench: {results['model']['name']}", show_header=False)
    test = results.get("test", {})
    table.add_row("test BLEU", f"{test.get('bleu', float('nan')):.2f}")
    table.add_row("sacreBLEU signature", test.get("bleu_signature", "-"))
    table.add_row("valid BLEU", f"{results.get('valid', {}).get('bleu', float('nan')):.2f}")
    table.add_row("parameters", f"{results['parameters']:,}")
    if (short := stopped_short(results)) is not None:
        table.add_row("training", f"[bold]{short}[/bold]")
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
    return table
