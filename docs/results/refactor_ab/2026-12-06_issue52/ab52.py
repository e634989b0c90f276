#!/usr/bin/env python
"""Interleaved A/B for issue 52's refactor: 68d3496 (before) vs HEAD (after), quickstart training 300 updates then the
test pass; training and decoding speed side by side, and whether the outputs are identical.
    BEFORE=... AFTER=... python ab52.py OUT 3        (ab52-3-rounds.json)
    BEFORE=... AFTER=... python ab52.py OUT 3 3      (3 more rounds after those: ab52-6-rounds.json)"""
import hashlib
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

# BEFORE and AFTER: checkouts of 68d3496 and of the commit measured (git worktree add); WORK: a scratch folder
versions = {"before": os.environ["BEFORE"], "after": os.environ["AFTER"]}
work = Path(os.environ.get("WORK", "ab-work")).resolve()
out = Path(sys.argv[1])
out.mkdir(parents=True, exist_ok=True)
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
args = ["trainer.max_steps=300", "threads=2"]
def run(version, name):
    env = {**os.environ, "PYTHONPATH": versions[version] + "/src", "SEQBENCH_CACHE_DIR": str(work / f"cache-{version}")}
    run_dir = work / "runs" / name
    subprocess.run(["rm", "-rf", str(run_dir)])
    subprocess.run([sys.executable, "train.py", *args, f"hydra.run.dir={run_dir}"], cwd=versions[version], env=env,
                   check=True, capture_output=True)
    r = json.loads((run_dir / "results.json").read_text())
    hyps = (run_dir / "hypotheses.test.txt").read_bytes()
    return {"version": version, "name": name, "commit": r["versions"]["seqbench_commit"],
            "target_tokens_per_s": r["throughput"]["target_tokens_per_s"],
            "greedy_sent_s": r["decoding"]["greedy"]["sentences_per_s"],
            "beam_sent_s": r["decoding"]["beam"]["sentences_per_s"],
            "load_average_max": r["throughput"]["load_average_max"],
            "valid_bleu": r["valid"]["bleu"], "test_bleu": r["test"]["bleu"],
            "hypotheses_sha256": hashlib.sha256(hyps).hexdigest()}
first = int(sys.argv[3]) if len(sys.argv) > 3 else 0  # a continuation: rounds first.., the caches already built
previous = json.loads((out / "ab52.json").read_text())["rounds"] if first else []
if not first:
    for version in versions:
        run(version, f"warmup-{version}")  # builds each version's cache
rows = list(previous)
for i in range(first, first + rounds):
    for version in (("before", "after") if i % 2 == 0 else ("after", "before")):
        rows.append(run(version, f"{version}-{i}"))
        print(rows[-1], flush=True)
def ratio(key):
    a = [r[key] for r in rows if r["version"] == "after"]
    b = [r[key] for r in rows if r["version"] == "before"]
    return {"ratio_of_medians": statistics.median(a) / statistics.median(b),
            "round_ratios": [x / y for x, y in zip(a, b)]}
summary = {"what": "issue 52's refactor: HEAD / 68d3496, interleaved, each from its own checkout and cache",
           "command": "python train.py " + " ".join(args), "rounds": rows,
           "training": ratio("target_tokens_per_s"), "greedy": ratio("greedy_sent_s"), "beam": ratio("beam_sent_s"),
           "identical_outputs": len({(r["valid_bleu"], r["test_bleu"], r["hypotheses_sha256"]) for r in rows}) == 1}
summary["continued_at_round"] = first or None
(out / "ab52.json").write_text(json.dumps(summary, indent=1) + "\n")
print(json.dumps({k: v for k, v in summary.items() if k != "rounds"}, indent=1))
