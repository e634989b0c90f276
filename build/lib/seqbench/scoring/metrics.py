"""BLEU and chrF with sacreBLEU: the one scoring path used by validation, test and the reports.

Everything here builds its metric with `_bleu()` / `_chrf()`, so a corpus score, a per-length-bucket score and a
significance test all use the same sacreBLEU settings (default 13a tokenisation, detokenised text, one reference).
"""
from __future__ import annotations

from typing import Sequence

from sacrebleu.metrics import BLEU, CHRF

from seqbench.common.text import DEFAULT_LENGTH_EDGES, bucket_index, bucket_label, length_buckets


def _bleu() -> BLEU:
    return BLEU()


def _chrf() -> CHRF:
    return CHRF()


def corpus_bleu(hypotheses: list[str], references: list[str]) -> tuple[float, str]:
    """sacreBLEU with its default 13a tokenisation on detokenised text; returns (score, signature)."""
    metric = _bleu()
    score = metric.corpus_score(hypotheses, [references])
    return score.score, str(metric.get_signature())


def corpus_chrf(hypotheses: list[str], references: list[str]) -> tuple[float, str]:
    metric = _chrf()
    score = metric.corpus_score(hypotheses, [references])
    return score.score, str(metric.get_signature())


def bleu_by_group(hypotheses: list[str], references: list[str], values: Sequence[int],
                  edges: Sequence[int]) -> list[dict]:
    """Corpus BLEU of each bucket's subset of sentences, the sentences bucketed by an integer per sentence (source
    length, clause count, longest dependency distance) with the upper `edges` of `length_buckets`.

    Returns one entry per bucket, in order: {"bucket": "11-20", "min", "max" (None: open), "sentences", "bleu" (None
    for an empty bucket)}. Each score is `corpus_bleu` on the subset, not a share of the corpus score.
    """
    if not len(hypotheses) == len(references) == len(values):
        raise ValueError(f"{len(hypotheses)} hypotheses, {len(references)} references, "
                         f"{len(values)} bucketing values: they must match")
    members: list[list[int]] = [[] for _ in range(len(edges) + 1)]
    for i, n in enumerate(values):
        members[bucket_index(n, edges)].append(i)
    out = []
    for (lo, hi), rows in zip(length_buckets(edges), members):
        bleu = corpus_bleu([hypotheses[i] for i in rows], [references[i] for i in rows])[0] if rows else None
        out.append({"bucket": bucket_label(lo, hi), "min": lo, "max": hi, "sentences": len(rows), "bleu": bleu})
    return out


def bleu_by_length(hypotheses: list[str], references: list[str], source_lengths: Sequence[int],
                   edges: Sequence[int] = DEFAULT_LENGTH_EDGES) -> list[dict]:
    """Corpus BLEU of each source-length bucket's subset of sentences (Bahdanau et al. 2015, Fig. 2).

    Returns one entry per bucket, in order: {"bucket": "11-20", "min_words", "max_words" (None: open), "sentences",
    "bleu" (None for an empty bucket)}: `bleu_by_group` on the source lengths.
    """
    return [{"bucket": b["bucket"], "min_words": b["min"], "max_words": b["max"], "sentences": b["sentences"],
             "bleu": b["bleu"]} for b in bleu_by_group(hypotheses, references, source_lengths, edges)]


def bleu_statistics(hypotheses: list[str], references: list[str]):
    """Per-sentence sacreBLEU sufficient statistics (n-gram matches and totals, lengths): an array [sentences, 10]
    whose column sums give the corpus BLEU of any subset or resample (`bleu_from_statistics`), as sacreBLEU's own
    bootstrap computes them."""
    import numpy as np

    return np.asarray(_bleu()._extract_corpus_statistics(hypotheses, [references]), dtype=np.int64)


def bleu_from_statistics(totals) -> float:
    """Corpus BLEU from summed `bleu_statistics` (the same settings as `corpus_bleu`)."""
    return _bleu()._compute_score_from_stats(list(totals)).score


def paired_bootstrap(baseline: list[str], system: list[str], references: list[str],
                     n_samples: int = 1000) -> dict:
    """sacreBLEU's paired bootstrap resampling (Koehn 2004; `sacrebleu --paired-bs`) of BLEU, system vs baseline.

    Returns {"baseline_bleu", "bleu", "p_value", "mean", "ci"}: p is the probability of the observed BLEU difference
    under the null hypothesis that both systems are equally good; mean and ci (95% half-width) are the system's
    bootstrap estimate. The resampling seed is sacreBLEU's (env SACREBLEU_SEED, default 12345): reproducible.
    """
    from sacrebleu.significance import PairedTest

    if not len(baseline) == len(system) == len(references):
        raise ValueError("paired bootstrap needs the same sentences for both systems and the references")
    test = PairedTest([("baseline", baseline), ("system", system)], {"BLEU": _bleu()}, [references],
                      test_type="bs", n_samples=n_samples)
    _, scores = test()
    base, result = scores["BLEU"]
    return {"baseline_bleu": float(base.score), "bleu": float(result.score), "p_value": float(result.p_value),
            "mean": float(result.mean), "ci": float(result.ci)}
