"""seqbench.loggers.media with TensorBoard: a run with logger=[csv,tensorboard] leaves event files holding its scalars,
the BLEU-by-length and sample tables as text, the plots and attention maps as images, and an hparams entry with the
final numbers (read back with TensorBoard's own reader). W&B's side is tests/test_wandb_logging.py."""
from __future__ import annotations

import pytest

from seqbench.loggers.media import markdown_table

from conftest import TINY, TINY_MODELS, train_in_process

pytest.importorskip("tensorboard")


def test_markdown_table_escapes_cells():
    assert markdown_table(["bucket", "bleu"], [["1-10", 12.345], ["a|b", None]]).splitlines() == [
        "| bucket | bleu |", "|---|---|", "| 1-10 | 12.35 |", "| a\\|b | None |"]


def test_a_tensorboard_run_holds_scalars_text_images_and_hparams(tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    run_dir = tmp_path / "run"
    results = train_in_process(run_dir, [*TINY, *TINY_MODELS["transformer"], "logger=[csv,tensorboard]"])
    (events_dir,) = {p.parent for p in (run_dir / "tensorboard").rglob("events.out.tfevents.*")}
    events = EventAccumulator(str(events_dir), size_guidance={"images": 0, "tensors": 0, "scalars": 0}).Reload()
    tags = events.Tags()
    assert {"train/loss", "val/bleu", "test/bleu"} <= set(tags["scalars"])
    assert events.Scalars("test/bleu")[-1].value == pytest.approx(results["test"]["bleu"], abs=1e-4)
    text = {tag: events.Tensors(tag)[-1].tensor_proto.string_val[0].decode() for tag in tags["tensors"]
            if tag.endswith("text_summary")}
    assert any(tag.startswith("test/bleu_by_length") for tag in text)
    by_length = next(value for tag, value in text.items() if tag.startswith("test/bleu_by_length"))
    assert by_length.startswith("| bucket | sentences | bleu |")
    assert len(by_length.splitlines()) == 2 + len(results["test"]["bleu_by_length"])
    assert any(tag.startswith("test/samples") for tag in text) and any(t.startswith("val/samples") for t in text)
    assert "test/bleu_by_length_plot" in tags["images"]
    assert any(tag.startswith("test/attention/") for tag in tags["images"])
    # the HParams tab's entry: the experiment (which metrics) and the session (this run's config)
    assert {"_hparams_/experiment", "_hparams_/session_start_info"} <= set(events.PluginTagToContent("hparams"))
