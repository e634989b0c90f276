"""The prepared store: a corpus tokenised once into flat, memory-mapped arrays that every process maps.

fairseq's binarised data (`fairseq-preprocess`, `MMapIndexedDataset`) in plain numpy files. For each split and side:

    <split>.<side>.ids.bin      every kept sentence's token ids end to end, in the narrowest unsigned type the
                                vocabulary allows (uint16 up to 65,536 types)
    <split>.<side>.offsets.bin  int64, where each sentence starts in ids (pairs + 1 entries)
    <split>.<side>.lengths.bin  tokens per sentence (the ids' type): batches are planned from these alone
    <split>.rows.bin            int64, the corpus row of each kept pair
    <split>.text.json           evaluation splits only: their texts and other columns, for scoring
    meta.json                   the types, the counts, and what the store was built from

Opening maps the length arrays and reads a batch's ids with positioned reads: the pages come from the page cache,
shared by every process of the machine, and a process holds only its batch, so memory per process does not grow with
the corpus. Once a
store exists, a run opens it and its tokenizers without opening the corpus at all. The store is built in chunks
(memory stays flat while preparing too), into a temporary folder renamed into place and sealed by
`seqbench.data.cache`, so a killed preparation is never read. Its folder name is a digest of what it was built from
(the corpus's cache entry, the tokenizer, the length filters, this format): a store from another tokenizer or corpus
version is never reused, a new one is built beside it and the old one removed.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

import numpy as np
import torch

from seqbench.common.errors import InputError
from seqbench.common.io import atomic_path
from seqbench.common.progress import progress_bar
from seqbench.data.batching import mapped_array
from seqbench.data.cache import Damaged, cached, intact, remove
from seqbench.data.tokenizer import TokenizerPair

log = logging.getLogger(__name__)

FORMAT = 1
CHUNK = 20_000  # pairs read, tokenised and written at a time
SIDES = ("src", "tgt")


def id_type(vocab_size: int) -> np.dtype:
    """The narrowest unsigned integer type that holds every token id."""
    return np.dtype(np.uint16 if vocab_size <= 1 << 16 else np.uint32)


def corpus_digest(dataset) -> str:
    """What identifies a corpus's cached version without reading it: each split's Arrow files (name, size, time of
    writing), or, for a dataset held in memory, its text."""
    digest = hashlib.sha256()
    for split in sorted(dataset):
        digest.update(f"{split}:{dataset[split].num_rows}:".encode())
        files = [Path(f["filename"]) for f in dataset[split].cache_files]
        for path in files:
            stat = path.stat()
            digest.update(f"{path.name}:{stat.st_size}:{stat.st_mtime_ns};".encode())
        if not files:
            for batch in dataset[split].select_columns(list(SIDES)).iter(batch_size=CHUNK):
                digest.update("\n".join(batch["src"] + batch["tgt"]).encode())
    return digest.hexdigest()


@dataclass
class Identity:
    """What a store was built from; its digest names the store's folder."""

    corpus: str      # corpus_digest
    tokenizer: str   # TokenizerPair.digest
    filters: str     # the length filters' key

    def digest(self) -> str:
        text = json.dumps({"format": FORMAT, **self.__dict__}, sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:16]


class _Side:
    """One side of one split: its lengths mapped (batch planning reads them all), its ids and offsets read sentence
    by sentence with positioned reads, not mapped: a mapped page of scattered rows brings its neighbours into the
    process's resident memory (fault-around and large folios ignore MADV_RANDOM: 2,000 random reads of a 4.5M-pair
    store's ids mapped 210 MB here), where a read leaves them in the page cache, which every process shares."""

    def __init__(self, directory: Path, split: str, side: str, ids_type: str, lengths_type: str):
        self.ids_type = np.dtype(ids_type)
        self.lengths = mapped_array(directory / f"{split}.{side}.lengths.bin", lengths_type)
        self._ids = open(directory / f"{split}.{side}.ids.bin", "rb", buffering=0)  # open while the split is
        self._offsets = open(directory / f"{split}.{side}.offsets.bin", "rb", buffering=0)

    def sentence(self, i: int) -> np.ndarray:
        start, end = np.frombuffer(_read_at(self._offsets, 16, 8 * i), dtype=np.int64)
        size = self.ids_type.itemsize
        return np.frombuffer(_read_at(self._ids, size * int(end - start), size * int(start)), dtype=self.ids_type)


def _read_at(file, size: int, offset: int) -> bytes:
    if hasattr(os, "pread"):  # position-independent: safe in DataLoader workers sharing the descriptor
        return os.pread(file.fileno(), size, offset)
    file.seek(offset)  # Windows, where workers are spawned and open their own files
    return file.read(size)


