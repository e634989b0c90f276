"""A tiny `seqbench train -m` over the three architectures (in-process: Hydra's basic launcher runs the jobs one
after another) records every measurement, leaves what the report needs in each run directory, and `seqbench report`
builds the comparison from them."""
from __future__ import annotations

import csv
import json

import pytest
import torch

from seqbench.common.io import atomic_write_text
from seqbench.measure.peaks import CACHE_FILE, CACHE_VERSION, cache_key, device_name
from seqbench.rundir.layout import RunDir
from seqbench.rundir.results import read_results

from conftest import TINY, seqbench_cli

MEASURE = ["measure.decode_sentences=5", "trainer.val_check_interval=2",
           "compare.param_budget=200000"]  # every family resized to 200k parameters
CACHED_PEAK = 1e15  # a fake fp32 matmul peak in the machine-peak cache, far above what this CPU reaches


@pytest.fixture(scope="module")
def multirun(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("measure")
    # The machine's fp32 peak is already cached (threads=1, as TINY sets): the runs must use it, not measure it. The
    # bf16 peak is not, and debug's 0.1-s measurement is not fit to cache: every run measures it for itself.
    cached = {"device": device_name(torch.device("cpu")), "dtype": "float32", "threads": 1,
              "flops_per_s": CACHED_PEAK, "matrix_size": 4096, "measured_at": "2026-01-01T00:00:00+00:00",
              "measure_seconds": 3.0, "cores_idle": True}  # measured fit, so the runs trust it
    atomic_write_text(tmp / "cache" / CACHE_FILE, json.dumps({"version": CACHE_VERSION, "peaks": {
        cache_key(cached["device"], "float32", 1): cached}}))
    from seqbench.commands import main

    assert main(["train", "-m", f"paths.cache_dir={tmp / 'cache'}", f"hydra.sweep.dir={tmp / 'multi'}", *TINY,
                 *MEASURE, "model=transformer,rnn,cnn"]) == 0
    return tmp / "multi"


def test_results_record_every_measurement(multirun):
    labels, bf16_sources, bf16_unfit = set(), [], []
    for job in ("0", "1", "2"):
        results = read_results(multirun / job)
        labels.add(results["label"])
        assert abs(results["parameters"] - 200_000) <= 20_000 and results["model"]["param_budget"] == 200_000
        for split in ("valid", "test"):
            buckets = results[split]["bleu_by_length"]
            assert [b["bucket"] for b in buckets] == ["1-10", "11-20", "21-30", "31-40", "41-50", "51-60", "61+"]
            assert sum(b["sentences"] for b in buckets) == results[split]["n_sentences"]
        tput = results["throughput"]
        assert tput["steps_per_s"] > 0 and tput["tokens_seen"] > 0 and tput["mean_src_tokens"] > 0
        assert tput["first_update_s"] > 0  # from the process's start (pytest's here: no upper bound to check)
        # training FLOPs summed per batch at its own mean lengths: near the whole run's mean-length estimate, and
        # the last validation (at the last update) saw them all
        assert tput["train_flops"] == pytest.approx(
            results["flops"]["train_per_target_token"] * tput["tokens_seen"], rel=0.2)
        assert results["curve"][-1]["train_flops"] == pytest.approx(tput["train_flops"])
        decoding = results["decoding"]
        assert decoding["greedy"]["beam_size"] == 1 and decoding["beam"]["beam_size"] == 2
        assert decoding["beam"]["sentences"] == 5 and decoding["beam"]["sentences_per_s"] > 0
        flops = results["flops"]
        assert set(flops["peak_flops_per_s"]) == {"float32", "bfloat16"} and flops["peak_dtype"] == "float32"
        assert 0 < flops["mfu"] < 1 and flops["train_per_target_token"] == 3 * flops["forward_per_target_token"]
        # MFU against the cached machine peak, with its provenance; bf16 measured once, by the first run
        assert flops["peak_flops_per_s"]["float32"] == CACHED_PEAK and flops["peak_source"] == "cached"
        assert flops["mfu"] == pytest.approx(flops["achieved_train_flops_per_s"] / CACHED_PEAK)
        assert flops["peak_provenance"]["float32"]["measured_at"] == "2026-01-01T00:00:00+00:00"
        bf16_sources.append(flops["peak_provenance"]["bfloat16"]["source"])
        bf16_unfit.append(flops["peak_provenance"]["bfloat16"].get("unfit"))
        assert flops["mfu_datasheet"] is None
        assert results["memory"]["cpu_rss_peak_mb"] > 0 and results["memory"]["cuda_max_allocated_mb"] is None
        assert results["device"] == "cpu"
    assert labels == {"transformer", "rnn-bahdanau", "cnn"}
    assert bf16_sources == ["measured now"] * 3 and all(unfit for unfit in bf16_unfit)


def test_run_directory_holds_what_the_report_needs(multirun):
    from seqbench.decoding.attention import load_attention

    shapes = {}
    for job in ("0", "1", "2"):
        run = multirun / job
        n = read_results(run)["test"]["n_sentences"]
        for name in ("hypotheses", "references", "sources"):
            assert RunDir(run).text(name, "test").read_text().count("\n") == n
        saved = load_attention(RunDir(run).attention)
        example = saved["examples"][0]
        attention = example["attention"]
        assert attention.shape[2:] == (len(example["tgt_tokens"]), len(example["src_tokens"]))
        assert example["tgt_tokens"][-1] == "<eos>"
        shapes[saved["model"]] = tuple(attention.shape[:2])
        with (run / "csv" / "metrics.csv").open() as f:
            rows = [r for r in csv.DictReader(f) if r.get("val/tokens_seen")]
        assert rows and all(r["val/bleu"] and float(r["val/train_seconds"]) > 0 for r in rows)
    assert shapes["rnn"] == (1, 1) and shapes["cnn"] == (4, 1) and shapes["transformer"][0] == 3


def test_report_on_the_multirun(multirun, capsys):
    status, _, err = seqbench_cli(["report", str(multirun), "--bootstrap", "100"], capsys)
    assert status == 0, err[-3000:]
    text = (multirun / "report" / "report.md").read_text()
    assert all(f"| {label} |" in text for label in ("transformer", "rnn-bahdanau", "cnn"))
    assert {"attention_transformer_0.png", "attention_rnn-bahdanau_0.png", "attention_cnn_0.png"} <= \
        {p.name for p in (multirun / "report").glob("*.png")}
