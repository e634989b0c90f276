"""Weights & Biases: one fresh run per job, W&B's own mode and credential rules, and what reaches the run.

- `WandbLogger` (conf/logger/wandb.yaml) is Lightning's logger with three changes: it starts a new W&B run instead of
  reusing the process's current one (Lightning's reuse put every job of a multirun into one run); the mode follows
  W&B's settings, and with none it is online only when W&B finds credentials; and `wandb.init` waits at most
  `init_timeout` seconds for the server, then the run continues offline after a one-line warning.
- A run resumed from a checkpoint continues the W&B run it started (`WandbLogger.resume_from`).
- `finish_run` ends the job's W&B run (seqbench.training.run calls it at the end of every job).

What reaches the run besides scalars (tables, plots, the summary) is seqbench.loggers.media's, shared with TensorBoard.

Everything here logs from global rank zero only (Lightning's rank-zero experiment; the callback checks the rank).

This module is seqbench's adapter to W&B's internals, pinned by a test in tests/test_framework_adapters.py: W&B's netrc
lookup (`wandb.sdk.lib.wbauth.read_netrc_auth`; the public `wandb.login(prompt=False, verify=False)` would answer too,
but when it finds a key it asks the server whose it is, a network wait before wandb.init's bounded one). The state of
Lightning's WandbLogger that the subclass sets and reads to start the run itself is reached through
seqbench.common.lightning_adapter, Lightning's adapter.
"""
from __future__ import annotations

import os
import sys
import typing
from pathlib import Path

from lightning.pytorch.loggers import WandbLogger as LightningWandbLogger
from lightning.pytorch.loggers.logger import rank_zero_experiment

from seqbench.common import lightning_adapter
from seqbench.common.errors import ConfigError, InputError

# Modes that talk to a server: a failure to reach it falls back to offline.
_ONLINE_MODES = ("online", "run", "shared")


def _allowed_modes() -> tuple[str, ...]:
    import wandb

    return typing.get_args(wandb.Settings.model_fields["mode"].annotation)


def _settings():
    """W&B's global settings: WANDB_* variables, the settings files that `wandb login --host` and `wandb offline`
    write, and W&B's defaults. An invalid WANDB_MODE is one line rather than pydantic's report."""
    import wandb

    value = os.environ.get("WANDB_MODE")
    if value is not None and value not in _allowed_modes():
        raise InputError(f"WANDB_MODE={value!r}: allowed values are {', '.join(_allowed_modes())}")
    return wandb.setup().settings


def has_credentials(settings) -> bool:
    """Whether W&B would find an API key without prompting, by its own lookup: WANDB_API_KEY (or a key in its settings
    files), WANDB_IDENTITY_TOKEN_FILE, then the netrc entry ($NETRC, else ~/.netrc) for the host W&B talks to
    (WANDB_BASE_URL, a `wandb login --host` setting, or W&B's default server)."""
    from wandb.errors import AuthenticationError
    from wandb.sdk.lib.wbauth import read_netrc_auth

    if settings.api_key or settings.identity_token_file:
        return True
    try:
        return read_netrc_auth(host=settings.base_url) is not None
    except AuthenticationError:  # an entry with a malformed key: wandb.init reports it
        return True


def init_mode(mode: str | None) -> str:
    """The mode for wandb.init: the config's if set; else W&B's own setting when one was made (WANDB_MODE, or
    `wandb offline` / `wandb disabled`); else online when W&B finds credentials and offline otherwise, so a machine
    that never logged in neither prompts nor waits."""
    if mode:
        return mode
    settings = _settings()
    if os.environ.get("WANDB_MODE") or settings.mode not in _ONLINE_MODES:
        return settings.mode
    return "online" if has_credentials(settings) else "offline"


