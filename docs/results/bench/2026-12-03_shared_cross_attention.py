"""Prototype, not seqbench's code: beam search's cross-attention over the unexpanded encoder output (the k beams of a
sentence as k queries of one attention call) against the expanded keys/values; interleaved rounds, the same weights.
Run from the repo root: python docs/results/bench/2026-12-03_shared_cross_attention.py THREADS ROUNDS VOCAB
(measured 2026-12-03 at 69d1ce7's decoder, background jobs paused: output in 2026-12-03_shared_cross_attention.txt)."""
import sys
import time
from dataclasses import replace

import torch
import torch.nn.functional as F

import seqbench.models.transformer as T
from seqbench.decoding.search import DecodingConfig, generate
from seqbench.measure.workload import REFERENCE, build, decode_batches, generated_pairs

threads, rounds, vocab = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
torch.set_num_threads(threads)
s = replace(REFERENCE, decode_sentences=200, vocab_size=vocab)
batches = decode_batches(generated_pairs(s), s)
m = build(s.models["transformer"], s.vocab_size, 0).eval()
plain_reorder, plain_forward = T.Transformer.reorder_encoder_out, T.MultiHeadAttention.forward

def lazy_reorder(self, encoder_out, indices):
    rows = encoder_out["mask"].size(0)
    expansion = torch.arange(rows).repeat_interleave(max(1, indices.numel() // rows))
    if indices.numel() % rows == 0 and torch.equal(indices, expansion):
        return encoder_out  # the beam expansion: keep one copy per sentence
    raise RuntimeError("prototype: sentences leaving the batch not handled (use a forced length)")

def shared_forward(self, x, k, v, mask=None, causal=False, return_attention=False, offset=0):
    if x.size(0) == k.size(0) or return_attention:
        return plain_forward(self, x, k, v, mask, causal, return_attention, offset)
    batch, beam = k.size(0), x.size(0) // k.size(0)
    q = self._split(self.query(x))                                    # [B*k,H,1,Dh]
    q = q.view(batch, beam, self.n_heads, self.d_head).transpose(1, 2)  # [B,H,k,Dh]
    y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)        # [B,H,k,Dh]
    y = y.transpose(1, 2).reshape(batch * beam, 1, -1)
    return self.out(y), None

cfg = DecodingConfig(beam_size=5, min_len=23, max_len=23)
times, outs = {"expanded": [], "shared": []}, {}
for r in range(rounds + 1):
    for name in times:
        T.Transformer.reorder_encoder_out = plain_reorder if name == "expanded" else lazy_reorder
        T.MultiHeadAttention.forward = plain_forward if name == "expanded" else shared_forward
        t = time.perf_counter()
        outs[name] = [generate(m, b["src"], b["src_mask"], cfg) for b in batches]
        if r:
            times[name].append(time.perf_counter() - t)
T.Transformer.reorder_encoder_out, T.MultiHeadAttention.forward = plain_reorder, plain_forward
flat = lambda o: [h for batch in o for h in batch]
same = sum(a == b for a, b in zip(flat(outs["expanded"]), flat(outs["shared"])))
n = len(flat(outs["expanded"]))
ratios = sorted(a / b for a, b in zip(times["expanded"], times["shared"]))
print(f"beam 5, vocab {vocab}, {threads} threads: identical hypotheses {same}/{n}; sentences/s expanded "
      f"{n / sorted(times['expanded'])[rounds // 2]:.1f}, shared {n / sorted(times['shared'])[rounds // 2]:.1f}; "
      f"per-round speed-up {[round(x, 2) for x in ratios]}")
