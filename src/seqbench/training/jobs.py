"""One job of `seqbench train`, alone or in a multirun. In a multirun a job that fails is recorded (results.json
"status": "failed" in its run directory, its traceback in the log) and the sweep goes on to the next job, like
lightning-hydra-template's task_wrapper; `MultirunFailures` collects them for the sweep's exit status. Alone, what
stops a job reaches the command, which turns it into one line and an exit status."""
from __future__ import annotations

import logging
from dataclasses import dataclass, field

from omegaconf import DictConfig

from seqbench.common.errors import user_error
from seqbench.rundir.results import write_status
from seqbench.training.console import stopped_short
from seqbench.training.status import CutShort, Diverged, Interrupted

log = logging.getLogger("train")


@dataclass
class MultirunFailures:
    """The jobs of one multirun that failed, as "<run dir>: <error line>", in the order they failed."""

    lines: list[str] = field(default_factory=list)


def run_job(cfg: DictConfig, failures: MultirunFailures | None = None) -> float | None:
    """Runs one job and returns the value Hydra's sweepers optimise, its validation BLEU. With `failures` (a
    multirun), a job that fails or diverges is recorded there and in its run directory and returns None, and one cut
    short by the time guard is listed there (alone: CutShort is raised once it is recorded); an interruption always
    propagates (a scheduler that stops a sweep wants the whole process gone)."""
    from seqbench.training.run import run  # imports Lightning: after composition, so a bad override fails fast

    try:
        results = run(cfg)
    except Interrupted:
        raise
    except Exception as error:  # noqa: BLE001 - only a multirun goes on; alone, everything propagates
        if failures is None:
            raise
        cause = user_error(error) or (error if isinstance(error, Diverged) else None)
        if cause is not None and not isinstance(error, Diverged):
            write_status(cfg.paths.output_dir, "failed", cause)  # run() records everything but bad input
        log.error("job failed: %s", cause or error, exc_info=cause is None)
        failures.lines.append(f"{cfg.paths.output_dir}: {cause or f'{type(error).__name__}: {error}'}")
        return None
    if (short := stopped_short(results)) is not None:  # scored and recorded, but not the budget asked for
        if failures is None:
            raise CutShort(f"{short}; results.json status \"cut_short\" in {cfg.paths.output_dir}")
        failures.lines.append(f"{cfg.paths.output_dir}: {short}")
    return results.get("valid", {}).get("bleu")
