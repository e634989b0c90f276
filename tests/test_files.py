"""FileCorpus: the three formats load; every input problem is a one-line InputError naming the file and line."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from seqbench.common.errors import ConfigError, InputError
from seqbench.data.files import FileCorpus

from conftest import seqbench_cli

PAIRS = [("hello world", "hallo welt"), ("good morning", "guten morgen"), ("thank you", "danke")]


def write(path: Path, text: str | bytes) -> Path:
    path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
    return path


def tsv(pairs=PAIRS) -> str:
    return "".join(f"{s}\t{t}\n" for s, t in pairs)


def jsonl(pairs=PAIRS) -> str:
    return "".join(json.dumps({"translation": {"en": s, "de": t}}, ensure_ascii=False) + "\n" for s, t in pairs)


def three_splits(tmp_path: Path, suffix: str, content: str) -> dict[str, str]:
    return {split: str(write(tmp_path / f"{split}.{suffix}", content)) for split in ("train", "valid", "test")}


def test_tsv(tmp_path):
    corpus = FileCorpus(format="tsv", **three_splits(tmp_path, "tsv", tsv()))
    dataset = corpus.load(tmp_path / "cache")
    assert list(zip(dataset["train"]["src"], dataset["train"]["tgt"])) == PAIRS
    assert corpus.name.startswith("files-tsv-src-tgt-")


def test_jsonl(tmp_path):
    corpus = FileCorpus(format="jsonl", src_lang="de", tgt_lang="en", **three_splits(tmp_path, "jsonl", jsonl()))
    dataset = corpus.load(tmp_path / "cache")
    assert list(zip(dataset["test"]["tgt"], dataset["test"]["src"])) == PAIRS


def test_text_prefix_and_file_list(tmp_path):
    for split in ("train", "valid", "test"):
        write(tmp_path / f"{split}.en", "".join(s + "\n" for s, _ in PAIRS))
        write(tmp_path / f"{split}.de", "".join(t + "\r\n" for _, t in PAIRS))  # CRLF is fine
    by_prefix = FileCorpus(format="text", src_lang="en", tgt_lang="de", **{
        split: str(tmp_path / split) for split in ("train", "valid", "test")}).load(tmp_path / "cache")
    assert list(zip(by_prefix["valid"]["src"], by_prefix["valid"]["tgt"])) == PAIRS
    by_list = FileCorpus(format="text", src_lang="de", tgt_lang="en", **{
        split: [str(tmp_path / f"{split}.de"), str(tmp_path / f"{split}.en")] for split in ("train", "valid", "test")})
    assert by_list.load(tmp_path / "cache")["train"]["src"][0] == "hallo welt"


def test_edited_file_gets_a_new_cache(tmp_path):
    paths = three_splits(tmp_path, "tsv", tsv())
    first = FileCorpus(**paths)
    first.load(tmp_path / "cache")
    write(Path(paths["train"]), tsv(PAIRS + [("yes", "ja")]))
    second = FileCorpus(**paths)
    assert second.name != first.name
    assert len(second.load(tmp_path / "cache")["train"]) == 4


def _expect(corpus: FileCorpus, tmp_path: Path, *parts: str) -> str:
    with pytest.raises(InputError) as error:
        corpus.load(tmp_path / "cache")
    message = str(error.value)
    assert "\n" not in message
    for part in parts:
        assert part in message, message
    return message


def test_missing_file(tmp_path):
    paths = three_splits(tmp_path, "tsv", tsv())
    paths["valid"] = str(tmp_path / "nowhere.tsv")
    _expect(FileCorpus(**paths), tmp_path, "data.corpus.valid", "file not found", "nowhere.tsv")


def test_invalid_utf8(tmp_path):
    paths = three_splits(tmp_path, "tsv", tsv())
    write(Path(paths["train"]), b"hello\thallo\ncaf\xe9\tkaffee\n")
    _expect(FileCorpus(**paths), tmp_path, "train.tsv:2:", "invalid UTF-8", "0xe9")


def test_empty_lines(tmp_path):
    paths = three_splits(tmp_path, "tsv", tsv())
    write(Path(paths["test"]), "hello\thallo\n\nthanks\tdanke\n")
    _expect(FileCorpus(**paths), tmp_path, "test.tsv:2:", "empty line")
    write(Path(paths["test"]), "hello\thallo\nthanks\t  \n")
    _expect(FileCorpus(**paths), tmp_path, "test.tsv:2:", "empty target field")
    write(Path(paths["test"]), b"")
    _expect(FileCorpus(**paths), tmp_path, "test.tsv", "empty")

    for split in ("train", "valid", "test"):
        write(tmp_path / f"{split}.en", "one\ntwo\nthree\n")
        write(tmp_path / f"{split}.de", "eins\n \ndrei\n")
    text = FileCorpus(format="text", src_lang="en", tgt_lang="de",
                      **{split: str(tmp_path / split) for split in ("train", "valid", "test")})
    _expect(text, tmp_path, "train.de:2:", "empty line")


def test_mismatched_line_counts(tmp_path):
    for split in ("train", "valid", "test"):
        write(tmp_path / f"{split}.en", "one\ntwo\nthree\n")
        write(tmp_path / f"{split}.de", "eins\nzwei\n" if split == "valid" else "eins\nzwei\ndrei\n")
    corpus = FileCorpus(format="text", src_lang="en", tgt_lang="de",
                        **{split: str(tmp_path / split) for split in ("train", "valid", "test")})
    _expect(corpus, tmp_path, "valid.en has 3 lines", "valid.de has 2", "first unpaired line: 3")


def test_malformed_tsv(tmp_path):
    paths = three_splits(tmp_path, "tsv", tsv())
    write(Path(paths["train"]), "hello\thallo\nmorning\tmorgen\textra\n")
    _expect(FileCorpus(**paths), tmp_path, "train.tsv:2:", "expected 2 tab-separated columns", "found 3")
    write(Path(paths["train"]), "hello\thallo\nno tab here\n")
    _expect(FileCorpus(**paths), tmp_path, "train.tsv:2:", "found 1")


def test_malformed_jsonl(tmp_path):
    paths = three_splits(tmp_path, "jsonl", jsonl())
    options = {"format": "jsonl", "src_lang": "en", "tgt_lang": "de", **paths}
    write(Path(paths["valid"]), jsonl()[:-1] + "\n{\"translation\": {\"en\": \"hi\"\n")
    _expect(FileCorpus(**options), tmp_path, "valid.jsonl:4:", "invalid JSON")
    write(Path(paths["valid"]), jsonl() + json.dumps({"translation": {"en": "hi", "fr": "salut"}}) + "\n")
    _expect(FileCorpus(**options), tmp_path, "valid.jsonl:4:", "translation.de is missing", "en, fr")
    write(Path(paths["valid"]), json.dumps({"en": "hi", "de": "hallo"}) + "\n")
    _expect(FileCorpus(**options), tmp_path, "valid.jsonl:1:", 'expected an object {"translation"')
    write(Path(paths["valid"]), json.dumps({"translation": {"en": "hi", "de": 3}}) + "\n")
    _expect(FileCorpus(**options), tmp_path, "valid.jsonl:1:", "translation.de is not a string")


@pytest.mark.parametrize("options, message", [
    ({"format": "csv"}, "data.corpus.format='csv': must be one of tsv, jsonl, text"),
    ({"valid": None}, "data.corpus.valid=null: must be a tsv file path"),
    ({"format": "jsonl", "train": ["a.jsonl", "b.jsonl"]}, "data.corpus.train=['a.jsonl', 'b.jsonl']: must be a jsonl"),
    ({"format": "text", "train": ["a", "b", "c"]}, "data.corpus.train=['a', 'b', 'c']: must be a prefix"),
    ({"format": "text", "src_lang": "en", "tgt_lang": "en"}, "data.corpus.tgt_lang='en': must differ"),
])
def test_bad_keys_are_config_errors(options, message):
    """Checked with the config (seqbench.config.checks), before any file is read: tests/test_corpus_checks.py."""
    with pytest.raises(ConfigError, match=re.escape(message)):
        FileCorpus.validate_config({"train": "t", "valid": "v", "test": "t", **options})


def test_train_reports_a_bad_file_in_one_line(tmp_path, capsys, monkeypatch):
    """In-process through the command's own entry (the `python train.py` process path is tests/test_train.py's)."""
    paths = three_splits(tmp_path, "tsv", tsv())
    write(Path(paths["train"]), "hello\thallo\nbroken line\n")
    monkeypatch.delenv("HYDRA_FULL_ERROR", raising=False)
    status, _, err = seqbench_cli(["train", "data=files", f"data.corpus.train={paths['train']}",
                                   f"data.corpus.valid={paths['valid']}", f"data.corpus.test={paths['test']}",
                                   f"paths.cache_dir={tmp_path / 'cache'}", f"hydra.run.dir={tmp_path / 'run'}",
                                   "logger=none", "trainer.max_steps=1", "data.vocab_size=32", "threads=1"], capsys)
    assert status == 2, err[-2000:]
    lines = [line for line in err.strip().splitlines() if line.startswith(("error:", "Traceback"))]
    assert lines == [f"error: {paths['train']}:2: expected 2 tab-separated columns (source<TAB>target), found 1"]


def test_a_sentence_too_long_for_the_store_is_named_by_file_and_line(tmp_path):
    from seqbench.data.datamodule import Seq2SeqDataModule

    pairs = [*PAIRS * 3, (" ".join(["a"] * 70_000), "lang"), *PAIRS]  # 70,000 tokens: more than uint16 ids index
    files = three_splits(tmp_path, "tsv", tsv())
    write(tmp_path / "train.tsv", tsv(pairs))
    datamodule = Seq2SeqDataModule(FileCorpus(format="tsv", **files), str(tmp_path / "cache"), vocab_size=60)
    with pytest.raises(InputError, match=re.escape(f"{tmp_path / 'train.tsv'}:10: a src sentence of 70,000 tokens")):
        datamodule.prepare_data()


def test_no_progress_bars_of_hugging_face_go_to_a_stderr_that_is_not_a_terminal(tmp_path, capfd):
    FileCorpus(format="tsv", **three_splits(tmp_path, "tsv", tsv())).load(tmp_path / "cache")
    assert "Saving the dataset" not in capfd.readouterr().err
