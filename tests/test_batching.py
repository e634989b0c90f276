import random

import pytest
import torch

from seqbench.common.tokens import BOS_ID, EOS_ID, PAD_ID
from seqbench.data.batching import TokenBudgetBatchSampler, collate, token_budget_batches


def _lengths(n=500, seed=0):
    rng = random.Random(seed)
    src = [rng.randint(1, 80) for _ in range(n)]
    return src, [max(1, s + rng.randint(-5, 5)) for s in src]


def test_budget_respected_and_every_index_once():
    src, tgt = _lengths()
    batches = token_budget_batches(src, tgt, max_tokens=400, seed=1)
    assert sorted(i for b in batches for i in b) == list(range(500))
    for b in batches:
        assert len(b) * max(max(src[i], tgt[i]) for i in b) <= 400


def test_too_long_sentence_is_an_error():
    with pytest.raises(ValueError, match="max_tokens"):
        token_budget_batches([10, 500], [10, 10], max_tokens=100)


def test_deterministic_and_reshuffled_per_epoch():
    src, tgt = _lengths()
    batches = token_budget_batches(src, tgt, 400, seed=3)
    assert batches == token_budget_batches(src, tgt, 400, seed=3)
    sampler = TokenBudgetBatchSampler(batches, shuffle=True, seed=7)
    epoch0 = list(sampler)
    sampler.set_epoch(1)
    epoch1 = list(sampler)
    assert epoch0 != epoch1 and sorted(map(tuple, epoch0)) == sorted(map(tuple, epoch1))
    again = TokenBudgetBatchSampler(batches, shuffle=True, seed=7)
    assert list(again) == epoch0


def test_ranks_get_disjoint_equal_shares(monkeypatch):
    src, tgt = _lengths()
    batches = token_budget_batches(src, tgt, 400)
    shares = []
    for rank in range(3):
        sampler = TokenBudgetBatchSampler(batches, shuffle=True, seed=0)
        monkeypatch.setattr(sampler, "_rank_and_world", lambda r=rank: (r, 3))
        shares.append([tuple(b) for b in sampler])
    assert len({len(s) for s in shares}) == 1
    assert not (set(shares[0]) & set(shares[1])) and not (set(shares[1]) & set(shares[2]))


def test_collate_pads_and_shifts():
    batch = collate([(5, [7, 8, 9], [4, 5]), (2, [6], [4, 5, 6, 7])])
    assert batch["index"].tolist() == [5, 2]
    assert batch["src"].tolist() == [[7, 8, 9], [6, PAD_ID, PAD_ID]]
    assert batch["src_mask"].tolist() == [[True, True, True], [True, False, False]]
    assert batch["tgt_in"].tolist() == [[BOS_ID, 4, 5, PAD_ID, PAD_ID], [BOS_ID, 4, 5, 6, 7]]
    assert batch["tgt_out"].tolist() == [[4, 5, EOS_ID, PAD_ID, PAD_ID], [4, 5, 6, 7, EOS_ID]]
    assert batch["tgt_in"].dtype == torch.long


def test_every_rank_gets_a_batch_even_when_there_are_fewer_batches_than_ranks(monkeypatch):
    batches = [[0, 1, 2, 3, 4]]
    shares = []
    for rank in range(2):
        sampler = TokenBudgetBatchSampler(batches, shuffle=False)
        monkeypatch.setattr(sampler, "_rank_and_world", lambda r=rank: (r, 2))
        shares.append(list(sampler))
    assert shares == [[[0, 1]], [[2, 3, 4]]]


def test_resumed_sampler_continues_the_epoch_after_the_batches_done():
    src, tgt = _lengths()
    batches = token_budget_batches(src, tgt, 400, seed=3)
    uninterrupted = TokenBudgetBatchSampler(batches, shuffle=True, seed=7)
    uninterrupted.set_epoch(2)
    epoch2 = list(uninterrupted)
    resumed = TokenBudgetBatchSampler(batches, shuffle=True, seed=7)  # a new process: its sampler starts at epoch 0
    resumed.resume(epoch=2, batches_done=5)
    assert list(resumed) == epoch2[5:] and len(resumed) == len(epoch2)
    assert list(resumed) == epoch2, "only the first iteration after resume() skips"
    finished = TokenBudgetBatchSampler(batches, shuffle=True, seed=7)
    finished.resume(epoch=2, batches_done=len(epoch2))  # saved at the end of epoch 2: the next one is epoch 3
    uninterrupted.set_epoch(3)
    assert list(finished) == list(uninterrupted)


def test_lightning_reaches_the_batch_samplers_set_epoch():
    """Lightning calls set_epoch on dataloader.sampler and dataloader.batch_sampler.sampler only: the token-budget
    sampler must be reachable there, or every epoch repeats epoch 0's order."""
    from lightning.fabric.utilities.data import _set_sampler_epoch
    from torch.utils.data import DataLoader

    from seqbench.data.batching import TokenBudgetBatchSampler

    sampler = TokenBudgetBatchSampler([[i] for i in range(20)], shuffle=True, seed=0)
    loader = DataLoader(list(range(20)), batch_sampler=sampler)
    first = list(sampler)
    _set_sampler_epoch(loader, 1)
    assert sampler.epoch == 1 and list(sampler) != first
