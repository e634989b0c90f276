"""What a run shows its experiment loggers beyond scalars, built once and written to each kind of logger it has:
Weights & Biases (tables, images, the run summary) and TensorBoard (markdown text, figures, hparams).

- `EvaluationMedia` (conf/callbacks/default.yaml, `callbacks.media`) logs the BLEU-by-length table and `samples`
  translations at every validation (after the module has scored it) and at the test pass.
- `log_run_summary` (called by seqbench.training.run after results.json is written) logs the run's final numbers,
  the report's BLEU-by-length plot (and the structural breakdowns' plots when the corpus records them, with the
  targeted scores by distance within sentence length as a table and a plot) and the attention heatmaps.

Loggers of other kinds (CSV) get nothing here: their scalars are Lightning's. Everything here logs from global rank
zero only.
"""
from __future__ import annotations

import io
from pathlib import Path

import lightning as L
from lightning.pytorch.loggers import TensorBoardLogger
from lightning.pytorch.loggers import WandbLogger as LightningWandbLogger

from seqbench.common.subset import fixed_subset
from seqbench.rundir.results import summary_metrics

BY_LENGTH_COLUMNS = ["bucket", "sentences", "bleu"]
SAMPLE_COLUMNS = ["index", "source", "reference", "hypothesis"]
LENGTH_DISTANCE_COLUMNS = ["kind", "length", "distance", "dependencies", "covered", "coverage", "accuracy"]


def wandb_loggers(loggers) -> list[LightningWandbLogger]:
    return [logger for logger in loggers if isinstance(logger, LightningWandbLogger)]


def tensorboard_loggers(loggers) -> list[TensorBoardLogger]:
    return [logger for logger in loggers if isinstance(logger, TensorBoardLogger)]


def markdown_table(columns: list[str], rows: list[list]) -> str:
    """TensorBoard's text plugin renders markdown: a table of the same rows W&B gets as a wandb.Table."""
    def cell(value) -> str:
        text = f"{value:.2f}" if isinstance(value, float) else str(value)
        return text.replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    return "\n".join(lines + ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows])


def write_tables(loggers, tables: dict[str, tuple[list[str], list[list]]], step: int) -> None:
    """{tag: (columns, rows)} as W&B tables and as TensorBoard markdown text."""
    wandb_targets, tensorboard_targets = wandb_loggers(loggers), tensorboard_loggers(loggers)
    if wandb_targets:
        import wandb

        logged = {tag: wandb.Table(columns=columns, data=rows) for tag, (columns, rows) in tables.items()}
        for logger in wandb_targets:
            logger.log_metrics(logged, step=step)
    for logger in tensorboard_targets:
        for tag, (columns, rows) in tables.items():
            logger.experiment.add_text(tag, markdown_table(columns, rows), global_step=step)


def _wandb_image(figure, caption: str | None = None):
    """A matplotlib Figure (built without pyplot, as the report's are) as a wandb.Image."""
    import wandb
    from PIL import Image

    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=100)
    buffer.seek(0)
    return wandb.Image(Image.open(buffer), caption=caption)


def write_figures(loggers, figures: dict[str, list[tuple[str | None, object]]], step: int) -> None:
    """{tag: [(caption, matplotlib Figure), ...]}: one W&B image (or a list of them) per tag; one TensorBoard image
    per figure, under tag or tag/caption."""
    wandb_targets, tensorboard_targets = wandb_loggers(loggers), tensorboard_loggers(loggers)
    if wandb_targets:
        # captioned figures (the attention maps) go as a list of images under one key, a plot as one image
        logged = {tag: [_wandb_image(fig, caption) for caption, fig in figs] if figs[0][0] is not None
                  else _wandb_image(figs[0][1]) for tag, figs in figures.items() if figs}
        for logger in wandb_targets:
            logger.log_metrics(logged, step=step)
    for logger in tensorboard_targets:
        for tag, figs in figures.items():
            for caption, fig in figs:
                logger.experiment.add_figure(f"{tag}/{caption}" if caption else tag, fig, global_step=step,
                                             close=False)


