"""Seq2SeqModule's evaluation passes: with module.test_greedy the test set is also decoded greedily and scored as
test.greedy, exactly what a beam-1 test pass scores; module.val_bleu=false skips BLEU during training only (the
overfit and contract tests cover the rest)."""
from __future__ import annotations

import copy
import random

import lightning as L
import pytest
import torch
from datasets import Dataset, DatasetDict

from seqbench.data.datamodule import Seq2SeqDataModule
from seqbench.data.synthetic import GrammarConfig, Lexicon, SentenceGenerator
from seqbench.models.transformer import Transformer
from seqbench.training.module import Seq2SeqModule


class SmallCorpus:
    name = "module-test-24"

    def load(self, cache_dir):
        cfg = GrammarConfig()
        gen = SentenceGenerator(cfg, Lexicon.build(cfg), random.Random(3))
        pairs = [gen.sentence() for _ in range(24)]
        data = Dataset.from_dict({"src": [s for s, _ in pairs], "tgt": [t for _, t in pairs]})
        return DatasetDict(train=data, valid=data, test=data)


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    L.seed_everything(0, verbose=False)
    datamodule = Seq2SeqDataModule(SmallCorpus(), str(tmp_path_factory.mktemp("cache")), vocab_size=200,
                                   max_tokens=400)
    datamodule.setup()
    # Untrained: its hypotheses are arbitrary but deterministic, and greedy and beam disagree on them.
    model = Transformer(datamodule.tokenizers.src_vocab_size, datamodule.tokenizers.tgt_vocab_size, d_model=32,
                        n_heads=2, encoder_layers=1, decoder_layers=1, d_ff=64, dropout=0.0)
    return datamodule, model


def _test_scores(setup, beam_size: int, test_greedy: bool) -> dict:
    datamodule, model = setup
    module = Seq2SeqModule(model, decoding={"beam_size": beam_size, "max_len": 12}, test_greedy=test_greedy)
    trainer = L.Trainer(logger=False, enable_progress_bar=False, enable_model_summary=False,
                        use_distributed_sampler=False)
    trainer.test(module, datamodule=datamodule, verbose=False)
    return module.evaluations["test"].scores


def test_test_greedy_scores_what_a_greedy_test_pass_scores(setup):
    beam = _test_scores(setup, beam_size=3, test_greedy=True)
    greedy_only = _test_scores(setup, beam_size=1, test_greedy=False)
    assert beam["greedy"] == greedy_only  # BLEU, chrF, BLEU by length: the same decoding, the same scores
    assert beam["chrf"] != greedy_only["chrf"]  # the beam's own scores stay the beam's


@pytest.mark.parametrize("beam_size,test_greedy", [(3, False), (1, True)])
def test_no_greedy_record_unless_asked_and_different(setup, beam_size, test_greedy):
    assert "greedy" not in _test_scores(setup, beam_size, test_greedy)


def test_val_bleu_off_skips_bleu_while_training_not_in_a_final_validation(setup):
    datamodule, model = setup
    module = Seq2SeqModule(copy.deepcopy(model), optimizer=lambda params: torch.optim.SGD(params, lr=0.0),
                           decoding={"max_len": 12}, val_bleu=False)
    trainer = L.Trainer(max_steps=1, val_check_interval=1, num_sanity_val_steps=0, logger=False,
                        enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False,
                        use_distributed_sampler=False)
    trainer.fit(module, datamodule=datamodule)
    assert "val/ppl" in trainer.callback_metrics  # validation ran during training ...
    assert "valid" not in module.evaluations and "val/bleu" not in trainer.callback_metrics  # ... without decoding
    trainer.validate(module, datamodule=datamodule, verbose=False)
    assert module.evaluations["valid"].scores["bleu"] >= 0.0  # the run's final validation always scores BLEU
    assert "val/bleu" in trainer.callback_metrics
