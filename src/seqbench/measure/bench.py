"""What `seqbench bench` measures: training and decoding speed of the reference models (seqbench.measure.workload)
beside plain PyTorch loops, CTranslate2 and, when installed, fairseq, on the same batches, threads and steps.

Training: `warmup` untimed steps per model, then at least `rounds` rounds; in each round every row trains one
window, a pass over the same steps / rounds batches, the rows of one shape back to back in an order that reverses
every round (fairseq over exactly those batches' sentences, an epoch after a warm-up epoch, in a fairseq-train
process of its own: seqbench.measure.fairseq). Each rate is the median over a row's windows, with their spread
(seqbench.measure.speed.steadiness); each ratio is the median of the per-round ratios, so a host whose speed drifts
over minutes (seen: 10-30% on a shared 2-core VM) moves both sides of a ratio alike, with a 95% interval for that
median (seqbench.measure.speed.median_ratio). A ratio whose interval is wider than MAX_INTERVAL is not given; rounds
are added, up to `max_rounds`, until every ratio of a shape (seqbench over its plain loop, fairseq, fp32) is given:
repeated until stable.
Baseline rows (a plain `torch.nn.Transformer` loop, and a plain `torch.nn.LSTM` loop when the rnn family runs;
seqbench.measure.baselines) run in seqbench's process, as its own models do. Training FLOPs are each model's
analytic `flops_per_token` (3x forward); a baseline counts those of the seqbench model of its shape. MFU is against
the machine's matmul peak (seqbench.measure.peaks), with its provenance.

Decoding: decode_sentences sources, every hypothesis forced to exactly decode_tokens tokens (min_len = max_len), so
every model does the same work whatever it has learned: greedy and beam with the incremental cache, and greedy
without it (seqbench.decoding.recompute), in seqbench's process. The reference Transformer is also decoded by
CTranslate2 on the same weights (seqbench.decoding.ctranslate2.convert), sources, forced length and threads, in fp32
and int8, each in a process of its own as a user runs the engine (seqbench.measure.ctranslate2_process: only
CTranslate2 loaded there, not torch), which times its passes itself. Decoding is timed in rounds too, every pass of
a round in turn, the engines' included, until the cache's speed-up and seqbench's share of each engine are given or
`max_rounds` are done (`decoding_row`).
"""
from __future__ import annotations

import contextlib
import os
import statistics
import tempfile
from dataclasses import replace

import torch
import torch.nn.functional as F

from seqbench.common.errors import InputError
from seqbench.common.tokens import PAD_ID
from seqbench.decoding.recompute import recompute_greedy
from seqbench.decoding.search import DecodingConfig, generate
from seqbench.measure import peaks
from seqbench.measure.memory import peak_memory, reset_peak_memory
from seqbench.measure.speed import clock, decode_speed, median_ratio, steadiness
from seqbench.measure.workload import Setting, baseline_models, build, decode_batches, generated_pairs, make_batches
from seqbench.models import linear
from seqbench.models.losses import label_smoothed_nll

ROUNDS = 7  # timing rounds the timed training steps are split into (`seqbench bench --rounds`): 6 at least give a
MAX_ROUNDS = 15  # 95% interval of a median; rounds added until every ratio is steady, at most this many
LABEL_SMOOTHING = 0.1
CTRANSLATE2_TYPES = ("float32", "int8")  # fp32: the same arithmetic; int8: what the engine is deployed with on CPU


