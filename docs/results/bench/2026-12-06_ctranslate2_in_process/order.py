"""CTranslate2 greedy decoding speed by what the process loaded first:
`python order.py DIR ct2_first|torch_first[_threads|_matmul]|ct2_only`."""
import json
import statistics
import sys
import time

out, order = sys.argv[1], sys.argv[2]
if order.startswith("torch_first"):
    import torch  # noqa: F401
    if order == "torch_first_threads":
        torch.set_num_threads(2)
    if order == "torch_first_matmul":  # torch's OpenMP team created by a parallel op
        (torch.randn(512, 512) @ torch.randn(512, 512)).sum()
import ctranslate2  # noqa: E402 - after torch or not, as the condition says

info = json.load(open(f"{out}/sources.json"))
tr = ctranslate2.Translator(f"{out}/model", intra_threads=2, inter_threads=1)
n = info["decode_tokens"]
def one():
    t = time.perf_counter()
    for b in info["batches"]:
        tr.translate_batch(b, beam_size=1, max_decoding_length=n, min_decoding_length=n)
    return time.perf_counter() - t
one()  # warm-up: CTranslate2's first call also binds its OpenMP symbols
if order == "ct2_first":
    import torch  # noqa: F401,F811
print(json.dumps({"vocab": info["vocab"], "order": order,
                  "ct2_sent_s": sum(map(len, info["batches"])) / statistics.median(one() for _ in range(7))}))
