"""Learning-rate schedules as multipliers of the optimizer's base lr, for torch.optim.lr_scheduler.LambdaLR, stepped
every optimizer update. `schedule` is what the config builds (`scheduler.kind` picks one), so a training recipe
(conf/recipe/) can choose the schedule as a value, as it chooses the lr.

- inverse_sqrt: linear warm-up to the base lr, then lr * sqrt(warmup / step) (the Transformer paper's "Noam"
  schedule, normalised so that its peak is the base lr);
- cosine: linear warm-up, then cosine decay to min_factor * lr at total_steps (by default the update budget,
  trainer.max_steps); a run shorter than the warm-up ends during it (a 20-update smoke run of a tuned recipe works);
- constant: linear warm-up (if any), then the base lr.

Kept as LambdaLR multipliers, torch's own scheduler for a closed-form factor: torch has no inverse-sqrt schedule, and
its chained LinearLR -> CosineAnnealingLR computes the cosine step by step from the last lr, where a closed form
gives a resumed run exactly the uninterrupted run's lr at every update.
"""
from __future__ import annotations

import math
from typing import Callable

from torch.optim import Optimizer
from torch.optim.lr_scheduler import LambdaLR

KINDS = ("inverse_sqrt", "cosine", "constant")


def inverse_sqrt(warmup_steps: int) -> Callable[[int], float]:
    """The paper's d_model**-0.5 * min(step**-0.5, step * warmup**-1.5) is this with lr = d_model**-0.5 *
    warmup**-0.5."""
    warmup_steps = max(1, warmup_steps)
    return lambda step: min((step + 1) / warmup_steps, math.sqrt(warmup_steps / (step + 1)))


def cosine(warmup_steps: int, total_steps: int, min_factor: float = 0.0) -> Callable[[int], float]:
    def factor(step: int) -> float:
        step += 1
        if step < warmup_steps:
            return step / warmup_steps
        progress = min(1.0, (step - warmup_steps) / max(1, total_steps - warmup_steps))
        return min_factor + (1 - min_factor) * 0.5 * (1 + math.cos(math.pi * progress))

    return factor


def constant(warmup_steps: int = 0) -> Callable[[int], float]:
    return lambda step: min(1.0, (step + 1) / warmup_steps) if warmup_steps else 1.0


def schedule(optimizer: Optimizer, kind: str = "inverse_sqrt", warmup_steps: int = 0, total_steps: int | None = None,
             min_factor: float = 0.0, default_total_steps: Callable[[], int] | int | None = None) -> LambdaLR:
    """The `kind` schedule (KINDS) over `optimizer`; `total_steps` and `min_factor` are the cosine's (LambdaLR's step
    0 is the first update, which already gets a non-zero lr). `default_total_steps`: the cosine's horizon when
    total_steps is unset or below 1 (a budget in epochs: the trainer's estimate of the updates they make), or a
    function giving it, asked only then."""
    if (total_steps is None or total_steps < 1) and kind == "cosine":
        total_steps = default_total_steps() if callable(default_total_steps) else default_total_steps
    if kind == "inverse_sqrt":
        factor = inverse_sqrt(warmup_steps)
    elif kind == "cosine":
        factor = cosine(warmup_steps, total_steps, min_factor)
    elif kind == "constant":
        factor = constant(warmup_steps)
    else:
        raise ValueError(f"scheduler.kind={kind!r}: one of {', '.join(KINDS)}")
    return LambdaLR(optimizer, factor)
