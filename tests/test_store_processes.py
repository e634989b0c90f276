"""The prepared store across real processes (the integration tier): ranks that share one store see every training
pair once per epoch, a preparation killed with SIGKILL is never read, and memory does not grow with the corpus."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

GENERATE = [sys.executable, "-m", "seqbench", "data", "generate"]


def _files(folder: Path) -> list[str]:
    return ["data=files", "data.corpus.format=tsv", *(f"data.corpus.{split}={folder / f'{split}.tsv'}"
                                                      for split in ("train", "valid", "test"))]


def _corpus(tmp_path: Path, pairs: int, vocab: int = 2000) -> list[str]:
    folder = tmp_path / f"corpus{pairs}"
    subprocess.run([*GENERATE, str(folder), "--pairs", str(pairs), "--eval-pairs", "200", "--vocab", str(vocab)],
                   check=True, capture_output=True)
    return _files(folder)


RANK = """
import json, sys
import torch.distributed as dist
from hydra.utils import instantiate
from seqbench.config.compose import compose
rank, world, rendezvous, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
dist.init_process_group("gloo", init_method="file://" + rendezvous, rank=rank, world_size=world)
datamodule = instantiate(compose(sys.argv[5:]).data)
if rank == 0:
    datamodule.prepare_data()  # Lightning's contract: one process prepares, the others wait, then map it
dist.barrier()
datamodule.setup("fit")
sampler = datamodule.train_dataloader().batch_sampler
sampler.set_epoch(1)
batches = list(sampler)
json.dump({"indices": [i for batch in batches for i in batch], "batches": len(batches),
           "pairs": len(datamodule.encoded["train"]), "store": str(datamodule.store.directory)}, open(out, "w"))
"""


def test_two_processes_read_one_store_and_see_each_pair_once_per_epoch(tmp_path):
    overrides = [*_corpus(tmp_path, 3000), "data.vocab_size=300", "data.max_tokens=800",
                 f"paths.cache_dir={tmp_path / 'cache'}"]
    outs = [tmp_path / f"rank{rank}.json" for rank in range(2)]
    ranks = [subprocess.Popen([sys.executable, "-c", RANK, str(rank), "2", str(tmp_path / "rendezvous"),
                               str(outs[rank]), *overrides]) for rank in range(2)]
    for rank in ranks:
        assert rank.wait(timeout=300) == 0
    shares = [json.loads(path.read_text()) for path in outs]
    assert shares[0]["store"] == shares[1]["store"]  # one store, mapped by both
    assert shares[0]["batches"] == shares[1]["batches"]  # DDP needs as many batches on every rank
    seen = shares[0]["indices"] + shares[1]["indices"]
    assert sorted(seen) == list(range(shares[0]["pairs"])) and shares[0]["pairs"] == 3000


def test_a_preparation_killed_with_sigkill_is_never_read(tmp_path):
    overrides = [*_corpus(tmp_path, 60_000), "data.vocab_size=500", f"paths.cache_dir={tmp_path / 'cache'}"]
    command = [sys.executable, "-m", "seqbench", "data", "prepare", *overrides]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 180
    while not list((tmp_path / "cache").rglob(".store-*.tmp*/train.src.ids.bin")):  # tokenising the train split
        assert process.poll() is None and time.monotonic() < deadline, "the preparation ended before it was killed"
        time.sleep(0.05)
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert not list((tmp_path / "cache").rglob("store-*/meta.json"))  # nothing a reader could take for a store
    done = subprocess.run([*command, "--json"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["splits"]["train"]["pairs"] == 60_000
    assert not list((tmp_path / "cache").rglob(".store-*.tmp*"))  # the killed one's leftovers are gone


MEASURE = """
import json, re, sys
from hydra.utils import instantiate
from seqbench.config.compose import compose
datamodule = instantiate(compose(sys.argv[1:]).data)
datamodule.setup("fit")
loader = datamodule.train_dataloader()
for step, batch in zip(range(50), loader):
    pass
status = open("/proc/self/status").read()
print(json.dumps({key: int(re.search(key + r":\\s+(\\d+)", status).group(1)) // 1024 for key in ("VmHWM", "VmRSS")}))
"""


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads peak memory from /proc")
def test_memory_once_prepared_does_not_grow_with_the_corpus(tmp_path):
    """A run's data path at 20k and at 200k training pairs: the peak resident memory of the process differs by a
    bounded amount (about 5.4 KB a pair before the store: ~970 MB here)."""
    peaks = {}
    for pairs in (20_000, 200_000):
        overrides = [*_corpus(tmp_path, pairs), "data.vocab_size=1000", f"paths.cache_dir={tmp_path / 'cache'}"]
        subprocess.run([sys.executable, "-m", "seqbench", "data", "prepare", *overrides], check=True,
                       capture_output=True, timeout=600)
        measured = subprocess.run([sys.executable, "-c", MEASURE, *overrides], check=True, capture_output=True,
                                  text=True, timeout=300)
        peaks[pairs] = json.loads(measured.stdout.splitlines()[-1])["VmHWM"]
    assert peaks[200_000] - peaks[20_000] < 60, peaks
