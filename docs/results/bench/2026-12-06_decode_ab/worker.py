"""One seqbench checkout's decoding of the bench's reference Transformer, in a process of its own (PYTHONPATH picks
the checkout): reads "greedy" or "beam" per line, decodes the bench's 200 sources once (forced to 23 tokens, the
first pass of each kind untimed), answers {"seconds": S, "sha256": of the hypotheses}."""
import hashlib
import json
import sys
import time

import torch

from seqbench.decoding.search import DecodingConfig, generate
from seqbench.measure.workload import build, decode_batches, generated_pairs
from seqbench.measure.workload import setting as make_setting

torch.set_num_threads(int(sys.argv[2]))
s = make_setting(vocab_size=int(sys.argv[1]))
model = build(s.models["transformer"], s.vocab_size, s.seed).eval()
batches = decode_batches(generated_pairs(s), s)
n = s.decode_tokens
configs = {"greedy": DecodingConfig(beam_size=1, min_len=n, max_len=n),
           "beam": DecodingConfig(beam_size=s.beam_size, min_len=n, max_len=n)}


def one(cfg):
    with torch.no_grad():
        return [h for b in batches for h in generate(model, b["src"], b["src_mask"], cfg)]


for cfg in configs.values():
    one(cfg)  # warm-up
print(json.dumps({"ready": True}), flush=True)
for line in sys.stdin:
    start = time.perf_counter()
    hyps = one(configs[line.strip()])
    seconds = time.perf_counter() - start
    print(json.dumps({"seconds": seconds, "sha256": hashlib.sha256(json.dumps(hyps).encode()).hexdigest()}),
          flush=True)
