"""Cost to a quality, the comparison Vaswani et al. (2017, Table 2) argue from: the training FLOPs, minutes and
updates each model needed before its validation BLEU first reached a target, read from its learning curve
(results.json "curve": one point per validation, so the resolution is the validation interval)."""
from __future__ import annotations

from seqbench.analysis.summary import spread
from seqbench.rundir.reader import Run

DEFAULT_TARGETS = (80.0, 90.0)


def has_compute_curves(groups: dict[str, list[Run]]) -> bool:
    """Whether some run recorded training FLOPs at its validations (runs of older versions did not)."""
    return any(p.get("train_flops") is not None for runs in groups.values() for r in runs for p in r.curve())


def first_reaching(curve: list[dict], target: float) -> dict | None:
    """The first validation point whose BLEU is at least `target`, or None if training never got there."""
    return next((p for p in curve if p["bleu"] >= target), None)


def compute_to_target(groups: dict[str, list[Run]], targets=DEFAULT_TARGETS) -> list[dict]:
    """Per model: {"label", "seeds" (runs with a curve), "best_bleu", "updates", "train_flops", "train_minutes"
    (each a Spread: mean, 95% CI, n over seeds, at the end of training), "targets": {target: {"reached" (seeds that got
    there), "train_flops", "train_minutes", "updates" (Spreads over those seeds)}}}."""
    rows = []
    for label, runs in groups.items():
        curves = [c for c in (r.curve() for r in runs) if c and c[-1].get("train_flops") is not None]
        row = {"label": label, "seeds": len(curves),
               "best_bleu": spread([max(p["bleu"] for p in c) for c in curves]),
               "updates": spread([c[-1]["step"] for c in curves]),
               "train_flops": spread([c[-1]["train_flops"] for c in curves]),
               "train_minutes": spread([c[-1]["train_seconds"] / 60 for c in curves]), "targets": {}}
        for target in targets:
            hits = [p for p in (first_reaching(c, target) for c in curves) if p is not None]
            row["targets"][target] = {"reached": len(hits),
                                      "train_flops": spread([p["train_flops"] for p in hits]),
                                      "train_minutes": spread([p["train_seconds"] / 60 for p in hits]),
                                      "updates": spread([p["step"] for p in hits])}
        rows.append(row)
    return rows
