"""Scores by structure rather than by length: BLEU by clause count and by longest dependency, and the targeted scores
of agreement and reference markers by dependency distance, within sentence length.

Inputs are the per-sentence columns a structured corpus records (its `scoring.markers` give the suffixes its
dependencies may carry, seqbench.common.breakdowns): `clauses`, `max_dependency` and
`dependencies`, each dependency with its kind, source distance, the target position of the marked word in the
reference (`tgt_index`), its stem and expected marker. BLEU goes through `seqbench.scoring.metrics.bleu_by_group`.

Targeted scores, in the spirit of Linzen et al. (2016), keep apart two things a single accuracy would mix:

- coverage: is the dependent word there? The hypothesis is aligned to the reference word by word (an edit-distance
  alignment: matches and substitutions pair words, insertions and deletions do not), and the reference's marked word
  is covered when the hypothesis word aligned to it is built on the same stem and ends in a marker of its kind;
- conditional accuracy: given the word is there, is its marker the one the source decides? Tense and every other
  part of the word are ignored: only the agreement/reference marker counts.

A dropped word lowers coverage, never accuracy; a repeated stem elsewhere in the sentence cannot stand in for the
aligned word. Both are reported overall, by kind, by distance, and by kind x sentence length x distance: the
length-controlled table, where distance varies within a length bucket (seqbench.data.longrange's test grid).
"""
from __future__ import annotations

from typing import Mapping, Sequence

from seqbench.common.structure import DISTANCE_EDGES
from seqbench.common.text import DEFAULT_LENGTH_EDGES, bucket_index, bucket_label, length_buckets, word_count
from seqbench.scoring.metrics import bleu_by_group

# Upper edges of the clause-count buckets 1, 2, 3, 4-5, 6-8, 9+ (clauses = finite verbs, relative clauses included)
DEFAULT_CLAUSE_EDGES = (1, 2, 3, 5, 8)


def _words(text: str) -> list[str]:
    # The target's sentence-final "." sticks to the last word; a detokeniser may also split it off.
    return [w for w in (w.rstrip(".") for w in text.split()) if w]


def align(hypothesis: list[str], reference: list[str]) -> list[int | None]:
    """For each reference word, the position of the hypothesis word a minimal word-level edit alignment pairs with
    it (a match or a substitution), or None where the alignment deletes it. Ties prefer a match, then a
    substitution."""
    n, m = len(reference), len(hypothesis)
    # cost[i][j]: edits turning reference[:i] into hypothesis[:j]
    cost = [list(range(m + 1))] + [[i] + [0] * m for i in range(1, n + 1)]
    for i in range(1, n + 1):
        row, above, ref = cost[i], cost[i - 1], reference[i - 1]
        for j in range(1, m + 1):
            row[j] = min(above[j - 1] + (ref != hypothesis[j - 1]), above[j] + 1, row[j - 1] + 1)
    aligned: list[int | None] = [None] * n
    i, j = n, m
    while i > 0 and j > 0:
        if cost[i][j] == cost[i - 1][j - 1] + (reference[i - 1] != hypothesis[j - 1]):
            aligned[i - 1] = j - 1
            i, j = i - 1, j - 1
        elif cost[i][j] == cost[i - 1][j] + 1:
            i -= 1
        else:
            j -= 1
    return aligned


def marker_of(word: str, stem: str, kind: str, markers: Mapping[str, frozenset[str]]) -> str | None:
    """The marker of `kind` (one of the corpus's `markers[kind]`) the word ends in, if it is built on `stem`
    (anything may stand between: a tense marker); None for another word. The longest marker wins (a word ending in
    "otta" is not read as one ending in "ot")."""
    if not word.startswith(stem):
        return None
    endings = [m for m in markers[kind] if word.endswith(m) and len(word) - len(m) >= len(stem)]
    return max(endings, key=len) if endings else None


def judge(hypothesis_words: list[str], alignment: list[int | None], dependency: Mapping,
          markers: Mapping[str, frozenset[str]]) -> tuple[bool, bool]:
    """(covered, correct) of one dependency; correct implies covered."""
    position = alignment[dependency["tgt_index"]] if dependency["tgt_index"] < len(alignment) else None
    if position is None:
        return False, False
    marker = marker_of(hypothesis_words[position], dependency["stem"], dependency["kind"], markers)
    return marker is not None, marker == dependency["marker"]


