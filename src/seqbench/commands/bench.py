"""`seqbench bench`: training and decoding speed of fixed reference models, beside plain PyTorch loops.

    seqbench bench [--families transformer,rnn,cnn] [--preset NAME ...] [--threads N] [--steps N]
                             [--warmup N] [--json OUT] [--tiny]
    seqbench bench --measure-peak [--force] [--threads N]

Every model trains on the same generated batches (PAIRS random pairs of LENGTHS tokens, fixed seed, a MAX_TOKENS token
budget through seqbench.data.batching), with AdamW and label-smoothed cross-entropy, for `--warmup` untimed steps and
`--steps` timed ones split into WINDOWS windows; each figure is the median over the windows. Baseline rows (a plain
`torch.nn.Transformer` loop, and a plain `torch.nn.LSTM` loop when the rnn family runs; seqbench.measure.baselines) run
in the same process, so every seqbench row comes with ratios measured side by side: against the nn.Transformer loop (the
common yardstick) and against the plain loop of its own shape where there is one. Training FLOPs are each model's
analytic `flops_per_token` (3x forward); a baseline counts those of the seqbench model of its shape. MFU is against the
machine's cached matmul peak (seqbench.measure.peaks), reported with its provenance, and on GPU also against the
datasheet peak.

Decoding: DECODE_SENTENCES sources, every hypothesis forced to exactly DECODE_TOKENS tokens (min_len = max_len), so
every model does the same work whatever it has learned: greedy and beam 5 with the incremental cache, and greedy
without it (`recompute_greedy`: `decode` re-run over the whole prefix at every step; greedy only, as the point is
the cost the cache saves, not a second beam search). The reference Transformer is also decoded by CTranslate2 (the
engine fairseq, OpenNMT and Marian models are served with; seqbench.decoding.ctranslate2) on the same weights,
sources, forced length and threads, in fp32 and int8, greedy and beam: every decoding figure stands beside the
engine's, with the ratios. Those rows need the ctranslate2 extra; without it the bench says so and goes on.
"""
from __future__ import annotations

import json
import os
import random
import statistics
import sys
import time
import warnings
from dataclasses import dataclass, replace

import torch
import torch.nn.functional as F

from seqbench.commands.cli import ArgumentParser
from seqbench.common.errors import InputError
from seqbench.common.io import atomic_write_text
from seqbench.common.tokens import BOS_ID, EOS_ID, PAD_ID
from seqbench.config.compose import CONF_DIR, compose
from seqbench.data.batching import collate, token_budget_batches
from seqbench.decoding.search import DecodingConfig, forbid_eos_before_min_len, length_limits, strip_at_eos
from seqbench.measure import peaks
from seqbench.measure.memory import peak_memory, reset_peak_memory
from seqbench.measure.speed import clock, decode_speed
from seqbench.models.interface import build_model
from seqbench.training.losses import label_smoothed_nll

FAMILIES = ("transformer", "rnn", "cnn")
WINDOWS = 5  # timing windows the timed steps are split into; each figure is their median
LABEL_SMOOTHING = 0.1


@dataclass(frozen=True)
class Setting:
    """The workload: shapes of the reference models and of the generated data."""
    models: dict                 # family -> model config (`_target_` and its keys)
    vocab_size: int              # source and target vocabulary (4 special ids included)
    pairs: int                   # generated training pairs
    lengths: tuple[int, int]     # source lengths drawn uniformly from this range (tokens, inclusive)
    max_tokens: int              # token budget per batch, padding included (fairseq's --max-tokens)
    decode_sentences: int        # sources decoded for the decoding rows
    decode_tokens: int           # tokens every hypothesis is forced to (min_len = max_len)
    beam_size: int
    peak_seconds: float          # matmul-peak measurement time per dtype when no cached peak exists
    seed: int = 0


# The reference configurations of issue 16, one per family, with fairseq-sized counterparts (dropout 0.1 each).
REFERENCE = Setting(
    models={
        "transformer": {"_target_": "seqbench.models.transformer.Transformer", "d_model": 256, "n_heads": 4,
                        "encoder_layers": 3, "decoder_layers": 3, "d_ff": 1024, "dropout": 0.1},
        "rnn": {"_target_": "seqbench.models.rnn.RNNSeq2Seq", "cell": "lstm", "attention": "luong_general",
                "embed_dim": 256, "hidden_size": 256, "encoder_layers": 2, "decoder_layers": 2,
                "bidirectional": True, "input_feeding": True, "dropout": 0.1},
        "cnn": {"_target_": "seqbench.models.convs2s.ConvS2S", "embed_dim": 256, "encoder_layers": [[256, 3]] * 3,
                "decoder_layers": [[256, 3]] * 3, "out_embed_dim": 256, "dropout": 0.1},
    },
    vocab_size=8000, pairs=5000, lengths=(5, 40), max_tokens=3000, decode_sentences=200, decode_tokens=23,
    beam_size=5, peak_seconds=1.0)

