"""BLEU and chrF with sacreBLEU: the one scoring path used by validation, test and the reports."""
from __future__ import annotations

from sacrebleu.metrics import BLEU, CHRF


def corpus_bleu(hypotheses: list[str], references: list[str]) -> tuple[float, str]:
    """sacreBLEU with its default 13a tokenisation on detokenised text; returns (score, signature)."""
    metric = BLEU()
    score = metric.corpus_score(hypotheses, [references])
    return score.score, str(metric.get_signature())


def corpus_chrf(hypotheses: list[str], references: list[str]) -> tuple[float, str]:
    metric = CHRF()
    score = metric.corpus_score(hypotheses, [references])
    return score.score, str(metric.get_signature())