class _Tally:
    def __init__(self):
        self.total = self.covered = self.correct = 0

    def add(self, covered: bool, correct: bool) -> None:
        self.total += 1
        self.covered += covered
        self.correct += correct

    def record(self) -> dict:
        return {"dependencies": self.total, "covered": self.covered,
                "coverage": 100.0 * self.covered / self.total if self.total else None,
                "accuracy": 100.0 * self.correct / self.covered if self.covered else None}


def targeted_scores(hypotheses: Sequence[str], references: Sequence[str], sources: Sequence[str],
                    dependencies: Sequence[Sequence[Mapping]], markers: Mapping[str, frozenset[str]],
                    distance_edges: Sequence[int] = DISTANCE_EDGES,
                    length_edges: Sequence[int] = DEFAULT_LENGTH_EDGES) -> dict:
    """Coverage and conditional accuracy (percent; see the module docstring) of every recorded dependency.

    Returns {"dependencies", "covered", "coverage", "accuracy", "by_kind": {kind: {...}}, "by_distance": [{"bucket",
    "min", "max", "dependencies", "covered", "coverage", "accuracy"}], "by_length_distance": [{"kind", "length",
    "distance", "probes" (whether only probe dependencies count), ...}]}. The length x distance cells count only
    the probe dependencies (one per sentence, seqbench.data.longrange's test grid) when the split has them, else
    every dependency. Scores of an empty group are None."""
    if not len(hypotheses) == len(references) == len(sources) == len(dependencies):
        raise ValueError(f"{len(hypotheses)} hypotheses, {len(references)} references, {len(sources)} sources, "
                         f"{len(dependencies)} dependency lists: they must match")
    overall, kinds = _Tally(), {}
    by_distance = [_Tally() for _ in range(len(distance_edges) + 1)]
    cells: dict[tuple[str, int, int], _Tally] = {}
    probes_only = any(d.get("probe") for sentence in dependencies for d in sentence)
    for hypothesis, reference, source, sentence in zip(hypotheses, references, sources, dependencies):
        if not sentence:
            continue
        hyp_words = _words(hypothesis)
        alignment = align(hyp_words, _words(reference))
        length = bucket_index(word_count(source), length_edges)
        for dep in sentence:
            covered, correct = judge(hyp_words, alignment, dep, markers)
            distance = bucket_index(dep["distance"], distance_edges)
            for tally in (overall, kinds.setdefault(dep["kind"], _Tally()), by_distance[distance]):
                tally.add(covered, correct)
            if dep.get("probe") or not probes_only:
                cells.setdefault((dep["kind"], length, distance), _Tally()).add(covered, correct)
    length_labels = [bucket_label(lo, hi) for lo, hi in length_buckets(length_edges)]
    distance_ranges = length_buckets(distance_edges)
    return {**overall.record(),
            "by_kind": {kind: tally.record() for kind, tally in sorted(kinds.items())},
            "by_distance": [{"bucket": bucket_label(lo, hi), "min": lo, "max": hi, **tally.record()}
                            for (lo, hi), tally in zip(distance_ranges, by_distance)],
            "by_length_distance": [{"kind": kind, "length": length_labels[length],
                                    "distance": bucket_label(*distance_ranges[distance]), "probes": probes_only,
                                    **cells[(kind, length, distance)].record()}
                                   for kind, length, distance in sorted(cells)]}


def structure_scores(hypotheses: list[str], references: list[str], sources: list[str], clauses: Sequence[int],
                     max_dependency: Sequence[int], dependencies: Sequence[Sequence[Mapping]],
                     markers: Mapping[str, frozenset[str]], clause_edges: Sequence[int] = DEFAULT_CLAUSE_EDGES,
                     distance_edges: Sequence[int] = DISTANCE_EDGES,
                     length_edges: Sequence[int] = DEFAULT_LENGTH_EDGES) -> dict:
    """Everything structural for one evaluated split, from its metadata columns: {"bleu_by_clauses",
    "bleu_by_dependency" (bucketed by each sentence's longest dependency), "targeted" (targeted_scores)}."""
    return {"bleu_by_clauses": bleu_by_group(hypotheses, references, clauses, clause_edges),
            "bleu_by_dependency": bleu_by_group(hypotheses, references, max_dependency, distance_edges),
            "targeted": targeted_scores(hypotheses, references, sources, dependencies, markers, distance_edges,
                                        length_edges)}