def timing_batches(batches: list[dict], steps: int, rounds: int = ROUNDS) -> list[dict]:
    """The batches one timing window trains on: steps / rounds of them (at least one). Every window trains on the
    same ones, so the windows differ only by noise."""
    return batches[:max(1, steps // rounds)]


class TrainingRow:
    """One model training, a timing window at a time, so the bench can time every row's window in turn (rounds):
    a host that speeds up or slows down over minutes then moves every row of a round alike.

    seqbench models train with the module's loss (label-smoothed, plus the plain NLL it logs); baselines with
    F.cross_entropy and the same smoothing. Tokens are non-pad target tokens (and source + target)."""

    def __init__(self, model, device: torch.device, seqbench: bool, bf16: bool = False):
        self.model, self.device, self.seqbench, self.bf16 = model.to(device).train(), device, seqbench, bf16
        self.optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)

    def step(self, batch: dict) -> None:
        with autocast(self.device, self.bf16):  # what trainer.precision=bf16-mixed does: fp32 weights, bf16 products
            logits = self.model(batch["src"], batch["src_mask"], batch["tgt_in"])
        if self.seqbench:
            loss = label_smoothed_nll(logits, batch["tgt_out"], LABEL_SMOOTHING)[0]
        else:
            loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), batch["tgt_out"].reshape(-1),
                                   ignore_index=PAD_ID, label_smoothing=LABEL_SMOOTHING)
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.optimizer.step()

    def warm_up(self, batches: list[dict]) -> dict:
        """Untimed steps (the allocator, the kernels' first calls); returns the peak memory they reached."""
        reset_peak_memory()
        for batch in batches:
            self.step(batch)
        return peak_memory(self.device)

    def window(self, batches: list[dict]) -> dict:
        start = clock(self.device)
        for batch in batches:
            self.step(batch)
        seconds = clock(self.device) - start
        tgt = sum(int((b["tgt_out"] != PAD_ID).sum()) for b in batches)
        src = sum(int(b["src_mask"].sum()) for b in batches)
        return {"steps": len(batches), "seconds": seconds, "target_tokens_per_s": tgt / seconds,
                "src_tgt_tokens_per_s": (src + tgt) / seconds, "step_time_s": seconds / len(batches)}


def autocast(device: torch.device, bf16: bool):
    """bf16 autocast on the device (Lightning's bf16-mixed), or nothing."""
    import contextlib

    return torch.autocast(device.type, dtype=torch.bfloat16) if bf16 else contextlib.nullcontext()


def summary(windows: list[dict], warmup: int) -> dict:
    """A row's rates: the median over its windows, with their spread."""
    rate = steadiness([w["target_tokens_per_s"] for w in windows])
    return {**{key: statistics.median(w[key] for w in windows if w.get(key) is not None)
               for key in ("target_tokens_per_s", "step_time_s")},
            "src_tgt_tokens_per_s": statistics.median(w["src_tgt_tokens_per_s"] for w in windows)
            if all(w.get("src_tgt_tokens_per_s") for w in windows) else None,
            "spread": rate["spread"], "steady": rate["steady"], "windows": windows, "warmup_steps": warmup,
            "timed_steps": sum(w["steps"] for w in windows)}


def merged(passes: list[dict]) -> dict:
    """One decoding row from its per-round passes (each a one-window decode_speed): median rate, spread."""
    rates = steadiness([p["sentences_per_s"] for p in passes])
    first = passes[0]
    return {"beam_size": first["beam_size"], "sentences": first["sentences"], "target_tokens": first["target_tokens"],
            "seconds": statistics.median(p["seconds"] for p in passes), "sentences_per_s": rates["median"],
            "target_tokens_per_s": rates["median"] * first["target_tokens"] / first["sentences"],
            "spread": rates["spread"], "steady": rates["steady"], "windows": len(passes),
            "rounds": [p["sentences_per_s"] for p in passes]}


def round_ratio(a: dict, b: dict) -> dict:
    """The median of the per-round ratios of two decoding rows' rates (passes or merged rows), with its interval
    (seqbench.measure.speed.median_ratio): "ratio" is None when the interval is too wide."""
    rates = [[p["sentences_per_s"] for p in row] if isinstance(row, list) else row["rounds"] for row in (a, b)]
    return median_ratio([x / y for x, y in zip(*rates)])


