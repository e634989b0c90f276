"""What `seqbench bench` is asked for, checked before anything is measured: which options belong to which of its four
modes (the bench, seqbench.measure.bench; --measure-peak, this machine's matmul peaks, seqbench.measure.peaks;
--gpu-check, seqbench.measure.gpu_check; --table1, Table 1 of Vaswani et al. measured, seqbench.measure.table1), their
ranges, and the defaults that depend on --tiny. The command parses the
options into BenchOptions and reports a mistake as an error in its arguments; `bench` runs the bench mode with them."""
from __future__ import annotations

import time
from dataclasses import dataclass, replace
from datetime import datetime

import torch

from seqbench.common.errors import InputError
from seqbench.measure import table1 as table1_measure
from seqbench.measure.bench import MAX_ROUNDS, ROUNDS, run_bench
from seqbench.measure.workload import FAMILIES, setting

TABLE1_OPTIONS = {  # the --table1 mode's own options, as the command adds them to its parser
    "--table1": {"action": "store_true", "help": "Table 1 of Vaswani et al. 2017 measured on one layer of each family "
                 "into table1.json, .md and .png (seqbench.measure.table1; a few minutes on 2 cores)"},
    "--device": {"help": "with --table1: cpu or cuda (default: cuda where there is one)"},
    "--width": {"type": int, "metavar": "D", "help": "with --table1: d of the sweep over n (default 256; --tiny 32)"},
    "--tokens": {"type": int, "metavar": "N",
                 "help": "with --table1: tokens per batch of the cost sweeps, batch = N / n (default 2048)"},
}
SPEED_ONLY = ("preset", "steps", "warmup", "max_rounds", "decode_tokens", "vocab_size", "fairseq")  # not --table1's


