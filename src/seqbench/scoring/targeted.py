"""Scores by structure rather than by length: BLEU by clause count and by longest dependency, and targeted accuracy
(does the hypothesis carry the agreement/reference marker the source decides?) by dependency distance.

Inputs are the per-sentence columns a structured corpus records (the synthetic pair with its long-range options, see
`seqbench.data.synthetic.SentenceGenerator.pair`): `clauses`, `max_dependency` and `dependencies`. BLEU goes through
`seqbench.scoring.metrics.bleu_by_group` (the sacreBLEU path of BLEU by length); targeted accuracy reads only the
hypotheses and the recorded dependencies, never the references, in the spirit of Linzen et al. (2016)'s
agreement-by-distance evaluation.
"""
from __future__ import annotations

from typing import Mapping, Sequence

from seqbench.common.structure import MARKERS
from seqbench.common.text import bucket_index, bucket_label, length_buckets
from seqbench.scoring.metrics import bleu_by_group

# Upper edges of the clause-count buckets 1, 2, 3, 4-5, 6-8, 9+ (clauses = finite verbs, relative clauses included)
DEFAULT_CLAUSE_EDGES = (1, 2, 3, 5, 8)
# Upper edges (source words between controller and dependent) of the distance buckets 1-5, 6-10, ..., 41-60, 61+
DEFAULT_DISTANCE_EDGES = (5, 10, 20, 30, 40, 60)


def _words(hypothesis: str) -> list[str]:
    # The target's sentence-final "." sticks to the last word; a detokeniser may also split it off.
    return [w for w in (w.rstrip(".") for w in hypothesis.split()) if w]


def marker_found(hypothesis: str, dependency: Mapping) -> bool:
    """Whether the hypothesis carries the expected marker for one recorded dependency.

    The marked word is found by structure, not by position: among the hypothesis's words built on the dependency's
    stem (the verb lemma, or the pronoun stem) followed by any marker of its kind, take the `occurrence`-th, as the
    generator counted them in the target. Insertions, deletions and reorderings of other words do not move it, so a
    hypothesis of the wrong length is still scored on the word that matters; a position window would pick the wrong
    verb whenever the hypothesis dropped or added a phrase before it. A hypothesis with too few such words misses the
    dependency (it never produced the marked word), and one with the right word but another marker gets it wrong.
    """
    stem, alternatives = dependency["stem"], MARKERS[dependency["kind"]]
    candidates = [w[len(stem):] for w in _words(hypothesis) if w.startswith(stem) and w[len(stem):] in alternatives]
    occurrence = dependency["occurrence"]
    return occurrence < len(candidates) and candidates[occurrence] == dependency["marker"]


def targeted_accuracy(hypotheses: Sequence[str], dependencies: Sequence[Sequence[Mapping]],
                      edges: Sequence[int] = DEFAULT_DISTANCE_EDGES) -> dict:
    """Share (percent) of recorded dependencies whose marker the hypothesis carries, overall, per kind and by
    distance bucket (source words from controller to dependent).

    `dependencies[i]` is sentence i's list (the `dependencies` column). Returns {"accuracy", "dependencies",
    "by_kind": {kind: {"accuracy", "dependencies"}}, "by_distance": [{"bucket", "min", "max", "dependencies",
    "accuracy" (None for an empty bucket)}]}.
    """
    if len(hypotheses) != len(dependencies):
        raise ValueError(f"{len(hypotheses)} hypotheses, {len(dependencies)} dependency lists: they must match")
    buckets = [[0, 0] for _ in range(len(edges) + 1)]  # [correct, total]
    kinds: dict[str, list[int]] = {}
    for hypothesis, sentence in zip(hypotheses, dependencies):
        for dep in sentence:
            hit = marker_found(hypothesis, dep)
            for tally in (buckets[bucket_index(dep["distance"], edges)], kinds.setdefault(dep["kind"], [0, 0])):
                tally[0] += hit
                tally[1] += 1

    def share(correct: int, total: int) -> float | None:
        return 100.0 * correct / total if total else None

    correct, total = sum(b[0] for b in buckets), sum(b[1] for b in buckets)
    return {"accuracy": share(correct, total), "dependencies": total,
            "by_kind": {k: {"accuracy": share(*t), "dependencies": t[1]} for k, t in sorted(kinds.items())},
            "by_distance": [{"bucket": bucket_label(lo, hi), "min": lo, "max": hi, "dependencies": n,
                             "accuracy": share(c, n)} for (lo, hi), (c, n) in zip(length_buckets(edges), buckets)]}


def structure_scores(hypotheses: list[str], references: list[str], clauses: Sequence[int],
                     max_dependency: Sequence[int], dependencies: Sequence[Sequence[Mapping]],
                     clause_edges: Sequence[int] = DEFAULT_CLAUSE_EDGES,
                     distance_edges: Sequence[int] = DEFAULT_DISTANCE_EDGES) -> dict:
    """Everything structural for one evaluated split, from its metadata columns: {"bleu_by_clauses",
    "bleu_by_dependency" (bucketed by each sentence's longest dependency), "targeted" (targeted_accuracy)}."""
    return {"bleu_by_clauses": bleu_by_group(hypotheses, references, clauses, clause_edges),
            "bleu_by_dependency": bleu_by_group(hypotheses, references, max_dependency, distance_edges),
            "targeted": targeted_accuracy(hypotheses, dependencies, distance_edges)}