def decoding_row(model, batches: list[dict], setting: Setting, device: torch.device, rounds: int,
                 bf16: bool = False, engines: bool = True, max_rounds: int | None = None) -> dict:
    """Greedy and beam search with the cache and greedy without it, every hypothesis exactly decode_tokens long,
    and (with `engines`, for a model that converts) the same weights decoded by CTranslate2 per compute type, each
    in a process of its own (`_engine_processes`). Each round times one pass of every one in turn, so a drift of the
    host falls on all alike; the cache's speed-up and seqbench's share of each engine are medians of per-round
    ratios, timed in at least `rounds` rounds and more, up to `max_rounds`, until each is steady. Every decoder is
    warmed up in the first round: the engines stay loaded, idle in their processes while seqbench decodes."""
    n = setting.decode_tokens
    exact = DecodingConfig(beam_size=1, min_len=n, max_len=n)
    beam = replace(exact, beam_size=setting.beam_size)
    context = lambda: autocast(device, bf16)  # noqa: E731
    ours = {"greedy": (exact, generate), "beam": (beam, generate), "greedy_uncached": (exact, recompute_greedy)}
    with tempfile.TemporaryDirectory() as folder, contextlib.ExitStack() as stack:
        workers = _engine_processes(model, setting, device, folder, stack) if engines else {}
        sources = _source_tokens(batches, setting) if workers else []
        passes: dict = {}
        for round_ in range(max(rounds, max_rounds or rounds)):
            if round_ >= rounds and all(ratio["ratio"] is not None for ratio in _decoding_ratios(passes)):
                break
            for kind, (cfg, search) in ours.items():
                passes.setdefault(kind, []).append(decode_speed(model, batches, cfg, device, int(round_ == 0),
                                                                context, search))
            for compute_type, worker in workers.items():
                for kind, cfg in (("greedy", exact), ("beam", beam)):
                    passes.setdefault((compute_type, kind), []).append(
                        engine_pass(worker, sources, cfg, int(round_ == 0)))
    row = {kind: merged(passes[kind]) for kind in ours}
    row["cache_speedup_greedy"] = round_ratio(row["greedy"], row["greedy_uncached"])
    if workers:
        row["ctranslate2"] = {}
        for compute_type, worker in workers.items():
            speeds = {kind: merged(passes[(compute_type, kind)]) for kind in ("greedy", "beam")}
            speeds["seqbench_share"] = {kind: round_ratio(row[kind], speeds[kind]) for kind in ("greedy", "beam")}
            # where it ran, so records made with the engine inside seqbench's process (no "process") stay apart
            speeds.update(process="own", pid=worker.pid, bench_pid=os.getpid(), torch_loaded=worker.torch_loaded)
            row["ctranslate2"][compute_type] = speeds
    return row


def _decoding_ratios(passes: dict) -> list[dict]:
    """The ratios a decoding row reports, from the passes so far: the cache's speed-up, seqbench's share of each
    engine (its passes keyed (compute type, kind))."""
    engines = [key for key in passes if isinstance(key, tuple)]
    return [round_ratio(passes["greedy"], passes["greedy_uncached"])] + \
        [round_ratio(passes[kind], passes[(compute_type, kind)]) for compute_type, kind in engines]


def _engine_processes(model, setting: Setting, device: torch.device, folder: str, stack: contextlib.ExitStack):
    """The model converted for CTranslate2 into folder/model and loaded by a worker process per compute type, with
    the bench's threads ({compute type: EngineProcess}, closed by `stack`); none when the engine is missing or the
    model does not convert."""
    try:
        import ctranslate2  # noqa: F401 - the optional extra

        from seqbench.decoding.ctranslate2 import check_convertible, convert, numbered_vocabulary
        check_convertible(model)
    except (ImportError, InputError):
        return {}
    from seqbench.measure.ctranslate2_process import EngineProcess

    tokens = numbered_vocabulary(setting.vocab_size)
    weights_on = next(model.parameters()).device
    convert(model.cpu().eval(), tokens, tokens, f"{folder}/model")
    model.to(weights_on)
    return {compute_type: stack.enter_context(EngineProcess(f"{folder}/model", compute_type,
                                                            torch.get_num_threads(), device.type))
            for compute_type in CTRANSLATE2_TYPES}


def _source_tokens(batches: list[dict], setting: Setting) -> list[list[list[str]]]:
    """The batches' sources as the token strings the converted model's vocabulary holds (numbered_vocabulary)."""
    from seqbench.decoding.ctranslate2 import numbered_vocabulary

    tokens = numbered_vocabulary(setting.vocab_size)
    return [[[tokens[i] for i in row[mask].tolist()] for row, mask in zip(batch["src"], batch["src_mask"])]
            for batch in batches]


