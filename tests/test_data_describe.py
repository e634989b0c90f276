"""`seqbench data describe`: composes the configs with overrides and reports sizes, length buckets, vocabularies
(computed by seqbench.data.describe, rendered by seqbench.report.corpus, printed by seqbench.commands.data)."""
from __future__ import annotations

import json

from datasets import Dataset, DatasetDict

from seqbench.commands.data import main
from seqbench.data.datamodule import Seq2SeqDataModule
from seqbench.data.describe import describe
from seqbench.data.stats import BUCKET_LABELS

from conftest import seqbench_cli


def tiny(cache_dir) -> list[str]:
    return ["data.corpus.train_size=200", "data.corpus.valid_per_bucket=2", "data.corpus.test_per_bucket=3",
            "data.vocab_size=64", f"paths.cache_dir={cache_dir}"]


def test_describe_json(tmp_path, capsys):
    assert main(["describe", "--json", *tiny(tmp_path), "data.train_max_len=12"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["corpus"].startswith("synthetic-")
    splits = report["splits"]
    assert list(splits) == ["train", "valid", "test"]
    assert splits["test"]["pairs"] == 3 * len(BUCKET_LABELS)  # stratified: three per bucket
    assert splits["train"]["before_length_filters"] == 200
    assert splits["train"]["pairs"] + splits["train"]["removed_by_length_filters"] == 200
    assert splits["train"]["removed_by_length_filters"] > 0 and splits["train"]["src"]["words"]["max"] <= 12
    for split in splits.values():
        for side in ("src", "tgt"):
            assert list(split[side]["buckets"]) == list(BUCKET_LABELS)
            assert sum(split[side]["buckets"].values()) == split["pairs"]
            assert split[side]["bpe_tokens_mean"] > 0
    assert splits["test"]["src"]["buckets"] == {label: 3 for label in BUCKET_LABELS}
    vocab = report["vocabulary"]
    assert vocab["bpe"] == {"src": 64, "tgt": 64, "shared": False} and vocab["word_types"]["src"] > 50


def test_describe_tables(tmp_path, capsys):
    assert main(["describe", *tiny(tmp_path)]) == 0
    out = capsys.readouterr().out
    for text in ("corpus synthetic-", "length histogram", "61+", "train src", "test tgt",
                 "vocabulary: train word types"):
        assert text in out


def test_describe_errors_are_one_line(tmp_path, capsys):
    status, _, err = seqbench_cli(["data", "describe", "data=bible", "data.corpus.pair=en-xx",
                                   f"paths.cache_dir={tmp_path}"], capsys)
    assert status == 2 and err.strip().splitlines() == [
        "error: data.corpus.pair='en-xx': must be one of en-es, en-fr, en-it, en-ru "
        "(public-domain translations only)"]
    status, _, err = seqbench_cli(["data", "describe", "data=nonexistent"], capsys)
    lines = err.strip().splitlines()
    assert status == 2 and len(lines) == 1 and lines[0].startswith("error: data='nonexistent': allowed values are")
    assert "synthetic" in lines[0]
    assert seqbench_cli(["data", "summarise"], capsys)[0] == 2


class ListCorpus:
    """A corpus of a few hand-written pairs, so that every number of the report can be worked out by hand."""

    name = "list-corpus"
    splits = {"train": (["a b", "a b c", "a b c d e", "b c"], ["x", "x y", "x y z", "y y"]),
              "valid": (["a", "c d e f"], ["x y", "z"]), "test": (["b c", "a"], ["y", "x"])}

    def load(self, cache_dir) -> DatasetDict:
        return DatasetDict({name: Dataset.from_dict({"src": src, "tgt": tgt}) for name, (src, tgt) in
                            self.splits.items()})


def test_describe_counts_what_the_data_module_kept(tmp_path):
    datamodule = Seq2SeqDataModule(ListCorpus(), str(tmp_path), vocab_size=40, max_src_len=3)
    report = describe(datamodule)  # prepares the data module itself
    assert report["corpus"] == "list-corpus" and list(report["splits"]) == ["train", "valid", "test"]
    train, valid = report["splits"]["train"], report["splits"]["valid"]
    assert (train["pairs"], train["before_length_filters"], train["removed_by_length_filters"]) == (3, 4, 1)
    assert (valid["pairs"], valid["before_length_filters"], valid["removed_by_length_filters"]) == (1, 2, 1)
    assert train["src"]["words"] == {"sentences": 3, "mean": 2.33, "median": 2, "p95": 3, "max": 3}
    assert train["tgt"]["buckets"] == {label: 3 if label == "1-10" else 0 for label in BUCKET_LABELS}
    ids = [datamodule.encoded["train"].source_ids(i) for i in range(3)]
    assert train["src"]["bpe_tokens_mean"] == round(sum(map(len, ids)) / 3, 2) > 0
    vocabulary = report["vocabulary"]
    assert vocabulary["word_types"] == {"src": 3, "tgt": 2}  # the filtered-out "a b c d e" / "x y z" not counted
    assert vocabulary["bpe"] == {"src": datamodule.vocab_sizes[0], "tgt": datamodule.vocab_sizes[1], "shared": False}
