"""Learning-rate schedules as multipliers of the optimizer's base lr, for torch.optim.lr_scheduler.LambdaLR.

Each is built by Hydra (`_partial_: true`) and stepped every optimizer update.
"""
from __future__ import annotations

import math

from torch.optim import Optimizer
from torch.optim.lr_scheduler import LambdaLR


def inverse_sqrt(optimizer: Optimizer, warmup_steps: int = 4000) -> LambdaLR:
    """Noam schedule normalised so the peak equals the base lr: linear warm-up, then decay as 1/sqrt(step).

    The paper's d_model**-0.5 * min(step**-0.5, step * warmup**-1.5) is this with lr = d_model**-0.5 * warmup**-0.5.
    """
    warmup_steps = max(1, warmup_steps)

    def factor(step: int) -> float:
        step = step + 1  # LambdaLR starts at 0; the first update should already get a non-zero lr
        return min(step / warmup_steps, math.sqrt(warmup_steps / step))

    return LambdaLR(optimizer, factor)


def constant(optimizer: Optimizer, warmup_steps: int = 0) -> LambdaLR:
    return LambdaLR(optimizer, lambda step: min(1.0, (step + 1) / warmup_steps) if warmup_steps else 1.0)


def cosine(optimizer: Optimizer, warmup_steps: int, total_steps: int, min_factor: float = 0.0) -> LambdaLR:
    def factor(step: int) -> float:
        step += 1
        if step < warmup_steps:
            return step / warmup_steps
        progress = min(1.0, (step - warmup_steps) / max(1, total_steps - warmup_steps))
        return min_factor + (1 - min_factor) * 0.5 * (1 + math.cos(math.pi * progress))

    return LambdaLR(optimizer, factor)
