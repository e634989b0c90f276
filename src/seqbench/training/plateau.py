"""Training to the plateau: Lightning's EarlyStopping with seqbench's plateau rule in place of its patience.

A fixed update budget ranks how fast each family learns up to that cap; where one family is still climbing there,
it does not rank what each learns. `budget=plateau` (conf/budget/plateau.yaml) trains every run until its own curve
has levelled off by one stated rule (seqbench.analysis.plateau: the best validation BLEU rose by less than
`min_gain` over the last `window` of the updates), never before `min_steps`, and at most trainer.max_steps (the cap:
a run that reaches it stopped by "max_steps", not "plateau", and every table that shows it says so).

Lightning's EarlyStopping does the rest as it does for patience: the decision is reduced over DDP ranks, the Trainer
stops after the validation that decided, and the state (here the validation history) is saved in checkpoints, so a
resumed run stops at the update the uninterrupted one would.
"""
from __future__ import annotations

import torch
from lightning.pytorch.callbacks import EarlyStopping
from lightning.pytorch.callbacks.early_stopping import EarlyStoppingReason

from seqbench.analysis.plateau import window_gain


class PlateauStopping(EarlyStopping):
    """Stops once the monitored metric's best value rose by less than `min_gain` over the last `window` (a share of
    the updates so far), at a validation at or after `min_steps` updates. Mode "max" (BLEU) only: a plateau of a
    loss is read the same way from its negation, which nothing here needs yet."""

    def __init__(self, monitor: str = "val/bleu", window: float = 0.25, min_gain: float = 0.3, min_steps: int = 0,
                 verbose: bool = True):
        if not 0 < window < 1:
            raise ValueError(f"window={window}: a share of the updates, between 0 and 1")
        super().__init__(monitor=monitor, mode="max", patience=1, strict=True, check_finite=True,
                         check_on_train_epoch_end=False, verbose=verbose)
        self.window, self.min_gain, self.min_steps = window, min_gain, min_steps
        self.history: list[tuple[int, float]] = []  # (update, value) of every validation during fit
        self._step = 0

    def state_dict(self) -> dict:
        return {**super().state_dict(), "history": [list(point) for point in self.history]}

    def load_state_dict(self, state_dict: dict) -> None:
        super().load_state_dict(state_dict)
        self.history = [(int(step), float(value)) for step, value in state_dict.get("history", [])]

    def on_validation_end(self, trainer, pl_module) -> None:
        self._step = trainer.global_step  # the update _evaluate_stopping_criteria's value belongs to
        super().on_validation_end(trainer, pl_module)

    def _evaluate_stopping_criteria(self, current):
        if self.check_finite and not current.isfinite():
            return super()._evaluate_stopping_criteria(current)
        value = float(current)
        if not self.history or self.history[-1][0] != self._step:  # a validation repeated at one update counts once
            self.history.append((self._step, value))
        self.best_score = torch.maximum(self.best_score, current.to(self.best_score.device))
        gain = window_gain(self.history, self.window)
        if self._step < self.min_steps or gain is None or gain[1] >= self.min_gain:
            return False, None
        self.stopping_reason = EarlyStoppingReason.PATIENCE_EXHAUSTED
        return True, (f"plateau at update {self._step:,}: the best {self.monitor} ({float(self.best_score):.2f}) rose "
                      f"{gain[1]:.2f} since update {gain[0]:,}, less than {self.min_gain} over the last "
                      f"{self.window:.0%} of the updates; stopping")
