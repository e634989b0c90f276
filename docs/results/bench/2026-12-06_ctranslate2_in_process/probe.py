"""Why is CTranslate2 slower inside the bench's (torch) process? One condition per process; prints one JSON line.
    python probe.py prepare VOCAB DIR     the bench's reference Transformer, converted, and its 200 sources
    python probe.py run DIR CONDITION     greedy decoding, forced to the bench's 23 tokens, median of 7 passes
Conditions (CTranslate2 always warmed up by one untimed pass first):
    ct2only          CTranslate2 alone, torch never imported
    torch_idle       torch imported and the seqbench model built (its weights initialised), no decoding
    torch_imported   as torch_idle, then one seqbench greedy pass before CTranslate2's passes
    after_torch      a seqbench greedy pass before each CTranslate2 pass, as the bench alternates them
    after_torch_sleep  the same with 0.5 s between the two
    torch_only       seqbench's passes alone, CTranslate2 never imported
Environment: OMP_WAIT_POLICY, LD_PRELOAD as run.sh sets them."""
import json
import os
import statistics
import sys
import time


def prepare(vocab, out):
    import torch

    from seqbench.decoding.ctranslate2 import convert, numbered_vocabulary
    from seqbench.measure.workload import build, decode_batches, generated_pairs
    from seqbench.measure.workload import setting as mk
    torch.set_num_threads(2)
    s = mk(vocab_size=vocab)
    model = build(s.models["transformer"], s.vocab_size, s.seed).eval()
    pairs = generated_pairs(s)
    batches = decode_batches(pairs, s)
    tokens = numbered_vocabulary(s.vocab_size)
    convert(model, tokens, tokens, f"{out}/model")
    torch.save(model.state_dict(), f"{out}/weights.pt")
    src = [[[tokens[i] for i in row[:int(m.sum())].tolist()] for row, m in zip(b["src"], b["src_mask"])]
           for b in batches]
    json.dump({"vocab": vocab, "batches": src, "decode_tokens": s.decode_tokens}, open(f"{out}/sources.json", "w"))

def run(out, condition, passes=7):
    info = json.load(open(f"{out}/sources.json"))
    want_torch = condition != "ct2only"
    if want_torch:
        import torch
        torch.set_num_threads(2)
        from seqbench.decoding.search import DecodingConfig, generate
        from seqbench.measure.workload import build, decode_batches, generated_pairs
        from seqbench.measure.workload import setting as mk
        s = mk(vocab_size=info["vocab"])
        model = build(s.models["transformer"], s.vocab_size, s.seed).eval()
        model.load_state_dict(torch.load(f"{out}/weights.pt"))
        tb = decode_batches(generated_pairs(s), s)
        n = info["decode_tokens"]
        cfg = DecodingConfig(beam_size=1, min_len=n, max_len=n)
        def torch_pass():
            t = time.perf_counter()
            with torch.no_grad():
                for b in tb:
                    generate(model, b["src"], b["src_mask"], cfg)
            return time.perf_counter() - t
    if condition == "torch_only":  # seqbench alone: is its own decoding slowed by CTranslate2 being loaded?
        torch_pass()
        ours = [torch_pass() for _ in range(passes)]
        sent = sum(len(b) for b in info["batches"])
        print(json.dumps({"condition": condition, "seqbench_sent_s": sent / statistics.median(ours)}))
        return
    import ctranslate2
    tr = ctranslate2.Translator(f"{out}/model", device="cpu", compute_type="float32", intra_threads=2, inter_threads=1)
    n = info["decode_tokens"]
    def ct2_pass():
        t = time.perf_counter()
        for b in info["batches"]:
            tr.translate_batch(b, beam_size=1, max_decoding_length=n, min_decoding_length=n, return_scores=False)
        return time.perf_counter() - t
    ct2_pass()  # warm-up
    ct2, ours = [], []
    if want_torch and condition != "torch_idle":
        torch_pass()
    for _ in range(passes):
        if condition in ("after_torch", "after_torch_sleep"):
            ours.append(torch_pass())
            if condition == "after_torch_sleep":
                time.sleep(0.5)
        ct2.append(ct2_pass())
    sent = sum(len(b) for b in info["batches"])
    print(json.dumps({"condition": condition, "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY"),
                      "preload": bool(os.environ.get("LD_PRELOAD")),
                      "ct2_sent_s": sent / statistics.median(ct2),
                      "seqbench_sent_s": sent / statistics.median(ours) if ours else None}))

if __name__ == "__main__":
    if sys.argv[1] == "prepare":
        prepare(int(sys.argv[2]), sys.argv[3])
    else:
        run(sys.argv[2], sys.argv[3])
