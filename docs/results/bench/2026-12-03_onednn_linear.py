"""Decoding with seqbench's linear layers through oneDNN (seqbench.models.linear) against F.linear only, and
CTranslate2 float32 beside them: the bench's reference Transformer (random weights), 200 generated sources,
hypotheses forced to 23 tokens, interleaved rounds in one process (a fresh translator per round: a live one slows
torch), medians of per-round ratios.

    python docs/results/bench/2026-12-03_onednn_linear.py THREADS VOCAB ROUNDS BEAMS   (e.g. 2 8000 5 5,1)
"""
import sys
import tempfile
import time
from dataclasses import replace

import torch

from seqbench.decoding.ctranslate2 import Engine, convert, numbered_vocabulary
from seqbench.decoding.search import DecodingConfig, generate
from seqbench.measure.workload import REFERENCE, build, decode_batches, generated_pairs
from seqbench.models import linear

threads, vocab, rounds, beams = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
torch.set_num_threads(threads)
setting = replace(REFERENCE, decode_sentences=200, vocab_size=vocab)
batches = decode_batches(generated_pairs(setting), setting)
model = build(setting.models["transformer"], vocab, 0).eval()
tokens = numbered_vocabulary(vocab)
folder = tempfile.mkdtemp()
convert(model, tokens, tokens, f"{folder}/model")
sources = [[row[mask].tolist() for row, mask in zip(b["src"], b["src_mask"])] for b in batches]


def seqbench(cfg, onednn):
    linear.ENABLED = onednn
    return [generate(model, b["src"], b["src_mask"], cfg) for b in batches]


def ctranslate2(cfg):
    engine = Engine(f"{folder}/model", tokens, tokens, compute_type="float32", threads=threads)
    engine.generate(sources[0], cfg)  # warm-up, untimed
    start = time.perf_counter()
    out = [engine.generate(x, cfg) for x in sources]
    return out, time.perf_counter() - start


print(f"torch {torch.__version__}, {threads} threads, vocabulary {vocab}, oneDNN linear available: "
      f"{linear.ENABLED}")
for beam in map(int, beams.split(",")):
    cfg = DecodingConfig(beam_size=beam, min_len=23, max_len=23)
    times, out = {"onednn": [], "f.linear": [], "ctranslate2": []}, {}
    for round_ in range(rounds + 1):  # round 0 warms up
        for name in ("onednn", "f.linear"):
            start = time.perf_counter()
            out[name] = seqbench(cfg, name == "onednn")
            if round_:
                times[name].append(time.perf_counter() - start)
        out["ctranslate2"], seconds = ctranslate2(cfg)
        if round_:
            times["ctranslate2"].append(seconds)
    rate = {name: 200 / sorted(t)[rounds // 2] for name, t in times.items()}
    for a, b in (("onednn", "f.linear"), ("onednn", "ctranslate2"), ("f.linear", "ctranslate2")):
        r = sorted(y / x for x, y in zip(times[a], times[b]))  # the speed of a over b, round by round
        same = sum(x == y for ba, bb in zip(out[a], out[b]) for x, y in zip(ba, bb))
        print(f"beam {beam}: {a} {rate[a]:.1f} vs {b} {rate[b]:.1f} sentences/s, per-round speed ratio median "
              f"{r[rounds // 2]:.2f} (range {r[0]:.2f}-{r[-1]:.2f}), same hypotheses {same}/200")
