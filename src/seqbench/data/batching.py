"""Token-budget batching (fairseq's `max_tokens`): length-sorted buckets, shuffled per epoch, sharded per rank."""
from __future__ import annotations

import mmap
import random
from array import array
from pathlib import Path
from typing import Iterator, Sequence

import numpy as np
import torch
from torch.utils.data import Sampler

from seqbench.common.tokens import BOS_ID, EOS_ID, PAD_ID


class Batches(Sequence[list[int]]):
    """Batches of a split as two arrays: the indices in batch order (`order`) and where each batch starts in it
    (`starts`, one more entry than batches). A 4.5M-pair split is two flat arrays of a few tens of MB, where a list
    of lists of Python ints would take hundreds; a batch becomes a list only when it is read."""

    def __init__(self, order: np.ndarray, starts: np.ndarray):
        self.order, self.starts = order, starts

    @classmethod
    def from_lists(cls, batches: Sequence[Sequence[int]]) -> Batches:
        sizes = [len(b) for b in batches]
        order = np.fromiter((i for b in batches for i in b), dtype=np.int64, count=sum(sizes))
        return cls(order, np.concatenate([[0], np.cumsum(sizes, dtype=np.int64)]))

    def __len__(self) -> int:
        return len(self.starts) - 1

    def __getitem__(self, b: int) -> list[int]:
        return self.order[self.starts[b]:self.starts[b + 1]].tolist()

    def sizes(self) -> np.ndarray:
        return np.diff(self.starts)

    def tolist(self) -> list[list[int]]:
        return [self[b] for b in range(len(self))]

    def save(self, directory: Path) -> None:
        """order.bin and starts.bin in `directory` (int32 indices when they fit), for `load` to map."""
        directory.mkdir(parents=True, exist_ok=True)
        narrow = np.int32 if len(self.order) < 2**31 else np.int64
        self.order.astype(narrow, copy=False).tofile(directory / f"order.{np.dtype(narrow).name}.bin")
        self.starts.astype(np.int64, copy=False).tofile(directory / "starts.int64.bin")

    @classmethod
    def load(cls, directory: Path) -> Batches:
        """Batches saved by `save`, mapped (every process of a run shares their pages)."""
        arrays = {}
        for path in directory.glob("*.bin"):
            name, dtype, _ = path.name.split(".")
            arrays[name] = mapped_array(path, dtype)
        return cls(arrays["order"], arrays["starts"])

    def halved(self, count: int) -> Batches:
        """The largest batch split in two, `count` times (largest first): more batches over the same sentences."""
        starts = self.starts.tolist()
        for _ in range(count):
            sizes = np.diff(starts)
            largest = int(np.argmax(sizes))
            if sizes[largest] < 2:
                break
            starts.insert(largest + 1, starts[largest] + int(sizes[largest]) // 2)
        return Batches(self.order, np.asarray(starts, dtype=np.int64))


def mapped_array(path: Path, dtype: str) -> np.ndarray:
    """The file as a read-only array over a memory map (for arrays read whole: lengths, rows, batch plans)."""
    if path.stat().st_size == 0:  # an empty file cannot be mapped
        return np.empty(0, dtype=dtype)
    with path.open("rb") as f:
        return np.frombuffer(mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ), dtype=dtype)


def _seeded_order(count: int, seed: int) -> np.ndarray:
    """range(count) in `random.Random(seed).shuffle`'s order, shuffled in a compact array (18 MB for 4.5M pairs,
    where a list of ints takes 160 MB): the tie-break every batch plan has used, so plans stay the same."""
    order = array("i" if count < 2**31 else "q", range(count))
    random.Random(seed).shuffle(order)
    return np.frombuffer(order, dtype=np.intc if order.typecode == "i" else np.int64)


def plan_batches(src_lens: Sequence[int] | np.ndarray, tgt_lens: Sequence[int] | np.ndarray, max_tokens: int,
                 max_sentences: int | None = None, seed: int = 0) -> Batches:
    """Group indices so that (sentences in batch) x (longest side in batch) <= max_tokens, padding included.

    Sorting by length keeps padding low; ties are broken by a seeded permutation so equal-length sentences do not
    always meet in the same order. Works on length arrays (the prepared store's), never on the sentences.
    """
    src_lens, tgt_lens = np.asarray(src_lens), np.asarray(tgt_lens)  # the store's narrow types, not copies
    longest_side = np.maximum(src_lens, tgt_lens)
    if len(longest_side) and longest_side.max() > max_tokens:
        raise ValueError(f"a sentence of {longest_side.max()} tokens does not fit data.max_tokens={max_tokens}; "
                         f"raise max_tokens or set a length filter")
    shuffled = _seeded_order(len(src_lens), seed)
    # a stable sort by (source, target) length of the shuffled order: Python's sort with that key, as before
    order = shuffled[np.lexsort((tgt_lens[shuffled], src_lens[shuffled]))]
    del shuffled
    return Batches(order, _pack(longest_side[order], max_tokens, max_sentences))


