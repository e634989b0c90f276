"""`results.json`: the versioned record every run leaves in its run directory.

Schema version 1 (fields are added, never renamed, without a version bump):
  schema_version   int
  status           "completed" (absent in records of older versions: completed too), or "cut_short": trained,
                   evaluated and recorded in full, but the time guard trainer.max_time stopped its training before
                   its budget (train.stopped_by "max_time"; with time_budget=true that time is the budget and the
                   run is "completed"). SCORED: the statuses whose record holds scores. A run that did not complete
                   writes a short record instead (`write_status`): status "interrupted" (SIGTERM/SIGINT; rerun with
                   hydra.run.dir=<run dir> to resume), "diverged" (NaN/inf loss) or "failed" (an error), with
                   "error" (one line), "phase" (setup, data preparation, training, validation, testing,
                   measurements, writing results), "step" (updates done; null before training), "resume_checkpoint"
                   (the last.ckpt a rerun resumes from, or null), "label", "seed", "run_dir", "config"
  label            compare.label: the run's name in reports; runs sharing a label are seeds of one model
  model            {"name", "class", "config", "param_budget"}  the resolved model config, after resizing to
                   compare.param_budget parameters when that is set (null otherwise)
  config           the whole resolved Hydra config
  parameters       trainable parameter count
  data             {"corpus", "src_vocab_size", "tgt_vocab_size", "sizes": {split: pairs}, "filtered": {split: n}}
  valid, test      {"bleu", "bleu_signature", "chrf", "chrf_signature", "n_sentences"} (sacreBLEU), and
                   "bleu_by_length": [{"bucket": "11-20", "min_words", "max_words" (null: open-ended), "sentences",
                   "bleu" (null when empty)}]: corpus BLEU of each source-length bucket (source words,
                   measure.length_buckets), scored on that subset alone; test also holds "greedy" (the same
                   scores of greedy decoding) when module.test_greedy is set and the beam is wider than 1
  throughput       {"first_update_s" (seconds from the process's start to the end of its first update: imports,
                   data preparation or mapping, model building, the first step; rank 0's under DDP),
                   "target_tokens_per_s" (non-pad target tokens, fairseq's wps), "src_tgt_tokens_per_s",
                    "steps_per_s", "measured_steps", "warmup_steps_excluded"} over the steady state (after warm-up,
                   validation excluded), with "load_average_max" (the highest 1-minute load average read while
                   those steps were timed; above the run's threads, other work shared the CPU); "tokens_seen"
                   (non-pad target tokens), "train_seconds" (validation excluded) and "train_flops" (analytic:
                   3x the model's forward FLOPs per target token at each batch's mean lengths, times its target
                   tokens) over all of training; "epoch_times_s" (complete
                   epochs, validation excluded) and their mean "time_per_epoch_s" (null when no epoch ran from start
                   to end); "mean_src_tokens", "mean_tgt_tokens" (non-pad per training sentence, <eos> included on
                   the target)
  decoding         {"greedy", "beam"}: each {"beam_size", "sentences", "target_tokens" (<eos> excluded),
                   "seconds", "sentences_per_s", "target_tokens_per_s"} over measure.decode_sentences test sentences
                   after warm-up, every hypothesis forced to measure.decode_tokens tokens (so the timing does not
                   depend on how well the model translates); absent when test=false
  flops            {"forward_per_target_token" (the model's analytic count at the mean lengths),
                    "train_per_target_token" (3x forward), "mean_src_tokens", "mean_tgt_tokens",
                    "achieved_train_flops_per_s", "peak_flops_per_s": {dtype: FLOP/s}, "peak_matrix_size": {dtype: n}
                    (the machine's matmul peak, cached per device, dtype and thread count: seqbench.measure.peaks),
                    "peak_dtype" (the training precision's), "peak_source" ("cached": measured before, by an
                    earlier run or `seqbench bench --measure-peak`; "measured now": no cached peak
                    existed, this run measured and cached it), "peak_provenance": {dtype: {"device", "dtype",
                    "threads", "measured_at", "measure_seconds", "torch", "load_average_1min",
                    "cpu_busy_fraction", "cpu_count", "cores_idle", "source", "unfit" (why a peak measured now
                    was not fit to cache, when it was not)}}, "mfu" (achieved / peak of peak_dtype; null when not
                    measured, or when above 1: an impossible ratio, explained by "mfu_note"), "mfu_note",
                    "datasheet_peak_flops_per_s", "mfu_datasheet" (against the GPU's datasheet dense peak for
                    peak_dtype, TF32 for float32 when torch allows it; null on CPU and unlisted GPUs)};
                   absent when no step was measured
  memory           {"cpu_rss_peak_mb" (peak resident memory of the process during the run),
                    "cuda_max_allocated_mb" (max CUDA memory allocated during the run; null on CPU)}
  train            {"wall_time_s" (seconds this process spent in fit, validations included: a resumed run's
                   last part only; the whole training's step time is throughput.train_seconds), "steps",
                   "epochs" (updates x accumulation / batches per epoch: passes over the
                   training data, fractional when training stopped mid-epoch), "max_steps" (the update budget;
                   -1: none), "stopped_by" (what ended training: "plateau" (budget=plateau's rule), "max_steps"
                   (the budget, or the plateau budget's cap), "early_stopping", "max_epochs" or "max_time", the
                   wall-clock guard, which the report flags; null with train=false), "plateau" (the curve's level
                   and what reaching 90/95/99% of it and measure.target_bleu cost: seqbench.analysis.plateau),
                   "plateau_rule" (budget=plateau's settings; null for a fixed budget), "final_lr_factor" (the lr
                   at the end as a share of its peak; absent in records older than these three),
                   "resumed_at" (the updates training was resumed at from a checkpoint, by a rerun after a stop or
                   a search's promotion; [] when it ran in one go; absent in records older than it),
                   "best_checkpoint"}
  curve            [{"step", "bleu", "nll", "tokens_seen", "train_seconds", "train_cpu_seconds", "train_flops",
                   "bleu_by_length"}]:
                   every validation during training (the val/* metrics; "bleu", decoded with module.val_beam_size,
                   absent when module.val_bleu=false; "bleu_by_length": {bucket: BLEU} of the non-empty source-length
                   buckets, absent without BLEU and in records older than it), so learning curves need no logger
  wall_time_s      whole run, including data preparation, test decoding and the measurements
  peak_memory_mb   memory.cuda_max_allocated_mb on GPU, memory.cpu_rss_peak_mb on CPU
  seed, device, versions {python, torch, lightning, sacrebleu, ..., "seqbench_commit": the git commit of the
                   checkout seqbench ran from, "+dirty" when tracked files differ from it, null outside one}, run_dir
                   (".": the record's own directory)

A record names no folder of the machine that made it (seqbench.common.portable): train.best_checkpoint and
resume_checkpoint are relative to the run directory, and the config's locations are written `${paths.<key>}`.

Next to it the run writes, for the final validation and test passes, hypotheses.<split>.txt, references.<split>.txt
and sources.<split>.txt (split: valid, test; one sentence per line, same order) and attention.pt (see
seqbench.rundir.layout), so reports need nothing but the run directory.

`read_results` is the one reader of this file: it checks the schema version.
"""
from __future__ import annotations

