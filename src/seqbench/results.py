"""`results.json`: the versioned record every run leaves in its run directory.

Schema version 1 (fields are added, never renamed, without a version bump):
  schema_version   int
  model            {"name", "class", "config"}      the resolved model config
  config           the whole resolved Hydra config
  parameters       trainable parameter count
  data             {"corpus", "src_vocab_size", "tgt_vocab_size", "sizes": {split: pairs}, "filtered": {split: n}}
  valid, test      {"bleu", "bleu_signature", "chrf", "chrf_signature", "n_sentences"} (sacreBLEU)
  throughput       {"target_tokens_per_s" (non-pad target tokens, fairseq's wps), "src_tgt_tokens_per_s",
                    "steps_per_s", "measured_steps", "warmup_steps_excluded"}
  train            {"wall_time_s", "steps", "epochs", "best_checkpoint"}
  wall_time_s      whole run, including data preparation and test decoding
  peak_memory_mb   peak resident memory of the process (CPU) or max CUDA memory allocated (GPU)
  seed, device, versions {python, torch, lightning, sacrebleu, ...}, run_dir
"""
from __future__ import annotations

import json
import os
import platform
from importlib import metadata
from pathlib import Path

SCHEMA_VERSION = 1
_PACKAGES = ("seqbench", "torch", "lightning", "hydra-core", "sacrebleu", "tokenizers", "datasets")


def library_versions() -> dict[str, str]:
    versions = {"python": platform.python_version()}
    for name in _PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions


def write_results(results: dict, run_dir: str | Path) -> Path:
    path = Path(run_dir) / "results.json"
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps({"schema_version": SCHEMA_VERSION, **results}, indent=2, default=str) + "\n")
    os.replace(tmp, path)
    return path
