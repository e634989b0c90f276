"""`seqbench bench --tiny` end to end, in-process (every row and ratio in its JSON, in its run directory), the
uncached greedy search it times against the cached one, the plain PyTorch baselines it trains beside seqbench's
models, the CTranslate2 rows decoded in a process of their own, steadiness, and the fairseq anchor's log reading
(and, where a fairseq environment is named by SEQBENCH_FAIRSEQ_VENV, its rows)."""
from __future__ import annotations

import json
import os
import random

import numpy as np
import pytest
import torch

from seqbench.common.errors import InputError
from seqbench.decoding.recompute import recompute_greedy
from seqbench.decoding.search import DecodingConfig, greedy_search
from seqbench.measure import fairseq
from seqbench.measure.speed import median_ratio, steadiness

from conftest import SRC_VOCAB, build_tiny_model, random_batch, seqbench_cli


def bench(tmp_path, capsys, monkeypatch, *args):
    """`seqbench bench <args>` in this process, with its own peak cache: (status, stdout, stderr)."""
    monkeypatch.setenv("SEQBENCH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    threads = torch.get_num_threads()
    try:
        return seqbench_cli(["bench", *args], capsys)
    finally:
        torch.set_num_threads(threads)  # the bench sets the process's thread count


def test_tiny_bench_has_every_row_and_ratio(tmp_path, capsys, monkeypatch):
    status, stdout, stderr = bench(tmp_path, capsys, monkeypatch, "--tiny", "--threads", "1", "--preset",
                                   "transformer", "--decode-tokens", "9", "--vocab-size", "120")
    assert status == 0, stderr[-3000:]
    runs = list((tmp_path / "outputs" / "bench").iterdir())  # a run directory of its own, named by the time
    assert len(runs) == 1 and f"results: outputs/bench/{runs[0].name}/" in stdout
    assert not (tmp_path / "bench.json").exists()
    result = json.loads((runs[0] / "bench.json").read_text())
    assert (runs[0] / "bench.md").read_text().strip() in stdout
    assert result["machine"]["threads"] == 1 and result["machine"]["device_type"] == "cpu"
    from seqbench.rundir.results import source_commit

    assert result["seqbench_commit"] == source_commit()  # the code that made it, as results.json names it
    from seqbench.models import linear

    assert result["machine"]["onednn_linear"] == linear.ENABLED  # how its inference multiplied, said in the table
    assert ("inference through oneDNN" in stdout.splitlines()[0]) == linear.ENABLED
    assert result["settings"]["vocab_size"] == 120 and result["settings"]["decode_tokens"] == 9
    peak = result["machine"]["peaks"]["float32"]
    assert peak["source"] == "measured now" and peak["flops_per_s"] > 0 and peak["threads"] == 1
    assert not (tmp_path / "cache").exists()  # toy shapes never write the machine's peak cache

    rows = {row["name"]: row for row in result["training"]}
    assert list(rows) == ["transformer", "rnn", "cnn", "preset transformer", "nn.Transformer", "nn.LSTM"]
    for row in rows.values():
        assert row["target_tokens_per_s"] > 0 and row["src_tgt_tokens_per_s"] > row["target_tokens_per_s"]
        assert row["step_time_s"] > 0 and len(row["windows"]) == 4 and row["timed_steps"] == 4  # 4 windows of 1
        assert row["steady"] == (row["spread"] <= 0.15) and row["spread"] == steadiness(
            [w["target_tokens_per_s"] for w in row["windows"]])["spread"]
        assert row["flops"]["mfu"] is None or 0 < row["flops"]["mfu"] <= 1
        assert row["flops"]["peak_source"] == "measured now" and row["flops"]["mfu_datasheet"] is None  # CPU
        assert row["memory"]["cpu_rss_peak_mb"] > 0 and row["parameters"] > 0
        ratios = [a["target_tokens_per_s"] / b["target_tokens_per_s"]  # round by round, side by side
                  for a, b in zip(row["windows"], rows["nn.Transformer"]["windows"])]
        assert row["vs_nn_transformer"] == {"baseline": "nn.Transformer", **median_ratio(ratios)}
        assert row["vs_nn_transformer"]["interval"] is None  # 4 rounds: too few for a 95% interval, so no ratio
    assert rows["transformer"]["vs_same_shape_baseline"]["baseline"] == "nn.Transformer"
    assert rows["rnn"]["vs_same_shape_baseline"]["baseline"] == "nn.LSTM"
    assert rows["cnn"]["vs_same_shape_baseline"] is None and rows["preset transformer"]["parameters"] > \
        rows["transformer"]["parameters"]  # the preset is composed from conf/model/transformer.yaml, not tiny

    decoding = {row["name"]: row for row in result["decoding"]}
    assert list(decoding) == ["transformer", "rnn", "cnn", "preset transformer"]
    n, tokens = result["settings"]["decode_sentences"], result["settings"]["decode_tokens"]
    for row in decoding.values():
        for kind, beam in (("greedy", 1), ("beam", 5), ("greedy_uncached", 1)):
            assert row[kind]["beam_size"] == beam and row[kind]["sentences"] == n
            assert row[kind]["target_tokens"] == n * tokens == n * 9  # every hypothesis forced to --decode-tokens
        rounds = result["settings"]["decode_rounds"]
        assert rounds == result["settings"]["decode_max_rounds"] == 7  # --tiny adds no rounds
        assert all(len(row[kind]["rounds"]) == rounds for kind in ("greedy", "beam", "greedy_uncached"))
        ratios = [a / b for a, b in zip(row["greedy"]["rounds"], row["greedy_uncached"]["rounds"])]  # side by side
        assert row["cache_speedup_greedy"] == median_ratio(ratios)
        assert row["cache_speedup_greedy"]["interval"] == [min(ratios), max(ratios)]  # 7 rounds: 98.4% coverage
    for name in rows:
        assert f"| {name} |" in stdout
    assert "MFU denominator" in stdout and "cache speed-up" in stdout
    # CTranslate2 (when installed) decodes the reference Transformer's weights, same sentences and forced length; the
    # preset Transformer converts too; RNN and ConvS2S do not
    engines = {name for name, row in decoding.items() if "ctranslate2" in row}
    try:
        import ctranslate2  # noqa: F401
    except ImportError:
        assert not engines and "pip install 'seqbench[ctranslate2]'" in stdout + stderr
        return
    assert engines == {"transformer", "preset transformer"}
    for compute_type in ("float32", "int8"):
        for kind, beam in (("greedy", 1), ("beam", 5)):
            engine = decoding["transformer"]["ctranslate2"][compute_type]
            speed = engine[kind]
            assert speed["beam_size"] == beam and speed["target_tokens"] == n * 9 and speed["sentences_per_s"] > 0
            ratios = [a / b for a, b in zip(decoding["transformer"][kind]["rounds"], speed["rounds"])]
            assert len(ratios) == rounds and engine["seqbench_share"][kind] == median_ratio(ratios)
        assert engine["process"] == "own" and engine["pid"] != os.getpid()  # decoded in a process of its own
    assert "| transformer | CTranslate2 float32 |" in stdout and "seqbench / engine, beam 5" in stdout
    assert "decoded by CTranslate2 in a process of its own (same sources" in stdout


@pytest.mark.parametrize("args, message", [
    (["--preset", "nope"], "model='nope'"),
    (["--families", "transformer,gru"], "--families"),
    (["--force"], "--measure-peak"),
    (["--decode-tokens", "0"], "--decode-tokens=0: must be a positive integer"),
    (["--vocab-size", "5"], "--vocab-size=5: must be at least 8"),
    (["--measure-peak"], "not with --tiny"),
    (["--fairseq", "/nonexistent"], "no fairseq-preprocess there"),
])
def test_bad_arguments_exit_2_with_a_message(tmp_path, capsys, monkeypatch, args, message):
    status, _, stderr = bench(tmp_path, capsys, monkeypatch, "--tiny", *args)
    assert status == 2 and message in stderr and "Traceback" not in stderr
    assert not (tmp_path / "outputs").exists()


@pytest.mark.parametrize("case", ["transformer", "rnn_luong_general", "rnn_lstm_luong_general_no_feed", "cnn"])
@pytest.mark.parametrize("min_len", [0, 8])
def test_uncached_greedy_equals_cached_greedy(case, min_len):
    model = build_tiny_model(case)
    src, mask, _ = random_batch(lengths=(7, 3, 5))
    cfg = DecodingConfig(max_len_a=1.0, max_len_b=3, min_len=min_len, max_len=8 if min_len else None)
    assert recompute_greedy(model, src, mask, cfg) == greedy_search(model, src, mask, cfg)


def test_baselines_have_the_reference_shapes_and_are_causal():
    from seqbench.measure.baselines import PlainLSTM, PlainTransformer
    from seqbench.measure.workload import REFERENCE, build

    small = {"transformer": dict(d_model=32, n_heads=2, encoder_layers=2, decoder_layers=2, d_ff=64),
             "rnn": dict(embed_dim=16, hidden_size=24, encoder_layers=2, decoder_layers=2)}
    torch.manual_seed(0)
    plain = {"transformer": PlainTransformer(SRC_VOCAB, SRC_VOCAB, dropout=0.0, **small["transformer"]),
             "rnn": PlainLSTM(SRC_VOCAB, SRC_VOCAB, dropout=0.0, **small["rnn"])}
    src, mask, tgt = random_batch(lengths=(7, 3, 5))
    tgt = tgt % SRC_VOCAB  # one vocabulary for both sides here
    changed = tgt.clone()
    changed[:, 4:] = (changed[:, 4:] + 1) % SRC_VOCAB
    for family, model in plain.items():
        twin = build({**REFERENCE.models[family], **small[family], "dropout": 0.0}, SRC_VOCAB, 0)
        params = sum(p.numel() for p in model.parameters())
        assert abs(params - twin.num_parameters()) <= 0.1 * twin.num_parameters(), family
        model.eval()
        logits = model(src, mask, tgt)
        assert logits.shape == (3, tgt.size(1), SRC_VOCAB) and torch.isfinite(logits).all()
        # positions before 4 do not see the changed future tokens
        torch.testing.assert_close(model(src, mask, changed)[:, :4], logits[:, :4])


def test_steadiness_is_the_median_and_the_spread_over_it():
    # quartiles by hand (inclusive): 95 and 105 of 90, 100, 110 -> an interquartile range of 10% of the median
    assert steadiness([100.0, 110.0, 90.0]) == {"median": 100.0, "spread": pytest.approx(0.1), "steady": True,
                                                 "windows": 3}
    assert not steadiness([100.0, 130.0, 70.0])["steady"]
    assert steadiness([100.0, 101.0, 99.0, 100.0, 40.0])["steady"]  # one window caught by a burst of other work


FAIRSEQ_LOG = "\n".join(
    f'2026-12-03 08:52:35 | INFO | train_inner | {{"epoch": {epoch}, "num_updates": "{n}", "wps": "{wps}", '
    f'"wpb": "{wpb}", "loss": "8.4"}}' for epoch, n, wps, wpb in
    [(1, 1, "0", 287), (1, 2, "900", 500), (2, 3, "2000", 500), (2, 4, "1000", 250), (3, 5, "1000", 250),
     (3, 6, "1000", 500)]) + \
    "\n2026-12-03 08:52:34 | INFO | fairseq_cli.train | num. shared model params: 1,234,567 (num. trained: 1,234,567)"


def test_fairseq_rows_read_its_per_update_log():
    records = fairseq.update_log(FAIRSEQ_LOG)
    assert [int(r["num_updates"]) for r in records] == [1, 2, 3, 4, 5, 6]
    # by hand: epoch 2 is 750 tokens in 0.25 + 0.25 s, epoch 3 is 750 tokens in 0.25 + 0.5 s
    assert fairseq.epoch_window(records, 2)["target_tokens_per_s"] == pytest.approx(1500)
    assert fairseq.epoch_window(records, 3) == {"steps": 2, "seconds": pytest.approx(0.75), "step_time_s":
                                                pytest.approx(0.375), "target_tokens_per_s": pytest.approx(1000),
                                                "src_tgt_tokens_per_s": None}
    assert fairseq.parameter_count(FAIRSEQ_LOG) == 1234567


def test_fairseq_architectures_have_the_reference_shapes():
    from seqbench.measure.workload import REFERENCE

    args = {family: fairseq.architecture(family, REFERENCE.models[family]) for family in REFERENCE.models}
    assert args["transformer"][:2] == ["--arch", "transformer"] and "--share-decoder-input-output-embed" in \
        args["transformer"]
    # the same dropout sites: seqbench drops out the feed-forward's inner activation too
    option = lambda family, name: args[family][args[family].index(name) + 1]  # noqa: E731
    assert option("transformer", "--activation-dropout") == option("transformer", "--dropout") == "0.1"
    assert option("transformer", "--attention-dropout") == "0.0"
    assert args["rnn"][:2] == ["--arch", "lstm"] and "--encoder-bidirectional" in args["rnn"]
    assert args["cnn"][args["cnn"].index("--encoder-layers") + 1] == "[(256, 3), (256, 3), (256, 3)]"


@pytest.mark.skipif(not os.environ.get("SEQBENCH_FAIRSEQ_VENV"), reason="no fairseq environment named by "
                                                                          "SEQBENCH_FAIRSEQ_VENV")
def test_tiny_bench_with_fairseq_rows(tmp_path, capsys, monkeypatch):
    status, stdout, stderr = bench(tmp_path, capsys, monkeypatch, "--tiny", "--threads", "1", "--fairseq",
                                   os.environ["SEQBENCH_FAIRSEQ_VENV"], "--out", str(tmp_path / "out"))
    assert status == 0, stderr[-3000:]
    rows = {row["name"]: row for row in json.loads((tmp_path / "out" / "bench.json").read_text())["training"]}
    for family in ("transformer", "rnn", "cnn"):
        anchor = rows[f"fairseq {family}"]
        assert anchor["target_tokens_per_s"] > 0 and len(anchor["windows"]) == 4 and anchor["parameters"] > 0
        assert rows[family]["vs_fairseq"]["fairseq"] == f"fairseq {family}"


@pytest.mark.integration
def test_the_gpu_check_runs_on_the_cpu(tmp_path):
    """`seqbench bench --gpu-check --tiny`: the GPU check's steps (bf16-mixed training with decoding, the 2-process
    DDP path, the Table 1 pass) as real processes at toy sizes on the CPU, so the script cannot rot where no GPU is
    lent."""
    import subprocess
    import sys

    env = {**os.environ, "SEQBENCH_CACHE_DIR": str(tmp_path / "cache"), "OMP_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, "-m", "seqbench", "bench", "--gpu-check", "--tiny", "--out",
                           str(tmp_path / "check")], capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    check = json.loads((tmp_path / "check" / "gpu_check.json").read_text())
    assert check["tiny"] and check["train"]["precision"] == "bf16-mixed" and check["train"]["steps"] == 4
    assert check["train"]["throughput"]["target_tokens_per_s"] > 0 and check["train"]["decoding"]["beam"]
    assert check["ddp"]["test_sentences"] == check["ddp"]["test_split"]  # both ranks' shares gathered
    assert "DDP, 2 processes" in done.stdout
    # the Table 1 pass: its own record, every layer's exponent in n
    assert set(check["table1"]["n_exponents"]) == {"self-attention", "gru", "lstm", "conv"}
    assert (tmp_path / "check" / "table1" / "table1.json").is_file() and "Table 1, bf16" in done.stdout


def test_the_gpu_check_without_a_gpu_says_how_to_run_it(tmp_path, capsys, monkeypatch):
    status, _, stderr = bench(tmp_path, capsys, monkeypatch, "--gpu-check")
    if torch.cuda.is_available():
        pytest.skip("a GPU is here: the check would run")
    assert status == 2 and "--gpu-check --tiny runs the same steps on the CPU" in stderr


def test_the_ctranslate2_rows_are_timed_in_a_process_of_their_own(monkeypatch):
    """CTranslate2 decodes as a user runs it: in a worker process of its own without torch (inside the bench's
    process it ran at 0.56-0.81x of its own speed, issue 55), never in the bench's, and the worker ends with the
    row; every decoder is timed once per round."""
    ctranslate2 = pytest.importorskip("ctranslate2")
    from seqbench.measure.bench import decoding_row
    from seqbench.measure.workload import TINY, build, decode_batches, generated_pairs

    def not_here(*_args, **_kwargs):
        raise AssertionError("a CTranslate2 translator was loaded in the bench's process")

    monkeypatch.setattr(ctranslate2, "Translator", not_here)
    setting = TINY
    model = build(setting.models["transformer"], setting.vocab_size, setting.seed)
    row = decoding_row(model, decode_batches(generated_pairs(setting), setting)[:1], setting, torch.device("cpu"),
                       rounds=2)
    assert len(row["greedy"]["rounds"]) == 2
    for compute_type in ("float32", "int8"):
        engine = row["ctranslate2"][compute_type]
        assert engine["process"] == "own" and engine["bench_pid"] == os.getpid() != engine["pid"]
        assert engine["torch_loaded"] is False
        assert len(engine["greedy"]["rounds"]) == len(engine["beam"]["rounds"]) == 2
        for kind in ("greedy", "beam"):
            assert engine[kind]["target_tokens"] == engine[kind]["sentences"] * setting.decode_tokens  # forced
        with pytest.raises(ProcessLookupError):
            os.kill(engine["pid"], 0)  # the worker was closed and reaped with the row


def test_the_rows_of_a_ratio_are_timed_back_to_back_in_alternating_order():
    from seqbench.measure.bench import round_order

    records = [{"name": "transformer", "twin": "transformer"}, {"name": "rnn", "twin": "rnn"},
               {"name": "nn.Transformer", "twin": "transformer"},
               {"name": "fairseq transformer", "twin": "transformer"}, {"name": "fairseq rnn", "twin": "rnn"}]
    names = [[records[i]["name"] for i in round_order(records, r)] for r in range(3)]
    assert names[0] == ["transformer", "nn.Transformer", "fairseq transformer", "rnn", "fairseq rnn"]
    assert names[1] == ["fairseq transformer", "nn.Transformer", "transformer", "fairseq rnn", "rnn"]
    assert names[2] == names[0]
    assert all(sorted(n) == sorted(r["name"] for r in records) for n in names)


def test_median_ratio_has_an_order_statistic_interval_that_narrows_with_rounds():
    # 10 rounds: P(Binomial(10, 1/2) <= 1) = 11/1024, so [x(2), x(9)] covers the median with 1 - 22/1024 >= 95%
    # while [x(3), x(8)] covers it with only 1 - 112/1024
    ratios = [1.30, 1.00, 1.02, 0.98, 1.01, 0.99, 1.03, 0.97, 1.04, 0.70]
    result = median_ratio(ratios)
    assert result["median"] == pytest.approx(1.005) and result["interval"] == [0.97, 1.04]
    assert result["ratio"] == pytest.approx(1.005) and result["rounds"] == ratios  # 7% wide: given
    assert median_ratio(ratios[:5]) == {"ratio": None, "median": 1.01, "interval": None, "rounds": ratios[:5]}
    # the same host noise (rounds 15% apart): 7 rounds leave the median unknown, 41 pin it down
    noisy = [1.0 + 0.15 * ((7 * i) % 5 - 2) / 2 for i in range(41)]
    assert median_ratio(noisy[:7])["ratio"] is None and median_ratio(noisy)["ratio"] == pytest.approx(1.0)


def test_median_ratio_interval_covers_the_median_in_95_percent_of_draws():
    rng = np.random.default_rng(0)
    true_median = np.log(2.0)  # an exponential's
    for n in (7, 12):
        covered = [lo <= true_median <= hi for lo, hi in
                   (median_ratio(list(rng.exponential(size=n)))["interval"] for _ in range(2000))]
        assert np.mean(covered) >= 0.95 - 3 * np.sqrt(0.95 * 0.05 / 2000)


class _Window:
    """A training row whose windows run at the rates given, one per round."""
    def __init__(self, rates):
        self.rates = iter(rates)

    def window(self, _batches):
        return {"target_tokens_per_s": next(self.rates)}


def test_rounds_are_added_until_every_same_shape_ratio_is_steady():
    from seqbench.measure.bench import _timed_rounds

    def rows(noisy):
        records = [{"name": "transformer", "kind": "seqbench", "twin": "transformer"},
                   {"name": "nn.Transformer", "kind": "baseline", "shape_of": "transformer", "twin": "transformer"},
                   {"name": "cnn", "kind": "seqbench", "twin": "cnn"}]  # cnn / nn.Transformer: across shapes
        steady, cnn = [100.0] * 30, [100.0 * (1 + 0.3 * (i % 3)) for i in range(30)]
        return [(records[0], _Window(noisy)), (records[1], _Window(steady)), (records[2], _Window(cnn))]

    quiet = _timed_rounds(rows([100.0 + i % 2 for i in range(30)]), [], 6, 15, lambda _: None)
    assert {len(w) for w in quiet.values()} == {6}  # steady after the first 6 rounds: none added
    # a burst makes the first 7 rounds' ratios spread; later rounds are quiet, so the interval narrows
    bursty = [70.0, 130.0, 75.0, 125.0, 80.0, 120.0, 100.0] + [100.0] * 23
    added = _timed_rounds(rows(bursty), [], 6, 20, lambda _: None)
    assert len(added["transformer"]) == 15  # by hand: [x(4), x(12)] of 15 rounds is the first interval within 20%
    assert median_ratio([a["target_tokens_per_s"] / 100.0 for a in added["transformer"]])["ratio"] is not None
    assert median_ratio([a["target_tokens_per_s"] / 100.0 for a in added["transformer"][:-1]])["ratio"] is None
    never = [100.0 * (1 + 0.3 * (i % 3)) for i in range(30)]
    assert len(_timed_rounds(rows(never), [], 6, 15, lambda _: None)["transformer"]) == 15  # the cap


def test_the_decoding_header_counts_the_rounds_each_model_took():
    from seqbench.report.bench import markdown

    from conftest import ROOT

    # a committed run where decoding added rounds for two of three models (9, 9 and 7 per-round rates)
    result = json.loads((ROOT / "docs/results/bench/2026-12-05_interval_vocab8000/bench.json").read_text())
    taken = {row["name"]: len(row["greedy"]["rounds"]) for row in result["decoding"]}
    assert taken == {"transformer": 9, "rnn": 9, "cnn": 7}
    assert "tokens, 7-9 rounds (transformer 9, rnn 9, cnn 7) (at least 7, more up to 15" in markdown(result)
    for row in result["decoding"]:  # every model took 7: one count
        for kind in ("greedy", "beam", "greedy_uncached"):
            row[kind]["rounds"] = row[kind]["rounds"][:7]
    assert "tokens, 7 rounds (at least 7, more up to 15" in markdown(result)


def test_a_bench_headline_gives_each_records_ratios_with_their_intervals(tmp_path):
    from seqbench.report.bench import speed_headline
    from seqbench.report.headline import render

    from conftest import ROOT

    names = ["docs/results/bench/2026-12-05_interval_vocab8000", "docs/results/bench/2026-12-05_interval_vocab1000"]
    table = speed_headline([ROOT / name for name in names], names)
    large = json.loads((ROOT / names[0] / "bench.json").read_text())
    fairseq = large["training"][0]["vs_fairseq"]  # the Transformer's, worked out from the record by hand
    row = next(line for line in table.splitlines() if line.startswith("| transformer training / fairseq |"))
    assert row.split(" | ")[1].startswith(f"**{fairseq['ratio']:.2f}x** [{fairseq['interval'][0]:.2f}, "
                                          f"{fairseq['interval'][1]:.2f}]")
    assert "| rnn training / fairseq | **1.14x** [1.12, 1.16] (2,995 vs 2,635 target tokens/s) | - |" in table
    assert "CTranslate2" not in table.split("\n\n")[0]  # timed inside seqbench's process: left out, and said so
    assert "CTranslate2 rows are left out of `2026-12-05_interval_vocab8000`, `2026-12-05_interval_vocab1000`" in table
    assert "| cnn greedy: cache speed-up | **4.14x** [4.11, 4.27] | - |" in table  # the 1,000-word run: transformer
    # a ratio whose interval is too wide is not printed as a ratio
    (tmp_path / "wide").mkdir()
    large["training"][0]["vs_fairseq"]["ratio"] = None
    (tmp_path / "wide" / "bench.json").write_text(json.dumps(large))
    low, high = fairseq["interval"]
    assert f"| transformer training / fairseq | unsteady (median {fairseq['median']:.2f}x, 95% interval " \
           f"{low:.2f}-{high:.2f}x) |" in speed_headline([tmp_path / "wide"], ["wide"])
    # the block in a document is regenerated from the records; a record of the older schema is refused
    block = f"<!-- headline: {' '.join(names)} --bench -->\n"
    assert render(block + "typed\n<!-- /headline -->", ROOT) == block + table + "<!-- /headline -->"
    with pytest.raises(InputError, match="predates ratios with intervals"):
        speed_headline([ROOT / "docs/results/bench/2026-12-03_bf16"], ["old"])


def test_a_bench_headline_gives_the_engines_rows_of_a_record_made_in_its_own_process():
    from seqbench.report.bench import in_process_engine, speed_headline

    from conftest import ROOT

    name = "docs/results/bench/2026-12-06_own_process_vocab8000"
    result = json.loads((ROOT / name / "bench.json").read_text())
    assert not in_process_engine(result)
    engine = result["decoding"][0]["ctranslate2"]["float32"]
    share = engine["seqbench_share"]["greedy"]
    table = speed_headline([ROOT / name], [name])
    row = next(line for line in table.splitlines() if line.startswith("| transformer greedy / CTranslate2 float32 |"))
    assert row.split(" | ")[1].startswith(f"**{share['ratio']:.2f}x**" if share["ratio"] else "unsteady")
    assert "left out" not in table


def test_a_record_with_the_engine_in_seqbench_process_says_so():
    from seqbench.report.bench import markdown

    from conftest import ROOT

    # committed before the engine had a process of its own: its CTranslate2 rows carry no "process"
    result = json.loads((ROOT / "docs/results/bench/2026-12-05_interval_vocab8000/bench.json").read_text())
    assert "decoded by CTranslate2 inside seqbench's process (an older record)" in markdown(result)


def test_a_decoding_ab_headline_gives_each_ratio_its_interval_and_says_whether_outputs_matched(tmp_path):
    """The ratios come from the record's timed rounds by the bench's own rule (median_ratio), whatever its summary
    says; the hypotheses match only when every round's do."""
    from seqbench.measure.speed import median_ratio
    from seqbench.report.bench import decode_ab_headline
    from seqbench.report.headline import render

    rng = random.Random(0)
    rounds = []
    for i in range(8):
        for kind, spread in (("greedy", 0.01), ("beam", 0.4)):
            before = 1.0 + rng.uniform(-spread, spread)
            rounds.append({"round": i, "kind": kind, "A": {"seconds": before, "sha256": "x"},
                           "B": {"seconds": before / 1.1, "sha256": "x" if kind == "greedy" or i else "y"},
                           "ct2_seconds": 0.7 * before + rng.uniform(-spread, spread)})
    rates = {"A": 100.0, "B": 110.0, "ct2": 166.7}
    record = {"vocab": 8000, "threads": 2, "A": "abc1234", "B": "abc1234+", "rounds": rounds,
              "summary": {kind: {"sentences_per_s": rates, "B_over_A": "ignored"} for kind in ("greedy", "beam")}}
    (tmp_path / "ab.json").write_text(json.dumps(record))
    table = decode_ab_headline([tmp_path / "ab.json"], ["ab.json"])
    greedy = [r for r in rounds if r["kind"] == "greedy"]
    engine = median_ratio([r["ct2_seconds"] / r["B"]["seconds"] for r in greedy])
    low, high = engine["interval"]
    assert f"| `ab.json` | 8,000 | greedy | **1.10x** [1.10, 1.10] | yes | 100.0, 110.0, 166.7 | " \
           f"**{engine['ratio']:.2f}x** [{low:.2f}, {high:.2f}] |" in table
    beam = next(line for line in table.splitlines() if "| beam |" in line)
    assert "| **no** |" in beam and "| unsteady (median" in beam  # one round differed; the engine's rounds too noisy
    assert "before abc1234, after abc1234+, 8 rounds, 2 threads" in table
    block = "<!-- headline: ab.json --decode-ab -->\n"
    assert render(block + "typed\n<!-- /headline -->", tmp_path) == block + table + "<!-- /headline -->"
    with pytest.raises(InputError, match="no such A/B record"):
        decode_ab_headline([tmp_path / "missing.json"], ["missing.json"])
