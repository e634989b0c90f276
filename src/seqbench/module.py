"""`Seq2SeqModule`: the one LightningModule that trains, validates and tests every architecture.

It sees a model only through the `Seq2Seq` contract (seqbench.models.interface); there is no architecture check in
here. Validation and test BLEU go through the same decode -> detokenise -> sacreBLEU path (`_evaluate_epoch`).
"""
from __future__ import annotations

import math
from dataclasses import asdict
from pathlib import Path
from typing import Callable, Sequence

import lightning as L
import torch
import torch.distributed as dist

from seqbench.data.tokenizer import PAD_ID
from seqbench.decoding import DecodingConfig, generate
from seqbench.losses import label_smoothed_nll
from seqbench.metrics import DEFAULT_LENGTH_EDGES, bleu_by_length, corpus_bleu, corpus_chrf, word_count
from seqbench.models.interface import Seq2Seq


class Seq2SeqModule(L.LightningModule):
    """`model_spec` (seqbench.inference.model_spec: model config, vocabulary sizes and fingerprint) is saved in every
    checkpoint's hyperparameters with the other plain arguments, so `Seq2SeqModule.load_from_checkpoint(path)`
    rebuilds the model from the spec (without an optimizer: for evaluation and decoding only)."""

    def __init__(self, model: Seq2Seq | None = None, optimizer: Callable | None = None,
                 scheduler: Callable | None = None, label_smoothing: float = 0.1,
                 decoding: DecodingConfig | dict | None = None, val_bleu: bool = True,
                 length_buckets: Sequence[int] = DEFAULT_LENGTH_EDGES, model_spec: dict | None = None):
        super().__init__()
        # The model object and optimizer/scheduler factories are not plain data: the spec stands for the model.
        self.save_hyperparameters(ignore=["model", "optimizer", "scheduler"])
        if model is None:
            if model_spec is None:
                raise ValueError("Seq2SeqModule needs a model or a model_spec to build one from")
            from seqbench.inference import build_model

            model = build_model(model_spec)
        self.model = model
        self.optimizer_factory, self.scheduler_factory = optimizer, scheduler
        self.label_smoothing, self.val_bleu = label_smoothing, val_bleu
        self.length_buckets = tuple(length_buckets)  # upper edges, in source words, of the BLEU-by-length buckets
        self.decoding = decoding if isinstance(decoding, DecodingConfig) else DecodingConfig(**(decoding or {}))
        self.hparams["decoding"] = asdict(self.decoding)  # plain data: checkpoints load with weights_only=True
        self._outputs: list[tuple[int, list[int]]] = []
        self.eval_results: dict[str, dict] = {}  # split -> bleu, chrf, bleu_by_length, signatures, hypotheses

    def forward(self, src, src_mask, tgt_in):
        return self.model(src, src_mask, tgt_in)

    def _loss(self, batch):
        logits = self.model(batch["src"], batch["src_mask"], batch["tgt_in"])
        return label_smoothed_nll(logits, batch["tgt_out"], self.label_smoothing)

    def training_step(self, batch, batch_idx):
        loss, nll = self._loss(batch)
        n_tokens = (batch["tgt_out"] != PAD_ID).sum()
        self.log("train/loss", loss, prog_bar=True, batch_size=int(n_tokens))
        self.log("train/nll", nll, batch_size=int(n_tokens))
        return loss

    def _eval_step(self, batch, split: str):
        loss, nll = self._loss(batch)
        n_tokens = int((batch["tgt_out"] != PAD_ID).sum())
        self.log(f"{split}/loss", loss, batch_size=n_tokens, sync_dist=True)
        self.log(f"{split}/nll", nll, batch_size=n_tokens, sync_dist=True, prog_bar=split == "val")
        self._nll_total += torch.stack([nll.detach().double() * n_tokens, torch.tensor(n_tokens, dtype=torch.double,
                                                                                   device=nll.device)])
        if split == "test" or self.val_bleu:
            hypotheses = generate(self.model, batch["src"], batch["src_mask"], self.decoding)
            self._outputs += list(zip(batch["index"].tolist(), hypotheses))

    def validation_step(self, batch, batch_idx):
        self._eval_step(batch, "val")

    def test_step(self, batch, batch_idx):
        self._eval_step(batch, "test")

    def on_validation_epoch_start(self):
        self._outputs = []
        self._nll_total = torch.zeros(2, dtype=torch.double, device=self.device)  # (sum of token NLLs, tokens)

    on_test_epoch_start = on_validation_epoch_start

    def on_validation_epoch_end(self):
        total = self._nll_total.clone()
        if dist.is_available() and dist.is_initialized():
            dist.all_reduce(total)
        self.log("val/ppl", math.exp(min(float(total[0] / total[1].clamp(min=1)), 50.0)))
        if self.val_bleu and not self.trainer.sanity_checking:
            self._evaluate_epoch("valid", "val")

    def on_test_epoch_end(self):
        self._evaluate_epoch("test", "test")

    def _evaluate_epoch(self, split: str, prefix: str) -> None:
        outputs = self._outputs
        if dist.is_available() and dist.is_initialized():
            gathered = [None] * dist.get_world_size()
            dist.all_gather_object(gathered, outputs)
            outputs = [o for part in gathered for o in part]
        datamodule = self.trainer.datamodule
        by_index = dict(outputs)
        references, sources = datamodule.references(split), datamodule.sources(split)
        if len(by_index) != len(references):  # e.g. limit_val_batches: score the decoded subset only
            references = [references[i] for i in sorted(by_index)]
            sources = [sources[i] for i in sorted(by_index)]
        hypotheses = datamodule.tokenizers.decode_tgt([by_index[i] for i in sorted(by_index)])
        bleu, bleu_signature = corpus_bleu(hypotheses, references)
        chrf, chrf_signature = corpus_chrf(hypotheses, references)
        by_length = bleu_by_length(hypotheses, references, [word_count(s) for s in sources], self.length_buckets)
        self.log(f"{prefix}/bleu", bleu, sync_dist=False, prog_bar=True)
        self.log(f"{prefix}/chrf", chrf, sync_dist=False)
        for bucket in by_length:
            if bucket["sentences"]:  # an empty bucket has no score (None), and loggers want numbers
                self.log(f"{prefix}/bleu_len_{bucket['bucket']}", bucket["bleu"], sync_dist=False)
        self.eval_results[split] = {"bleu": bleu, "bleu_signature": bleu_signature, "chrf": chrf,
                                    "chrf_signature": chrf_signature, "n_sentences": len(hypotheses),
                                    "bleu_by_length": by_length, "indices": sorted(by_index),
                                    "hypotheses": hypotheses}
        if split == "test" and self.trainer.is_global_zero:
            # Hypotheses with their references and sources, line by line: `python -m seqbench.report` rescores and
            # tests significance from the run directory alone.
            run_dir = Path(self.trainer.default_root_dir)
            for name, lines in (("hypotheses", hypotheses), ("references", references), ("sources", sources)):
                (run_dir / f"{name}.test.txt").write_text("".join(line + "\n" for line in lines), encoding="utf-8")

    def configure_optimizers(self):
        if self.optimizer_factory is None:
            raise ValueError("this Seq2SeqModule was built without an optimizer (e.g. by load_from_checkpoint): "
                             "it can evaluate and decode, not train")
        optimizer = self.optimizer_factory(self.model.parameters())
        if self.scheduler_factory is None:
            return optimizer
        return {"optimizer": optimizer,
                "lr_scheduler": {"scheduler": self.scheduler_factory(optimizer), "interval": "step"}}
