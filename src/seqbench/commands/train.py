"""`seqbench train [Hydra overrides]` (and `python train.py ...`): train, evaluate and record one run, or a multirun.

Composition lives in the top-level conf/ (seqbench.config.compose.CONF_DIR), whether a config may run in
seqbench.config.checks, the work in seqbench.training.run; this module turns how a run ends into one line and an exit
status: 0 completed; 2 a bad config or input, the project's, Hydra's or Lightning's alike (before anything runs); 1
diverged or failed; 3 cut short: the time guard trainer.max_time stopped training before its budget (results.json
"status": "cut_short", scored in full; with time_budget=true, as budget=time sets, that time is the budget and the run
completes); 128 + the signal number when SIGTERM/SIGINT interrupted it (rerun with the same hydra.run.dir to
resume). In a multirun a job that fails is recorded (seqbench.training.jobs) and the sweep goes on; the sweep then
exits 1, naming the failed jobs.
"""
from __future__ import annotations

import os
import sys
from typing import Sequence

import hydra
from hydra.errors import MissingConfigException
from omegaconf import DictConfig

from seqbench.commands.cli import composition_done, exit_if_user_error
from seqbench.common.errors import user_error
from seqbench.config.checks import check_group_overrides
from seqbench.config.compose import CONF_DIR, CONFIG_NAME, missing_config
from seqbench.config.resolvers import register_resolvers
from seqbench.training.jobs import MultirunFailures


def _task(failures: MultirunFailures):
    """Hydra's task function for one job (made per call, so a multirun's failures are its own, not a module's)."""

    @hydra.main(version_base="1.3", config_path=str(CONF_DIR), config_name=CONFIG_NAME)
    def task(cfg: DictConfig) -> float | None:
        composition_done()
        from hydra.core.hydra_config import HydraConfig
        from hydra.types import RunMode

        from seqbench.training.jobs import run_job  # after composition: a bad override fails before heavy imports
        from seqbench.training.status import CutShort, Diverged, Interrupted, LostRank

        try:
            return run_job(cfg, failures if HydraConfig.get().mode == RunMode.MULTIRUN else None)
        except Interrupted as stop:  # also ends a sweep: the scheduler wants the whole process gone
            if os.environ.get("LOCAL_RANK", "0") == "0":  # the DDP ranks a launcher started share its terminal
                print(f"error: {stop}; rerun with hydra.run.dir={cfg.paths.output_dir} to resume", file=sys.stderr)
            sys.exit(stop.exit_status)
        except LostRank as stop:  # every rank left says it: the launcher may be the one lost
            print(f"error: {stop}", file=sys.stderr)
            sys.exit(stop.exit_status)
        except CutShort as short:  # recorded and summarised; the status says it is not the budget asked for
            print(f"error: {short}", file=sys.stderr)
            sys.exit(short.exit_status)
        except Exception as error:  # noqa: BLE001 - only the user's own mistakes become one line; the rest re-raises
            cause = user_error(error) or (error if isinstance(error, Diverged) else None)
            if cause is None:
                exit_if_user_error(error)  # Hydra's and Lightning's misconfigurations, as one line
                raise
            print(f"error: {cause}", file=sys.stderr)
            sys.exit(1 if isinstance(cause, Diverged) else 2)

    return task


def main(argv: Sequence[str] | None = None) -> int:
    """Hydra reads its overrides from sys.argv: `argv` (default: the process's own) is put there first."""
    argv = list(sys.argv[1:] if argv is None else argv)
    check_group_overrides(argv)  # group overrides Hydra does not report in a way one line is made of (see there)
    register_resolvers()
    failures = MultirunFailures()
    sys.argv = [sys.argv[0], *argv]
    try:
        _task(failures)()  # the config is checked in each job, first thing (seqbench.config.checks.validate)
    except MissingConfigException as error:  # a group choice with no config: one line naming the group's configs
        raise missing_config(error) from error
    if failures.lines:
        print(f"error: {len(failures.lines)} job(s) of the multirun failed (results.json \"status\": \"failed\"):",
              *failures.lines, sep="\n  ", file=sys.stderr)
        return 1
    return 0