def _pack(lengths: np.ndarray, max_tokens: int, max_sentences: int | None, chunk: int = 1 << 20) -> np.ndarray:
    """Batch starts of the greedy packing of `lengths` in order: a batch closes when one more sentence would break
    the budget (or max_sentences)."""
    starts, size, longest, position = [0], 0, 0, 0
    cap = max_sentences if max_sentences is not None else len(lengths) + 1
    for begin in range(0, len(lengths), chunk):
        for length in lengths[begin:begin + chunk].tolist():  # small ints: a chunk at a time keeps this cheap
            new_longest = length if length > longest else longest
            if size and (new_longest * (size + 1) > max_tokens or size >= cap):
                starts.append(position)
                size, new_longest = 0, length
            size, longest, position = size + 1, new_longest, position + 1
    if size:
        starts.append(position)
    return np.asarray(starts, dtype=np.int64)


def token_budget_batches(src_lens: Sequence[int], tgt_lens: Sequence[int], max_tokens: int,
                         max_sentences: int | None = None, seed: int = 0) -> list[list[int]]:
    """`plan_batches` as lists of indices (small splits: evaluation, translation, the bench's workloads)."""
    return plan_batches(src_lens, tgt_lens, max_tokens, max_sentences, seed).tolist()


class TokenBudgetBatchSampler(Sampler[list[int]]):
    """Yields the precomputed batches in a seeded per-epoch order; each distributed rank gets an equal share.

    Under DDP the training batches are first made a multiple of the world size (the largest ones halved), so every
    rank gets as many batches, which DDP needs, and every pair is still seen once per epoch.

    Resumable mid-epoch: `resume(epoch, batches_done)` makes the next iteration continue that epoch's order after the
    batches already trained on, so a restarted run sees exactly the batches an uninterrupted one would.
    """

    def __init__(self, batches: Batches | Sequence[Sequence[int]], shuffle: bool, seed: int = 0):
        self.batches = batches if isinstance(batches, Batches) else Batches.from_lists(batches)
        self.shuffle, self.seed, self.epoch = shuffle, seed, 0
        self._skip = 0  # batches of the next iteration already consumed before a restart
        self._sharded: tuple[int, Batches] | None = None  # (world size, its batches)

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

    def _world_batches(self, world: int) -> Batches:
        if self._sharded is None or self._sharded[0] != world:
            batches = self.batches
            if len(batches) < world:  # every rank needs a batch, even on a tiny split
                batches = batches.halved(world - len(batches))
            if self.shuffle and len(batches) % world:  # equal shares for training, no pair left out
                batches = batches.halved(world - len(batches) % world)
            self._sharded = (world, batches)
        return self._sharded[1]

    def _my_indices(self) -> tuple[Batches, list[int]]:
        rank, world = self._rank_and_world()
        batches = self._world_batches(world)
        order = list(range(len(batches)))
        if self.shuffle:
            random.Random(self.seed * 100_003 + self.epoch).shuffle(order)
        # Training shards must be equal-sized or DDP ranks deadlock waiting for each other's gradients (left over
        # only when batches of one sentence could not be halved further).
        usable = len(order) - len(order) % world if self.shuffle and world > 1 else len(order)
        return batches, order[rank:usable:world]

    def __iter__(self) -> Iterator[list[int]]:
        skip, self._skip = self._skip, 0
        batches, mine = self._my_indices()
        return (batches[b] for b in mine[skip:])

    def __len__(self) -> int:  # the whole epoch, also when resumed: Lightning counts the batches done before
        return len(self._my_indices()[1])


def collate(examples: list[tuple[int, Sequence[int], Sequence[int]]]) -> dict[str, torch.Tensor]:
    """(index, src_ids, tgt_ids) -> padded tensors. Masks are True on real tokens. Ids are lists or numpy arrays
    (the prepared store's): rows are filled in numpy and turned into tensors once, not a tensor per sentence.

    tgt_in = <bos> y, tgt_out = y <eos>: the decoder predicts tgt_out[t] from tgt_in[:t+1] (teacher forcing).
    """
    batch_size = len(examples)
    src_len = max(len(s) for _, s, _ in examples)
    tgt_len = max(len(t) for _, _, t in examples) + 1
    src = np.full((batch_size, src_len), PAD_ID, dtype=np.int64)
    tgt_in = np.full((batch_size, tgt_len), PAD_ID, dtype=np.int64)
    tgt_out = np.full((batch_size, tgt_len), PAD_ID, dtype=np.int64)
    for row, (_, s, t) in enumerate(examples):
        src[row, :len(s)] = s
        tgt_in[row, 0] = BOS_ID
        tgt_in[row, 1:len(t) + 1] = t
        tgt_out[row, :len(t)] = t
        tgt_out[row, len(t)] = EOS_ID
    src = torch.from_numpy(src)
    return {"index": torch.tensor([i for i, _, _ in examples]), "src": src, "src_mask": src != PAD_ID,
            "tgt_in": torch.from_numpy(tgt_in), "tgt_out": torch.from_numpy(tgt_out)}
