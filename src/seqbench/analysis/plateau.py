"""Where a learning curve levels off, and what it cost to get there.

The plateau rule (seqbench.training.plateau.PlateauStopping trains by it): a run has levelled off at update U when
its best validation BLEU so far has risen by less than `min_gain` over the last `window` of its updates, i.e. best
up to U minus best up to (1 - window) * U. The best so far, not the last point: a validation a few BLEU below the
one before (greedy BLEU on a small validation set moves by a point or two between validations) neither stops a run
that is still climbing nor keeps one going. The window grows with the run, so "the last quarter" means the same at
2,000 updates as at 10,000.

`plateau_record` is what results.json keeps of it (train.plateau): the level (the best validation BLEU, whose
checkpoint the test decodes when the checkpoint rule follows val/bleu), the gain over the last window, and the
updates, training FLOPs and seconds (wall and CPU) each run needed to first reach 90%, 95% and 99% of its own level
and a common target.
"""
from __future__ import annotations

from seqbench.analysis.compute import first_reaching

FRACTIONS = (0.90, 0.95, 0.99)
COSTS = ("step", "train_flops", "train_seconds", "train_cpu_seconds")  # what "reaching" a level cost


def trained_to_plateau(results: dict) -> bool:
    """Whether a run (its results.json) trained under the plateau rule (budget=plateau)."""
    return bool((results.get("train") or {}).get("plateau_rule"))


def capped_before_plateau(results: dict) -> bool:
    """A run under the plateau rule that its cap (trainer.max_steps) or clock stopped first: its score is not at
    its plateau, and every table that shows it says so."""
    return trained_to_plateau(results) and results["train"].get("stopped_by") != "plateau"


def window_gain(points: list[tuple[int, float]], window: float) -> tuple[int, float] | None:
    """(the update the window starts at, the best value's rise since then) over `points` = [(update, value)] in
    order: best of all points minus best of those at or before (1 - window) * the last update. None while no point
    lies that early (the window is not yet covered)."""
    if not points:
        return None
    last = points[-1][0]
    before = [(step, value) for step, value in points if step <= (1 - window) * last]
    if not before:
        return None
    return before[-1][0], max(v for _, v in points) - max(v for _, v in before)


def plateau_record(curve: list[dict], window: float, target: float | None = None,
                   fractions: tuple[float, ...] = FRACTIONS) -> dict | None:
    """{"level", "level_step", "window_start", "window_gain", "reached": {"90%": cost, ...}, "target": {"bleu",
    "cost"}} of a curve (results.json "curve") whose points carry "bleu"; a cost is the first point at or above the
    level's fraction (its COSTS present in the curve), None where never reached. None without a BLEU curve."""
    points = [p for p in curve if p.get("bleu") is not None]
    if not points:
        return None
    best = max(points, key=lambda p: p["bleu"])
    gain = window_gain([(p["step"], p["bleu"]) for p in points], window)

    def cost(level: float) -> dict | None:
        hit = first_reaching(points, level)
        return None if hit is None else {key: hit[key] for key in COSTS if key in hit}

    record = {"level": best["bleu"], "level_step": best["step"], "window": window,
              "window_start": None if gain is None else gain[0], "window_gain": None if gain is None else gain[1],
              "reached": {f"{fraction:.0%}": cost(fraction * best["bleu"]) for fraction in fractions}}
    if target is not None:
        record["target"] = {"bleu": target, "cost": cost(target)}
    return record