# `--tiny`: the same code paths at toy sizes, for the tests (seconds, not minutes).
TINY = replace(
    REFERENCE,
    models={
        "transformer": {**REFERENCE.models["transformer"], "d_model": 32, "n_heads": 2, "encoder_layers": 1,
                        "decoder_layers": 1, "d_ff": 64},
        "rnn": {**REFERENCE.models["rnn"], "embed_dim": 16, "hidden_size": 16, "encoder_layers": 1,
                "decoder_layers": 1},
        "cnn": {**REFERENCE.models["cnn"], "embed_dim": 16, "encoder_layers": [[16, 3]], "decoder_layers": [[16, 3]],
                "out_embed_dim": 16},
    },
    vocab_size=200, pairs=200, max_tokens=600, decode_sentences=12, peak_seconds=0.05)


# --- data --------------------------------------------------------------------------------------------------------

def generated_pairs(setting: Setting) -> list[tuple[int, list[int], list[int]]]:
    """(index, source ids, target ids): source lengths uniform over `lengths`, each target 0.8-1.2x its source (as
    translations are), tokens uniform over the non-special ids. Seeded: every run trains on the same batches."""
    rng = random.Random(setting.seed)
    low, high = setting.lengths
    pairs = []
    for i in range(setting.pairs):
        src_len = rng.randint(low, high)
        tgt_len = min(high, max(low, round(src_len * rng.uniform(0.8, 1.2))))
        pairs.append((i, [rng.randrange(4, setting.vocab_size) for _ in range(src_len)],
                      [rng.randrange(4, setting.vocab_size) for _ in range(tgt_len)]))
    return pairs


def make_batches(pairs, max_tokens: int, seed: int) -> list[dict]:
    """Token-budget batches (the target side counts its <eos>, as the data module does), in a seeded order."""
    groups = token_budget_batches([len(s) for _, s, _ in pairs], [len(t) + 1 for _, _, t in pairs], max_tokens,
                                  seed=seed)
    random.Random(seed).shuffle(groups)
    return [collate([pairs[i] for i in group]) for group in groups]


# --- models ------------------------------------------------------------------------------------------------------

def build(config: dict, vocab_size: int, seed: int):
    torch.manual_seed(seed)
    return build_model(config, vocab_size, vocab_size)


def baseline_models(setting: Setting, families: list[str]) -> list[tuple[str, str, object]]:
    """(name, the family whose seqbench model has its shape, model): nn.Transformer always, nn.LSTM with rnn."""
    from seqbench.measure.baselines import PlainLSTM, PlainTransformer

    t, r, v = setting.models["transformer"], setting.models["rnn"], setting.vocab_size
    torch.manual_seed(setting.seed)
    out = [("nn.Transformer", "transformer", PlainTransformer(
        v, v, t["d_model"], t["n_heads"], t["encoder_layers"], t["decoder_layers"], t["d_ff"], t["dropout"]))]
    if "rnn" in families:
        out.append(("nn.LSTM", "rnn", PlainLSTM(v, v, r["embed_dim"], r["hidden_size"], r["encoder_layers"],
                                                r["decoder_layers"], r["dropout"])))
    return out


def preset_config(name: str) -> dict:
    """conf/model/<name>.yaml as Hydra composes it for `python train.py model=<name>`, checked by its family."""
    from omegaconf import OmegaConf

    from seqbench.config.arguments import check_group_choices
    from seqbench.models.interface import family_of

    check_group_choices([f"model={name}"], str(CONF_DIR))
    config = OmegaConf.to_container(compose([f"model={name}"]).model, resolve=True)
    family_of(config).validate_config(config)
    return config


# --- training ----------------------------------------------------------------------------------------------------

