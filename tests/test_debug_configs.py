"""conf/debug/: every debug config composes; fdr and profiler run end to end on the tiny corpus; overfit really
repeats the same batches (the token-budget batch sampler is not shuffled under Lightning's overfit_batches)."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from seqbench.config.checks import validate
from seqbench.config.compose import CONF_DIR
from seqbench.rundir.layout import RunDir

from conftest import TINY, TINY_MODELS, compose_train, train_in_process

DEBUG = sorted(p.stem for p in (CONF_DIR / "debug").glob("*.yaml") if p.stem != "default")


def test_the_four_debug_configs_exist():
    assert DEBUG == ["fdr", "limit", "overfit", "profiler"]


@pytest.mark.parametrize("name", DEBUG)
def test_debug_config_composes_over_the_defaults(name):
    cfg = compose_train([f"debug={name}"])
    validate(cfg)
    assert cfg.task_name == "debug" and cfg.measure.decode_sentences <= 16  # measurements cut to seconds
    assert compose_train([f"debug={name}", "experiment=arch_comparison"]).task_name == "debug"  # applied after presets


def test_limit_bounds_every_loop():
    trainer = compose_train(["debug=limit"]).trainer
    assert trainer.max_epochs == 1 and trainer.max_time is None
    assert 0 < trainer.limit_train_batches <= 20 and trainer.limit_val_batches <= 2 and trainer.limit_test_batches <= 2


def test_fast_dev_run_goes_through_the_whole_run(tmp_path):
    results = train_in_process(tmp_path / "run", [*(o for o in TINY if o != "debug=limit"), "debug=fdr",
                                                  *TINY_MODELS["rnn_bahdanau"]])
    assert results["train"]["steps"] == 1 and results["test"]["n_sentences"] > 0
    hypotheses = RunDir(tmp_path / "run").text("hypotheses", "test").read_text().splitlines()
    assert len(hypotheses) == results["test"]["n_sentences"]


def test_profiler_writes_the_profile(tmp_path):
    train_in_process(tmp_path / "run", [*(o for o in TINY if o != "debug=limit"), "debug=profiler",
                                        "trainer.limit_train_batches=3", *TINY_MODELS["transformer"]])
    profile = (tmp_path / "run" / "fit-profile.txt").read_text()
    assert "run_training_batch" in profile  # Lightning's simple profiler's table of hooks


def test_overfit_repeats_the_same_training_batches(tmp_path):
    from hydra.utils import instantiate

    cfg = compose_train(["debug=overfit", f"paths.cache_dir={tmp_path}", "data.corpus.train_size=200",
                    "data.corpus.valid_per_bucket=1", "data.corpus.test_per_bucket=1", "data.vocab_size=300",
                    "data.max_tokens=256"])
    datamodule = instantiate(cfg.data)
    datamodule.setup("fit")

    def epochs(overfit_batches: int) -> list[list[list[int]]]:
        datamodule.trainer = SimpleNamespace(overfit_batches=overfit_batches)
        loader = datamodule.train_dataloader()
        out = []
        for epoch in range(2):
            loader.batch_sampler.set_epoch(epoch)
            out.append([batch["index"].tolist() for batch in loader][:cfg.trainer.overfit_batches])
        return out

    shuffled, overfit = epochs(0), epochs(cfg.trainer.overfit_batches)
    assert shuffled[0] != shuffled[1], "a normal run reshuffles its batches every epoch"
    assert overfit[0] == overfit[1], "debug=overfit trains on the same batches every epoch"
