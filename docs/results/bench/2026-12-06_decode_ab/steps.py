#!/usr/bin/env python
"""Where CTranslate2's decoding lead lies: the encoder or the decoder's steps. Greedy decoding of the bench's reference
Transformer on its 200 sources forced to 1, 2 and 23 tokens, by seqbench and by CTranslate2 float32 (the same
converted weights), each in a process of its own, medians of 7 passes; seqbench's encoder alone too. A decoder step
costs (time at 23 tokens - time at 2) / 21; the encoder costs about the time at 1 token less one step.
    python steps.py VOCAB        (prints steps_vocab{VOCAB}.txt's table; 2 threads)"""
import json
import subprocess
import sys
import tempfile
import time

LENGTHS = (1, 2, 23)


def median_ms(fn, passes=7):
    fn()
    times = []
    for _ in range(passes):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return sorted(times)[passes // 2] * 1e3


def prepare(vocab, folder):
    from seqbench.decoding.ctranslate2 import convert, numbered_vocabulary
    from seqbench.measure.bench import _source_tokens
    from seqbench.measure.workload import build, decode_batches, generated_pairs
    from seqbench.measure.workload import setting as make_setting

    s = make_setting(vocab_size=vocab)
    model = build(s.models["transformer"], s.vocab_size, s.seed).eval()
    tokens = numbered_vocabulary(s.vocab_size)
    convert(model, tokens, tokens, f"{folder}/model")
    with open(f"{folder}/sources.json", "w") as f:
        json.dump(_source_tokens(decode_batches(generated_pairs(s), s), s), f)


def ctranslate2_times(folder):
    import ctranslate2  # this process imports no torch

    translator = ctranslate2.Translator(f"{folder}/model", device="cpu", intra_threads=2, inter_threads=1)
    with open(f"{folder}/sources.json") as f:
        sources = json.load(f)
    def run(n):
        for batch in sources:
            translator.translate_batch(batch, beam_size=1, max_decoding_length=n, min_decoding_length=n)
    return {n: median_ms(lambda n=n: run(n)) for n in LENGTHS}


def seqbench_times(vocab):
    import torch

    from seqbench.decoding.search import DecodingConfig, generate
    from seqbench.measure.workload import build, decode_batches, generated_pairs
    from seqbench.measure.workload import setting as make_setting

    torch.set_num_threads(2)
    s = make_setting(vocab_size=vocab)
    model = build(s.models["transformer"], s.vocab_size, s.seed).eval()
    batches = decode_batches(generated_pairs(s), s)
    def run(n):
        with torch.no_grad():
            for b in batches:
                generate(model, b["src"], b["src_mask"], DecodingConfig(beam_size=1, min_len=n, max_len=n))
    def encode():
        with torch.no_grad():
            for b in batches:
                model.encode(b["src"], b["src_mask"])
    return {**{n: median_ms(lambda n=n: run(n)) for n in LENGTHS}, "encoder": median_ms(encode)}


if __name__ == "__main__":
    if sys.argv[1] in ("ctranslate2", "seqbench"):  # a worker: one engine, its own process
        times = ctranslate2_times(sys.argv[2]) if sys.argv[1] == "ctranslate2" else seqbench_times(int(sys.argv[2]))
        print(json.dumps(times))
        sys.exit()
    vocab = int(sys.argv[1])
    with tempfile.TemporaryDirectory() as folder:
        prepare(vocab, folder)
        rows = {}
        for round_ in range(3):  # alternating, so a drift of the host falls on both
            for engine in (("seqbench", "ctranslate2") if round_ % 2 == 0 else ("ctranslate2", "seqbench")):
                arg = str(vocab) if engine == "seqbench" else folder
                out = subprocess.run([sys.executable, __file__, engine, arg], capture_output=True, text=True,
                                     check=True).stdout
                rows.setdefault(engine, []).append(json.loads(out.strip().splitlines()[-1]))
    print(f"vocabulary {vocab}, 200 sources in {3} rounds (each engine in a process of its own), medians of rounds, ms")
    print("| engine | 1 token | 2 tokens | 23 tokens | per step (23 - 2) / 21 | encoder alone |")
    print("|---|---|---|---|---|---|")
    for engine, times in rows.items():
        med = {key: sorted(t[key] for t in times)[1] for key in times[0]}
        step = (med["23"] - med["2"]) / 21
        print(f"| {engine} | {med['1']:.1f} | {med['2']:.1f} | {med['23']:.1f} | {step:.2f} | "
              f"{med['encoder']:.1f} |" if "encoder" in med else
              f"| {engine} | {med['1']:.1f} | {med['2']:.1f} | {med['23']:.1f} | {step:.2f} | - |")
