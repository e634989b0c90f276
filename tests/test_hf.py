"""HubCorpus without the network: a save_to_disk folder, local JSON files, and the unreachable-Hub error."""
from __future__ import annotations

import json
import time

import datasets
import huggingface_hub
import pytest
from datasets import Dataset, DatasetDict

from seqbench.common.errors import ConfigError, InputError
from seqbench.data.hf import HubCorpus


def translation_rows(n: int, start: int = 0) -> list[dict]:
    return [{"translation": {"de": f"das haus {i}", "en": f"the house {i}"}} for i in range(start, start + n)]


@pytest.fixture
def saved(tmp_path):
    folder = tmp_path / "saved"
    DatasetDict({"train": Dataset.from_list(translation_rows(30) + [{"translation": {"de": " ", "en": "empty"}}]),
                 "validation": Dataset.from_list(translation_rows(4, 100)),
                 "test": Dataset.from_list(translation_rows(5, 200))}).save_to_disk(str(folder))
    return folder


def test_save_to_disk_folder(saved, tmp_path):
    corpus = HubCorpus(dataset=str(saved), src_lang="de", tgt_lang="en")
    files_before = sorted(p.name for p in saved.rglob("*"))
    dataset = corpus.load(tmp_path / "cache")
    assert {s: len(d) for s, d in dataset.items()} == {"train": 30, "valid": 4, "test": 5}  # the empty pair is gone
    assert dataset["valid"][0] == {"src": "das haus 100", "tgt": "the house 100"}
    assert sorted(p.name for p in saved.rglob("*")) == files_before  # nothing written into the user's folder
    assert corpus.name.startswith("hf-saved-de-en-")
    reverse = HubCorpus(dataset=str(saved), src_lang="en", tgt_lang="de", max_train_pairs=10)
    data = reverse.load(tmp_path / "cache")
    assert reverse.name != corpus.name and len(data["train"]) == 10 and data["test"][0]["src"] == "the house 200"


def test_local_json_two_columns(tmp_path):
    folder = tmp_path / "multi"
    folder.mkdir()
    for split, n in (("train", 12), ("val", 3), ("test", 2)):
        (folder / f"{split}.jsonl").write_text("".join(
            json.dumps({"en": f"a dog {i}", "de": f"ein hund {i}"}) + "\n" for i in range(n)))
    dataset = HubCorpus(dataset=str(folder), schema="columns", src_lang="de", tgt_lang="en").load(tmp_path / "c")
    assert {s: len(d) for s, d in dataset.items()} == {"train": 12, "valid": 3, "test": 2}
    assert dataset["test"][1] == {"src": "ein hund 1", "tgt": "a dog 1"}
    renamed = HubCorpus(dataset=str(folder), src_lang="de", tgt_lang="en", src_column="de", tgt_column="en")
    assert renamed.load(tmp_path / "c")["train"][0]["tgt"] == "a dog 0"


def test_single_json_file_gets_valid_and_test_carved_from_train(tmp_path):
    path = tmp_path / "books.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in translation_rows(40)))
    corpus = HubCorpus(dataset=str(path), src_lang="en", tgt_lang="de", valid_size=5, test_size=6, split_seed=3)
    dataset = corpus.load(tmp_path / "cache")
    assert {s: len(d) for s, d in dataset.items()} == {"train": 29, "valid": 5, "test": 6}
    assert set(dataset["train"]["src"]).isdisjoint(list(dataset["test"]["src"]) + list(dataset["valid"]["src"]))
    again = HubCorpus(dataset=str(path), src_lang="en", tgt_lang="de", valid_size=5, test_size=6, split_seed=3)
    assert list(again.load(tmp_path / "other")["test"]["src"]) == list(dataset["test"]["src"])


def test_schema_errors(saved, tmp_path):
    with pytest.raises(InputError, match="no language 'fr' in column 'translation' \\(languages: de, en\\)"):
        HubCorpus(dataset=str(saved), src_lang="de", tgt_lang="fr").load(tmp_path)
    with pytest.raises(InputError, match="no column 'pairs'"):
        HubCorpus(dataset=str(saved), schema="translation", translation_column="pairs").load(tmp_path)
    with pytest.raises(ConfigError, match="data.corpus.dataset=null: must be a Hugging Face Hub id"):
        HubCorpus.validate_config({"dataset": None})
    with pytest.raises(InputError, match="no such file or folder"):
        HubCorpus(dataset=str(tmp_path / "missing")).load(tmp_path)


def test_unreachable_hub_is_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    started = time.perf_counter()
    with pytest.raises(InputError) as error:
        HubCorpus(dataset="bentrevett/multi30k", schema="columns").load(tmp_path)
    message = str(error.value)
    assert "\n" not in message and time.perf_counter() - started < 30
    assert message.startswith("data.corpus.dataset=bentrevett/multi30k: cannot reach the Hugging Face Hub")
    assert "HF_DATASETS_OFFLINE" in message and "save_to_disk" in message
