"""`Seq2SeqModule`: the one LightningModule that trains, validates and tests every architecture.

It sees a model only through the `Seq2Seq` contract (seqbench.models.interface); there is no architecture check in
here. Validation and test BLEU go through the same decode -> detokenise -> `Evaluator` path (`_evaluate_epoch`); the
module only produces hypotheses and keeps what it scored in `evaluations`: writing files is the caller's job
(seqbench.training.run), so the module never touches the file system. Each rank detokenises its own batches'
hypotheses into a torchmetrics metric (seqbench.scoring.gathered), whose sync gathers the ranks' text when the epoch
is scored.
"""
from __future__ import annotations

import math
from dataclasses import asdict, replace
from typing import Callable, Sequence

import lightning as L
import torch
import torch.distributed as dist
from lightning.pytorch.trainer.states import TrainerFn

from seqbench.common.text import DEFAULT_LENGTH_EDGES
from seqbench.common.tokens import PAD_ID
from seqbench.data.eval_split import EvalSplit
from seqbench.decoding.search import DecodingConfig, generate
from seqbench.models.interface import Seq2Seq
from seqbench.models.losses import label_smoothed_nll
from seqbench.scoring.evaluation import Evaluator, SplitEvaluation
from seqbench.scoring.gathered import GatheredHypotheses

METRICS = {"valid": "val", "test": "test"}  # split -> the namespace of its logged metrics (val/bleu, test/nll, ...)


