"""Weights & Biases: one fresh run per job, W&B's own mode and credential rules, and what reaches the run.

- `WandbLogger` (conf/logger/wandb.yaml) is Lightning's logger with three changes: it starts a new W&B run instead of
  reusing the process's current one (Lightning's reuse put every job of a multirun into one run); the mode follows
  W&B's settings, and with none it is online only when W&B finds credentials; and `wandb.init` waits at most
  `init_timeout` seconds for the server, then the run continues offline after a one-line warning.
- `WandbMedia` (conf/callbacks/default.yaml) logs the BLEU-by-length table and sample translations at every
  validation and test; it does nothing without a W&B logger.
- `log_run_summary` puts the run's final numbers into the W&B summary, with the BLEU-by-length plot and the
  attention heatmaps as images; `finish_run` ends the job's W&B run (seqbench.training.run calls both).

Everything here logs from global rank zero only (Lightning's rank-zero experiment; the callback checks the rank).
"""
from __future__ import annotations

import io
import os
import sys
import typing
from pathlib import Path

import lightning as L
from lightning.pytorch.loggers import WandbLogger as LightningWandbLogger
from lightning.pytorch.loggers.logger import rank_zero_experiment

from seqbench.common.errors import ConfigError, InputError
from seqbench.common.subset import fixed_subset
from seqbench.rundir.results import summary_metrics

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
        if mode is not None and mode not in _allowed_modes():
            raise ConfigError(f"logger.wandb.mode={mode!r}: allowed values are null, {', '.join(_allowed_modes())}")
        # offline=False: Lightning would otherwise set WANDB_MODE for the whole process (every later job) and refuse
        # log_model, although W&B keeps an offline run's artifacts for `wandb sync`.
        super().__init__(offline=False, **kwargs)
        self._mode, self._init_timeout = mode, init_timeout

    @property
    @rank_zero_experiment
    def experiment(self):
        if self._experiment is None:
            import wandb

            attach_id = getattr(self, "_attach_id", None)
            if attach_id is not None:  # a spawned DDP worker re-attaching to the run its parent started
                self._experiment = wandb._attach(attach_id)
            else:
                self._experiment = start_run(self._wandb_init, self._mode, self._init_timeout)
                # as Lightning does: plot every metric against the training step
                self._experiment.define_metric("trainer/global_step")
                self._experiment.define_metric("*", step_metric="trainer/global_step", step_sync=True)
        return self._experiment


def wandb_loggers(loggers) -> list[LightningWandbLogger]:
    return [logger for logger in loggers if isinstance(logger, LightningWandbLogger)]


def finish_run(exit_code: int) -> None:
    """Ends the W&B run this process has open, if any: marked failed when exit_code != 0. Called at the end of
    every job, so the next job of a multirun starts its own run."""
    wandb = sys.modules.get("wandb")  # never imported: nothing to finish
    if wandb is not None and wandb.run is not None:
        wandb.run.finish(exit_code=exit_code)


class WandbMedia(L.Callback):
    """At every validation (after the module has scored it) and at the test pass: the BLEU-by-length table and
    `samples` translations (source, reference, hypothesis; the same sentences every time) as W&B tables."""

    def __init__(self, samples: int = 5):
        self.samples = samples
        self._logged: dict[str, dict] = {}  # split -> the results last logged (a validation without BLEU has none)

    def on_validation_end(self, trainer, pl_module):
        if not trainer.sanity_checking:
            self._log_tables(trainer, pl_module, "valid", "val")

    def on_test_end(self, trainer, pl_module):
        self._log_tables(trainer, pl_module, "test", "test")

    def _log_tables(self, trainer, pl_module, split: str, prefix: str) -> None:
        loggers = wandb_loggers(trainer.loggers)
        result = pl_module.evaluations.get(split)  # seqbench.scoring.evaluation.SplitEvaluation of the last pass
        if not loggers or not trainer.is_global_zero or result is None or result is self._logged.get(split):
            return
        import wandb

        self._logged[split] = result
        by_length = wandb.Table(columns=["bucket", "sentences", "bleu"],
                                data=[[b["bucket"], b["sentences"], b["bleu"]]
                                      for b in result.scores.get("bleu_by_length", [])])
        rows = [[result.indices[k], result.sources[k], result.references[k], result.hypotheses[k]]
                for k in fixed_subset(len(result.indices), self.samples)]
        samples = wandb.Table(columns=["index", "source", "reference", "hypothesis"], data=rows)
        for logger in loggers:
            logger.log_metrics({f"{prefix}/bleu_by_length": by_length, f"{prefix}/samples": samples},
                               step=trainer.global_step)


def _image(figure, caption: str | None = None):
    """A matplotlib Figure (built without pyplot, as the report's are) as a wandb.Image."""
    import wandb
    from PIL import Image

    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=100)
    buffer.seek(0)
    return wandb.Image(Image.open(buffer), caption=caption)


def log_run_summary(loggers, results: dict, run_dir: str | Path, step: int) -> None:
    """The run's final numbers into each W&B logger's run summary, and the report's BLEU-by-length plot (and the
    structural breakdowns' plots, when the corpus records them: also the targeted scores by distance within sentence
    length, as a table and a plot) and the attention heatmaps (attention.pt) as images."""
    loggers = wandb_loggers(loggers)
    if not loggers:
        return
    import wandb

    from seqbench.analysis.plots import attention_figures, plot_by_bucket, plot_length_distance
    from seqbench.analysis.summary import length_distance_cells, present_breakdowns
    from seqbench.rundir.reader import Run

    summary = summary_metrics(results)
    run = Run(Path(run_dir), results)
    groups = {run.label: [run]}
    images = {}
    for breakdown in present_breakdowns(groups, "test"):
        images[f"test/{breakdown.name}_plot"] = _image(plot_by_bucket(groups, "test", breakdown))
    cells = results.get("test", {}).get("targeted", {}).get("by_length_distance", [])
    if cells:
        columns = ["kind", "length", "distance", "dependencies", "covered", "coverage", "accuracy"]
        images["test/targeted_by_length_distance"] = wandb.Table(columns=columns,
                                                                 data=[[c[k] for k in columns] for c in cells])
        for kind in sorted({c["kind"] for c in cells}):
            table = length_distance_cells(groups, "test", kind, "accuracy")
            images[f"test/length_distance_{kind}_plot"] = _image(plot_length_distance(table, kind, "accuracy"))
    attention = [_image(fig, caption=name) for name, fig in attention_figures(groups)]
    if attention:
        images["test/attention"] = attention
    for logger in loggers:
        logger.experiment.summary.update(summary)
        if images:
            logger.log_metrics(images, step=step)
