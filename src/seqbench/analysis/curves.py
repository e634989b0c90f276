"""Validation curves over training, per model over seeds: where a model stood at each validation, and whether it was
still improving when its budget ended.

A curve point is one validation during training (seqbench.rundir.reader.Run.curve): overall validation BLEU and,
where the run recorded it, BLEU per source-length bucket. "Levelled off" is read from the gain over the last stretch
of the budget (each seed's BLEU at its last validation minus at the validation `LATE_FRACTION` of the budget
earlier), with its 95% interval over seeds: an interval that spans zero says no gain was measured, not that none was
left.
"""
from __future__ import annotations

from seqbench.analysis.seeds import Spread, spread
from seqbench.common.errors import InputError
from seqbench.rundir.reader import Run

LATE_FRACTION = 0.25  # the last quarter of the budget: 2,200 of 8,800 updates


def score_at(point: dict, bucket: str | None) -> float | None:
    """A curve point's overall validation BLEU (bucket None) or its BLEU in one source-length bucket."""
    if bucket is None:
        return point["bleu"]
    return (point.get("bleu_by_length") or {}).get(bucket)


def common_steps(runs: list[Run]) -> list[int]:
    """The validation steps every run of a model has, in order: the columns of its curve."""
    steps = [{int(p["step"]) for p in run.curve()} for run in runs]
    return sorted(set.intersection(*steps)) if steps else []


def curve_spreads(runs: list[Run], bucket: str | None = None) -> dict[int, Spread]:
    """step -> the score's mean and 95% interval over the model's seeds at that validation."""
    by_step = [{int(p["step"]): score_at(p, bucket) for p in run.curve()} for run in runs]
    return {step: spread([points.get(step) for points in by_step]) for step in common_steps(runs)}


def late_start(steps: list[int], fraction: float = LATE_FRACTION) -> int:
    """The validation the last stretch is measured from: the latest one at or before (1 - fraction) of the last."""
    if len(steps) < 2:
        raise InputError(f"validations at {steps}: a gain needs two validations during training "
                         "(trainer.val_check_interval)")
    limit = steps[-1] * (1 - fraction)
    return max((s for s in steps[:-1] if s <= limit), default=steps[0])


def late_gain(runs: list[Run], bucket: str | None = None, fraction: float = LATE_FRACTION) -> tuple[int, Spread]:
    """(the step the stretch starts at, the gain over it): each seed's score at the last common validation minus at
    `late_start`, as a mean with its 95% interval over seeds."""
    steps = common_steps(runs)
    start = late_start(steps, fraction)
    gains = []
    for run in runs:
        points = {int(p["step"]): score_at(p, bucket) for p in run.curve()}
        first, last = points.get(start), points.get(steps[-1])
        gains.append(None if first is None or last is None else last - first)
    return start, spread(gains)


def shortest_bucket(runs: list[Run]) -> str | None:
    """The first source-length bucket the runs' curves hold (the shortest sentences), or None when none does."""
    for run in runs:
        for point in run.curve():
            if point.get("bleu_by_length"):
                return next(iter(sorted(point["bleu_by_length"], key=_bucket_start)))
    return None


def _bucket_start(name: str) -> int:
    """"11-20" -> 11, "61+" -> 61: buckets in length order whatever order a log stored them in."""
    return int(name.split("-")[0].rstrip("+"))