def train_speed(model, batches: list[dict], warmup: int, steps: int, device: torch.device, seqbench: bool) -> dict:
    """Trains `warmup` untimed steps, then `steps` timed ones in WINDOWS windows, cycling through the batches.

    seqbench models train with the module's loss (label-smoothed, plus the plain NLL it logs); baselines with
    F.cross_entropy and the same smoothing. Tokens are non-pad target tokens (and source + target).
    """
    model.to(device).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    batches = [{k: v.to(device) for k, v in b.items()} for b in batches]

    def step(batch):
        logits = model(batch["src"], batch["src_mask"], batch["tgt_in"])
        if seqbench:
            loss = label_smoothed_nll(logits, batch["tgt_out"], LABEL_SMOOTHING)[0]
        else:
            loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), batch["tgt_out"].reshape(-1),
                                   ignore_index=PAD_ID, label_smoothing=LABEL_SMOOTHING)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()

    for i in range(warmup):
        step(batches[i % len(batches)])
    n_windows = min(WINDOWS, steps)
    bounds = [round(steps * w / n_windows) for w in range(n_windows + 1)]
    windows, sentences, src_tokens, tgt_tokens = [], 0, 0, 0
    for first, last in zip(bounds, bounds[1:]):
        chosen = [batches[(warmup + i) % len(batches)] for i in range(first, last)]
        start = clock(device)
        for batch in chosen:
            step(batch)
        seconds = clock(device) - start
        tgt = sum(int((b["tgt_out"] != PAD_ID).sum()) for b in chosen)
        src = sum(int(b["src_mask"].sum()) for b in chosen)
        windows.append({"steps": len(chosen), "seconds": seconds, "target_tokens_per_s": tgt / seconds,
                        "src_tgt_tokens_per_s": (src + tgt) / seconds, "step_time_s": seconds / len(chosen)})
        sentences += sum(b["src"].size(0) for b in chosen)
        src_tokens, tgt_tokens = src_tokens + src, tgt_tokens + tgt
    model.eval()
    return {**{key: statistics.median(w[key] for w in windows)
               for key in ("target_tokens_per_s", "src_tgt_tokens_per_s", "step_time_s")},
            "windows": windows, "warmup_steps": warmup, "timed_steps": steps,
            "mean_src_tokens": src_tokens / sentences, "mean_tgt_tokens": tgt_tokens / sentences}


# --- decoding ----------------------------------------------------------------------------------------------------

@torch.no_grad()
def recompute_greedy(model, src: torch.Tensor, src_mask: torch.Tensor, cfg: DecodingConfig) -> list[list[int]]:
    """Greedy search without the incremental cache: `decode` runs over the whole prefix at every step and only its
    last position is used. Same limits as seqbench.decoding.search (min_len, max_len), so it returns the same hypotheses
    as greedy_search, at the cost the cache saves (tests check both)."""
    encoder_out = model.encode(src, src_mask)
    limits = length_limits(src_mask, cfg)
    prefix = torch.full((src.size(0), 1), BOS_ID, dtype=torch.long, device=src.device)
    finished = torch.zeros(src.size(0), dtype=torch.bool, device=src.device)
    for step in range(int(limits.max()) + 1):
        logits = model.decode(prefix, encoder_out)[:, -1]
        tokens = forbid_eos_before_min_len(logits, step, cfg).argmax(-1)
        tokens = torch.where(finished | (step >= limits), torch.full_like(tokens, EOS_ID), tokens)
        prefix = torch.cat([prefix, tokens[:, None]], 1)
        finished |= tokens == EOS_ID
        if finished.all():
            break
    return strip_at_eos(prefix[:, 1:])


def decode_rows(model, pairs, setting: Setting, device: torch.device) -> dict:
    """Greedy and beam search with the cache and greedy without it, every hypothesis exactly decode_tokens long."""
    subset = pairs[:setting.decode_sentences]
    batches = [collate([subset[i] for i in group]) for group in token_budget_batches(
        [len(s) for _, s, _ in subset], [len(s) for _, s, _ in subset], setting.max_tokens, seed=setting.seed)]
    n = setting.decode_tokens
    exact = DecodingConfig(beam_size=1, min_len=n, max_len=n)
    greedy = decode_speed(model, batches, exact, device)
    beam = decode_speed(model, batches, replace(exact, beam_size=setting.beam_size), device)
    uncached = decode_speed(model, batches, exact, device, search=recompute_greedy)
    row = {"greedy": greedy, "beam": beam, "greedy_uncached": uncached,
           "cache_speedup_greedy": greedy["sentences_per_s"] / uncached["sentences_per_s"]}
    engine = ctranslate2_rows(model, batches, exact, setting, device)
    if engine:
        row["ctranslate2"] = engine
    return row


