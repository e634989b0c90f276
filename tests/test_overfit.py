"""Every model, trained through the shared Seq2SeqModule, memorises 64 sentence pairs (BLEU >= 95)."""
from __future__ import annotations

import random

import lightning as L
import pytest
import torch
from datasets import Dataset, DatasetDict
from hydra.utils import instantiate

from seqbench.data.datamodule import Seq2SeqDataModule
from seqbench.data.synthetic import GrammarConfig, Lexicon, SentenceGenerator
from seqbench.training.module import Seq2SeqModule
from seqbench.training.schedules import schedule

from conftest import MODEL_CASES


class MemoryCorpus:
    """64 short synthetic pairs used as train, valid and test alike: the model only has to memorise them."""

    name = "memorise-64"

    def load(self, cache_dir):
        cfg = GrammarConfig(clause_count_weights=(1.0,), p_relative_clause=0.0, p_noun_pp=0.0, p_adjunct_pp=0.3)
        gen = SentenceGenerator(cfg, Lexicon.build(cfg), random.Random(5))
        rows = {}
        while len(rows) < 64:
            src, tgt = gen.sentence()
            rows[src] = tgt
        data = Dataset.from_dict({"src": list(rows), "tgt": list(rows.values())})
        return DatasetDict(train=data, valid=data, test=data)


# Width, learning rate and updates per family: tiny, but with enough capacity to memorise.
OVERFIT = {
    "transformer": (dict(d_model=64, d_ff=128, encoder_layers=2, decoder_layers=2, n_heads=4), 3e-3, 400),
    "rnn": (dict(embed_dim=64, hidden_size=64, encoder_layers=1, decoder_layers=1), 5e-3, 600),
    # 1,500 updates: 900 reached 94.2 BLEU on this 2-core CPU (1 and 2 threads alike) and 600 only 90.2 on another
    # (AVX2 only: other float rounding, another trajectory); 1,500 reach 96.1 here (needs >= 95)
    "cnn": (dict(embed_dim=64, encoder_layers=[[64, 3]] * 2, decoder_layers=[[64, 3]] * 2), 3e-3, 1500),
}
# Luong's attention-fed decoders (global attention after the step, input feeding) need a larger step and more updates
# on these 64 pairs than Bahdanau's: measured 31-86 BLEU after 600 updates at lr 5e-3 / 1e-2, 88 for the tied
# luong_general case after 1,200.
LUONG = (1e-2, 2000)
# One case per family and the two attention settings of the Bahdanau figure stay in the fast tier; the other variants
# (same code paths with another score function or cell) run with `pytest -m slow`.
FAST = {"transformer", "rnn_none", "rnn_bahdanau", "cnn"}
CASES = [c if c in FAST else pytest.param(c, marks=pytest.mark.slow)
         for c in sorted(MODEL_CASES) if not c.startswith("transformer_")]


def memorise(case: str, tmp_path) -> tuple[Seq2SeqModule, Seq2SeqDataModule]:
    """The MODEL_CASES model trained on the 64 pairs with its family's settings, then tested (module.evaluations)."""
    L.seed_everything(0, verbose=False)
    family = case.split("_")[0]
    datamodule = Seq2SeqDataModule(MemoryCorpus(), str(tmp_path / "cache"), vocab_size=400, max_tokens=512)
    datamodule.setup()
    sizes, lr, steps = OVERFIT[family]
    if "luong" in case:
        lr, steps = LUONG
    cfg = dict(MODEL_CASES[case], **sizes, dropout=0.0)
    model = instantiate(cfg, src_vocab_size=datamodule.tokenizers.src_vocab_size,
                        tgt_vocab_size=datamodule.tokenizers.tgt_vocab_size)
    module = Seq2SeqModule(model, optimizer=lambda p: torch.optim.Adam(p, lr=lr),
                           scheduler=lambda o, **_: schedule(o, "constant", warmup_steps=20), label_smoothing=0.0,
                           decoding={"beam_size": 2}, val_bleu=False)
    trainer = L.Trainer(max_steps=steps, logger=False, enable_checkpointing=False, enable_progress_bar=False,
                        enable_model_summary=False, limit_val_batches=0, gradient_clip_val=1.0,
                        default_root_dir=tmp_path, use_distributed_sampler=False)
    trainer.fit(module, datamodule=datamodule)
    trainer.test(module, datamodule=datamodule, verbose=False)
    return module, datamodule


@pytest.mark.parametrize("case", CASES)
def test_overfits_64_pairs(case, tmp_path):
    module, _ = memorise(case, tmp_path)
    test = module.evaluations["test"]
    assert test.scores["bleu"] >= 95, test.hypotheses[:3]
    assert len(test.hypotheses) == len(test.references) == test.scores["n_sentences"] == 64
    assert not list(tmp_path.glob("*.txt")), "the module scores; writing the run's files is seqbench.training.run's job"
