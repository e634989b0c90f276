"""Train, evaluate and record one run: `python train.py model=transformer trainer.max_epochs=5`.

Composition lives in conf/, the work in seqbench.run; this file turns how a run ends into one line and an exit status:
0 completed; 2 a bad config or input, the project's, Hydra's or Lightning's alike (seqbench.cli; before anything
runs); 1 diverged or failed; 128 + the signal number when SIGTERM/SIGINT interrupted it (rerun with the same
hydra.run.dir to resume). In a multirun a job that fails is recorded (results.json "status": "failed" in its
directory) and the sweep goes on; the sweep then exits 1, naming the failed jobs.
"""
import logging
import sys
from pathlib import Path

import hydra
from omegaconf import DictConfig

from seqbench.cli import composition_done, exit_if_user_error, run_cli
from seqbench.config_check import check_group_choices
from seqbench.errors import ConfigError, user_error
from seqbench.hydra_resolvers import register_resolvers

register_resolvers()
log = logging.getLogger("train")
FAILED_JOBS: list[str] = []  # "<run dir>: <error line>" of every job of this process's multirun that failed


# An absolute config_path: tests call main() in-process, where Hydra would look for a `conf` package instead.
@hydra.main(version_base="1.3", config_path=str(Path(__file__).resolve().parent / "conf"), config_name="train")
def main(cfg: DictConfig) -> float | None:
    composition_done()
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    from seqbench.results import write_status
    from seqbench.run import run  # after composition: a bad override fails before the heavy imports
    from seqbench.run_status import Diverged, Interrupted

    multirun = HydraConfig.get().mode == RunMode.MULTIRUN
    try:
        results = run(cfg)
    except Interrupted as stop:  # also ends a sweep: the scheduler wants the whole process gone
        print(f"error: {stop}; rerun with hydra.run.dir={cfg.paths.output_dir} to resume", file=sys.stderr)
        sys.exit(stop.exit_status)
    except Exception as error:  # noqa: BLE001 - only the user's own mistakes become one line; the rest re-raises
        cause = user_error(error) or (error if isinstance(error, Diverged) else None)
        if multirun:
            # Like lightning-hydra-template's task_wrapper: record the job, log its traceback, run the next job.
            if cause is not None and not isinstance(error, Diverged):
                write_status(cfg.paths.output_dir, "failed", cause)  # run() records everything but bad input
            log.error("job failed: %s", cause or error, exc_info=cause is None)
            FAILED_JOBS.append(f"{cfg.paths.output_dir}: {cause or f'{type(error).__name__}: {error}'}")
            return None
        if cause is None:
            exit_if_user_error(error)  # Hydra's and Lightning's misconfigurations, as one line
            raise
        print(f"error: {cause}", file=sys.stderr)
        sys.exit(1 if isinstance(cause, Diverged) else 2)
    return results.get("valid", {}).get("bleu")  # the value Hydra sweepers optimise


if __name__ == "__main__":
    try:
        check_group_choices(sys.argv[1:], str(Path(__file__).parent / "conf"))
    except ConfigError as error:
        print(f"error: {error}", file=sys.stderr)
        sys.exit(2)
    run_cli(main)
    if FAILED_JOBS:
        print(f"error: {len(FAILED_JOBS)} job(s) of the multirun failed (results.json \"status\": \"failed\"):",
              *FAILED_JOBS, sep="\n  ", file=sys.stderr)
        sys.exit(1)
