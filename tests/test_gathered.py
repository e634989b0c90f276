"""GatheredHypotheses: the ranks' hypotheses, gathered by torchmetrics, give exactly sacreBLEU's corpus BLEU and chrF
(scored by `Evaluator`) on hand-built text, whether merged from two metric instances as from two ranks or gathered by
torchmetrics' own sync across two real processes (gloo)."""
from __future__ import annotations

import pytest
import sacrebleu
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from seqbench.scoring.evaluation import Evaluator
from seqbench.scoring.gathered import GatheredHypotheses

# Hand-built: 13a tokenisation of punctuation and quotes, non-ASCII text, an empty hypothesis, a sentence whose
# hypothesis shares no 4-gram with its reference.
REFERENCES = ["The cat sat on the mat.", "Der Hund, \"bellt\" laut!", "It is 3.5 km to Zürich.",
              "he said that the men who came yesterday left", "ça va très bien, merci", "no words here"]
HYPOTHESES = ["the cat sat on a mat .", "Der Hund bellt laut!", "It's 3.5 km to Zürich.",
              "he said the men who came left yesterday", "ça va bien", ""]
# A corpus with no matching 4-gram at all: sacreBLEU's default 'exp' smoothing gives it a BLEU above 0 (torchmetrics'
# SacreBLEUScore gives 0 here, which is why it is not used).
NO_FOURGRAM = (["Der Hund, \"bellt\" laut!", "It's 3.5 km."], ["Der Hund bellt laut!", "It is 3.5 km."])


def _split_as_two_ranks(indices, hypotheses):
    """Two metric instances, as two DDP ranks would hold them (uneven, interleaved shares), gathered by torchmetrics'
    own sync and reduction with a stand-in for the all-gather that hands over the other rank's states."""
    ranks = [GatheredHypotheses(), GatheredHypotheses()]
    for start in range(0, len(indices), 2):  # batches of two, alternately to each rank: uneven shares
        rank = ranks[(start // 2) % 2]
        rank.update(indices[start:start + 2], hypotheses[start:start + 2])
    others = iter([torch.cat(getattr(ranks[1], name)) for name in ("index", "length", "utf8")])  # add_state order

    def all_gather(tensor, group=None):
        return [tensor, next(others)]

    with ranks[0].sync_context(dist_sync_fn=all_gather, distributed_available=lambda: True):
        return GatheredHypotheses.compute(ranks[0])  # compute itself, on the gathered states


def _assert_sacrebleu_scores(hypotheses, references):
    scores = Evaluator().score(hypotheses, references)
    bleu, chrf = sacrebleu.BLEU(), sacrebleu.CHRF()
    assert scores["bleu"] == bleu.corpus_score(hypotheses, [references]).score  # exactly, not approximately
    assert scores["chrf"] == chrf.corpus_score(hypotheses, [references]).score
    assert scores["bleu_signature"] == str(bleu.get_signature())  # nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|...
    assert "tok:13a" in scores["bleu_signature"] and "smooth:exp" in scores["bleu_signature"]
    assert scores["chrf_signature"] == str(chrf.get_signature())


@pytest.mark.parametrize("hypotheses,references", [(HYPOTHESES, REFERENCES), NO_FOURGRAM])
def test_two_ranks_merged_score_exactly_what_sacrebleu_scores_on_the_whole(hypotheses, references):
    order = list(reversed(range(len(hypotheses))))  # ranks decode in batch order, not split order
    indices, gathered = _split_as_two_ranks(order, [hypotheses[i] for i in order])
    assert indices == list(range(len(hypotheses))) and gathered == hypotheses  # split order, text byte-identical
    _assert_sacrebleu_scores(gathered, references)
    if references is NO_FOURGRAM[1]:
        assert 0 < sacrebleu.corpus_bleu(gathered, [references]).score < 100


def test_one_hypothesis_per_position_and_reset():
    metric = GatheredHypotheses()
    metric.update([2, 0], ["b", "a"])
    metric.update([2], ["b"])  # a position decoded twice (a padded sampler's repeat) counts once
    assert metric.compute() == ([0, 2], ["a", "b"])
    metric.reset()
    metric.update([1], ["c"])
    assert metric.compute() == ([1], ["c"])
    with pytest.raises(ValueError, match="2 indices but 1 hypotheses"):
        metric.update([0, 1], ["x"])


def _rank(rank: int, world: int, init_file: str, shares: list, results) -> None:
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world)
    try:
        metric = GatheredHypotheses()
        for indices in shares[rank]:
            metric.update(indices, [HYPOTHESES[i] for i in indices])
        results[rank] = metric.compute()  # torchmetrics' sync gathers the other rank's share
    finally:
        dist.destroy_process_group()


@pytest.mark.integration
@pytest.mark.parametrize("shares", [[[[5, 1], [3]], [[0, 2, 4]]],   # uneven shares
                                    [[[0, 1, 2, 3, 4, 5]], []]],     # a rank that decoded nothing
                         ids=["uneven", "one-rank-empty"])
def test_torchmetrics_sync_gathers_every_ranks_hypotheses(tmp_path, shares):
    with mp.Manager() as manager:
        results = manager.dict()
        mp.start_processes(_rank, args=(2, str(tmp_path / "init"), shares, results), nprocs=2, start_method="spawn")
        results = dict(results)
    for rank in (0, 1):
        indices, hypotheses = results[rank]
        assert indices == list(range(len(HYPOTHESES))) and hypotheses == HYPOTHESES
    _assert_sacrebleu_scores(results[0][1], REFERENCES)