def engine_pass(worker, sources: list[list[list[str]]], cfg: DecodingConfig, warmup: int) -> dict:
    """One pass of an engine in its own process over every batch, timed there, as decode_speed's record: every
    hypothesis forced to cfg.max_len tokens (cfg.min_len = cfg.max_len, one length limit for every sentence)."""
    from seqbench.decoding.ctranslate2 import decoding_options

    reply = worker.decode(sources, decoding_options(cfg, cfg.max_len), warmup)
    sentences, tokens, seconds = len(reply["hypotheses"]), sum(map(len, reply["hypotheses"])), reply["seconds"]
    return {"beam_size": cfg.beam_size, "sentences": sentences, "target_tokens": tokens, "seconds": seconds,
            "sentences_per_s": sentences / seconds, "target_tokens_per_s": tokens / seconds}


def _flops(model, speed: dict, cached: dict, device: torch.device, dtype: str = "float32") -> dict:
    datasheet = peaks.datasheet_peak(peaks.device_name(device), dtype) if device.type == "cuda" else None
    return peaks.training_flops(model, speed["mean_src_tokens"], speed["mean_tgt_tokens"],
                                speed["target_tokens_per_s"], cached, dtype, datasheet)


def run_bench(setting: Setting, families: list[str], presets: dict[str, dict], warmup: int, steps: int,
              device: torch.device, cache_dir: str | None, log=print, fairseq: str | None = None,
              rounds: int = ROUNDS, bf16: bool = False, max_rounds: int = MAX_ROUNDS) -> dict:
    """The training and decoding rows of the reference `families` and the `presets` ({name: model config});
    `fairseq`: a virtual environment with fairseq, whose rows train the same families on the same sentences (its
    tools are checked before anything is measured); `bf16`: every seqbench model also trains and decodes with bf16
    autocast, as a row of its own ("<name> bf16"). Training is timed in rounds: each round times one window of every
    row in turn, `rounds` of them and more, up to `max_rounds`, until every same-shape ratio is steady."""
    if fairseq is not None:
        from seqbench.measure.fairseq import check_installed

        check_installed(fairseq)
    cached = peaks.cached_peaks(device, cache_dir, setting.peak_seconds)
    pairs = generated_pairs(setting)
    batches = [{k: v.to(device) for k, v in b.items()} for b in make_batches(pairs, setting.max_tokens, setting.seed)]
    adding = max_rounds > rounds  # rounds may be added to make a ratio steady (not so with --tiny)
    decode_rounds, rounds = rounds, min(rounds, steps)  # a training window trains one batch at least
    max_rounds, train_max_rounds = max(decode_rounds, max_rounds), max_rounds if adding else rounds
    window = timing_batches(batches, steps, rounds)
    warm = [batches[len(window) + i % max(1, len(batches) - len(window))] for i in range(warmup)]
    models = [(family, family, setting.models[family]) for family in families]
    models += [(f"preset {name}", None, config) for name, config in presets.items()]
    rows, decoding, twins = _seqbench_rows(models, setting, decode_batches(pairs, setting), warm, device, bf16,
                                           decode_rounds, max_rounds, log)
    rows += _baseline_rows(setting, families, warm, device)
    with tempfile.TemporaryDirectory() as work:
        if fairseq is not None:
            from seqbench.measure.fairseq import FairseqRow

            sentences = [pairs[int(i)] for batch in window for i in batch["index"]]
            rows += [({"name": f"fairseq {family}", "kind": "fairseq", "shape_of": family, "parameters": None,
                       "twin": family, "memory": {"cpu_rss_peak_mb": None, "cuda_max_allocated_mb": None}},
                      FairseqRow(fairseq, setting, family, sentences, device, work)) for family in families]
        windows = _timed_rounds(rows, window, rounds, train_max_rounds, log)
    training = _training_records(rows, windows, window, warmup, twins, cached, device)
    return {"machine": {"device": peaks.device_name(device), "device_type": device.type,
                        "threads": torch.get_num_threads(), "dtype": "float32", "peaks": cached,
                        "torch": torch.__version__, "onednn_linear": linear.ENABLED},
            "settings": {"warmup_steps": warmup, "timed_steps": steps, "windows": len(next(iter(windows.values()))),
                         "min_rounds": rounds, "max_rounds": train_max_rounds, "decode_rounds": decode_rounds,
                         "decode_max_rounds": max_rounds,
                         "vocab_size": setting.vocab_size, "pairs": setting.pairs,
                         "lengths": list(setting.lengths), "max_tokens": setting.max_tokens,
                         "batches": len(batches), "window_batches": len(window),
                         "decode_sentences": setting.decode_sentences,
                         "decode_tokens": setting.decode_tokens, "beam_size": setting.beam_size,
                         "seed": setting.seed, "optimizer": "AdamW(lr=1e-4)", "label_smoothing": LABEL_SMOOTHING},
            "training": training, "decoding": decoding}


