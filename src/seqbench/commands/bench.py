"""`seqbench bench`: training and decoding speed of fixed reference models, beside plain PyTorch loops, CTranslate2
and (when installed) fairseq; what it measures and how: seqbench.measure.bench.

    seqbench bench [--families transformer,rnn,cnn] [--preset NAME ...] [--threads N] [--steps N] [--rounds N]
                   [--max-rounds N] [--warmup N] [--decode-tokens N] [--vocab-size N] [--fairseq VENV] [--bf16]
                   [--out DIR] [--tiny]
    seqbench bench --measure-peak [--force] [--threads N]
    seqbench bench --gpu-check [--tiny] [--out DIR]      (seqbench.measure.gpu_check)

The results go to a run directory, outputs/bench/<time>/ (bench.json and bench.md; --out chooses another), whose
path is printed. `--tiny` runs toy shapes for the tests and never touches the machine's cached peak.
"""
from __future__ import annotations

import json
import sys
import time
import warnings
from datetime import datetime
from pathlib import Path

import torch

from seqbench.commands.cli import ArgumentParser
from seqbench.config.checks import preset_config
from seqbench.config.compose import compose
from seqbench.measure import peaks
from seqbench.measure.bench import MAX_ROUNDS, ROUNDS, run_bench
from seqbench.measure.speed import MAX_INTERVAL
from seqbench.measure.workload import FAMILIES, setting
from seqbench.report.bench import recorded_command, write_bench
from seqbench.sweep.launcher import usable_cores


