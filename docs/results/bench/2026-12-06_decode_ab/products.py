#!/usr/bin/env python
"""The decode step's operators alone (2 threads, medians of 60 calls, microseconds): linear products through F.linear
(MKL), oneDNN with the plain weight, and oneDNN with the weight in its own layout (seqbench.models.linear.packed),
with their GFLOP/s; and single-query attention over a cache's 25-position prefix read in place (a strided view of a
32-position buffer), from a contiguous copy, and over the whole buffer with a mask.
    python products.py > products.txt"""
import time

import torch
import torch.nn.functional as F

torch.set_num_threads(2)
torch.manual_seed(0)


def micros(fn, *args, calls=60):
    for _ in range(5):
        fn(*args)
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - start)
    return sorted(times)[calls // 2] * 1e6


print("| rows | in -> out | F.linear | oneDNN | oneDNN, packed | packed / oneDNN | packed GFLOP/s |")
print("|---|---|---|---|---|---|---|")
with torch.inference_mode():
    for rows in (64, 120, 320):
        for n_in, n_out in ((256, 256), (256, 512), (256, 1024), (1024, 256), (256, 8000)):
            x, w, b = torch.randn(rows, n_in), torch.randn(n_out, n_in) * 0.05, torch.randn(n_out)
            packed = torch.ops.mkldnn._reorder_linear_weight(w, None)
            plain = micros(F.linear, x, w, b)
            onednn = micros(torch.ops.mkldnn._linear_pointwise, x, w, b, "none", [], "")
            fast = micros(torch.ops.mkldnn._linear_pointwise, x, packed, b, "none", [], "")
            print(f"| {rows} | {n_in} -> {n_out} | {plain:.0f} | {onednn:.0f} | {fast:.0f} | {onednn / fast:.2f}x | "
                  f"{2 * rows * n_in * n_out / fast / 1e3:.0f} |")
    print()
    print("| heads x rows | prefix read in place | contiguous copy first | whole buffer, masked |")
    print("|---|---|---|---|")
    for rows in (480, 2400):  # 120 sentences x 4 heads; x 5 beams
        q = torch.randn(rows, 1, 64)
        buffer = torch.zeros(rows, 32, 64)
        buffer[:, :25] = torch.randn(rows, 25, 64)
        mask = torch.arange(32) < 25

        def in_place(q, buffer):
            k = buffer[:, :25]
            return torch.bmm(torch.bmm(q, k.transpose(1, 2)).softmax(-1), k)

        def copied(q, buffer):
            k = buffer[:, :25].contiguous()
            return torch.bmm(torch.bmm(q, k.transpose(1, 2)).softmax(-1), k)

        def masked(q, buffer, mask):
            return torch.bmm(torch.bmm(q, buffer.transpose(1, 2)).masked_fill(~mask, float("-inf")).softmax(-1),
                             buffer)

        assert torch.allclose(in_place(q, buffer), masked(q, buffer, mask), atol=1e-5)
        print(f"| {rows} | {micros(in_place, q, buffer):.0f} | {micros(copied, q, buffer):.0f} | "
              f"{micros(masked, q, buffer, mask):.0f} |")
