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
    uninterrupted run's (a training row's step is its update - 1, a validation's the update it follows - 1)."""

    _resumed_at: int | None = None

    def resume_from(self, update: int) -> None:
        """Call before anything is logged, with the global step of the checkpoint the run resumes from."""
        self._resumed_at = update

    @property
    @rank_zero_experiment
    def experiment(self):
        if self._experiment is not None or self._resumed_at is None:
            return super().experiment
        path = Path(self.log_dir) / "metrics.csv"
        header, rows = [], []
        if path.is_file():
            with path.open(newline="") as f:
                reader = csv.DictReader(f)
                rows = [row for row in reader if row.get("step") and int(row["step"]) < self._resumed_at]
                header = sorted(reader.fieldnames or [])  # Lightning's writer keeps its columns sorted
        experiment = super().experiment  # removes metrics.csv
        if rows:
            with path.open("w", newline="") as f:
                writer = csv.DictWriter(f, fieldnames=header)
                writer.writeheader()
                writer.writerows(rows)
            experiment.metrics_keys = header  # later rows append under this header, or rewrite it with new columns
        return experiment