CTRANSLATE2_TYPES = ("float32", "int8")  # fp32: the same arithmetic; int8: what the engine is deployed with on CPU


def ctranslate2_rows(model, batches: list[dict], exact: DecodingConfig, setting: Setting,
                     device: torch.device) -> dict | None:
    """CTranslate2 decoding the same weights and batches, greedy and beam, per compute type: {type: {"greedy",
    "beam"}, "vs_seqbench": filled in by the caller}; None when the model does not convert or the engine is missing."""
    import tempfile

    try:
        import ctranslate2  # noqa: F401 - the optional extra

        from seqbench.decoding.ctranslate2 import Engine, check_convertible, convert, numbered_vocabulary
        check_convertible(model)
    except (ImportError, InputError):
        return None
    tokens = numbered_vocabulary(setting.vocab_size)
    rows = {}
    with tempfile.TemporaryDirectory() as folder:
        convert(model.cpu().eval(), tokens, tokens, f"{folder}/model")
        model.to(device)
        for compute_type in CTRANSLATE2_TYPES:
            engine = Engine(f"{folder}/model", tokens, tokens, device=device.type, compute_type=compute_type)

            def search(_model, src, src_mask, cfg, engine=engine):
                return engine.generate([row[mask].tolist() for row, mask in zip(src, src_mask)], cfg)

            rows[compute_type] = {"greedy": decode_speed(model, batches, exact, device, search=search),
                                  "beam": decode_speed(model, batches, replace(exact, beam_size=setting.beam_size),
                                                       device, search=search)}
    return rows


# --- the benchmark -----------------------------------------------------------------------------------------------

def _flops(model, speed: dict, cached: dict, device: torch.device) -> dict:
    name = peaks.device_name(device)
    datasheet = peaks.datasheet_peak(name, "float32") if device.type == "cuda" else None
    return peaks.training_flops(model, speed["mean_src_tokens"], speed["mean_tgt_tokens"],
                                speed["target_tokens_per_s"], cached, "float32", datasheet)


def run_bench(setting: Setting, families: list[str], presets: dict[str, dict], warmup: int, steps: int,
              device: torch.device, cache_dir: str, log=print) -> dict:
    """The training and decoding rows of the reference `families` and the `presets` ({name: model config})."""
    cached = peaks.cached_peaks(device, cache_dir, setting.peak_seconds)
    pairs = generated_pairs(setting)
    batches = make_batches(pairs, setting.max_tokens, setting.seed)
    models = [(family, family, setting.models[family]) for family in families]
    models += [(f"preset {name}", None, config) for name, config in presets.items()]
    twins, training, decoding = {}, [], []
    for name, family, config in models:
        model = build(config, setting.vocab_size, setting.seed)
        if family:
            twins[family] = model
        log(f"training {name} ...")
        reset_peak_memory()
        speed = train_speed(model, batches, warmup, steps, device, seqbench=True)
        training.append({"name": name, "kind": "seqbench", "config": config, "parameters": model.num_parameters(),
                         **speed, "flops": _flops(model, speed, cached, device),
                         "memory": peak_memory(device)})
        log(f"decoding {name} ...")
        decoding.append({"name": name, **decode_rows(model, pairs, setting, device)})
        if family == "transformer" and "ctranslate2" not in decoding[-1]:
            log("no CTranslate2 rows: pip install 'seqbench[ctranslate2]' to decode beside the engine")
        model.cpu()
    for name, shape_of, model in baseline_models(setting, families):
        log(f"training {name} ...")
        reset_peak_memory()
        speed = train_speed(model, batches, warmup, steps, device, seqbench=False)
        # FLOPs of the seqbench model of the same shape: the same products (the plain model has no flops_per_token)
        twin = twins.get(shape_of) or build(setting.models[shape_of], setting.vocab_size, setting.seed)
        training.append({"name": name, "kind": "baseline", "shape_of": shape_of,
                         "parameters": sum(p.numel() for p in model.parameters()), **speed,
                         "flops": _flops(twin, speed, cached, device), "memory": peak_memory(device)})
        model.cpu()
    _add_ratios(training)
    return {"machine": {"device": peaks.device_name(device), "device_type": device.type,
                        "threads": torch.get_num_threads(), "dtype": "float32", "peaks": cached,
                        "torch": torch.__version__},
            "settings": {"warmup_steps": warmup, "timed_steps": steps, "windows": min(WINDOWS, steps),
                         "vocab_size": setting.vocab_size, "pairs": setting.pairs, "lengths": list(setting.lengths),
                         "max_tokens": setting.max_tokens, "batches": len(batches),
                         "decode_sentences": setting.decode_sentences, "decode_tokens": setting.decode_tokens,
                         "beam_size": setting.beam_size, "seed": setting.seed, "optimizer": "AdamW(lr=1e-4)",
                         "label_smoothing": LABEL_SMOOTHING},
            "training": training, "decoding": decoding}