class StoreSplit(torch.utils.data.Dataset):
    """The token ids of one split; items are (index, source ids, target ids) for `collate`, ids as numpy arrays.

    Pickled (DataLoader workers started by spawn) as its folder and split, and opened again there: a pickled array
    would copy the whole split into every worker.
    """

    def __init__(self, directory: Path, split: str, meta: dict):
        self.directory, self.split, self.meta = Path(directory), split, meta
        self.rows = mapped_array(self.directory / f"{split}.rows.bin", "int64")
        self.src, self.tgt = (_Side(self.directory, split, side, meta["ids_type"], meta["lengths_type"])
                              for side in SIDES)

    def __getstate__(self) -> dict:
        return {"directory": self.directory, "split": self.split, "meta": self.meta}

    def __setstate__(self, state: dict) -> None:
        self.__init__(state["directory"], state["split"], state["meta"])

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, i: int) -> tuple[int, np.ndarray, np.ndarray]:
        return i, self.src.sentence(i), self.tgt.sentence(i)

    @property
    def src_lengths(self) -> np.ndarray:
        return self.src.lengths

    @property
    def tgt_lengths(self) -> np.ndarray:
        return self.tgt.lengths

    def source_ids(self, i: int) -> list[int]:
        return self.src.sentence(i).tolist()


class Store:
    """A prepared store, opened: `splits[name]` are its StoreSplits; `meta` its counts. Opening checks its structure
    (`check`) and raises Damaged where it fails."""

    def __init__(self, directory: Path):
        self.directory = Path(directory)
        self.meta = json.loads((self.directory / "meta.json").read_text())
        if self.meta.get("format") != FORMAT:
            raise ValueError(f"store format {self.meta.get('format')}, expected {FORMAT}")
        self.check()
        self.splits = {split: StoreSplit(self.directory, split, self.meta) for split in self.meta["splits"]}

    def check(self) -> None:
        """What can be checked without reading the arrays (a stat per file, one read per side): each file's size
        against meta's counts, each side's last offset against its token count, and the largest id written against
        the vocabulary (recorded by `write`; stores from before it have no record). A seal checks the bytes (every
        file's SHA-256), not that they are the right ones: a store cut short and then sealed passes it."""
        width = {part: np.dtype(self.meta[f"{part}_type"]).itemsize for part in ("ids", "lengths")}
        for split, entry in self.meta["splits"].items():
            pairs = entry["pairs"]
            sizes = {f"{split}.rows.bin": 8 * pairs}
            for side in SIDES:
                sizes |= {f"{split}.{side}.ids.bin": width["ids"] * entry["tokens"][side],
                          f"{split}.{side}.offsets.bin": 8 * (pairs + 1),
                          f"{split}.{side}.lengths.bin": width["lengths"] * pairs}
            for name, size in sizes.items():
                found = (self.directory / name).stat().st_size if (self.directory / name).is_file() else None
                if found != size:
                    raise Damaged(f"{name} holds {found:,} bytes where meta.json's counts need {size:,}"
                                  if found is not None else f"{name} is missing")
            for side in SIDES:
                with open(self.directory / f"{split}.{side}.offsets.bin", "rb", buffering=0) as offsets:
                    (end,) = np.frombuffer(_read_at(offsets, 8, 8 * pairs), dtype=np.int64)
                if end != entry["tokens"][side]:
                    raise Damaged(f"{split}.{side}.offsets.bin ends at {end:,}, not at its {entry['tokens'][side]:,} "
                                  "tokens")
        for side, largest in self.meta.get("max_id", {}).items():
            if largest >= self.meta["vocab"][side]:
                raise Damaged(f"{side} id {largest:,} is outside its vocabulary of {self.meta['vocab'][side]:,}")

    def evaluation_text(self, split: str) -> tuple[dict[str, list[str]], dict[str, list]]:
        """An evaluation split's source and reference texts and its other columns, in split order."""
        columns = json.loads((self.directory / f"{split}.text.json").read_text(encoding="utf-8"))
        return {"src": columns.pop("src"), "tgt": columns.pop("tgt")}, columns

    def summary(self) -> dict:
        """Pairs and tokens per split, the id type, and the store's size on disk (bytes, and per token)."""
        size = sum(p.stat().st_size for p in self.directory.iterdir())
        tokens = sum(entry["tokens"][side] for entry in self.meta["splits"].values() for side in SIDES)
        return {"store": self.directory.name, "ids_type": self.meta["ids_type"],
                "splits": {split: {"pairs": entry["pairs"], "tokens": entry["tokens"]}
                           for split, entry in self.meta["splits"].items()},
                "bytes": size, "tokens": tokens, "bytes_per_token": round(size / max(1, tokens), 3)}


def open_existing(parent: Path, identity: Identity) -> Store | None:
    """The store of `identity` under `parent` if it was built and is intact, None otherwise: what every process of
    a run does once the corpus is prepared, without reading the corpus."""
    directory = parent / f"store-{identity.digest()}"
    return intact(directory, lambda: Store(directory))