import json
import platform
import subprocess
from importlib import metadata
from pathlib import Path

from seqbench.common.errors import InputError
from seqbench.common.io import atomic_write_text
from seqbench.common.nested import get_path
from seqbench.rundir.layout import RESULTS_FILE, RunDir

SCHEMA_VERSION = 1
_PACKAGES = ("seqbench", "torch", "lightning", "hydra-core", "sacrebleu", "tokenizers", "datasets")


def library_versions() -> dict[str, str | None]:
    versions: dict[str, str | None] = {"python": platform.python_version()}
    for name in _PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "not installed"
    versions["seqbench_commit"] = source_commit()
    return versions


def source_commit(package: Path | None = None) -> str | None:
    """The commit of the git checkout whose src/ holds `package` ("<sha>+dirty" when tracked files differ from it),
    so a record names the code that made it; None for an installed wheel (no src/ beside a pyproject.toml: a
    repository that merely contains the environment is not seqbench's) or where git cannot tell."""
    package = package or Path(__file__).resolve().parents[1]
    root = package.parent.parent
    if package.parent.name != "src" or not (root / "pyproject.toml").is_file():
        return None
    try:
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "--short=12", "HEAD"], capture_output=True,
                              text=True, timeout=20)
        status = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                                capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if head.returncode != 0 or status.returncode != 0:
        return None
    return head.stdout.strip() + ("+dirty" if status.stdout.strip() else "")