def _seqbench_rows(models, setting: Setting, to_decode, warm, device: torch.device, bf16: bool, rounds: int,
                   max_rounds: int, log):
    """Each seqbench model (name, family or None, config): its decoding row, measured now, and its training row,
    warmed up (timed later in rounds); with `bf16` a twin of each under autocast. Returns the training rows as
    (record, runner), the decoding rows, and {family or name: model}, whose FLOPs every row of that shape counts."""
    rows, decoding, twins = [], [], {}
    for name, family, config in models:
        model = build(config, setting.vocab_size, setting.seed)
        twins[family or name] = model
        log(f"decoding {name} ...")
        row = {"name": name, **decoding_row(model, to_decode, setting, device, rounds, max_rounds=max_rounds)}
        if "ctranslate2" not in row and family == "transformer":
            log("no CTranslate2 rows: pip install 'seqbench[ctranslate2]' to decode beside the engine")
        decoding.append(row)
        runner = TrainingRow(model, device, seqbench=True)
        rows.append(({"name": name, "kind": "seqbench", "config": config, "parameters": model.num_parameters(),
                      "memory": runner.warm_up(warm), "twin": family or name}, runner))
        if bf16:
            twin = build(config, setting.vocab_size, setting.seed)
            decoding.append({"name": f"{name} bf16", **decoding_row(twin, to_decode, setting, device, rounds,
                                                                    bf16=True, engines=False,
                                                                    max_rounds=max_rounds)})
            runner = TrainingRow(twin, device, seqbench=True, bf16=True)
            rows.append(({"name": f"{name} bf16", "kind": "bf16", "shape_of": family or name, "config": config,
                          "parameters": twin.num_parameters(), "memory": runner.warm_up(warm),
                          "twin": family or name}, runner))
    return rows, decoding, twins


def _baseline_rows(setting: Setting, families: list[str], warm, device: torch.device) -> list:
    """The plain-PyTorch models of the reference families' shapes, warmed up, as (record, runner)."""
    rows = []
    for name, shape_of, model in baseline_models(setting, families):
        runner = TrainingRow(model, device, seqbench=False)
        rows.append(({"name": name, "kind": "baseline", "shape_of": shape_of,
                      "parameters": sum(p.numel() for p in model.parameters()), "memory": runner.warm_up(warm),
                      "twin": shape_of}, runner))
    return rows


def round_order(records: list[dict], round_: int) -> list[int]:
    """The order of the rows in a round: the rows of one shape (a seqbench model, its plain-PyTorch loop, its fairseq
    row, its bf16 twin: the same "twin") back to back, so the windows of a ratio are timed minutes closer than when
    every other row's window falls between them; within a shape, the order reverses every other round (A B, B A), so a
    host whose speed drifts within a round slows each side of a ratio first as often as second."""
    shapes: dict[str, list[int]] = {}
    for i, record in enumerate(records):
        shapes.setdefault(record["twin"], []).append(i)
    return [i for members in shapes.values() for i in (members if round_ % 2 == 0 else members[::-1])]


