"""`seqbench bench --table1` (issue 69): the analytic FLOPs of each layer against torch's FLOP counter, the gradient
reach against hand-counted receptive fields, the exponent fit and the crossover on synthetic timings, bad arguments,
and the command end to end at toy sizes (--bf16 too). No timing is asserted anywhere: only that timings exist."""
from __future__ import annotations

import json
import math
import random
from dataclasses import replace

import pytest
import torch

from seqbench.measure import table1
from seqbench.measure.bench import autocast
from seqbench.measure.workload import setting
from seqbench.report.headline import render
from seqbench.report.table1 import markdown, table1_headline

from conftest import seqbench_cli

CPU = torch.device("cpu")
MICRO = replace(table1.TINY, lengths=(8, 16), widths=(16,), width=16, width_length=8, tokens=32,
                latency_lengths=(8,), sentence_words=(5,), path_length=5, path_width=2, rounds=1)


@pytest.mark.parametrize("kind", table1.KINDS)
@pytest.mark.parametrize("batch, n, d", [(2, 7, 64), (1, 33, 128)])
def test_analytic_flops_equal_torchs_flop_counter(kind, batch, n, d):
    torch.manual_seed(0)
    layer = table1.build_layer(kind, d)
    assert table1.layer_flops(kind, batch, n, d) == table1.counted_flops(layer, torch.randn(batch, n, d))


def _field(norms: list[float]) -> list[int]:
    return [j for j, norm in enumerate(norms) if norm > 0]


@pytest.mark.parametrize("depth", [1, 2, 4])
def test_a_kernel_3_convolution_stack_reaches_2L_positions(depth):
    n, d = 24, 3
    x = torch.randn(1, n, d, dtype=torch.float64)
    causal = [table1.build_layer("conv", d, 3, causal=True).double() for _ in range(depth)]
    centred = [table1.build_layer("conv", d, 3).double() for _ in range(depth)]
    last, middle = n - 1, n // 2
    assert _field(table1.gradient_norms(causal, x, last)[-1]) == list(range(last - 2 * depth, n))
    assert _field(table1.gradient_norms(centred, x, middle)[-1]) == list(range(middle - depth, middle + depth + 1))
    reaches = [table1.reach(row[::-1]) for row in table1.gradient_norms(causal, x, last)]
    assert reaches == [2 * layers for layers in range(1, depth + 1)]  # every depth of the stack read from one pass


def test_causal_self_attention_reaches_every_earlier_position_and_no_later_one():
    n, d, i = 16, 8, 9
    layer = table1.build_layer("self-attention", d, causal=True).double()
    norms = table1.gradient_norms([layer], torch.randn(1, n, d, dtype=torch.float64), i)[0]
    assert _field(norms) == list(range(i + 1))
    unmasked = table1.build_layer("self-attention", d).double()
    assert _field(table1.gradient_norms([unmasked], torch.randn(1, n, d, dtype=torch.float64), i)[0]) == \
        list(range(n))


@pytest.mark.parametrize("cell", ["gru", "lstm"])
def test_a_recurrence_reaches_every_earlier_position_with_a_decaying_norm(cell):
    n, d, i = 24, 6, 20
    torch.manual_seed(0)
    layer = table1.build_layer(cell, d).double()
    norms = table1.gradient_norms([layer], torch.randn(1, n, d, dtype=torch.float64), i)[0]
    assert _field(norms) == list(range(i + 1))
    by_distance = norms[:i + 1][::-1]
    decay = table1.line_fit(list(range(1, i + 1)), [math.log10(v) for v in by_distance[1:]])
    assert decay["interval"][1] < 0 and by_distance[i] < 1e-3 * by_distance[1]