SCORED = ("completed", "cut_short")
CUT_SHORT_EXIT = 3  # `seqbench train`'s exit status for a cut_short run: scored, but not what was asked for


def completed_record(*, status: str = "completed", label: str, model: dict, parameters: int, data: dict,
                     scores: dict, throughput: dict, measurements: dict, train: dict, curve: list[dict],
                     wall_time_s: float, seed: int, device: str, threads: int, config: dict) -> dict:
    """The record of a completed run, in the schema above. `model`: {"name", "class", "config", "param_budget"};
    `scores`: {"valid": ..., "test": ...}; `measurements`: {"memory", "decoding"?, "flops"?}; `status`: "completed"
    or "cut_short" (SCORED)."""
    memory = measurements["memory"]
    return {"status": status, "label": label, "model": model, "parameters": parameters, "data": data, **scores,
            "throughput": throughput, **measurements, "train": train, "curve": curve, "wall_time_s": wall_time_s,
            "peak_memory_mb": memory["cpu_rss_peak_mb"] if memory["cuda_max_allocated_mb"] is None
            else memory["cuda_max_allocated_mb"],
            "seed": seed, "device": device, "threads": threads, "versions": library_versions(),
            "run_dir": ".", "config": config}


# results.json paths -> the names loggers show them under (the final row of every logger, W&B's run summary)
METRICS = {
    "test.bleu": "test/bleu", "test.chrf": "test/chrf", "test.greedy.bleu": "test/greedy/bleu",
    "valid.bleu": "val/bleu", "valid.chrf": "val/chrf", "parameters": "parameters", "train.steps": "train/steps",
    "peak_memory_mb": "peak_memory_mb", "memory.cpu_rss_peak_mb": "memory/cpu_rss_peak_mb",
    "memory.cuda_max_allocated_mb": "memory/cuda_max_allocated_mb",
    "throughput.target_tokens_per_s": "throughput/target_tokens_per_s",
    "throughput.steps_per_s": "throughput/steps_per_s", "throughput.time_per_epoch_s": "throughput/time_per_epoch_s",
    "decoding.greedy.sentences_per_s": "decode/greedy_sentences_per_s",
    "decoding.greedy.target_tokens_per_s": "decode/greedy_tokens_per_s",
    "decoding.beam.sentences_per_s": "decode/beam_sentences_per_s",
    "decoding.beam.target_tokens_per_s": "decode/beam_tokens_per_s",
    "flops.mfu": "flops/mfu", "flops.achieved_train_flops_per_s": "flops/achieved_train_flops_per_s",
}


def summary_metrics(results: dict) -> dict[str, float]:
    """The record's headline numbers under their logged names (METRICS), those the run has."""
    return {name: value for path, name in METRICS.items() if (value := get_path(results, path)) is not None}


def write_results(results: dict, run_dir: str | Path) -> Path:
    text = json.dumps({"schema_version": SCHEMA_VERSION, **results}, indent=2, default=str) + "\n"
    return atomic_write_text(RunDir(run_dir).results, text)


def read_results(path: str | Path) -> dict:
    """The results.json of a run directory (or the file itself), its schema version checked; InputError (one line)
    for a missing, unreadable or other-version record."""
    path = Path(path)
    file = path if path.name == RESULTS_FILE else RunDir(path).results
    if not file.is_file():
        raise InputError(f"{path}: no {RESULTS_FILE} (not a run directory, or the run has not finished)")
    try:
        record = json.loads(file.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as error:
        raise InputError(f"{file}: not a readable {RESULTS_FILE} ({str(error).splitlines()[0]})") from None
    version = record.get("schema_version") if isinstance(record, dict) else None
    if version != SCHEMA_VERSION:
        raise InputError(f"{file}: a results record of schema version {version}; this seqbench reads version "
                         f"{SCHEMA_VERSION} (use the seqbench release that wrote it)")
    return record


def write_status(directory: str | Path, status: str, error: BaseException | str, **fields) -> Path:
    """The record of a run that did not complete (see the schema above) in its run `directory`; `error` becomes its
    one-line reason."""
    line = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    if isinstance(error, BaseException) and status == "failed":
        line = f"{type(error).__name__}: {line}"
    Path(directory).mkdir(parents=True, exist_ok=True)
    return write_results({"status": status, "error": line, **fields}, directory)
