"""Per-op profile of one family's training step at the bench's reference shape (8,000 words, 3,000-token batches)."""
import sys
import time

import torch
from torch.profiler import ProfilerActivity, profile

from seqbench.measure.workload import REFERENCE, build, generated_pairs, make_batches
from seqbench.models.losses import label_smoothed_nll

torch.set_num_threads(2)
family = sys.argv[1]
s = REFERENCE
model = build(s.models[family], s.vocab_size, s.seed).train()
batches = make_batches(generated_pairs(s), s.max_tokens, s.seed)[:8]
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
def step(b):
    logits = model(b["src"], b["src_mask"], b["tgt_in"])
    loss = label_smoothed_nll(logits, b["tgt_out"], 0.1)[0]
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
for b in batches[:3]:
    step(b)
t = time.perf_counter()
for b in batches[3:6]:
    step(b)
wall = (time.perf_counter() - t) / 3
with profile(activities=[ProfilerActivity.CPU]) as prof:
    for b in batches[6:8]:
        step(b)
print(f"{family}: {wall * 1000:.0f} ms a step (unprofiled, mean of 3)")
print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=18, max_name_column_width=44))
