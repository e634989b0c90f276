"""Reading an offline W&B run's `.wandb` file in tests: its config, summary and exit code.

W&B 0.31 keeps an offline run's config and summary only in that file (files/ gets the media: tables, images). The
file is a LevelDB-style log: a 7-byte header (":W&B", magic 0xBEE1, version), then 32 KiB blocks of chunks, each
with a 7-byte header (CRC32, length, type: 1 full, 2 first, 3 middle, 4 last) holding serialised `Record` protobufs.
"""
from __future__ import annotations

import json
from pathlib import Path

BLOCK, CHUNK_HEADER = 32768, 7


def records(path: Path):
    from wandb.proto import wandb_internal_pb2

    data = Path(path).read_bytes()
    assert data[:4] == b":W&B", f"{path}: not a .wandb file"
    pos, pending = 7, b""
    while pos + CHUNK_HEADER <= len(data):
        if BLOCK - pos % BLOCK < CHUNK_HEADER:  # a block's tail too short for a header is padding
            pos += BLOCK - pos % BLOCK
            continue
        length, kind = int.from_bytes(data[pos + 4:pos + 6], "little"), data[pos + 6]
        pending += data[pos + CHUNK_HEADER:pos + CHUNK_HEADER + length]
        pos += CHUNK_HEADER + length
        if kind in (1, 4):  # a whole record, or the last chunk of one
            record = wandb_internal_pb2.Record()
            record.ParseFromString(pending)
            pending = b""
            yield record


def _key(item) -> str:
    return item.key or "/".join(item.nested_key)


def read_run(run_dir: Path) -> dict:
    """{"name", "config", "summary", "exit_code"} of the W&B run directory `run_dir` (offline-run-*)."""
    (path,) = Path(run_dir).glob("*.wandb")
    out = {"name": None, "config": {}, "summary": {}, "exit_code": None}
    for record in records(path):
        kind = record.WhichOneof("record_type")
        if kind == "run":
            out["name"] = record.run.display_name
            updates = record.run.config.update
        elif kind == "config":
            updates = record.config.update
        elif kind == "summary":
            out["summary"].update({_key(i): json.loads(i.value_json) for i in record.summary.update})
            continue
        elif kind == "exit":
            out["exit_code"] = record.exit.exit_code
            continue
        else:
            continue
        out["config"].update({_key(i): json.loads(i.value_json) for i in updates})
    return out
