"""Lightning's CSVLogger, except that a resumed run keeps the rows it logged before it was stopped."""
from __future__ import annotations

import csv
from pathlib import Path

from lightning.pytorch.loggers import CSVLogger
from lightning.pytorch.loggers.logger import rank_zero_experiment


class ResumableCSVLogger(CSVLogger):
    """Lightning's writer deletes metrics.csv from a folder it finds in use, so a run resumed from last.ckpt kept
    only the rows logged after the resume. Told the update it resumes from (`resume_from`), this logger keeps
    the earlier rows logged before that update and drops the later ones: those came from training after the
    checkpoint, or from evaluating after training, which the resumed run repeats. So metrics.csv reads as an
    uninterrupted run's (a training row's step is its update - 1, a validation's the update it follows - 1).

    Only Lightning's public API: the kept rows go back through the experiment writer's `log_metrics` and `save`, as
    the logger's own rows do, so the writer knows the file's columns (tests/test_framework_adapters.py pins the
    result)."""

    _resumed_at: int | None = None

    def resume_from(self, update: int) -> None:
        """Call before anything is logged, with the global step of the checkpoint the run resumes from."""
        self._resumed_at = update

    @property
    @rank_zero_experiment
    def experiment(self):
        resumed_at, self._resumed_at = self._resumed_at, None  # only the first use, which makes the writer
        if resumed_at is None:
            return super().experiment
        path = Path(self.log_dir) / "metrics.csv"
        kept = []
        if path.is_file():
            with path.open(newline="") as f:
                kept = [row for row in csv.DictReader(f) if row.get("step") and int(row["step"]) < resumed_at]
            path.unlink()  # the writer starts a new file, to which the kept rows go first
        experiment = super().experiment
        for row in kept:  # a row's empty cells are the metrics it did not log
            experiment.log_metrics({key: value for key, value in row.items() if key != "step" and value != ""},
                                   int(row["step"]))
        experiment.save()
        return experiment