def _timed_rounds(rows, window, rounds: int, max_rounds: int, log) -> dict[str, list[dict]]:
    """Each round times one window of every row (in round_order), so a drift of the host falls on every row alike;
    after `rounds` rounds, another while a same-shape ratio is not steady, up to `max_rounds`."""
    windows: dict[str, list[dict]] = {record["name"]: [] for record, _ in rows}
    pairs = [(name, other) for name, compared in comparisons([record for record, _ in rows]).items()
             for key, other in compared.items() if key != "vs_nn_transformer"]  # across shapes: minutes apart
    for round_ in range(max_rounds):
        if round_ >= rounds and all(_ratio(windows[a], windows[b])["ratio"] is not None for a, b in pairs):
            break
        log(f"training round {round_ + 1} (at least {rounds}, at most {max_rounds}): {', '.join(windows)}")
        for i in round_order([record for record, _ in rows], round_):
            record, runner = rows[i]
            windows[record["name"]].append(runner.window(window))
    return windows


def _training_records(rows, windows, window, warmup: int, twins, cached, device: torch.device) -> list[dict]:
    """Each training row's record: its speed over the rounds, the window's mean lengths, FLOPs and MFU, ratios."""
    sentences = sum(b["src"].size(0) for b in window)
    lengths = {"mean_src_tokens": sum(int(b["src_mask"].sum()) for b in window) / sentences,
               "mean_tgt_tokens": sum(int((b["tgt_out"] != PAD_ID).sum()) for b in window) / sentences}
    training = []
    for record, runner in rows:
        speed = {**summary(windows[record["name"]], warmup), **lengths}
        if record["kind"] == "fairseq":
            record["parameters"] = runner.parameters
        # FLOPs of the seqbench model of the same shape: the same products (the others have no flops_per_token)
        twin = twins[record.pop("twin")]
        dtype = "bfloat16" if record["kind"] == "bf16" else "float32"  # each row's MFU against its own peak
        training.append({**record, **speed, "flops": _flops(twin, speed, cached, device, dtype)})
    add_ratios(training)
    return training


def _ratio(windows: list[dict], others: list[dict]) -> dict:
    """One row's target tokens/s over another's, round by round (windows timed side by side): the median ratio with
    its interval, None as the ratio when the interval is too wide (seqbench.measure.speed.median_ratio)."""
    return median_ratio([a["target_tokens_per_s"] / b["target_tokens_per_s"] for a, b in zip(windows, others)])


RATIO_NAMES = {"vs_nn_transformer": "baseline", "vs_same_shape_baseline": "baseline", "vs_fairseq": "fairseq",
               "vs_fp32": "fp32"}  # each ratio's record names the row it divides by under this key


def comparisons(records: list[dict]) -> dict[str, dict[str, str]]:
    """{row name: {ratio: the row it is divided by}}: every row over the nn.Transformer loop; a seqbench row over
    the plain loop of its shape and fairseq's model of its family (when there are ones); a bf16 row over its fp32
    twin."""
    baselines = {r["shape_of"]: r["name"] for r in records if r["kind"] == "baseline"}
    fairseq = {r["shape_of"]: r["name"] for r in records if r["kind"] == "fairseq"}
    seqbench = {r["name"] for r in records if r["kind"] == "seqbench"}
    compared = {}
    for r in records:
        others = {"vs_nn_transformer": baselines["transformer"]}
        if r["kind"] == "seqbench":
            others.update({key: by[r["name"]] for key, by in (("vs_same_shape_baseline", baselines),
                                                              ("vs_fairseq", fairseq)) if r["name"] in by})
        if r["kind"] == "bf16" and r.get("shape_of") in seqbench:
            others["vs_fp32"] = r["shape_of"]
        compared[r["name"]] = others
    return compared


def add_ratios(training: list[dict]) -> None:
    """Each row's ratios (`comparisons`) as {"<the other's role>": name, ratio, median, interval, rounds}; None
    where a row has no such comparison."""
    rows = {row["name"]: row for row in training}
    for name, compared in comparisons(training).items():
        row = rows[name]
        for key, other in RATIO_NAMES.items():
            by = compared.get(key)
            row[key] = {other: by, **_ratio(row["windows"], rows[by]["windows"])} if by else None