def parse_args(argv: list[str] | None):
    parser = ArgumentParser(prog="seqbench bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--families", default=",".join(FAMILIES),
                        help="comma-separated reference models to run (default: all of transformer,rnn,cnn)")
    parser.add_argument("--preset", action="append", default=[], metavar="NAME",
                        help="also bench a model preset, conf/model/NAME.yaml (repeatable)")
    parser.add_argument("--threads", type=int, default=usable_cores(),
                        help="torch intra-op threads (default: the cores this process may use)")
    parser.add_argument("--steps", type=int, help="timed training steps per model (default 40; --tiny 4)")
    parser.add_argument("--warmup", type=int, help="untimed training steps first (default 5; --tiny 1)")
    parser.add_argument("--rounds", type=int, default=ROUNDS,
                        help=f"timing rounds the steps are split into (default {ROUNDS}; 6 at least give a "
                             "ratio a 95%% interval); each round times one window of every row, and one decoding "
                             "pass of every decoder")
    parser.add_argument("--max-rounds", type=int, metavar="N",
                        help=f"rounds of the same windows added after --rounds while a ratio's 95%% interval is wider "
                             f"than {MAX_INTERVAL:.0%}% of its median (default {MAX_ROUNDS}; --tiny: --rounds)")
    parser.add_argument("--decode-tokens", type=int, metavar="N",
                        help="tokens every decoded hypothesis is forced to (default 23, as peers are benchmarked; "
                             "longer hypotheses show the cache's gain growing with length)")
    parser.add_argument("--vocab-size", type=int, metavar="N",
                        help="source and target vocabulary of the generated sentences (default 8000; 1000 shows the "
                             "per-step decoding cost outside the output projection)")
    parser.add_argument("--fairseq", metavar="VENV", help="a virtual environment with fairseq 0.12.2: fairseq rows "
                                                          "train the same families on the same data")
    parser.add_argument("--bf16", action="store_true", help="also train and decode every seqbench model with bf16 "
                                                            "autocast (trainer.precision=bf16-mixed), side by side")
    parser.add_argument("--out", metavar="DIR", help="where bench.json and bench.md go (default: "
                                                     "outputs/bench/<time>/)")
    parser.add_argument("--tiny", action="store_true", help="toy shapes and few steps (the tests run this)")
    parser.add_argument("--measure-peak", action="store_true",
                        help="only measure this machine's matmul peaks (3 s per dtype; fit cached ones are kept) "
                             "and print them")
    parser.add_argument("--force", action="store_true", help="with --measure-peak: re-measure cached peaks too")
    parser.add_argument("--gpu-check", action="store_true",
                        help="Transformer-base at WMT shapes with bf16-mixed for a few hundred updates, decoding, and "
                             "the 2-process DDP path, in a few minutes on one GPU (--tiny: the same on the CPU)")
    args = parser.parse_args(argv)
    args.families = [f for f in args.families.split(",") if f]
    unknown = [f for f in args.families if f not in FAMILIES]
    if unknown or not (args.families or args.preset):
        parser.error(f"--families={','.join(args.families)}: choose from {','.join(FAMILIES)} (or give --preset)")
    if args.force and not args.measure_peak:
        parser.error("--force re-measures the cached peak: use it with --measure-peak")
    if args.gpu_check and args.measure_peak:
        parser.error("--gpu-check and --measure-peak are separate runs")
    if args.tiny and args.measure_peak:
        parser.error("--measure-peak measures the machine's real peak: not with --tiny")
    for key in ("threads", "steps", "decode_tokens", "rounds", "max_rounds"):
        if getattr(args, key) is not None and getattr(args, key) < 1:
            parser.error(f"--{key.replace('_', '-')}={getattr(args, key)}: must be a positive integer")
    if args.vocab_size is not None and args.vocab_size < 8:
        parser.error(f"--vocab-size={args.vocab_size}: must be at least 8 (4 ids are special)")
    if args.warmup is not None and args.warmup < 0:
        parser.error(f"--warmup={args.warmup}: must be >= 0")
    args.max_rounds = args.max_rounds or (args.rounds if args.tiny else max(args.rounds, MAX_ROUNDS))
    if args.max_rounds < args.rounds:
        parser.error(f"--max-rounds={args.max_rounds}: must be at least --rounds={args.rounds}")
    args.steps = args.steps or (4 if args.tiny else 40)
    args.warmup = args.warmup if args.warmup is not None else (1 if args.tiny else 5)
    return args


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    torch.set_num_threads(args.threads)  # before the peak: it is cached per thread count
    warnings.filterwarnings("ignore", message=".*enable_nested_tensor.*")  # nn.Transformer's note on its fast path
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    cache_dir = None if args.tiny else compose([]).paths.cache_dir  # the cache every run uses; none for toy shapes
    if args.measure_peak:
        measured = peaks.cached_peaks(device, cache_dir, max(3.0, peaks.MIN_SECONDS), force=args.force)
        print(json.dumps(measured, indent=2))
        return 0
    kind = "gpu_check" if args.gpu_check else "bench"
    out = Path(args.out) if args.out else Path("outputs") / kind / datetime.now().strftime("%Y-%m-%d_%H-%M-%S")
    if args.gpu_check:
        from seqbench.measure import gpu_check

        print(gpu_check.markdown(gpu_check.run_gpu_check(out, args.tiny, log=_log)))
        print(f"\nresults: {out}/ (gpu_check.json; the runs in train/ and ddp/)")
        return 0
    presets = {name: preset_config(name) for name in args.preset}  # a bad name fails before any work
    if args.fairseq is not None:
        from seqbench.measure.fairseq import check_installed

        check_installed(args.fairseq)
    started = time.perf_counter()
    result = run_bench(setting(args.tiny, args.decode_tokens, args.vocab_size), args.families, presets, args.warmup,
                       args.steps, device, cache_dir, log=_log, fairseq=args.fairseq, rounds=args.rounds,
                       bf16=args.bf16, max_rounds=args.max_rounds)
    result = {"command": recorded_command(sys.argv[1:] if argv is None else argv),
              "tiny": args.tiny, "wall_time_s": time.perf_counter() - started, **result}
    print(write_bench(out, result))
    print(f"\nresults: {out}/ (bench.json, bench.md)")
    return 0
