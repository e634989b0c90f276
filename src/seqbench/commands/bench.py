"""`seqbench bench`: training and decoding speed of fixed reference models, beside plain PyTorch loops, CTranslate2
and (when installed) fairseq; what it measures and how: seqbench.measure.bench.

    seqbench bench [--families transformer,rnn,cnn] [--preset NAME ...] [--threads N] [--steps N] [--rounds N]
                   [--max-rounds N] [--warmup N] [--decode-tokens N] [--vocab-size N] [--fairseq VENV] [--bf16]
                   [--out DIR] [--tiny]
    seqbench bench --measure-peak [--force] [--threads N]
    seqbench bench --gpu-check | --table1 [--tiny] [--out DIR]     (seqbench.measure.gpu_check, .table1)

The results go to a run directory, outputs/bench/<time>/ (bench.json and bench.md; --out chooses another), whose
path is printed. `--tiny` runs toy shapes for the tests and never touches the machine's cached peak.
"""
from __future__ import annotations

import json
import sys
import warnings
from functools import partial
from pathlib import Path

import torch

from seqbench.commands.arguments import ArgumentParser
from seqbench.common.errors import InputError
from seqbench.config.checks import preset_config
from seqbench.config.compose import compose
from seqbench.measure import peaks
from seqbench.measure.bench import MAX_ROUNDS, ROUNDS
from seqbench.measure.bench_options import TABLE1_OPTIONS, BenchOptions, bench, table1
from seqbench.measure.speed import MAX_INTERVAL
from seqbench.measure.workload import FAMILIES
from seqbench.report.bench import recorded_command, write_bench
from seqbench.report.table1 import write_table1
from seqbench.sweep.launcher import usable_cores


def parse_args(argv: list[str] | None) -> BenchOptions:
    """The options, checked and with their defaults (seqbench.measure.bench_options); a mistake is an argument error."""
    parser = ArgumentParser(prog="seqbench bench", description=__doc__.split("\n\n")[0])
    add = parser.add_argument
    add("--families", default=",".join(FAMILIES), type=lambda text: [f for f in text.split(",") if f],
        help="comma-separated reference models to run (default: all of transformer,rnn,cnn)")
    add("--preset", action="append", default=[], metavar="NAME", help="also bench conf/model/NAME.yaml (repeatable)")
    add("--threads", type=int, default=usable_cores(), help="torch intra-op threads (default: this process's cores)")
    add("--steps", type=int, help="timed training steps per model (default 40; --tiny 4)")
    add("--warmup", type=int, help="untimed training steps first (default 5; --tiny 1)")
    add("--rounds", type=int, default=ROUNDS, help=f"rounds the timed steps are split into (default {ROUNDS}; 6 at "
        "least give a ratio a 95%% interval), each timing a window of every row and a pass of every decoder")
    add("--max-rounds", type=int, metavar="N",
        help=f"rounds of the same windows added after --rounds while a ratio's 95%% interval is wider than "
             f"{MAX_INTERVAL:.0%}% of its median (default {MAX_ROUNDS}; --tiny: --rounds)")
    add("--decode-tokens", type=int, metavar="N", help="tokens every decoded hypothesis is forced to (default 23, as "
                                                       "peers are benchmarked; longer ones show the cache's gain grow)")
    add("--vocab-size", type=int, metavar="N", help="source and target vocabulary of the generated sentences (default "
                                                    "8000; 1000 shows the per-step decoding cost outside the output)")
    add("--fairseq", metavar="VENV", help="a venv with fairseq 0.12.2: its rows train the same models on the same data")
    add("--bf16", action="store_true", help="also train and decode every seqbench model with bf16 autocast "
                                            "(trainer.precision=bf16-mixed), side by side")
    add("--out", metavar="DIR", help="where bench.json and bench.md go (default: outputs/bench/<time>/)")
    add("--tiny", action="store_true", help="toy shapes and few steps (the tests run this)")
    add("--measure-peak", action="store_true", help="only measure this machine's matmul peaks (3 s per dtype; fit "
                                                    "cached ones are kept) and print them")
    add("--force", action="store_true", help="with --measure-peak: re-measure cached peaks too")
    add("--gpu-check", action="store_true", help="Transformer-base at WMT shapes, bf16-mixed, a few hundred updates, "
                                                 "decoding and 2-process DDP: minutes on one GPU (--tiny: the CPU)")
    for flag, spec in TABLE1_OPTIONS.items():  # the --table1 mode's own
        add(flag, **spec)
    options = BenchOptions(**vars(parser.parse_args(argv)))
    try:
        return options.checked()
    except InputError as error:
        parser.error(str(error))


def main(argv: list[str] | None = None) -> int:
    options = parse_args(argv)
    torch.set_num_threads(options.threads)  # before the peak: it is cached per thread count
    warnings.filterwarnings("ignore", message=".*enable_nested_tensor.*")  # nn.Transformer's note on its fast path
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    cache_dir = None if options.tiny else compose([]).paths.cache_dir  # the cache every run uses; none for toy shapes
    log = partial(print, file=sys.stderr, flush=True)  # progress; stdout is the result
    if options.measure_peak:
        print(json.dumps(peaks.cached_peaks(device, cache_dir, max(3.0, peaks.MIN_SECONDS), force=options.force),
                         indent=2))
        return 0
    if options.gpu_check:
        from seqbench.measure import gpu_check

        print(gpu_check.markdown(gpu_check.run_gpu_check(Path(options.out), options.tiny, log=log)))
        print(f"\nresults: {options.out}/ (gpu_check.json; the runs in train/ and ddp/)")
        return 0
    command = recorded_command(sys.argv[1:] if argv is None else argv)
    if options.table1:  # write_table1 ends with where its files went
        print(write_table1(Path(options.out), table1(options, command, log)))
        return 0
    presets = {name: preset_config(name) for name in options.preset}  # a bad name fails before any work
    record = bench(options, presets, device, cache_dir, command, log)
    print(write_bench(Path(options.out), record))
    print(f"\nresults: {options.out}/ (bench.json, bench.md)")
    return 0