def start_run(init_kwargs: dict, mode: str | None, init_timeout: float):
    """A new W&B run (any current one is finished first). If the server cannot be reached within `init_timeout`
    seconds the run starts offline, with a one-line warning; a login problem (no key, a malformed key) is one line."""
    import wandb

    mode = init_mode(mode)
    # quiet: besides less console output, it skips the account lookup that W&B does before init when it prints who
    # is logged in, which would add its own network timeouts to init_timeout when the server is unreachable.
    settings = wandb.Settings(init_timeout=init_timeout, quiet=True)
    try:
        return wandb.init(**init_kwargs, mode=mode, settings=settings, reinit="finish_previous")
    except wandb.errors.CommError as error:
        reason = str(error).splitlines()[0]
        print(f"warning: W&B server {wandb.setup().settings.base_url} not reachable within {init_timeout:g} s "
              f"({reason}); this run logs offline, upload it later with `wandb sync`", file=sys.stderr)
        return wandb.init(**init_kwargs, mode="offline", settings=settings, reinit="finish_previous")
    except wandb.errors.Error as error:  # e.g. UsageError: WANDB_MODE=online without an API key
        raise InputError(f"W&B ({mode}): {str(error).splitlines()[0]}") from error


class WandbLogger(LightningWandbLogger):
    """Lightning's WandbLogger, but every instance starts its own W&B run, in the mode `init_mode` picks, waiting at
    most `init_timeout` seconds for the server. Other arguments are Lightning's (project, name, group, tags,
    log_model, ...; the rest go to wandb.init). `offline` is not used: the mode says it."""

    def __init__(self, *, mode: str | None = None, init_timeout: float = 10.0, **kwargs):
        try:
            import wandb  # noqa: F401
        except ImportError:  # an optional extra since the default logger is csv
            raise ConfigError("logger=wandb: W&B is not installed: pip install 'seqbench[wandb]'") from None
        if mode is not None and mode not in _allowed_modes():
            raise ConfigError(f"logger.wandb.mode={mode!r}: allowed values are null, {', '.join(_allowed_modes())}")
        # offline=False: Lightning would otherwise set WANDB_MODE for the whole process (every later job) and refuse
        # log_model, although W&B keeps an offline run's artifacts for `wandb sync`.
        super().__init__(offline=False, **kwargs)
        self._mode, self._init_timeout = mode, init_timeout

    def resume_from(self, update: int) -> None:
        """A run resumed from a checkpoint continues the W&B run it logged to before (the newest under its save_dir,
        with Lightning's resume="allow"), so its history is one W&B run rather than two; no earlier run: a new one.
        Call before anything is logged. Updates logged after the checkpoint and repeated by the resumed run appear
        twice in the W&B history, each at its trainer/global_step."""
        earlier = sorted(Path(self.save_dir or ".", "wandb").glob("*run-*_*-*"),  # [offline-]run-<date>_<time>-<id>
                         key=lambda folder: folder.name.split("run-", 1)[1])
        if earlier and self.version is None:
            lightning_adapter.set_wandb_run_id(self, earlier[-1].name.rsplit("-", 1)[1])

    @property
    @rank_zero_experiment
    def experiment(self):
        # A spawned DDP worker's logger names the run its parent started: Lightning re-attaches it.
        if lightning_adapter.wandb_run(self) is None and not lightning_adapter.reattaches_wandb_run(self):
            run = start_run(lightning_adapter.wandb_init_args(self), self._mode, self._init_timeout)
            lightning_adapter.set_wandb_run(self, run)
            # as Lightning does: plot every metric against the training step
            run.define_metric("trainer/global_step")
            run.define_metric("*", step_metric="trainer/global_step", step_sync=True)
        return super().experiment


def finish_run(exit_code: int) -> None:
    """Ends the W&B run this process has open, if any: marked failed when exit_code != 0. Called at the end of
    every job, so the next job of a multirun starts its own run."""
    wandb = sys.modules.get("wandb")  # never imported: nothing to finish
    if wandb is not None and wandb.run is not None:
        wandb.run.finish(exit_code=exit_code)