class Seq2SeqModule(L.LightningModule):
    """`scheduler(optimizer, default_total_steps=...)` builds the learning-rate schedule (seqbench.training.schedules:
    the default total is the updates a budget in epochs makes). `evaluation_data(split)` gives a split's references,
    sources and detokeniser (the run passes its data module's). `model_spec`
    (seqbench.rundir.loading.model_spec: model config, vocabulary sizes and fingerprint) is saved in
    every checkpoint's hyperparameters with the other plain arguments, so `Seq2SeqModule.load_from_checkpoint(path)`
    rebuilds the model from the spec (without an optimizer: for evaluation and decoding only)."""

    def __init__(self, model: Seq2Seq | None = None, optimizer: Callable | None = None,
                 scheduler: Callable | None = None, label_smoothing: float = 0.1,
                 decoding: DecodingConfig | dict | None = None, val_bleu: bool = True,
                 length_buckets: Sequence[int] = DEFAULT_LENGTH_EDGES, model_spec: dict | None = None,
                 test_greedy: bool = False, val_beam_size: int = 1,
                 evaluation_data: Callable[[str], EvalSplit] | None = None):
        super().__init__()
        # The model object and optimizer/scheduler factories are not plain data: the spec stands for the model.
        self.save_hyperparameters(ignore=["model", "optimizer", "scheduler", "evaluation_data"])
        # split name -> its references, sources and detokeniser (the data module's `evaluation`), given by the run
        self.evaluation_data = evaluation_data
        if model is None:
            if model_spec is None:
                raise ValueError("Seq2SeqModule needs a model or a model_spec to build one from")
            from seqbench.rundir.loading import model_from_spec

            model = model_from_spec(model_spec)
        self.model = model
        self.optimizer_factory, self.scheduler_factory = optimizer, scheduler
        self.label_smoothing, self.val_bleu = label_smoothing, val_bleu
        # The test set decoded greedily too (scored as test.greedy) when the beam is wider than 1: a beam artefact
        # then cannot pass for an architecture effect.
        self.test_greedy = test_greedy
        # Validations during training (learning curve, early stopping, a sweep's pruning) decode with this beam:
        # greedy by default, a fraction of the beam's cost. The final validation and the test use `decoding`.
        self.val_beam_size = val_beam_size
        self.evaluator = Evaluator(length_buckets)  # length_buckets: upper edges, in source words, of BLEU by length
        self.decoding = decoding if isinstance(decoding, DecodingConfig) else DecodingConfig(**(decoding or {}))
        self.hparams["decoding"] = asdict(self.decoding)  # plain data: checkpoints load with weights_only=True
        # This pass's hypotheses, and with test_greedy the test set's greedy ones. Metric states are not saved in
        # checkpoints (torchmetrics' default), so checkpoints keep their keys.
        self._outputs, self._greedy_outputs = GatheredHypotheses(), GatheredHypotheses()
        self.evaluations: dict[str, SplitEvaluation] = {}  # "valid" / "test" -> the last pass's scores and text

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
        """split: "valid" or "test" (results.json's names); metrics go under METRICS[split] ("val/", Lightning's and
        the sweep files' namespace, or "test/")."""
        prefix = METRICS[split]
        loss, nll = self._loss(batch)
        n_tokens = int((batch["tgt_out"] != PAD_ID).sum())
        self.log(f"{prefix}/loss", loss, batch_size=n_tokens, sync_dist=True)
        self.log(f"{prefix}/nll", nll, batch_size=n_tokens, sync_dist=True, prog_bar=split == "valid")
        self._nll_total += torch.stack([nll.detach().double() * n_tokens, torch.tensor(n_tokens, dtype=torch.double,
                                                                                   device=nll.device)])
        if split == "test" or self._scores_validation:
            decoding = self.decoding if split == "test" or not self._fitting else \
                replace(self.decoding, beam_size=self.val_beam_size)
            hypotheses = generate(self.model, batch["src"], batch["src_mask"], decoding)
            self._outputs.update(batch["index"].tolist(), self._evaluation(split).detokenize(hypotheses))
        if split == "test" and self._decodes_greedy_too:
            greedy = generate(self.model, batch["src"], batch["src_mask"], replace(self.decoding, beam_size=1))
            self._greedy_outputs.update(batch["index"].tolist(), self._evaluation(split).detokenize(greedy))

    def _evaluation(self, split: str) -> EvalSplit:
        # the run passes the data module's evaluation splits; a module fitted by hand reads its trainer's
        return (self.evaluation_data or self.trainer.datamodule.evaluation)(split)

    @property
    def _fitting(self) -> bool:
        return self.trainer.state.fn == TrainerFn.FITTING

    @property
    def _scores_validation(self) -> bool:
        """Validation BLEU: during training only when `val_bleu` (decoding costs time); a standalone validation pass
        (`trainer.validate`, the run's final scores) always scores, whatever was monitored during training."""
        return self.val_bleu or not self._fitting

    @property
    def _decodes_greedy_too(self) -> bool:
        return self.test_greedy and self.decoding.beam_size > 1

    def validation_step(self, batch, batch_idx):
        self._eval_step(batch, "valid")

    def test_step(self, batch, batch_idx):
        self._eval_step(batch, "test")

    def on_validation_epoch_start(self):
        self._outputs.reset()
        self._greedy_outputs.reset()
        self._nll_total = torch.zeros(2, dtype=torch.double, device=self.device)  # (sum of token NLLs, tokens)

    on_test_epoch_start = on_validation_epoch_start

    def _log_perplexity(self, split: str) -> None:
        total = self._nll_total.clone()
        if dist.is_available() and dist.is_initialized():
            dist.all_reduce(total)
        self.log(f"{METRICS[split]}/ppl", math.exp(min(float(total[0] / total[1].clamp(min=1)), 50.0)))

    def on_validation_epoch_end(self):
        self._log_perplexity("valid")
        if self._scores_validation and not self.trainer.sanity_checking:
            self._evaluate_epoch("valid")

    def on_test_epoch_end(self):
        self._log_perplexity("test")
        self._evaluate_epoch("test")
        if self._decodes_greedy_too:
            greedy = self._score(self._greedy_outputs, "test", "test/greedy")
            self.evaluations["test"].scores["greedy"] = greedy.scores

    def _evaluate_epoch(self, split: str) -> None:
        self.evaluations[split] = self._score(self._outputs, split, METRICS[split])

    def _score(self, outputs: GatheredHypotheses, split: str, prefix: str) -> SplitEvaluation:
        """Scores every rank's hypotheses against the split's references; logs under `prefix`."""
        indices, hypotheses = outputs.compute()  # on every rank: the gathered whole, in split order
        data = self._evaluation(split)
        references, sources = data.references, data.sources
        if len(indices) != len(references):  # e.g. limit_val_batches: score the decoded subset only
            references, sources = [references[i] for i in indices], [sources[i] for i in indices]
        structure = {name: [column[i] for i in indices] for name, column in data.metadata.items()}
        scores = self.evaluator.score(hypotheses, references, sources, structure=structure, scoring=data.scoring)
        for name, value in self.evaluator.metrics(prefix, scores).items():
            self.log(name, value, sync_dist=False, prog_bar=name == f"{prefix}/bleu")
        return SplitEvaluation(scores, hypotheses, references, sources, indices)

    def configure_optimizers(self):
        if self.optimizer_factory is None:
            raise ValueError("this Seq2SeqModule was built without an optimizer (e.g. by load_from_checkpoint): "
                             "it can evaluate and decode, not train")
        optimizer = self.optimizer_factory(self.model.parameters())
        if self.scheduler_factory is None:
            return optimizer
        # A budget in epochs (max_steps=-1) leaves the schedule's total_steps unset: the updates those epochs make,
        # asked only then. Lightning estimates them by building the train loader and its iterator, before a resumed
        # run's ResumeState can place the sampler mid-epoch (which then rebuilds the loader).
        scheduler = self.scheduler_factory(optimizer,
                                           default_total_steps=lambda: int(self.trainer.estimated_stepping_batches))
        return {"optimizer": optimizer, "lr_scheduler": {"scheduler": scheduler, "interval": "step"}}