def test_the_path_record_gives_each_kinds_shortest_connecting_stack():
    path = table1.path_lengths(replace(MICRO, path_length=9, path_width=3), log=lambda *a: None)
    layers = path["layers"]
    assert path["depth"] == 4 and layers["conv"]["reach"] == [2, 4, 6, 8]
    assert layers["conv"]["connects_at_depth"] == 4  # ceil((n - 1) / (k - 1))
    for kind in ("self-attention", "gru", "lstm"):
        assert layers[kind]["reach"] == [8] * 4 and layers[kind]["connects_at_depth"] == 1
    assert layers["gru"]["decay_log10_per_position"]["slope"] < 0


@pytest.mark.parametrize("exponent", [0.0, 1.0, 2.0, 1.7])
def test_the_exponent_fit_recovers_known_exponents(exponent):
    x = [8, 16, 32, 64, 128, 256, 512, 1024]
    exact = table1.loglog_fit(x, [3e-4 * v ** exponent for v in x])
    assert exact["exponent"] == pytest.approx(exponent, abs=1e-9) and exact["x"] == [8, 1024]
    rng = random.Random(1)  # timings with 5% noise: the 95% interval holds the exponent in about 95% of draws
    fits = [table1.loglog_fit(x, [3e-4 * v ** exponent * math.exp(rng.gauss(0, 0.05)) for v in x])
            for _ in range(400)]
    covered = sum(f["interval"][0] < exponent < f["interval"][1] for f in fits) / len(fits)
    assert 0.92 < covered < 0.98 and all(f["interval"][1] - f["interval"][0] < 0.2 for f in fits)


def test_the_fit_interval_is_the_t_interval_of_scipys_slope():
    from scipy import stats

    x, y = [1.0, 2.0, 3.0, 4.0, 5.0], [1.1, 1.9, 3.2, 3.9, 5.2]
    fit, reference = table1.line_fit(x, y), stats.linregress(x, y)
    half = stats.t.ppf(0.975, 3) * reference.stderr
    assert fit["interval"] == pytest.approx([reference.slope - half, reference.slope + half])
    assert table1.line_fit([1.0, 2.0], [1.0, 3.0])["interval"] is None  # no degrees of freedom left


def _sweep(attention, other, rounds: int = 6) -> dict:
    """A fake n sweep: per-round batch times of self-attention and a GRU from two functions of n."""
    points = []
    for kind, cost in (("self-attention", attention), ("gru", other)):
        for n in (8, 16, 32, 64, 128, 256, 512, 1024):
            times = [cost(n) * (1 + 0.01 * r) for r in range(rounds)]
            points.append({"layer": kind, "n": n, "d": 64, "batch": 1, "flops_forward": cost(n),
                           **{mode: {"median": times[0], "rounds": times} for mode in ("forward", "forward_backward")}})
    return {"axis": "n", "points": points}


def test_the_crossover_is_where_attentions_cost_passes_the_recurrences():
    d = 64  # per sentence: attention 8nd^2 + 4n^2d, a GRU 12nd^2: equal at n = d
    sweep = _sweep(lambda n: 8 * n * d * d + 4 * n * n * d, lambda n: 12 * n * d * d)
    found = table1.crossovers(sweep)["gru"]
    assert found["flops"]["n"] == pytest.approx(d)
    assert found["forward_backward"]["median"] == pytest.approx(d) and len(found["forward_backward"]["rounds"]) == 6
    assert table1.crossing([8, 16], [2.0, 3.0], [1.0, 1.0]) == {"n": None, "where": "below"}
    assert table1.crossing([8, 16], [0.5, 0.7], [1.0, 1.0]) == {"n": None, "where": "above"}
    fits = table1.exponents(sweep)
    assert fits["gru"]["forward_backward"]["exponent"] == pytest.approx(1.0, abs=0.01)
    assert 1.5 < fits["self-attention"]["flops"]["exponent"] < 2.0  # the projections' n d^2 still weigh at n <= 16d


