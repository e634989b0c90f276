"""init_from: training that starts from saved weights (fine-tuning), with fairseq's reset semantics: the weights of
a run, a checkpoint or an export, checked against the model; the optimizer, schedule and counters fresh unless kept;
recorded in results.json; every mistake one line before the data is prepared."""
from __future__ import annotations

import pytest
import torch

from seqbench.common.errors import InputError
from seqbench.rundir.checkpoints import best_checkpoint, model_weights
from seqbench.rundir.export import export
from seqbench.rundir.layout import RunDir

from conftest import TINY, TINY_MODELS, train_in_process

BASE = [*TINY, *TINY_MODELS["transformer"], "test=false"]
# one update at an lr of 1e-12: the weights after it are the starting weights to within Adam's step of ~1e-12
ONE_UPDATE = ["trainer.max_steps=1", "optimizer.lr=1e-12"]


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("source") / "run"
    train_in_process(run_dir, BASE)
    return run_dir


def _last(run_dir):
    return torch.load(RunDir(run_dir).last_checkpoint, map_location="cpu", weights_only=True)


def _starting_weights(source):
    return model_weights(torch.load(best_checkpoint(source), map_location="cpu", weights_only=True))


def _assert_started_from(run_dir, weights):
    after = model_weights(_last(run_dir))
    assert after.keys() == weights.keys()
    assert all(torch.allclose(after[k], weights[k], atol=1e-6) for k in weights)


def test_a_fine_tuned_run_starts_from_the_given_weights_with_a_fresh_optimizer_and_schedule(tmp_path, source):
    record = train_in_process(tmp_path / "run", [*BASE, *ONE_UPDATE, f"init_from={source}"])
    weights = _starting_weights(source)
    _assert_started_from(tmp_path / "run", weights)
    train_in_process(tmp_path / "control", [*BASE, *ONE_UPDATE])  # the same run without init_from does not
    with pytest.raises(AssertionError):
        _assert_started_from(tmp_path / "control", weights)
    last = _last(tmp_path / "run")
    assert last["global_step"] == 1 and last["optimizer_states"][0]["state"][0]["step"] == 1  # Adam from zero
    assert last["lr_schedulers"][0]["last_epoch"] == 1  # the schedule from its first update
    source_step = torch.load(best_checkpoint(source), map_location="cpu", weights_only=True)["global_step"]
    assert record["train"]["init"] == {"from": str(source), "weights": str(best_checkpoint(source)),
                                       "source_update": source_step, "reset": ["optimizer", "schedule", "counters"]}


def test_kept_optimizer_and_schedule_continue_from_the_checkpoints_state(tmp_path, source):
    """init_reset=[counters]: Adam's moments and the schedule go on from the source checkpoint's (fairseq's
    --restore-file with --reset-meters --reset-dataloader only); the lr stays this config's."""
    checkpoint = torch.load(best_checkpoint(source), map_location="cpu", weights_only=True)
    train_in_process(tmp_path / "run", [*BASE, *ONE_UPDATE, f"init_from={best_checkpoint(source)}",
                                        "init_reset=[counters]"])
    last = _last(tmp_path / "run")
    assert last["global_step"] == 1
    assert last["optimizer_states"][0]["state"][0]["step"] == checkpoint["optimizer_states"][0]["state"][0]["step"] + 1
    assert last["lr_schedulers"][0]["last_epoch"] == checkpoint["lr_schedulers"][0]["last_epoch"] + 1
    assert last["optimizer_states"][0]["param_groups"][0]["initial_lr"] == 1e-12


def test_an_exported_model_is_a_starting_point_too(tmp_path, source):
    export(source, tmp_path / "exported")
    record = train_in_process(tmp_path / "run", [*BASE, *ONE_UPDATE, f"init_from={tmp_path / 'exported'}"])
    _assert_started_from(tmp_path / "run", _starting_weights(source))
    assert record["train"]["init"]["weights"].endswith("model.safetensors")
    assert record["train"]["init"]["source_update"] is None


@pytest.mark.parametrize("overrides,message", [
    (["init_reset=[optimizer,schedule]"], "keeping the update count and batch order is resuming a run: set ckpt_path"),
    (["init_reset=[counters,momentum]"], "momentum is not one of optimizer, schedule, counters"),
    (["train=false", "ckpt_path=CKPT"], "init_from starts training from saved weights"),
    (["model.d_model=48"], "a checkpoint of another model"),
    (["data.vocab_size=280"], "trained with another vocabulary"),
])
def test_a_mistake_is_one_line(tmp_path, source, overrides, message):
    overrides = [o.replace("CKPT", str(best_checkpoint(source))) for o in overrides]
    with pytest.raises(InputError, match=message):
        train_in_process(tmp_path / "run", [*BASE, f"init_from={source}", *overrides])


def test_an_export_cannot_keep_an_optimizer_it_does_not_hold(tmp_path, source):
    export(source, tmp_path / "exported")
    with pytest.raises(InputError, match="an exported model holds weights only"):
        train_in_process(tmp_path / "run", [*BASE, f"init_from={tmp_path / 'exported'}", "init_reset=[counters]"])


def test_a_missing_source_is_refused_before_the_data_is_prepared(tmp_path, monkeypatch):
    from seqbench.data.datamodule import Seq2SeqDataModule

    monkeypatch.setattr(Seq2SeqDataModule, "prepare_data", lambda self: pytest.fail("data prepared"))
    with pytest.raises(InputError, match="no such run directory, checkpoint or exported model"):
        train_in_process(tmp_path / "run", [*BASE, f"init_from={tmp_path / 'nothing'}"])
