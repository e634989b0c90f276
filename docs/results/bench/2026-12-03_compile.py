# The torch.compile measurement of docs/speed.md: greedy decoding of 100 sentences of exactly 23 tokens, eager against
# the compiled decode step (dynamic shapes), eager measured again after it to show the host's drift.
# Run from the repo root with the project installed: python docs/results/bench/2026-12-03_compile.py
# Written against the decoding interface of its day (commit 5160369: decode_step, since folded into decode).
import time
from dataclasses import replace

import torch

from seqbench.decoding.search import DecodingConfig
from seqbench.measure.speed import decode_speed
from seqbench.measure.workload import REFERENCE, build, decode_batches, generated_pairs

torch.set_num_threads(2)
s = replace(REFERENCE, decode_sentences=100)
pairs = generated_pairs(s)
batches = decode_batches(pairs, s)
m = build(s.models["transformer"], s.vocab_size, 0).eval()
exact = DecodingConfig(beam_size=1, min_len=23, max_len=23)
dev = torch.device("cpu")
eager = decode_speed(m, batches, exact, dev, repeats=3)
t=time.perf_counter()
m.decode_step = torch.compile(m.decode_step, dynamic=True)
try:
    warm = decode_speed(m, batches, exact, dev, repeats=1)
    print("compile+first pass s", time.perf_counter()-t)
    comp = decode_speed(m, batches, exact, dev, repeats=3)
    print("eager", eager["sentences_per_s"], eager["spread"], "compiled", comp["sentences_per_s"], comp["spread"])
    eager2 = decode_speed(build(s.models["transformer"], s.vocab_size, 0).eval(), batches, exact, dev, repeats=3)
    print("eager again", eager2["sentences_per_s"])
except Exception as e:
    print("compile failed:", type(e).__name__, str(e)[:300])
