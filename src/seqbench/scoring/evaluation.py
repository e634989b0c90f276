"""The one evaluation path: validation, test, `seqbench score` and the report's external systems all score detokenised
text through `Evaluator`, so a number from any of them means the same thing.

`Evaluator.score` gives BLEU and chrF with their sacreBLEU signatures (seqbench.scoring.metrics), BLEU by source
length when the sources are known, and a paired bootstrap test against a baseline's hypotheses when one is given.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

from seqbench.common.breakdowns import CorpusScoring
from seqbench.common.structure import STRUCTURE_COLUMNS
from seqbench.common.text import DEFAULT_LENGTH_EDGES, word_count
from seqbench.common.text import length_buckets as bucket_ranges
from seqbench.scoring.metrics import bleu_by_length, corpus_bleu, corpus_chrf, paired_bootstrap
from seqbench.scoring.targeted import structure_scores

# The logged name of BLEU per source-length bucket: <split>/bleu_len_<bucket> (the learning curve and the CSV log's
# reader take the buckets back from it)
LENGTH_METRIC = "bleu_len"


@dataclass
class SplitEvaluation:
    """What one validation or test pass produced: the scores and the text they were computed from."""

    scores: dict             # Evaluator.score's record: results.json's "valid" / "test" entry
    hypotheses: list[str]
    references: list[str]
    sources: list[str]
    indices: list[int]       # positions in the split of the scored sentences (a subset under limit_*_batches)


class Evaluator:
    """Scores detokenised hypotheses against references; see the module docstring."""

    def __init__(self, length_buckets: Sequence[int] = DEFAULT_LENGTH_EDGES, bootstrap_samples: int = 1000):
        self.length_buckets = tuple(int(edge) for edge in length_buckets)  # upper edges, in source words
        bucket_ranges(self.length_buckets)  # raises ValueError on edges that are not positive and increasing
        self.bootstrap_samples = bootstrap_samples

    def score(self, hypotheses: Sequence[str], references: Sequence[str], sources: Sequence[str] | None = None,
              baseline: Sequence[str] | None = None, structure: Mapping[str, Sequence] | None = None,
              scoring: CorpusScoring | None = None) -> dict:
        """{"bleu", "bleu_signature", "chrf", "chrf_signature", "n_sentences"}, plus "bleu_by_length" (one entry per
        bucket, seqbench.scoring.metrics.bleu_by_length) when sources are given, plus "baseline" (the baseline's own
        scores) and "significance" (seqbench.scoring.metrics.paired_bootstrap, this system against the baseline) when a
        baseline is given, plus "bleu_by_clauses", "bleu_by_dependency" and "targeted"
        (seqbench.scoring.targeted.structure_scores, with the corpus's `scoring.markers`) when the sources are given
        and `structure` holds a structured corpus's per-sentence columns (clauses, max_dependency, dependencies), plus
        one BLEU-by-length entry per subset the corpus declares (`scoring.subsets`, seqbench.common.breakdowns) with
        "breakdowns" describing them. All sequences hold the same sentences in the same order."""
        scoring = scoring or CorpusScoring()
        hypotheses, references = list(hypotheses), list(references)
        for name, other in (("references", references), ("sources", sources), ("baseline", baseline)):
            if other is not None and len(other) != len(hypotheses):
                raise ValueError(f"{len(hypotheses)} hypotheses but {len(other)} {name}: they must match")
        bleu, bleu_signature = corpus_bleu(hypotheses, references)
        chrf, chrf_signature = corpus_chrf(hypotheses, references)
        out = {"bleu": bleu, "bleu_signature": bleu_signature, "chrf": chrf, "chrf_signature": chrf_signature,
               "n_sentences": len(hypotheses)}
        if sources is not None:
            lengths = [word_count(s) for s in sources]
            out["bleu_by_length"] = bleu_by_length(hypotheses, references, lengths, self.length_buckets)
        for subset in scoring.subsets if structure is not None and sources is not None else ():
            chosen = [i for i, v in enumerate(structure.get(subset.column, [])) if v == subset.value]
            out[subset.key] = bleu_by_length([hypotheses[i] for i in chosen], [references[i] for i in chosen],
                                             [word_count(sources[i]) for i in chosen], self.length_buckets)
            out.setdefault("breakdowns", []).append(subset.describe())
        if structure is not None and sources is not None and set(STRUCTURE_COLUMNS) <= set(structure):
            out.update(structure_scores(hypotheses, references, list(sources),
                                        *(structure[c] for c in STRUCTURE_COLUMNS), markers=scoring.markers,
                                        length_edges=self.length_buckets))
        if baseline is not None:
            out["baseline"] = self.score(baseline, references, sources)
            out["significance"] = paired_bootstrap(list(baseline), hypotheses, references, self.bootstrap_samples)
        return out

    @staticmethod
    def metrics(prefix: str, scores: dict) -> dict[str, float]:
        """The logged scalars of a score record: <prefix>/bleu, <prefix>/chrf and <prefix>/bleu_len_<bucket> (empty
        buckets have no score, and loggers want numbers, so they are left out)."""
        out = {f"{prefix}/bleu": scores["bleu"], f"{prefix}/chrf": scores["chrf"]}
        for key, name in (("bleu_by_length", LENGTH_METRIC), ("bleu_by_clauses", "bleu_clauses"),
                          ("bleu_by_dependency", "bleu_dep")):
            for bucket in scores.get(key, []):
                if bucket["sentences"]:
                    out[f"{prefix}/{name}_{bucket['bucket']}"] = bucket["bleu"]
        targeted = scores.get("targeted", {})
        for score in ("coverage", "accuracy"):
            if targeted.get(score) is not None:
                out[f"{prefix}/targeted_{score}"] = targeted[score]
                for bucket in targeted["by_distance"]:
                    if bucket[score] is not None:
                        out[f"{prefix}/targeted_{score}_dist_{bucket['bucket']}"] = bucket[score]
        return out
