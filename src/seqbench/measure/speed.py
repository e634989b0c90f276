"""Clocks and decoding speed: `clock` reads the time after the device has finished its queued work (the one clock of
the run's throughput, the decode timings and the bench); `decode_speed` gives sentences/s and target tokens/s of
greedy or beam search over fixed batches, warm-up batches decoded first and not timed."""
from __future__ import annotations

import time
from contextlib import AbstractContextManager, nullcontext
from typing import Callable

import torch

from seqbench.common.subset import fixed_subset
from seqbench.decoding.search import DecodingConfig, generate
from seqbench.models.interface import Seq2Seq


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def clock(device: torch.device) -> float:
    """time.perf_counter() after the device has finished its queued work."""
    synchronize(device)
    return time.perf_counter()


MAX_SPREAD = 0.15  # timings whose interquartile range exceeds this share of their median are too unsteady to compare


def steadiness(values: list[float]) -> dict:
    """The median of repeated timings (per-window rates, or per-round ratios) with their spread, the interquartile
    range over the median (robust to one window caught by a burst of other work: a shared host's speed was seen to
    halve for seconds), and whether they are steady enough to be compared (spread <= MAX_SPREAD)."""
    import statistics

    median = statistics.median(values)
    q1, _, q3 = statistics.quantiles(values, n=4, method="inclusive") if len(values) > 1 else (median,) * 3
    spread = (q3 - q1) / median if median > 0 else float("inf")
    return {"median": median, "spread": spread, "steady": spread <= MAX_SPREAD, "windows": len(values)}


RATIO_CONFIDENCE = 0.95
MAX_INTERVAL = 0.2  # a ratio is given when the RATIO_CONFIDENCE interval of its median spans at most 20% of it


def median_interval(values: list[float]) -> tuple[float, list[float] | None]:
    """The median of repeated measurements (per-round timings or ratios) and its distribution-free RATIO_CONFIDENCE
    interval from order statistics (scipy.stats.quantile_test); None as the interval where too few values give
    one (fewer than 6 for 95%)."""
    import math
    import statistics

    from scipy.stats import quantile_test

    median = statistics.median(values)
    ci = quantile_test(values, q=median, p=0.5).confidence_interval(RATIO_CONFIDENCE)
    return median, [float(ci.low), float(ci.high)] if math.isfinite(ci.low) and math.isfinite(ci.high) else None


def median_ratio(ratios: list[float]) -> dict:
    """The median of per-round ratios (seqbench over another row, timed side by side in each round) with a
    distribution-free confidence interval for it, from order statistics (scipy.stats.quantile_test), and the ratio
    itself only when that interval spans at most MAX_INTERVAL of the median. Unlike the rounds' spread, the
    interval narrows as rounds are added, so a noisy host calls for more rounds (`seqbench bench --max-rounds`)
    instead of never giving a ratio; fewer than 6 rounds cannot give a 95% interval at all (`interval` None)."""
    import math

    median, interval = median_interval(ratios)
    width = (interval[1] - interval[0]) / median if interval and median > 0 else math.inf
    return {"ratio": median if width <= MAX_INTERVAL else None, "median": median, "interval": interval,
            "rounds": list(ratios)}


@torch.no_grad()
def decode_speed(model: Seq2Seq, batches: list[dict], decoding: DecodingConfig, device: torch.device,
                 warmup_batches: int = 1,
                 context: Callable[[], AbstractContextManager] = nullcontext,
                 search: Callable[..., list[list[int]]] = generate) -> dict:
    """Decodes every batch once, timed, after decoding the first `warmup_batches` once untimed (repeated timings
    and their spread: the bench's rounds, seqbench.measure.bench.decoding_row).

    `context` wraps the decoding (the trainer's autocast), so the speed is that of the precision used for testing.
    `search(model, src, src_mask, decoding)` is the search timed (greedy or beam search by default).
    Target tokens are the hypotheses' tokens, <eos> excluded.
    """
    model.eval()
    batches = [{k: batch[k].to(device) for k in ("src", "src_mask")} for batch in batches]
    with context():
        for batch in batches[:warmup_batches]:
            search(model, batch["src"], batch["src_mask"], decoding)
        sentences = tokens = 0
        start = clock(device)
        for batch in batches:
            hypotheses = search(model, batch["src"], batch["src_mask"], decoding)
            sentences += len(hypotheses)
            tokens += sum(len(h) for h in hypotheses)
        seconds = clock(device) - start
    return {"beam_size": decoding.beam_size, "sentences": sentences, "target_tokens": tokens, "seconds": seconds,
            "sentences_per_s": sentences / seconds, "target_tokens_per_s": tokens / seconds}


def test_batches(split, n_sentences: int | None) -> list[dict]:
    """The decode benchmark's input: a fixed subset of an evaluation split (seqbench.data.eval_split.EvalSplit),
    batched exactly like the test pass."""
    return split.batches(fixed_subset(len(split), n_sentences))
