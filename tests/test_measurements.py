"""BLEU by source length, paired bootstrap, matmul peak, decode speed and the MFU arithmetic."""
from __future__ import annotations

import math
import random

import pytest
import sacrebleu
import torch

from seqbench.common.subset import fixed_subset
from seqbench.common.text import DEFAULT_LENGTH_EDGES, bucket_index, length_buckets
from seqbench.decoding.search import DecodingConfig
from seqbench.measure.memory import peak_memory, reset_peak_memory
from seqbench.measure.peaks import training_dtype, training_flops
from seqbench.measure.speed import decode_speed
from seqbench.scoring.metrics import bleu_by_length, paired_bootstrap

from conftest import build_tiny_model


def test_default_buckets_are_the_synthetic_strata():
    assert [f"{lo}+" if hi is None else f"{lo}-{hi}" for lo, hi in length_buckets()] == \
        ["1-10", "11-20", "21-30", "31-40", "41-50", "51-60", "61+"]
    assert DEFAULT_LENGTH_EDGES == (10, 20, 30, 40, 50, 60)


@pytest.mark.parametrize("words, bucket", [(0, 0), (1, 0), (10, 0), (11, 1), (20, 1), (21, 2), (60, 5), (61, 6),
                                           (500, 6)])
def test_bucket_assignment_at_the_edges(words, bucket):
    assert bucket_index(words) == bucket


def test_custom_edges_and_bad_edges():
    assert length_buckets([5, 15]) == [(1, 5), (6, 15), (16, None)]
    assert bucket_index(5, [5, 15]) == 0 and bucket_index(6, [5, 15]) == 1 and bucket_index(16, [5, 15]) == 2
    for bad in ([10, 10], [20, 10], [0, 5]):
        with pytest.raises(ValueError):
            length_buckets(bad)


def test_bucket_bleu_is_sacrebleu_on_the_subset():
    refs = ["the cat sat on the mat", "a dog barked at the moon tonight", "hello there my friend",
            "one two three four five six seven eight nine ten eleven twelve", "red green blue", "it rains"]
    hyps = ["the cat sat on a mat", "the dog barked at a moon", "hello there friend",
            "one two three four five six seven eight nine ten eleven", "red blue green", "it rains"]
    lengths = [6, 7, 4, 12, 3, 61]
    by_length = bleu_by_length(hyps, refs, lengths, edges=[5, 10])
    assert [b["bucket"] for b in by_length] == ["1-5", "6-10", "11+"]
    assert [b["sentences"] for b in by_length] == [2, 2, 2]
    subsets = {"1-5": [2, 4], "6-10": [0, 1], "11+": [3, 5]}
    for bucket in by_length:
        rows = subsets[bucket["bucket"]]
        expected = sacrebleu.corpus_bleu([hyps[i] for i in rows], [[refs[i] for i in rows]]).score
        assert bucket["bleu"] == expected


def test_empty_bucket_has_no_score():
    by_length = bleu_by_length(["a b c d e"], ["a b c d e"], [3])
    assert by_length[0]["sentences"] == 1 and by_length[0]["bleu"] == pytest.approx(100.0)
    assert all(b["sentences"] == 0 and b["bleu"] is None for b in by_length[1:])
    with pytest.raises(ValueError):
        bleu_by_length(["a"], ["a", "b"], [1, 2])


def _noisy(references: list[str], rate: float, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(w if rng.random() > rate else "xyz" for w in r.split()) for r in references]


def test_paired_bootstrap_separates_a_better_system():
    rng = random.Random(0)
    words = "the a cat dog sat ran on under mat house big small red blue".split()
    refs = [" ".join(rng.choices(words, k=rng.randint(5, 20))) for _ in range(200)]
    good, bad, alike = _noisy(refs, 0.1, 1), _noisy(refs, 0.4, 2), _noisy(refs, 0.1, 3)
    result = paired_bootstrap(good, bad, refs, n_samples=200)
    assert result["baseline_bleu"] == sacrebleu.corpus_bleu(good, [refs]).score
    assert result["bleu"] == sacrebleu.corpus_bleu(bad, [refs]).score
    assert result["p_value"] < 0.01
    assert paired_bootstrap(good, alike, refs, n_samples=200)["p_value"] > 0.05  # same quality: no evidence


def test_matmul_peak_grows_the_matrix_until_a_product_takes_a_twentieth_of_the_budget(monkeypatch):
    """n doubles from 256 while one product takes less than seconds / 20 (here products cost n^3 / 1e10 s: 1024 is
    the first to reach 0.05 s of a 1-second budget), and the peak is the best window's 2 n^3 / time."""
    from seqbench.measure import peaks

    calls_at = {}
    speedups = [1.0, 1.0, 1.0, 0.9, 0.8]  # at n = 1024: warm-up, the sizing product, then windows, faster and faster

    def timed(a, b, out, repeats):
        n = a.size(0)
        calls_at[n] = calls_at.get(n, 0) + 1
        factor = speedups[min(calls_at[n], len(speedups)) - 1] if n == 1024 else 1.0
        return repeats * n ** 3 / 1e10 * factor

    monkeypatch.setattr(peaks, "_timed_products", timed)
    peak = peaks.matmul_peak_flops(torch.device("cpu"), torch.float32, seconds=1.0)  # a twentieth: 0.05 s
    assert peak["matrix_size"] == 1024 and calls_at[256] == calls_at[512] == 2  # warm-up and sizing product each
    assert peak["flops_per_s"] == pytest.approx(2 * 1e10 / 0.8)
    capped = peaks.matmul_peak_flops(torch.device("cpu"), torch.float32, seconds=0.5, max_size=512)
    assert capped["matrix_size"] == 512  # products of 512 take less than a twentieth here: the cap stops the growth