def test_saved_for_backward_grows_with_n_squared_only_where_attention_keeps_its_weights():
    d = 32
    layer = table1.build_layer("gru", d)
    saved = [table1.saved_for_backward(layer, torch.randn(2, n, d, requires_grad=True), lambda: autocast(CPU, False))
             for n in (16, 32)]
    assert saved[1] == pytest.approx(2 * saved[0], rel=0.1)  # a recurrence keeps O(n d) per sentence


@pytest.mark.parametrize("args, message", [
    (["--fairseq", "/venv"], "--fairseq is the speed bench's: not with --table1"),
    (["--gpu-check"], "--table1 is a run of its own"),
    (["--device", "tpu"], "--device=tpu: choose cpu or cuda"),
    (["--width", "200"], "--width=200: self-attention splits it into width // 64 heads"),
    (["--tokens", "0"], "--tokens=0: must be a positive integer"),
])
def test_bad_table1_arguments_exit_2_with_one_error_line(tmp_path, capsys, monkeypatch, args, message):
    monkeypatch.chdir(tmp_path)
    status, _, stderr = seqbench_cli(["bench", "--table1", "--tiny", *args], capsys)
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert status == 2 and len(lines) == 1 and lines[0].startswith("error:") and message in lines[0]
    assert not (tmp_path / "outputs").exists()


