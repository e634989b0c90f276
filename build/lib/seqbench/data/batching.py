"""Token-budget batching (fairseq's `max_tokens`): length-sorted buckets, shuffled per epoch, sharded per rank."""
from __future__ import annotations

import random
from typing import Iterator, Sequence

import torch
from torch.utils.data import Sampler

from seqbench.common.tokens import BOS_ID, EOS_ID, PAD_ID


def token_budget_batches(src_lens: Sequence[int], tgt_lens: Sequence[int], max_tokens: int,
                         max_sentences: int | None = None, seed: int = 0) -> list[list[int]]:
    """Group indices so that (sentences in batch) x (longest side in batch) <= max_tokens, padding included.

    Sorting by length keeps padding low; ties are broken by a seeded permutation so equal-length sentences do not
    always meet in the same order.
    """
    order = list(range(len(src_lens)))
    random.Random(seed).shuffle(order)
    order.sort(key=lambda i: (src_lens[i], tgt_lens[i]))
    batches, current, longest = [], [], 0
    for i in order:
        length = max(src_lens[i], tgt_lens[i])
        if length > max_tokens:
            raise ValueError(f"a sentence of {length} tokens does not fit data.max_tokens={max_tokens}; "
                             f"raise max_tokens or set a length filter")
        new_longest = max(longest, length)
        full = max_sentences is not None and len(current) >= max_sentences
        if current and (new_longest * (len(current) + 1) > max_tokens or full):
            batches.append(current)
            current, new_longest = [], length
        current.append(i)
        longest = new_longest
    if current:
        batches.append(current)
    return batches


class TokenBudgetBatchSampler(Sampler[list[int]]):
    """Yields the precomputed batches in a seeded per-epoch order; each distributed rank gets an equal share.

    Resumable mid-epoch: `resume(epoch, batches_done)` makes the next iteration continue that epoch's order after the
    batches already trained on, so a restarted run sees exactly the batches an uninterrupted one would.
    """

    def __init__(self, batches: list[list[int]], shuffle: bool, seed: int = 0):
        self.batches, self.shuffle, self.seed, self.epoch = batches, shuffle, seed, 0
        self._skip = 0  # batches of the next iteration already consumed before a restart

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    @property
    def sampler(self) -> TokenBudgetBatchSampler:
        """Lightning calls `set_epoch` at the start of every epoch only on `dataloader.sampler` and
        `dataloader.batch_sampler.sampler`, never on the batch sampler itself: without this the order was drawn for
        epoch 0 every epoch."""
        return self

    def resume(self, epoch: int, batches_done: int) -> None:
        """Continue `epoch` after its first `batches_done` batches; a finished epoch continues with the next one.

        Set before the first iteration: Lightning creates the resumed epoch's iterator (and fetches its first batch)
        before it calls `set_epoch`.
        """
        if batches_done >= len(self):
            epoch, batches_done = epoch + 1, 0
        self.epoch, self._skip = epoch, batches_done

    def _rank_and_world(self) -> tuple[int, int]:
        if torch.distributed.is_available() and torch.distributed.is_initialized():
            return torch.distributed.get_rank(), torch.distributed.get_world_size()
        return 0, 1

    def _my_batches(self) -> list[list[int]]:
        rank, world = self._rank_and_world()
        batches = _split_until(self.batches, world)
        order = list(range(len(batches)))
        if self.shuffle:
            random.Random(self.seed * 100_003 + self.epoch).shuffle(order)
        usable = len(order) - len(order) % world if self.shuffle and world > 1 else len(order)
        # Training shards must be equal-sized or DDP ranks deadlock waiting for each other's gradients.
        return [batches[i] for i in order[rank:usable:world]]

    def __iter__(self) -> Iterator[list[int]]:
        skip, self._skip = self._skip, 0
        return iter(self._my_batches()[skip:])

    def __len__(self) -> int:  # the whole epoch, also when resumed: Lightning counts the batches done before
        return len(self._my_batches())


def _split_until(batches: list[list[int]], count: int) -> list[list[int]]:
    """Halve the largest batches until there are at least `count`: every rank needs a batch, even on a tiny split."""
    batches = list(batches)
    while len(batches) < count and max(len(b) for b in batches) > 1:
        largest = max(range(len(batches)), key=lambda i: len(batches[i]))
        batch = batches.pop(largest)
        batches[largest:largest] = [batch[:len(batch) // 2], batch[len(batch) // 2:]]
    return batches


def collate(examples: list[tuple[int, list[int], list[int]]]) -> dict[str, torch.Tensor]:
    """(index, src_ids, tgt_ids) -> padded tensors. Masks are True on real tokens.

    tgt_in = <bos> y, tgt_out = y <eos>: the decoder predicts tgt_out[t] from tgt_in[:t+1] (teacher forcing).
    """
    batch_size = len(examples)
    src_len = max(len(s) for _, s, _ in examples)
    tgt_len = max(len(t) for _, _, t in examples) + 1
    src = torch.full((batch_size, src_len), PAD_ID, dtype=torch.long)
    tgt_in = torch.full((batch_size, tgt_len), PAD_ID, dtype=torch.long)
    tgt_out = torch.full((batch_size, tgt_len), PAD_ID, dtype=torch.long)
    for row, (_, s, t) in enumerate(examples):
        src[row, :len(s)] = torch.tensor(s)
        tgt_in[row, 0] = BOS_ID
        tgt_in[row, 1:len(t) + 1] = torch.tensor(t)
        tgt_out[row, :len(t)] = torch.tensor(t)
        tgt_out[row, len(t)] = EOS_ID
    return {"index": torch.tensor([i for i, _, _ in examples]), "src": src, "src_mask": src != PAD_ID,
            "tgt_in": tgt_in, "tgt_out": tgt_out}
