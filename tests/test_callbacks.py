"""seqbench.training.callbacks.TrainThroughput's training-FLOPs count, checked batch by batch against the model's own
analytic count, and the model summary's FLOPs (the end-to-end runs in test_measure_cli.py and test_train_cli.py
check what reaches results.json)."""
from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch
from lightning.pytorch.utilities.model_summary import get_human_readable_count

from seqbench.common.tokens import PAD_ID
from seqbench.training.callbacks import ModelSummary, ResumeState, TrainThroughput
from seqbench.training.module import Seq2SeqModule


def _batch(src_lengths: list[int], tgt_lengths: list[int]) -> dict:
    src_len, tgt_len = max(src_lengths), max(tgt_lengths)
    src_mask = torch.tensor([[i < n for i in range(src_len)] for n in src_lengths])
    tgt_out = torch.tensor([[5 if i < n else PAD_ID for i in range(tgt_len)] for n in tgt_lengths])
    return {"src": torch.full(src_mask.shape, 5), "src_mask": src_mask, "tgt_out": tgt_out}


class LinearCost:
    """A stand-in model whose forward FLOPs per target token are 1000 per mean source token plus 10 per mean target
    token, so the expected totals can be written out by hand."""

    @staticmethod
    def flops_per_token(src_len: float, tgt_len: float) -> float:
        return 1000 * src_len + 10 * tgt_len


def test_training_flops_are_summed_per_batch_at_its_own_mean_lengths():
    module = SimpleNamespace(model=LinearCost(), device=torch.device("cpu"), log=lambda *args, **kwargs: None)
    callback = TrainThroughput(warmup_steps=1)
    callback.on_train_start(None, module)
    batches = [_batch([4, 6], [3, 5]), _batch([10, 20, 30], [12, 18, 33])]
    for batch in batches:
        callback.on_train_batch_end(None, module, None, batch, 0)
    # 2 sentences, 10 source and 8 target tokens (means 5 and 4): 3 x (5,000 + 40) x 8 = 120,960; then 3 sentences,
    # 60 source and 63 target tokens (means 20 and 21): 3 x (20,000 + 210) x 63 = 3,819,690
    expected = 120_960 + 3_819_690
    assert callback.train_flops == pytest.approx(expected)
    # the warm-up excludes steps from tokens/s, never from the work done
    assert callback.summary(world_size=2)["train_flops"] == pytest.approx(2 * expected)
    resumed = TrainThroughput()
    resumed.restore(callback.state_dict())
    assert resumed.train_flops == callback.train_flops


@pytest.mark.parametrize("built_early", [True, False])
def test_a_resumed_run_places_the_sampler_and_drops_a_train_loader_built_before_it(built_early):
    """Lightning builds the train loader and its iterator when something asks trainer.estimated_stepping_batches
    before fit starts (a cosine schedule over an epoch budget): that loader starts its epoch at the first batch, so
    ResumeState must drop it for the fit loop to build the resumed one (the integration test in test_resume.py
    covers a max_steps budget end to end)."""
    placed = []
    datamodule = SimpleNamespace(resume_training_at=lambda epoch, done: placed.append((epoch, done)))
    fit_loop = SimpleNamespace(_combined_loader=object() if built_early else None)
    trainer = SimpleNamespace(datamodule=datamodule, fit_loop=fit_loop, checkpoint_callbacks=[])
    callback = ResumeState("last.ckpt")
    callback.load_state_dict({"epoch": 1, "batches_done": 3, "rng": {}})
    callback.on_fit_start(trainer, None)
    assert placed == [(1, 3)] and fit_loop._combined_loader is None



@pytest.mark.parametrize("case", ["transformer", "rnn_lstm_luong_general_no_feed", "cnn"])
def test_the_model_summary_gives_the_analytic_flops_not_a_zero_or_counter_column(case, capsys):
    """Lightning's summary printed "Total FLOPs: 0" (no example input; with one, torch's counter misses CPU attention
    and LSTM recurrence): the summary gives the model's own forward FLOPs per target token instead, the count MFU
    uses, and no FLOPs column."""
    from conftest import build_tiny_model

    module = Seq2SeqModule(model=build_tiny_model(case))
    ModelSummary(example_tokens=12).on_fit_start(SimpleNamespace(strategy=None, is_global_zero=True), module)
    out = capsys.readouterr().out
    per_token = get_human_readable_count(int(module.model.flops_per_token(12, 12)))
    assert f"Forward FLOPs per target token (analytic, 12 source and 12 target tokens; training counts 3x): " \
           f"{per_token}" in out
    assert "Total FLOPs" not in out and "FLOPs ┃" not in out and "Total params: " in out
    assert "model" in out and "Params" in out  # the layer table itself
