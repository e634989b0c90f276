"""What a run measures for its record besides its scores: the recorder callbacks (training throughput and FLOPs,
the learning curve) and, after the test pass, peak memory, decode speed, attention maps and MFU."""
from __future__ import annotations

from dataclasses import dataclass, replace

from omegaconf import DictConfig

from seqbench.decoding.attention import attention_examples, save_attention
from seqbench.measure import peaks
from seqbench.measure.memory import peak_memory
from seqbench.measure.speed import decode_speed, test_batches
from seqbench.rundir.layout import RunDir
from seqbench.training.callbacks import LearningCurve, TrainThroughput


@dataclass
class Recorders:
    """The callbacks results.json is made from, built here rather than from YAML, so the record never depends on
    which callbacks a config happens to list: training throughput (and FLOPs) and the learning curve."""

    throughput: TrainThroughput
    curve: LearningCurve

    @classmethod
    def for_run(cls, cfg: DictConfig) -> Recorders:
        return cls(TrainThroughput(warmup_steps=cfg.measure.throughput_warmup_steps), LearningCurve())


def measure(cfg: DictConfig, trainer, module, datamodule, throughput: TrainThroughput | None) -> dict:
    """Peak memory, decode speed (greedy and the configured beam), attention maps and MFU against the machine's
    cached matmul peak.

    Runs after the test pass on the trainer's device with its autocast: Lightning has moved the model back to the
    CPU by then. Memory is read first: the decode benchmark adds nothing a test pass did not need, but the matmul
    peak's large matrices would set the CUDA maximum.
    """
    device, context = trainer.strategy.root_device, trainer.precision_plugin.forward_context
    model = module.model.to(device)
    out = {"memory": peak_memory(device)}
    if cfg.get("test", True):
        test_split = datamodule.evaluation("test")
        batches = test_batches(test_split, cfg.measure.decode_sentences)
        # Every hypothesis exactly decode_tokens long: the work does not depend on what the model has learned.
        beam = replace(module.decoding, min_len=cfg.measure.decode_tokens, max_len=cfg.measure.decode_tokens)
        warmup = cfg.measure.decode_warmup_batches
        greedy = decode_speed(model, batches, replace(beam, beam_size=1), device, warmup, context)
        out["decoding"] = {"greedy": greedy, "beam": greedy if beam.beam_size == 1 else
                           decode_speed(model, batches, beam, device, warmup, context)}
        if cfg.measure.attention_examples and trainer.is_global_zero:
            examples = attention_examples(model, test_split, module.decoding, device, cfg.measure.attention_examples,
                                          context)
            save_attention(RunDir(cfg.paths.output_dir).attention, cfg.compare.label, cfg.model.name, examples)
    summary = throughput.summary(trainer.world_size) if throughput else {}
    if summary.get("measured_steps"):
        # The machine's cached peak (measured now only the first time), so MFU compares across runs on one machine.
        cached = peaks.cached_peaks(device, cfg.paths.cache_dir, cfg.measure.peak_flops_seconds)
        dtype = peaks.training_dtype(trainer.precision)
        datasheet = peaks.datasheet_peak(peaks.device_name(device), dtype) if device.type == "cuda" else None
        out["flops"] = peaks.training_flops(model, summary["mean_src_tokens"], summary["mean_tgt_tokens"],
                                            summary["target_tokens_per_s"], cached, dtype, datasheet)
    return out
