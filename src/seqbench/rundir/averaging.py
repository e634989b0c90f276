"""Checkpoint averaging: the parameters of several checkpoints of one training run, averaged element-wise (Vaswani et
al. 2017 averaged the last 5 or 20 checkpoints; fairseq's average_checkpoints.py). The result is the newest input
with its weights replaced by the average, so it works wherever a checkpoint does (`seqbench average`).
torch.optim.swa_utils averages weights while training runs (AveragedModel; `callbacks=ema` uses Lightning's); this
averages checkpoints already saved, after the fact, which swa_utils does not do."""
from __future__ import annotations

from pathlib import Path

import torch

from seqbench.common.errors import InputError
from seqbench.rundir.checkpoints import checkpoint_spec, read_checkpoint
from seqbench.rundir.layout import RECENT_CHECKPOINTS, RunDir


def checkpoint_files(paths: list[Path]) -> list[Path]:
    files = []
    for path in paths:
        if path.is_dir():
            recent = sorted(RunDir(path).checkpoints.glob(RECENT_CHECKPOINTS))
            if not recent:
                raise InputError(f"{path}: no {RECENT_CHECKPOINTS} in checkpoints/: train with "
                                 f"callbacks.recent_checkpoints.save_top_k=N to keep the last N, or pass .ckpt files")
            files += recent
        elif path.is_file():
            files.append(path)
        else:
            raise InputError(f"{path}: no such run directory or checkpoint")
    return files


def average_state_dicts(state_dicts: list[dict[str, torch.Tensor]]) -> dict[str, torch.Tensor]:
    """Element-wise mean of floating-point tensors (summed in float64, cast back); other tensors (integer buffers)
    come from the last state dict."""
    out = {}
    for key, last in state_dicts[-1].items():
        if last.is_floating_point():
            total = torch.zeros_like(last, dtype=torch.float64)
            for state in state_dicts:
                total += state[key].to(torch.float64)
            out[key] = (total / len(state_dicts)).to(last.dtype)
        else:
            out[key] = last.clone()
    return out


def _check_same_model(checkpoints: list[tuple[Path, dict]]) -> None:
    (ref_path, ref), spec = checkpoints[0], checkpoint_spec(checkpoints[0][1])
    shapes = {k: v.shape for k, v in ref["state_dict"].items()}
    for path, checkpoint in checkpoints[1:]:
        other = checkpoint_spec(checkpoint)
        if spec is not None and other is not None and (spec["vocabulary"], spec["src_vocab_size"],
                                                       spec["tgt_vocab_size"], spec["model"]) != (
                other["vocabulary"], other["src_vocab_size"], other["tgt_vocab_size"], other["model"]):
            raise InputError(f"{path}: not the same model or vocabulary as {ref_path}: only checkpoints of one "
                             f"training run can be averaged")
        if {k: v.shape for k, v in checkpoint["state_dict"].items()} != shapes:
            raise InputError(f"{path}: its weights differ in names or shapes from {ref_path}'s: only checkpoints of "
                             f"one model can be averaged")


def average_checkpoints(paths: list[Path], last: int | None = None) -> tuple[dict, list[tuple[Path, int]]]:
    """The averaged checkpoint and the (file, update) pairs it averages."""
    if last is not None and last < 1:
        raise InputError(f"--last {last}: must be at least 1")
    checkpoints = [(path, read_checkpoint(path)) for path in checkpoint_files(paths)]
    checkpoints.sort(key=lambda item: item[1].get("global_step", 0))  # stable: files given in order stay so
    checkpoints = checkpoints[-last:] if last else checkpoints
    _check_same_model(checkpoints)
    averaged = dict(checkpoints[-1][1])
    averaged["state_dict"] = average_state_dicts([c["state_dict"] for _, c in checkpoints])
    sources = [(path, int(c.get("global_step", 0))) for path, c in checkpoints]
    averaged["averaged_from"] = [{"file": str(path), "global_step": step} for path, step in sources]
    return averaged, sources