@dataclass(frozen=True)
class BenchOptions:
    """The command's options by their names (`--max-rounds` is max_rounds); None: the default that checked() fills."""
    families: list[str]               # reference models to run, of FAMILIES
    preset: list[str]                 # model presets (conf/model/NAME.yaml) benched beside them
    threads: int                      # torch intra-op threads
    steps: int | None = None          # timed training steps per model; None: 40 (--tiny 4)
    warmup: int | None = None         # untimed training steps first; None: 5 (--tiny 1)
    rounds: int = ROUNDS              # timing rounds the steps are split into
    max_rounds: int | None = None     # most rounds while a ratio is unsteady; None: MAX_ROUNDS or more (--tiny: rounds)
    decode_tokens: int | None = None  # tokens every decoded hypothesis is forced to; None: the workload's
    vocab_size: int | None = None     # vocabulary of the generated sentences; None: the workload's
    fairseq: str | None = None        # a virtual environment with fairseq, for its rows
    bf16: bool = False                # also every seqbench model with bf16 autocast
    out: str | None = None            # where the record goes; None: outputs/bench/<time>/ (outputs/gpu_check/...)
    tiny: bool = False                # toy shapes and few steps
    measure_peak: bool = False        # the mode that only measures the machine's matmul peaks
    force: bool = False               # with measure_peak: cached peaks too
    gpu_check: bool = False           # the mode that runs the GPU check
    table1: bool = False              # the mode that measures Table 1's three columns
    device: str | None = None         # with table1: cpu or cuda; None: cuda where there is one, as the bench
    width: int | None = None          # with table1: d of the n sweep; None: the setting's (256; --tiny 32)
    tokens: int | None = None         # with table1: tokens per batch of the cost sweeps; None: 2048 (--tiny 128)

    def checked(self) -> BenchOptions:
        """These options with every default filled in; InputError naming the first wrong option and what it takes."""
        if any(f not in FAMILIES for f in self.families) or not (self.families or self.preset):
            raise InputError(f"--families={','.join(self.families)}: choose from {','.join(FAMILIES)} "
                             "(or give --preset)")
        if self.force and not self.measure_peak:
            raise InputError("--force re-measures the cached peak: use it with --measure-peak")
        if self.gpu_check and self.measure_peak:
            raise InputError("--gpu-check and --measure-peak are separate runs")
        if self.table1:
            self._check_table1()
        elif self.device is not None or self.width is not None or self.tokens is not None:
            raise InputError("--device, --width and --tokens are --table1's: the speed bench takes CUDA where there "
                             "is one")
        if self.tiny and self.measure_peak:
            raise InputError("--measure-peak measures the machine's real peak: not with --tiny")
        for key in ("threads", "steps", "decode_tokens", "rounds", "max_rounds"):
            if getattr(self, key) is not None and getattr(self, key) < 1:
                raise InputError(f"--{key.replace('_', '-')}={getattr(self, key)}: must be a positive integer")
        if self.vocab_size is not None and self.vocab_size < 8:
            raise InputError(f"--vocab-size={self.vocab_size}: must be at least 8 (4 ids are special)")
        if self.warmup is not None and self.warmup < 0:
            raise InputError(f"--warmup={self.warmup}: must be >= 0")
        max_rounds = self.max_rounds or (self.rounds if self.tiny else max(self.rounds, MAX_ROUNDS))
        if max_rounds < self.rounds:
            raise InputError(f"--max-rounds={max_rounds}: must be at least --rounds={self.rounds}")
        mode = "gpu_check" if self.gpu_check else "table1" if self.table1 else "bench"
        out = self.out or f"outputs/{mode}/{datetime.now():%Y-%m-%d_%H-%M-%S}"
        return replace(self, steps=self.steps or (4 if self.tiny else 40),
                       warmup=(1 if self.tiny else 5) if self.warmup is None else self.warmup, max_rounds=max_rounds,
                       out=out)


    def _check_table1(self) -> None:
        if self.gpu_check or self.measure_peak:
            raise InputError("--table1 is a run of its own: not with --gpu-check or --measure-peak")
        given = [key for key in SPEED_ONLY if getattr(self, key) not in (None, [], False)]
        if given:
            raise InputError(f"--{given[0].replace('_', '-')} is the speed bench's: not with --table1")
        if self.device not in (None, "cpu", "cuda"):
            raise InputError(f"--device={self.device}: choose cpu or cuda")
        for key in ("width", "tokens"):
            if getattr(self, key) is not None and getattr(self, key) < 1:
                raise InputError(f"--{key}={getattr(self, key)}: must be a positive integer")
        if self.width is not None and self.width % max(1, self.width // 64):
            raise InputError(f"--width={self.width}: self-attention splits it into width // 64 heads, so it must "
                             f"divide by {self.width // 64}")


def table1(options: BenchOptions, command: str, log=print) -> dict:
    """The --table1 mode with checked `options`: run_table1's record after the command, whether it was --tiny and its
    wall time. Latency is timed at 1, 2 and --threads threads (those up to --threads)."""
    started = time.perf_counter()
    chosen = table1_measure.TINY if options.tiny else table1_measure.REFERENCE
    chosen = replace(chosen, rounds=options.rounds, width=options.width or chosen.width,
                     tokens=options.tokens or chosen.tokens)
    if options.device == "cuda" and not torch.cuda.is_available():  # at run time: the docs show the GPU's command
        raise InputError("--device cuda: no CUDA device is visible here (run it on a GPU, or --device cpu)")
    device = torch.device(options.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    counts = sorted({count for count in (1, 2) if count < options.threads} | {options.threads})
    result = table1_measure.run_table1(chosen, setting(options.tiny), options.families, counts, device, options.bf16,
                                       log)
    return {"command": command, "tiny": options.tiny, "wall_time_s": time.perf_counter() - started, **result}


def bench(options: BenchOptions, presets: dict[str, dict], device: torch.device, cache_dir: str | None, command: str,
          log=print) -> dict:
    """The bench mode with checked `options` and the `presets`' model configs ({name: config}): run_bench's record,
    after the `command` as the record keeps it, whether it was --tiny and its wall time."""
    started = time.perf_counter()
    result = run_bench(setting(options.tiny, options.decode_tokens, options.vocab_size), options.families, presets,
                       options.warmup, options.steps, device, cache_dir, log=log, fairseq=options.fairseq,
                       rounds=options.rounds, bf16=options.bf16, max_rounds=options.max_rounds)
    return {"command": command, "tiny": options.tiny, "wall_time_s": time.perf_counter() - started, **result}