def open_or_build(parent: Path, identity: Identity, dataset, kept: Callable[[str], np.ndarray],
                  tokenizers: TokenizerPair, where: Callable[[str, int], str] | None = None) -> Store:
    """The store of `identity` under `parent` (store-<digest>), built from `dataset`'s rows `kept(split)` if it is
    missing, incomplete or corrupted; stores of other identities there are removed (a new tokenizer or corpus).
    `where(split, row)` names a corpus row in errors (a file and line); the split and row by default."""
    directory = parent / f"store-{identity.digest()}"

    def build() -> None:
        for stale in parent.glob("store-*"):
            if stale.is_dir() and stale.name != directory.name:
                log.info("removing the prepared store %s: built from another corpus version or tokenizer", stale.name)
                remove(stale)
        for leftover in parent.glob(f".{directory.name}.tmp*"):  # of a killed process; built under this lock only
            remove(leftover)
        write(directory, dataset, kept, tokenizers, identity, where or _row)

    return cached(directory, lambda: Store(directory), build, "prepared store")


def _row(split: str, row: int) -> str:
    return f"{split} pair {row + 1:,} of the corpus"


def write(directory: Path, dataset, kept: Callable[[str], np.ndarray], tokenizers: TokenizerPair,
          identity: Identity, where: Callable[[str, int], str] = _row) -> None:
    """The store, flushed to the disk before the rename that publishes it (`atomic_path`'s durable)."""
    vocab = {"src": tokenizers.src_vocab_size, "tgt": tokenizers.tgt_vocab_size}
    ids_type = id_type(max(vocab.values()))
    meta = {"format": FORMAT, "ids_type": ids_type.name, "lengths_type": ids_type.name,
            "identity": identity.__dict__, "vocab": vocab, "max_id": dict.fromkeys(SIDES, -1), "splits": {}}
    with atomic_path(directory, durable=True) as tmp:
        tmp.mkdir(parents=True)
        for split in dataset:
            rows = kept(split)
            meta["splits"][split] = _write_split(tmp, split, dataset[split], rows, tokenizers, ids_type,
                                                 meta["max_id"], where)
            if split != "train":  # evaluation's texts and columns (small), so no run reads the corpus again
                columns = dataset[split].select(rows).to_dict()
                (tmp / f"{split}.text.json").write_text(json.dumps(columns, ensure_ascii=False) + "\n")
        (tmp / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")


def _write_split(directory: Path, split: str, data, rows: np.ndarray, tokenizers: TokenizerPair,
                 ids_type: np.dtype, max_id: dict[str, int], where: Callable[[str, int], str]) -> dict:
    """Tokenise `rows` of one split chunk by chunk, appending to the split's files; `max_id` keeps each side's
    largest id."""
    rows.astype(np.int64).tofile(directory / f"{split}.rows.bin")
    encode = {"src": tokenizers.encode_src, "tgt": tokenizers.encode_tgt}
    files = {side: {part: open(directory / f"{split}.{side}.{part}.bin", "wb") for part in ("ids", "offsets",
                                                                                            "lengths")}
             for side in SIDES}
    tokens = dict.fromkeys(SIDES, 0)
    try:
        for side in SIDES:
            np.zeros(1, dtype=np.int64).tofile(files[side]["offsets"])
        with progress_bar(f"tokenising {split}", total=len(rows), unit="pairs") as advance:
            for start, texts in zip(range(0, len(rows), CHUNK), _texts(data, rows)):
                for side in SIDES:
                    ids = encode[side](texts[side])
                    lengths = np.fromiter(map(len, ids), dtype=np.int64, count=len(ids))
                    if len(lengths) and lengths.max() > np.iinfo(ids_type).max:
                        raise InputError(f"{where(split, int(rows[start + lengths.argmax()]))}: a {side} sentence of "
                                         f"{lengths.max():,} tokens (a store holds {np.iinfo(ids_type).max:,}); set "
                                         "data.max_src_len / data.max_tgt_len (words) to drop such pairs")
                    flat = np.fromiter((t for sentence in ids for t in sentence), dtype=ids_type,
                                       count=int(lengths.sum()))
                    if len(flat):
                        max_id[side] = max(max_id[side], int(flat.max()))
                    flat.tofile(files[side]["ids"])
                    (tokens[side] + np.cumsum(lengths)).tofile(files[side]["offsets"])
                    lengths.astype(ids_type).tofile(files[side]["lengths"])
                    tokens[side] += int(lengths.sum())
                advance(len(texts["src"]))
    finally:
        for handles in files.values():
            for handle in handles.values():
                handle.close()
    return {"pairs": len(rows), "raw_pairs": data.num_rows, "tokens": tokens}


def _texts(data, rows: np.ndarray) -> Iterator[dict[str, list[str]]]:
    """The source and target texts of `rows` (ascending), CHUNK pairs at a time, read from the Arrow table."""
    for start in range(0, len(rows), CHUNK):
        chunk = data.select_columns(list(SIDES)).select(rows[start:start + CHUNK])
        yield chunk.to_dict()