def _add_ratios(training: list[dict]) -> None:
    """Each seqbench row's target tokens/s over the nn.Transformer loop's and over the plain loop of its shape."""
    baselines = {row["shape_of"]: row for row in training if row["kind"] == "baseline"}
    yardstick = baselines["transformer"]["target_tokens_per_s"]
    for row in training:
        row["vs_nn_transformer"] = row["target_tokens_per_s"] / yardstick
        same = baselines.get(row["name"]) if row["kind"] == "seqbench" else None
        row["vs_same_shape_baseline"] = (
            {"baseline": same["name"], "ratio": row["target_tokens_per_s"] / same["target_tokens_per_s"]}
            if same else None)


# --- output ------------------------------------------------------------------------------------------------------

def markdown(result: dict) -> str:
    machine, settings = result["machine"], result["settings"]
    peak = machine["peaks"]["float32"]
    busy = peak.get("cpu_busy_fraction")
    idle = {True: "cores idle", False: "cores busy", None: "load unknown"}[peak["cores_idle"]] + \
        (f": {busy:.0%} busy just before" if busy is not None else "")
    lines = [f"device: {machine['device']} ({machine['device_type']}), {machine['threads']} threads, fp32, "
             f"torch {machine['torch']}",
             f"MFU denominator: fp32 matmul peak {peak['flops_per_s'] / 1e9:,.0f} GFLOP/s ({peak['source']}; measured "
             f"{peak['measured_at']}, n={peak['matrix_size']}, {peak['measure_seconds']:.1f} s, {idle})",
             f"training: {settings['pairs']:,} generated pairs, lengths {settings['lengths'][0]}-"
             f"{settings['lengths'][1]}, vocab {settings['vocab_size']:,}, {settings['max_tokens']:,}-token batches; "
             f"median of {settings['windows']} windows over {settings['timed_steps']} steps after "
             f"{settings['warmup_steps']} warm-up steps", "",
             "| model | params | tgt tok/s | src+tgt tok/s | step ms | GFLOP/s | MFU | peak MB "
             "| x nn.Transformer | x same-shape loop |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for row in result["training"]:
        same = row["vs_same_shape_baseline"]
        same = f"{same['ratio']:.2f} ({same['baseline']})" if same else "-"
        memory = row["memory"]["cuda_max_allocated_mb"] or row["memory"]["cpu_rss_peak_mb"]
        mfu = f"{row['flops']['mfu']:.1%}"
        if row["flops"]["mfu_datasheet"] is not None:
            mfu += f" ({row['flops']['mfu_datasheet']:.1%} of datasheet)"
        lines.append(f"| {row['name']} | {row['parameters'] / 1e6:.2f}M | {row['target_tokens_per_s']:,.0f} "
                     f"| {row['src_tgt_tokens_per_s']:,.0f} | {1000 * row['step_time_s']:,.0f} "
                     f"| {row['flops']['achieved_train_flops_per_s'] / 1e9:,.1f} | {mfu} | {memory:,.0f} "
                     f"| {row['vs_nn_transformer']:.2f} "
                     f"| {same} |")
    lines += ["", f"decoding: {settings['decode_sentences']} sentences, every hypothesis exactly "
                  f"{settings['decode_tokens']} tokens; sentences/s (target tokens/s)", "",
              f"| model | greedy | beam {settings['beam_size']} | greedy, no cache | cache speed-up (greedy) |",
              "|---|---|---|---|---|"]
    for row in result["decoding"]:
        cells = [f"{row[k]['sentences_per_s']:,.1f} ({row[k]['target_tokens_per_s']:,.0f})"
                 for k in ("greedy", "beam", "greedy_uncached")]
        lines.append(f"| {row['name']} | {' | '.join(cells)} | {row['cache_speedup_greedy']:.2f}x |")
    engine_rows = [row for row in result["decoding"] if "ctranslate2" in row]
    if engine_rows:
        lines += ["", "the same weights decoded by CTranslate2 (same sources, forced length and threads); "
                      "sentences/s, and seqbench's speed as a share of the engine's", "",
                  f"| model | engine | greedy | beam {settings['beam_size']} | seqbench / engine, greedy "
                  f"| seqbench / engine, beam {settings['beam_size']} |", "|---|---|---|---|---|---|"]
        for row in engine_rows:
            for compute_type, engine in row["ctranslate2"].items():
                ratios = [row[k]["sentences_per_s"] / engine[k]["sentences_per_s"] for k in ("greedy", "beam")]
                lines.append(f"| {row['name']} | CTranslate2 {compute_type} "
                             f"| {engine['greedy']['sentences_per_s']:,.1f} | {engine['beam']['sentences_per_s']:,.1f} "
                             f"| {ratios[0]:.2f}x | {ratios[1]:.2f}x |")
    return "\n".join(lines)


def _usable_cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def parse_args(argv: list[str] | None):
    parser = ArgumentParser(prog="seqbench bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--families", default=",".join(FAMILIES),
                        help="comma-separated reference models to run (default: all of transformer,rnn,cnn)")
    parser.add_argument("--preset", action="append", default=[], metavar="NAME",
                        help="also bench a model preset, conf/model/NAME.yaml (repeatable)")
    parser.add_argument("--threads", type=int, default=_usable_cores(),
                        help="torch intra-op threads (default: the cores this process may use)")
    parser.add_argument("--steps", type=int, help="timed training steps per model (default 40; --tiny 4)")
    parser.add_argument("--warmup", type=int, help="untimed training steps first (default 5; --tiny 1)")
    parser.add_argument("--decode-tokens", type=int, metavar="N",
                        help="tokens every decoded hypothesis is forced to (default 23, as peers are benchmarked; "
                             "longer hypotheses show the cache's gain growing with length)")
    parser.add_argument("--json", default="bench.json", metavar="OUT", help="where to write the results")
    parser.add_argument("--tiny", action="store_true", help="toy shapes and few steps (the tests run this)")
    parser.add_argument("--measure-peak", action="store_true",
                        help="only measure this machine's matmul peaks (3 s per dtype; cached ones are kept) "
                             "and print them")
    parser.add_argument("--force", action="store_true", help="with --measure-peak: re-measure cached peaks too")
    args = parser.parse_args(argv)
    args.families = [f for f in args.families.split(",") if f]
    unknown = [f for f in args.families if f not in FAMILIES]
    if unknown or not (args.families or args.preset):
        parser.error(f"--families={','.join(args.families)}: choose from {','.join(FAMILIES)} (or give --preset)")
    if args.force and not args.measure_peak:
        parser.error("--force re-measures the cached peak: use it with --measure-peak")
    for key in ("threads", "steps", "decode_tokens"):
        if getattr(args, key) is not None and getattr(args, key) < 1:
            parser.error(f"--{key.replace('_', '-')}={getattr(args, key)}: must be a positive integer")
    if args.warmup is not None and args.warmup < 0:
        parser.error(f"--warmup={args.warmup}: must be >= 0")
    args.steps = args.steps or (4 if args.tiny else 40)
    args.warmup = args.warmup if args.warmup is not None else (1 if args.tiny else 5)
    return args


def _cache_dir() -> str:
    return compose([]).paths.cache_dir  # conf/paths/default.yaml: the same cache every run uses


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    torch.set_num_threads(args.threads)  # before the peak: it is cached per thread count
    warnings.filterwarnings("ignore", message=".*enable_nested_tensor.*")  # nn.Transformer's note on its fast path
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    setting = TINY if args.tiny else REFERENCE
    if args.decode_tokens:
        setting = replace(setting, decode_tokens=args.decode_tokens)
    if args.measure_peak:
        print(json.dumps(peaks.cached_peaks(device, _cache_dir(), setting.peak_seconds * 3, force=args.force),
                         indent=2))
        return 0
    presets = {name: preset_config(name) for name in args.preset}  # a bad name fails before any work
    started = time.perf_counter()
    result = run_bench(setting, args.families, presets, args.warmup, args.steps, device, _cache_dir(),
                       log=lambda message: print(message, file=sys.stderr, flush=True))
    result = {"command": "seqbench bench " + " ".join(sys.argv[1:] if argv is None else argv),
              "tiny": args.tiny, "wall_time_s": time.perf_counter() - started, **result}
    atomic_write_text(args.json, json.dumps(result, indent=2, default=str) + "\n")
    print(markdown(result))
    print(f"\nresults: {args.json}")
    return 0

