"""Per-op profile of seqbench's greedy and beam-5 decoding of the bench's reference Transformer (forced 23 tokens)."""
import sys
import time

import torch
from torch.profiler import ProfilerActivity, profile

from seqbench.decoding.search import DecodingConfig, generate
from seqbench.measure.workload import build, decode_batches, generated_pairs
from seqbench.measure.workload import setting as mk

torch.set_num_threads(2)
vocab, beam = int(sys.argv[1]), int(sys.argv[2])
s = mk(vocab_size=vocab)
model = build(s.models["transformer"], s.vocab_size, s.seed).eval()
tb = decode_batches(generated_pairs(s), s)
n = s.decode_tokens
cfg = DecodingConfig(beam_size=beam, min_len=n, max_len=n, length_penalty=0.6 if beam > 1 else 1.0)
def one():
    with torch.no_grad():
        for b in tb:
            generate(model, b["src"], b["src_mask"], cfg)
one()
t = time.perf_counter()
one()
wall = time.perf_counter() - t
with profile(activities=[ProfilerActivity.CPU]) as prof:
    one()
print(f"vocab {vocab} beam {beam}: wall {wall:.3f} s, {200/wall:.1f} sent/s, batches {len(tb)}")
ka = prof.key_averages()
total_self = sum(e.self_cpu_time_total for e in ka) / 1e6
print(f"sum of op self time {total_self:.3f} s (profiled pass; profiler overhead included)")
print(ka.table(sort_by="self_cpu_time_total", row_limit=22, max_name_column_width=40))
