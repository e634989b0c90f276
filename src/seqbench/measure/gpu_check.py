"""The GPU check (`seqbench bench --gpu-check`): in a few minutes on one GPU, the paths a CPU never runs.

1. Transformer-base (conf/model/transformer_base: 6+6 layers, 512 wide, 8 heads) at WMT shapes (a shared 8,000-word
   vocabulary, tied embeddings, 25,000-token batches) trains TRAIN_STEPS updates of the synthetic pair with
   bf16-mixed precision, attention through scaled_dot_product_attention (its flash kernel where the inputs allow
   it), then decodes the test set greedily and with the beam: tokens/s, MFU against the measured peak and the
   datasheet peak, decoding sentences/s, from the run's results.json.
2. The 2-process DDP path (gloo on the CPU: NCCL takes one GPU per rank), on a tiny model.
3. A short Table 1 pass (`seqbench bench --table1 --device cuda --bf16`, TABLE1_ROUNDS rounds): each layer's cost
   exponent in n, where a GPU's parallelism shows what 2 CPU cores cannot (docs/table1.md).

Every step is a real `seqbench train` process. With `tiny` the same steps run on the CPU at toy sizes (bf16-mixed
autocast included), which is how the tests keep this check from rotting on machines without a GPU.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from seqbench.common.errors import InputError
from seqbench.common.io import atomic_write_text

TRAIN_STEPS = 300
WMT_BASE = ["model=transformer_base", "trainer=gpu", "trainer.precision=bf16-mixed",
            f"trainer.max_steps={TRAIN_STEPS}", "trainer.max_epochs=-1", "trainer.max_time=00:00:04:00",
            "data.shared_vocab=true", "data.vocab_size=8000", "model.share_all_embeddings=true",
            "data.max_tokens=25000", "data.eval_max_tokens=25000", "trainer.check_val_every_n_epoch=null",
            f"trainer.val_check_interval={TRAIN_STEPS}", "module.val_bleu=false", "measure.decode_sentences=500",
            "recipe=none"]
TINY_BASE = ["model=transformer", "model.d_model=32", "model.n_heads=2", "model.d_ff=64", "model.encoder_layers=1",
             "model.decoder_layers=1", "trainer=cpu", "trainer.precision=bf16-mixed", "debug=limit",
             "data.corpus.train_size=120", "data.corpus.valid_per_bucket=1", "data.corpus.test_per_bucket=1",
             "data.vocab_size=300", "trainer.max_steps=4", "measure.decode_sentences=4", "recipe=none"]
DDP = ["model=transformer", "model.d_model=32", "model.n_heads=2", "model.d_ff=64", "model.encoder_layers=1",
       "model.decoder_layers=1", "debug=limit", "data.corpus.train_size=120", "data.corpus.valid_per_bucket=1",
       "data.corpus.test_per_bucket=1", "data.vocab_size=300", "trainer.max_steps=4", "trainer.accelerator=cpu",
       "trainer.devices=2", "+trainer.strategy=ddp", "measure.decode_sentences=4", "recipe=none"]
COMMON = ["callbacks.progress_bar=null", "logger=csv"]
TABLE1_ROUNDS = 3


def _check(done: subprocess.CompletedProcess, name: str) -> None:
    """One line for a step that failed: the process's own `error:` line, else its last line."""
    if done.returncode != 0:
        errors = [line for line in done.stderr.splitlines() if line.startswith("error:")] or \
            done.stderr.strip().splitlines()[-1:] or ["no output"]
        raise InputError(f"gpu check, {name}: {errors[-1].removeprefix('error: ')}")


def _table1(out: Path, tiny: bool, log) -> dict:
    """The Table 1 pass as a `seqbench bench --table1` process of its own; its record's exponents in n."""
    folder = out / "table1"
    args = ["--table1", "--device", "cpu" if tiny else "cuda", "--bf16", "--rounds", str(TABLE1_ROUNDS),
            *(["--tiny"] if tiny else []), "--out", str(folder)]
    log(f"table1: seqbench bench {' '.join(args)}")
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "seqbench", "bench", *args], capture_output=True, text=True)
    _check(done, "table1")
    record = json.loads((folder / "table1.json").read_text(encoding="utf-8"))
    return {"seconds": time.perf_counter() - started, "folder": str(folder),
            "n_exponents": {layer: fits["forward_backward"]["exponent"]
                            for layer, fits in record["compute"]["exponents"]["n"].items()}}


