#!/usr/bin/env python
"""Interleaved A/B of seqbench's decoding speed (issue 55 item 3): two checkouts' decoding of the bench's reference
Transformer, each in a worker process of its own (worker.py), and CTranslate2 float32 in its own process on the same
converted weights and sources, timed pass by pass in turn, round after round; whether the hypotheses are identical.
    A=checkout/src B=checkout/src python ab.py VOCAB ROUNDS OUT.json [THREADS]
Ratios are medians of per-round ratios (B over A, B over CTranslate2) with their 95% interval, by the bench's rule
(seqbench.measure.speed.median_ratio); `seqbench report --headline` recomputes them from the rounds."""
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import torch

from seqbench.decoding.search import DecodingConfig
from seqbench.measure.bench import _engine_processes, _source_tokens, engine_pass
from seqbench.measure.speed import median_ratio
from seqbench.measure.workload import build, decode_batches, generated_pairs
from seqbench.measure.workload import setting as make_setting

vocab, rounds, out = int(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3])
threads = int(sys.argv[4]) if len(sys.argv) > 4 else 2
torch.set_num_threads(threads)
here = Path(__file__).resolve().parent


def worker(src):
    p = subprocess.Popen([sys.executable, str(here / "worker.py"), str(vocab), str(threads)], text=True,
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, env={**os.environ, "PYTHONPATH": src})
    assert json.loads(p.stdout.readline())["ready"]
    return p


def ask(p, kind):
    p.stdin.write(kind + "\n")
    p.stdin.flush()
    return json.loads(p.stdout.readline())


def interval(ratios):  # the bench's rule: seqbench.measure.speed.median_ratio
    ratio = median_ratio(ratios)
    return {"median": ratio["median"], "ci95": ratio["interval"]}


s = make_setting(vocab_size=vocab)
model = build(s.models["transformer"], s.vocab_size, s.seed).eval()
batches = decode_batches(generated_pairs(s), s)
sources = _source_tokens(batches, s)
n = s.decode_tokens
cfgs = {"greedy": DecodingConfig(beam_size=1, min_len=n, max_len=n),
        "beam": DecodingConfig(beam_size=s.beam_size, min_len=n, max_len=n)}
workers = {"A": worker(os.environ["A"]), "B": worker(os.environ["B"])}
rows = []
with tempfile.TemporaryDirectory() as folder, contextlib.ExitStack() as stack:
    ct2 = _engine_processes(model, s, torch.device("cpu"), folder, stack)["float32"]
    for cfg in cfgs.values():
        engine_pass(ct2, sources, cfg, 1)  # warm-up
    for r in range(rounds):
        for kind, cfg in cfgs.items():
            order = ("A", "B") if r % 2 == 0 else ("B", "A")
            row = {"round": r, "kind": kind}
            for name in order:
                row[name] = ask(workers[name], kind)
            row["ct2_seconds"] = engine_pass(ct2, sources, cfg, 0)["seconds"]
            rows.append(row)
            print(kind, r, f"A {200 / row['A']['seconds']:.1f} B {200 / row['B']['seconds']:.1f} "
                  f"ct2 {200 / row['ct2_seconds']:.1f} sent/s, same={row['A']['sha256'] == row['B']['sha256']}",
                  flush=True)
summary = {}
for kind in cfgs:
    kr = [r for r in rows if r["kind"] == kind]
    summary[kind] = {
        "identical_hypotheses": all(r["A"]["sha256"] == r["B"]["sha256"] for r in kr),
        "B_over_A": interval([r["A"]["seconds"] / r["B"]["seconds"] for r in kr]),
        "A_over_ct2": interval([r["ct2_seconds"] / r["A"]["seconds"] for r in kr]),
        "B_over_ct2": interval([r["ct2_seconds"] / r["B"]["seconds"] for r in kr]),
        "sentences_per_s": {k: statistics.median(200 / (r[k]["seconds"] if k != "ct2" else r["ct2_seconds"])
                                                 for r in kr) for k in ("A", "B", "ct2")}}
    print(kind, json.dumps(summary[kind]))
def commit(src):  # the checkout's commit, "+" when its working tree differs from it
    git = ["git", "-C", src]
    head = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run([*git, "diff", "--quiet", "HEAD", "--", "."]).returncode != 0
    return head + ("+" if dirty else "")


out.write_text(json.dumps({"vocab": vocab, "threads": threads, "A": commit(os.environ["A"]),
                           "B": commit(os.environ["B"]), "summary": summary, "rounds": rows}, indent=1) + "\n")