def _flat(config: dict, prefix: str = "") -> dict:
    """Nested config -> {"a/b": value}, values TensorBoard's hparams plugin takes (numbers, strings, booleans)."""
    flat = {}
    for key, value in config.items():
        if isinstance(value, dict):
            flat.update(_flat(value, f"{prefix}{key}/"))
        else:
            flat[f"{prefix}{key}"] = value if isinstance(value, (int, float, str, bool)) else str(value)
    return flat


def write_hparams(logger: TensorBoardLogger, config: dict, metrics: dict, step: int) -> None:
    """The HParams tab's row for this run: the resolved config beside its final numbers. Lightning's log_hyperparams
    also logs those numbers as scalars at `step`, the last update, where seqbench.training.run logged them already:
    identical points, drawn as one."""
    logger.log_hyperparams(_flat(config), metrics, step=step)
    logger.experiment.flush()


class EvaluationMedia(L.Callback):
    """At every validation (after the module has scored it) and at the test pass: the BLEU-by-length table and
    `samples` translations (source, reference, hypothesis; the same sentences every time), to the W&B and TensorBoard
    loggers of the run; nothing without one."""

    def __init__(self, samples: int = 5):
        self.samples = samples
        self._logged: dict[str, object] = {}  # split -> the evaluation last logged (a validation without BLEU: none)

    def on_validation_end(self, trainer, pl_module):
        if not trainer.sanity_checking:
            self._log(trainer, pl_module, "valid", "val")

    def on_test_end(self, trainer, pl_module):
        self._log(trainer, pl_module, "test", "test")

    def _log(self, trainer, pl_module, split: str, prefix: str) -> None:
        loggers = wandb_loggers(trainer.loggers) + tensorboard_loggers(trainer.loggers)
        result = pl_module.evaluations.get(split)  # seqbench.scoring.evaluation.SplitEvaluation of the last pass
        if not loggers or not trainer.is_global_zero or result is None or result is self._logged.get(split):
            return
        self._logged[split] = result
        by_length = [[b["bucket"], b["sentences"], b["bleu"]] for b in result.scores.get("bleu_by_length", [])]
        samples = [[result.indices[k], result.sources[k], result.references[k], result.hypotheses[k]]
                   for k in fixed_subset(len(result.indices), self.samples)]
        write_tables(loggers, {f"{prefix}/bleu_by_length": (BY_LENGTH_COLUMNS, by_length),
                               f"{prefix}/samples": (SAMPLE_COLUMNS, samples)}, trainer.global_step)


def log_run_summary(loggers, results: dict, run_dir: str | Path, step: int) -> None:
    """The run's final numbers (W&B: the run summary; TensorBoard: hparams with those numbers as their metrics, and
    scalars), the breakdown plots and attention heatmaps, and the targeted length x distance table when recorded."""
    loggers = wandb_loggers(loggers) + tensorboard_loggers(loggers)
    if not loggers:
        return
    from seqbench.analysis.plots import attention_figures, plot_by_bucket, plot_length_distance
    from seqbench.analysis.summary import length_distance_cells, present_breakdowns
    from seqbench.rundir.reader import Run

    summary = summary_metrics(results)
    run = Run(Path(run_dir), results)
    groups = {run.label: [run]}
    figures = {f"test/{b.name}_plot": [(None, plot_by_bucket(groups, "test", b))]
               for b in present_breakdowns(groups, "test")}
    cells = results.get("test", {}).get("targeted", {}).get("by_length_distance", [])
    if cells:
        write_tables(loggers, {"test/targeted_by_length_distance":
                               (LENGTH_DISTANCE_COLUMNS, [[c[k] for k in LENGTH_DISTANCE_COLUMNS] for c in cells])},
                     step)
        for kind in sorted({c["kind"] for c in cells}):
            table = length_distance_cells(groups, "test", kind, "accuracy")
            figures[f"test/length_distance_{kind}_plot"] = [(None, plot_length_distance(table, kind, "accuracy"))]
    attention = list(attention_figures(groups))
    if attention:
        figures["test/attention"] = attention
    write_figures(loggers, figures, step)
    for logger in wandb_loggers(loggers):
        logger.experiment.summary.update(summary)
    for logger in tensorboard_loggers(loggers):
        write_hparams(logger, results.get("config", {}), summary, step)