def _train(name: str, overrides: list[str], out: Path, log) -> dict:
    run_dir = out / name
    args = [sys.executable, "-m", "seqbench", "train", *overrides, *COMMON, f"hydra.run.dir={run_dir}"]
    log(f"{name}: seqbench train {' '.join(overrides)}")
    started = time.perf_counter()
    done = subprocess.run(args, capture_output=True, text=True, env=dict(os.environ))
    seconds = time.perf_counter() - started
    _check(done, name)
    return {"seconds": seconds, "run_dir": str(run_dir),
            "results": json.loads((run_dir / "results.json").read_text(encoding="utf-8"))}


def run_gpu_check(out: Path, tiny: bool = False, log=print) -> dict:
    """Runs the check's trainings into `out` and returns its record, written there as gpu_check.json."""
    import torch

    if not tiny and not torch.cuda.is_available():
        raise InputError("--gpu-check needs a GPU (torch.cuda.is_available() is False); --gpu-check --tiny runs the "
                         "same steps on the CPU")
    train = _train("train", TINY_BASE if tiny else WMT_BASE, out, log)
    ddp = _train("ddp", DDP, out, log)
    table1 = _table1(out, tiny, log)
    results = train["results"]
    check = {"tiny": tiny, "device": results["device"], "torch": torch.__version__,
            "flash_sdp_enabled": torch.backends.cuda.flash_sdp_enabled(),
            "train": {"model": results["model"]["name"], "parameters": results["parameters"],
                      "precision": results["config"]["trainer"]["precision"], "steps": results["train"]["steps"],
                      "throughput": results["throughput"], "flops": results.get("flops", {}),
                      "decoding": results.get("decoding", {}), "test_bleu": results.get("test", {}).get("bleu"),
                      "seconds": train["seconds"]},
            "ddp": {"world_size": 2, "test_sentences": ddp["results"]["test"]["n_sentences"],
                    "test_split": ddp["results"]["data"]["sizes"]["test"], "seconds": ddp["seconds"]},
            "table1": table1}
    atomic_write_text(out / "gpu_check.json", json.dumps(check, indent=2, default=str) + "\n")
    return check


def markdown(check: dict) -> str:
    from seqbench.measure.peaks import mfu_text

    train, ddp = check["train"], check["ddp"]
    lines = [f"GPU check on {check['device']} (torch {check['torch']}, flash SDPA enabled: "
             f"{check['flash_sdp_enabled']}){' — tiny, on the CPU' if check['tiny'] else ''}", "",
             f"- train: {train['model']} ({train['parameters']:,} parameters), {train['precision']}, "
             f"{train['steps']} updates: {train['throughput'].get('target_tokens_per_s', 0):,.0f} target tokens/s; "
             f"MFU {mfu_text(train['flops']) if train['flops'] else 'n/a'}; {train['seconds']:.0f} s in all"]
    for kind, speed in train["decoding"].items():
        lines.append(f"- decode ({kind}, beam {speed['beam_size']}): {speed['sentences_per_s']:,.1f} sentences/s, "
                     f"{speed['target_tokens_per_s']:,.0f} tokens/s")
    lines.append(f"- DDP, 2 processes: the test set's {ddp['test_sentences']} of {ddp['test_split']} sentences "
                 f"scored on the gathered whole ({ddp['seconds']:.0f} s)")
    table1 = check.get("table1")
    if table1:
        lines.append("- Table 1, bf16, fwd+bwd time per sentence against n: " + ", ".join(
            f"{layer} n^{exponent:.2f}" for layer, exponent in table1["n_exponents"].items())
            + f" ({table1['seconds']:.0f} s; record in {table1['folder']})")
    return "\n".join(lines)