def test_a_real_matmul_peak_is_finite():
    from seqbench.measure.peaks import matmul_peak_flops

    for dtype in (torch.float32, torch.bfloat16):
        peak = matmul_peak_flops(torch.device("cpu"), dtype, seconds=0.05, max_size=256)
        assert math.isfinite(peak["flops_per_s"]) and peak["flops_per_s"] > 0 and peak["matrix_size"] == 256


def test_training_flops_and_mfu():
    model = build_tiny_model("transformer")
    peaks = {"float32": {"flops_per_s": 1e11, "matrix_size": 1024}}
    flops = training_flops(model, 12.4, 10.6, 5000.0, peaks, "float32")
    forward = model.flops_per_token(12, 11)
    assert flops["forward_per_target_token"] == forward and flops["train_per_target_token"] == 3 * forward
    assert flops["achieved_train_flops_per_s"] == pytest.approx(3 * forward * 5000.0)
    assert flops["mfu"] == pytest.approx(3 * forward * 5000.0 / 1e11)
    assert training_flops(model, 12, 10, 5000.0, peaks, "bfloat16")["mfu"] is None
    assert [training_dtype(p) for p in ("32-true", "bf16-mixed", "16-mixed")] == ["float32", "bfloat16", "float16"]


@pytest.mark.parametrize("case", ["transformer", "rnn_bahdanau", "cnn"])
def test_decode_speed_counts_sentences_and_tokens(case):
    model = build_tiny_model(case)
    torch.manual_seed(0)
    batches = []
    for lengths in ((5, 3), (7, 7, 2)):
        src = torch.randint(4, 40, (len(lengths), max(lengths)))
        mask = torch.arange(max(lengths))[None, :] < torch.tensor(lengths)[:, None]
        batches.append({"src": src.masked_fill(~mask, 0), "src_mask": mask})
    for beam in (1, 3):  # every hypothesis forced to 4 tokens, as the end-of-run speed sample forces them
        speed = decode_speed(model, batches, DecodingConfig(beam_size=beam, min_len=4, max_len=4),
                             torch.device("cpu"), warmup_batches=1)
        assert speed["sentences"] == 5 and speed["beam_size"] == beam and speed["target_tokens"] == 5 * 4
        assert speed["sentences_per_s"] == pytest.approx(5 / speed["seconds"])
        assert speed["target_tokens_per_s"] == pytest.approx(20 / speed["seconds"])


def test_fixed_subset_spreads_over_the_split():
    assert fixed_subset(10, None) == list(range(10)) and fixed_subset(10, 50) == list(range(10))
    subset = fixed_subset(1050, 100)
    assert len(subset) == 100 and subset == sorted(set(subset)) and subset[0] == 0 and subset[-1] >= 1000


def test_peak_memory_after_reset():
    reset_peak_memory()
    memory = peak_memory(torch.device("cpu"))
    assert memory["cuda_max_allocated_mb"] is None
    assert math.isfinite(memory["cpu_rss_peak_mb"]) and memory["cpu_rss_peak_mb"] > 0


def test_the_package_imports_and_measures_memory_without_the_posix_resource_module(monkeypatch):
    """Windows has no `resource` module (and no /proc): seqbench still imports, and the peak comes from psutil's
    peak working set, or is None where psutil has none; on Linux /proc is read first, as before."""
    import importlib
    import sys
    from pathlib import Path

    import psutil

    import seqbench.measure.memory as memory

    monkeypatch.setitem(sys.modules, "resource", None)  # `import resource` now raises ImportError
    reloaded = importlib.reload(memory)
    original_is_file = Path.is_file
    monkeypatch.setattr(Path, "is_file", lambda self: False if str(self) == "/proc/self/status"
                        else original_is_file(self))
    monkeypatch.setattr(psutil.Process, "memory_info", lambda self: type("Info", (), {"peak_wset": 3 * 2**20})())
    assert reloaded._cpu_peak_mb() == 3.0
    monkeypatch.setattr(psutil.Process, "memory_info", lambda self: type("Info", (), {})())
    assert reloaded._cpu_peak_mb() is None
    monkeypatch.undo()
    importlib.reload(memory)


def test_logger_wandb_without_wandb_installed_is_one_line(monkeypatch):
    import sys

    import pytest

    from seqbench.common.errors import ConfigError
    from seqbench.loggers.wandb_logger import WandbLogger

    monkeypatch.setitem(sys.modules, "wandb", None)
    with pytest.raises(ConfigError, match=r"logger=wandb: W&B is not installed: pip install 'seqbench\[wandb\]'"):
        WandbLogger(project="x")
