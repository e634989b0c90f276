"""What `seqbench bench` is asked for, checked before anything is measured: which options belong to which of its three
modes (the bench, seqbench.measure.bench; --measure-peak, this machine's matmul peaks, seqbench.measure.peaks;
--gpu-check, seqbench.measure.gpu_check), their ranges, and the defaults that depend on --tiny. The command parses the
options into BenchOptions and reports a mistake as an error in its arguments; `bench` runs the bench mode with them."""
from __future__ import annotations

import time
from dataclasses import dataclass, replace
from datetime import datetime

import torch

from seqbench.common.errors import InputError
from seqbench.measure.bench import MAX_ROUNDS, ROUNDS, run_bench
from seqbench.measure.workload import FAMILIES, setting


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

    def checked(self) -> BenchOptions:
        """These options with every default filled in; InputError naming the first wrong option and what it takes."""
        if any(f not in FAMILIES for f in self.families) or not (self.families or self.preset):
            raise InputError(f"--families={','.join(self.families)}: choose from {','.join(FAMILIES)} "
                             "(or give --preset)")
        if self.force and not self.measure_peak:
            raise InputError("--force re-measures the cached peak: use it with --measure-peak")
        if self.gpu_check and self.measure_peak:
            raise InputError("--gpu-check and --measure-peak are separate runs")
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
        out = self.out or f"outputs/{'gpu_check' if self.gpu_check else 'bench'}/{datetime.now():%Y-%m-%d_%H-%M-%S}"
        return replace(self, steps=self.steps or (4 if self.tiny else 40),
                       warmup=(1 if self.tiny else 5) if self.warmup is None else self.warmup, max_rounds=max_rounds,
                       out=out)


def bench(options: BenchOptions, presets: dict[str, dict], device: torch.device, cache_dir: str | None, command: str,
          log=print) -> dict:
    """The bench mode with checked `options` and the `presets`' model configs ({name: config}): run_bench's record,
    after the `command` as the record keeps it, whether it was --tiny and its wall time."""
    started = time.perf_counter()
    result = run_bench(setting(options.tiny, options.decode_tokens, options.vocab_size), options.families, presets,
                       options.warmup, options.steps, device, cache_dir, log=log, fairseq=options.fairseq,
                       rounds=options.rounds, bf16=options.bf16, max_rounds=options.max_rounds)
    return {"command": command, "tiny": options.tiny, "wall_time_s": time.perf_counter() - started, **result}
