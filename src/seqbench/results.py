"""`results.json`: the versioned record every run leaves in its run directory.

Schema version 1 (fields are added, never renamed, without a version bump):
  schema_version   int
  label            compare.label: the run's name in reports; runs sharing a label are seeds of one model
  model            {"name", "class", "config", "param_budget"}  the resolved model config, after resizing to
                   compare.param_budget parameters when that is set (null otherwise)
  config           the whole resolved Hydra config
  parameters       trainable parameter count
  data             {"corpus", "src_vocab_size", "tgt_vocab_size", "sizes": {split: pairs}, "filtered": {split: n}}
  valid, test      {"bleu", "bleu_signature", "chrf", "chrf_signature", "n_sentences"} (sacreBLEU), and
                   "bleu_by_length": [{"bucket": "11-20", "min_words", "max_words" (null: open-ended), "sentences",
                   "bleu" (null when empty)}]: corpus BLEU of each source-length bucket (source words,
                   measure.length_buckets), scored on that subset alone
  throughput       {"target_tokens_per_s" (non-pad target tokens, fairseq's wps), "src_tgt_tokens_per_s",
                    "steps_per_s", "measured_steps", "warmup_steps_excluded"} over the steady state (after warm-up,
                   validation excluded); "tokens_seen" (non-pad target tokens) and "train_seconds" (validation
                   excluded) over all of training; "epoch_times_s" (complete epochs, validation excluded) and their
                   mean "time_per_epoch_s" (null when no epoch ran from start to end); "mean_src_tokens",
                   "mean_tgt_tokens" (non-pad per training sentence, <eos> included on the target)
  decoding         {"greedy", "beam"}: each {"beam_size", "sentences", "target_tokens" (<eos> excluded),
                   "seconds", "sentences_per_s", "target_tokens_per_s"} over measure.decode_sentences test sentences
                   after warm-up; absent when test=false
  flops            {"forward_per_target_token" (the model's analytic count at the mean lengths),
                    "train_per_target_token" (3x forward), "mean_src_tokens", "mean_tgt_tokens",
                    "achieved_train_flops_per_s", "peak_flops_per_s": {dtype: FLOP/s}, "peak_matrix_size": {dtype: n}
                    (the matmul peak measured on this device), "peak_dtype" (the training precision's),
                    "mfu" (achieved / peak of peak_dtype; null when not measured)}; absent when no step was measured
  memory           {"cpu_rss_peak_mb" (peak resident memory of the process during the run),
                    "cuda_max_allocated_mb" (max CUDA memory allocated during the run; null on CPU)}
  train            {"wall_time_s", "steps", "epochs", "best_checkpoint"}
  curve            [{"step", "bleu", "nll", "tokens_seen", "train_seconds"}]: every validation during training (the
                   val/* metrics; "bleu" absent when module.val_bleu=false), so learning curves need no logger
  wall_time_s      whole run, including data preparation, test decoding and the measurements
  peak_memory_mb   memory.cuda_max_allocated_mb on GPU, memory.cpu_rss_peak_mb on CPU
  seed, device, versions {python, torch, lightning, sacrebleu, ...}, run_dir

Next to it the test pass writes hypotheses.test.txt, references.test.txt and sources.test.txt (one sentence per
line, same order) and attention.pt (seqbench.attention_maps), so reports need nothing but the run directory.
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