def test_table1_options_belong_to_table1(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    status, _, stderr = seqbench_cli(["bench", "--tiny", "--width", "64"], capsys)
    assert status == 2 and "--table1's" in stderr


@pytest.mark.skipif(torch.cuda.is_available(), reason="the message is for machines without a GPU")
def test_table1_on_cuda_without_a_gpu_is_one_error_line(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    status, _, stderr = seqbench_cli(["bench", "--table1", "--tiny", "--device", "cuda"], capsys)
    assert status == 2 and "--device cuda: no CUDA device is visible here" in stderr and "Traceback" not in stderr


def test_bf16_and_the_device_path_run_on_the_cpu():
    record = table1.run_table1(MICRO, setting(True), ["transformer"], [1], CPU, bf16=True, log=lambda *a: None)
    assert record["machine"]["dtype"] == "bfloat16 autocast" and record["machine"]["device_type"] == "cpu"
    points = record["compute"]["by_n"]["points"]
    assert {p["layer"] for p in points} == set(table1.KINDS)
    assert all(p["forward_backward"]["median"] > 0 and p["saved_mb"] > 0 for p in points)
    assert record["sequential"]["training"]["points"][0]["target_tokens_per_s"]["median"] > 0
    markdown(record)  # renders with one round (no intervals)


def test_tiny_table1_end_to_end_and_its_headline_block(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    threads = torch.get_num_threads()
    try:
        status, stdout, _ = seqbench_cli(["bench", "--table1", "--tiny", "--rounds", "2", "--threads", "2", "--out",
                                          "rec"], capsys)
    finally:
        torch.set_num_threads(threads)
    assert status == 0 and "results: rec/" in stdout
    record = json.loads((tmp_path / "rec" / "table1.json").read_text())
    assert (tmp_path / "rec" / "table1.png").stat().st_size > 0 and (tmp_path / "rec" / "table1.md").is_file()
    assert record["command"] == "seqbench bench --table1 --tiny --rounds 2 --threads 2 --out rec"
    assert record["versions"]["torch"] == torch.__version__ and "seqbench_commit" in record
    assert set(record["compute"]["exponents"]["n"]) == set(table1.KINDS)
    assert all(len(p["forward"]["rounds"]) == 2 for p in record["compute"]["by_d"]["points"])
    assert record["sequential"]["latency"]["threads"] == [1, 2]  # 1, 2 and --threads
    page = "<!-- headline: rec --table1 -->\nstale\n<!-- /headline -->\n"
    rendered = render(page, tmp_path)
    assert "| self-attention | O(n²·d) | 2 |" in rendered and "Command: `seqbench bench --table1" in rendered
    assert render(rendered, tmp_path) == rendered
    pending = table1_headline(tmp_path / "none", "docs/results/table1/none")
    assert pending.startswith("Record pending") and "--out docs/results/table1/none" in pending


def test_what_docs_table1_says_of_this_cpu_is_what_its_record_holds():
    """docs/table1.md's reading of the committed record (docs/results/table1/cpu), claim by claim."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    record = json.loads((root / "docs/results/table1/cpu/table1.json").read_text(encoding="utf-8"))
    page = " ".join((root / "docs/table1.md").read_text(encoding="utf-8").split())
    by_n = record["compute"]["exponents"]["n"]
    train = {layer: by_n[layer]["forward_backward"] for layer in by_n}
    low, high = train["conv"]["interval"]
    assert low <= by_n["conv"]["table"] <= high and "the convolution's column holds" in page
    low, high = train["self-attention"]["interval"]
    assert low <= by_n["self-attention"]["flops"]["exponent"] <= high and not low <= 2 <= high
    assert all(train[r]["interval"][0] > 1 for r in ("gru", "lstm"))
    assert "The recurrences grow faster than linearly at this fixed token budget" in page
    d = record["settings"]["width"]
    crossing = {layer: c["forward_backward"] for layer, c in record["compute"]["crossovers"].items()}
    assert d / 2 <= crossing["conv"]["median"] <= d and crossing["lstm"]["median"] > d
    assert "above" in crossing["gru"]["outside"]
    latency = {(p["layer"], p["threads"]): p["seconds"]["median"]
               for p in record["sequential"]["latency"]["points"] if p["n"] == 1024}
    gain = {layer: latency[layer, 1] / latency[layer, 2] for layer in ("self-attention", "gru", "lstm", "conv")}
    assert min(gain["conv"], gain["self-attention"]) > gain["gru"]
    for threads in ("1", "2"):
        exponents = record["sequential"]["latency_exponents"][threads]
        assert all(0.85 <= exponents[r]["exponent"] <= 1.1 for r in ("gru", "lstm"))
    path = record["path"]["layers"]
    assert path["self-attention"]["connects_at_depth"] == 1
    low, high = path["self-attention"]["decay_log10_per_position"]["interval"]
    assert low <= 0 <= high
    assert all(path[r]["reach"][0] == 32 and path[r]["decay_log10_per_position"]["slope"] < -0.1
               for r in ("gru", "lstm"))
    assert path["conv"]["reach"][0] == 2 and path["conv"]["connects_at_depth"] == 16
    trained = {layer: path[layer]["trained"] for layer in path}
    assert trained["self-attention"]["loss_last"] < 0.5 * trained["self-attention"]["loss_first"]
    assert all(0.8 < trained[r]["loss_last"] < 1.2 for r in ("gru", "lstm")) and trained["conv"]["loss_last"] > 2
    assert all(trained[r]["decay_log10_per_position"]["slope"] < -0.1 for r in ("gru", "lstm"))
    assert "the self-attention stack's error fell by more than half" in page


def test_training_to_carry_the_first_position_lowers_the_loss_of_a_layer_that_can():
    """train_to_carry: one causal self-attention layer, which reaches every earlier position in one step, learns to
    put the first position's input at the last position (its error falls; its residual keeps the last position's own
    input in the output, so not to zero);
    the path record holds the trained measurement beside the one at initialisation."""
    torch.manual_seed(0)
    stack = [table1.build_layer("self-attention", 8, causal=True).double()]
    first, last = table1.train_to_carry(stack, n=5, d=8, steps=300)
    assert last < 0.9 * first
    path = table1.path_lengths(replace(MICRO, path_length=5, path_width=2, path_training_steps=3), log=lambda *a: None)
    trained = path["layers"]["gru"]["trained"]
    assert trained["steps"] == 3 and len(trained["norms"]) == path["depth"] and trained["loss_first"] > 0
