"""The prepared store (seqbench.data.store): tokenised once, mapped by every process, rebuilt when what it was built
from changes, never read half-written; batches planned from its length arrays exactly as the list-based planner did."""
from __future__ import annotations

import builtins
import errno
import functools
import io
import json
import logging
import os
import pickle
import random
import shlex

import numpy as np
import pytest
from datasets import Dataset, DatasetDict

from seqbench.commands.data import main
from seqbench.common import io as io_module
from seqbench.config.checks import validate
from seqbench.data import store as store_module
from seqbench.data.batching import TokenBudgetBatchSampler, plan_batches, token_budget_batches
from seqbench.data.cache import Damaged, problem, seal
from seqbench.data.datamodule import Seq2SeqDataModule
from seqbench.data.store import id_type

from conftest import compose_train, seqbench_cli


class PairCorpus:
    """Seeded random pairs over a small vocabulary, held in memory (no cache files)."""

    def __init__(self, train: int = 300, seed: int = 0, name: str = "pair-corpus"):
        rng = random.Random(seed)
        words = [f"w{i}" for i in range(60)]

        def pairs(n):
            src = [" ".join(rng.choices(words, k=rng.randint(1, 12))) for _ in range(n)]
            return {"src": src, "tgt": [" ".join(reversed(s.split())) for s in src], "n": list(range(n))}

        self.name, self.splits = name, {"train": pairs(train), "valid": pairs(20), "test": pairs(30)}

    def load(self, cache_dir) -> DatasetDict:
        return DatasetDict({split: Dataset.from_dict(columns) for split, columns in self.splits.items()})


def _prepared(tmp_path, corpus=None, **options) -> Seq2SeqDataModule:
    datamodule = Seq2SeqDataModule(corpus or PairCorpus(), str(tmp_path), vocab_size=80, **options)
    datamodule.prepare_data()
    return datamodule


def _old_token_budget_batches(src_lens, tgt_lens, max_tokens, max_sentences=None, seed=0):
    """The list-based planner as it was before the store (commit 68d3496): the plans must not change."""
    order = list(range(len(src_lens)))
    random.Random(seed).shuffle(order)
    order.sort(key=lambda i: (src_lens[i], tgt_lens[i]))
    batches, current, longest = [], [], 0
    for i in order:
        length = max(src_lens[i], tgt_lens[i])
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


def test_the_plan_from_length_arrays_is_the_list_planners_plan():
    rng = random.Random(0)
    for _ in range(60):
        n = rng.randint(0, 1500)
        src, tgt = [rng.randint(1, 40) for _ in range(n)], [rng.randint(1, 40) for _ in range(n)]
        options = dict(max_tokens=rng.choice([40, 100, 400]), max_sentences=rng.choice([None, 1, 7]),
                       seed=rng.randint(0, 50))
        expected = _old_token_budget_batches(src, tgt, **options)
        assert token_budget_batches(src, tgt, **options) == expected
        planned = plan_batches(np.array(src, dtype=np.uint16), np.array(tgt, dtype=np.uint16), **options)
        assert planned.tolist() == expected


def test_store_round_trip_equals_the_tokenizers_output(tmp_path):
    corpus = PairCorpus()
    datamodule = _prepared(tmp_path, corpus, max_src_len=10)
    tokenizers = datamodule.tokenizers
    for split, columns in corpus.splits.items():
        data = datamodule.encoded[split]
        kept = [i for i, s in enumerate(columns["src"]) if len(s.split()) <= 10]
        assert np.asarray(data.rows).tolist() == kept and len(data) == len(kept)
        src = tokenizers.encode_src([columns["src"][i] for i in kept])
        tgt = tokenizers.encode_tgt([columns["tgt"][i] for i in kept])
        assert [(data[i][1].tolist(), data[i][2].tolist()) for i in range(len(data))] == list(zip(src, tgt))
        assert data.src_lengths.tolist() == [len(s) for s in src]
        assert data.tgt_lengths.tolist() == [len(t) for t in tgt]
        assert data[0][1].dtype == id_type(80) == np.uint16
    assert datamodule.text["test"]["src"] == [corpus.splits["test"]["src"][i] for i in np.asarray(
        datamodule.encoded["test"].rows)]
    assert datamodule.columns["test"]["n"] == np.asarray(datamodule.encoded["test"].rows).tolist()
    assert datamodule.filter_counts["train"] == 300 - len(datamodule.encoded["train"]) > 0


def test_ids_get_the_narrowest_type():
    assert id_type(65_536) == np.uint16 and id_type(65_537) == np.uint32


def test_the_training_split_is_not_held_in_memory(tmp_path):
    datamodule = _prepared(tmp_path)
    lengths = datamodule.encoded["train"].src_lengths
    assert "train" not in datamodule.text and not lengths.flags.owndata and not lengths.flags.writeable  # mapped
    assert list(datamodule.sentences("train", "src")) == datamodule.corpus.splits["train"]["src"]


def test_a_pickled_split_maps_its_files_again_instead_of_copying_them(tmp_path):
    split = _prepared(tmp_path).encoded["train"]
    payload = pickle.dumps(split)
    assert len(payload) < 2_000 < split.src.lengths.nbytes * 4  # what a DataLoader worker started by spawn gets
    again = pickle.loads(payload)
    assert [again.source_ids(i) for i in range(len(again))] == [split.source_ids(i) for i in range(len(split))]


def test_a_killed_preparation_is_not_reused(tmp_path, monkeypatch):
    real = store_module._write_split
    calls = []

    def killed(directory, split, *args, **kwargs):
        calls.append(split)
        if split == "valid":  # train written, valid half done
            (directory / "valid.src.ids.bin").write_bytes(b"\0\0")
            raise RuntimeError("killed")
        return real(directory, split, *args, **kwargs)

    monkeypatch.setattr(store_module, "_write_split", killed)
    with pytest.raises(RuntimeError, match="killed"):
        _prepared(tmp_path)
    assert not [p for p in tmp_path.rglob("*store-*") if p.suffix != ".lock"]  # nothing but the lock file
    monkeypatch.setattr(store_module, "_write_split", real)
    datamodule = _prepared(tmp_path)
    assert len(datamodule.encoded["valid"]) == 20


def test_the_leftovers_of_a_killed_process_are_removed_and_never_read(tmp_path):
    datamodule = _prepared(tmp_path)
    directory = datamodule.store.directory
    leftover = directory.with_name(f".{directory.name}.tmp999999")  # SIGKILL mid-write: no cleanup ran
    leftover.mkdir()
    (leftover / "train.src.ids.bin").write_bytes(b"\1\2")
    store_module.remove(directory)
    again = _prepared(tmp_path)
    assert not leftover.exists() and again.store.directory == directory


def test_a_truncated_store_is_rebuilt_not_read(tmp_path, caplog):
    datamodule = _prepared(tmp_path)
    expected = [datamodule.encoded["train"].source_ids(i) for i in range(10)]
    ids = datamodule.store.directory / "train.tgt.ids.bin"
    ids.write_bytes(ids.read_bytes()[:10])
    with caplog.at_level(logging.WARNING):
        again = _prepared(tmp_path)
    assert "prepared store" in caplog.text and "rebuilding" in caplog.text
    assert [again.encoded["train"].source_ids(i) for i in range(10)] == expected


def _ids(split) -> list[tuple[list[int], list[int]]]:
    return [(split[i][1].tolist(), split[i][2].tolist()) for i in range(len(split))]


@pytest.mark.parametrize("sealed", [False, True])
def test_a_store_cut_short_is_rebuilt_sealed_or_not(tmp_path, caplog, sealed):
    """Without its seal: killed between its rename and its seal, a power loss, a cache copied without its seal files;
    sealed: re-sealed over the cut files by a version without the structural check."""
    datamodule = _prepared(tmp_path)
    expected = _ids(datamodule.encoded["train"])
    directory = datamodule.store.directory
    seal_file = directory.with_name(directory.name + ".sha256.json")
    seal_file.unlink()
    ids = directory / "train.src.ids.bin"
    ids.write_bytes(ids.read_bytes()[:ids.stat().st_size // 2])
    if sealed:
        seal(directory)
    with caplog.at_level(logging.WARNING):
        again = _prepared(tmp_path)
    assert "train.src.ids.bin holds" in caplog.text and "rebuilding" in caplog.text
    assert _ids(again.encoded["train"]) == expected and problem(directory) is None


def test_opening_a_store_checks_its_sizes_offsets_and_largest_ids(tmp_path):
    datamodule = _prepared(tmp_path)
    directory = datamodule.store.directory
    meta = json.loads((directory / "meta.json").read_text())
    largest = max(max(ids) for split in datamodule.encoded.values() for ids, _ in _ids(split))
    assert meta["max_id"]["src"] == largest < meta["vocab"]["src"] == datamodule.tokenizers.src_vocab_size
    test = ("splits", "test")
    damage = [("max_id", "tgt", meta["vocab"]["tgt"]), (*test, "pairs", 29),
              (*test, "tokens", "src", meta["splits"]["test"]["tokens"]["src"] + 1)]
    for *keys, value in damage:
        changed = json.loads(json.dumps(meta))
        functools.reduce(dict.get, keys[:-1], changed)[keys[-1]] = value
        (directory / "meta.json").write_text(json.dumps(changed))
        with pytest.raises(Damaged):
            store_module.Store(directory)
    offsets = directory / "valid.tgt.offsets.bin"  # the right size, the wrong end
    data = np.fromfile(offsets, dtype=np.int64)
    data[-1] -= 1
    data.tofile(offsets)
    (directory / "meta.json").write_text(json.dumps(meta))
    with pytest.raises(Damaged, match="valid.tgt.offsets.bin ends at"):
        store_module.Store(directory)


def test_a_store_is_flushed_to_the_disk_before_the_rename_that_publishes_it(tmp_path, monkeypatch):
    events = []
    real_sync, real_replace = io_module._sync, io_module.os.replace
    monkeypatch.setattr(io_module, "_sync", lambda *paths: events.append(("sync", *paths)) or real_sync(*paths))
    monkeypatch.setattr(io_module.os, "replace", lambda a, b: events.append(("replace", a, b)) or real_replace(a, b))
    directory = _prepared(tmp_path).store.directory
    published = next(i for i, event in enumerate(events) if event[0] == "replace" and event[2] == directory)
    tmp = events[published][1]
    synced = {path for event in events[:published] if event[0] == "sync" for path in event[1:]}
    assert {tmp / "meta.json", tmp / "train.src.ids.bin", tmp} <= synced
    assert events[published + 1] == ("sync", directory.parent)  # the rename itself


def test_a_sealed_store_is_read_without_writing_anything(tmp_path, monkeypatch):
    """A shared, read-only prepared cache. Tests run as root, whom permissions do not stop: every write is refused."""
    first = _prepared(tmp_path)
    expected = _ids(first.encoded["train"]), list(first.train_dataloader().batch_sampler)  # as `data prepare` does

    def read_only(*args, **kwargs):
        raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(args[0]))

    real_open, real_os_open = builtins.open, os.open

    def open_for_reading(file, mode="r", *args, **kwargs):
        return read_only(file) if set(mode) & set("wax+") else real_open(file, mode, *args, **kwargs)

    def os_open_for_reading(path, flags, *args, **kwargs):
        writes = flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT)
        return read_only(path) if writes else real_os_open(path, flags, *args, **kwargs)

    for module, name, fake in ((builtins, "open", open_for_reading), (io, "open", open_for_reading),
                               (os, "open", os_open_for_reading), (os, "mkdir", read_only)):
        monkeypatch.setattr(module, name, fake)
    again = _prepared(tmp_path)
    assert (_ids(again.encoded["train"]), list(again.train_dataloader().batch_sampler)) == expected


def test_a_store_of_another_tokenizer_or_corpus_version_is_rebuilt(tmp_path):
    first = _prepared(tmp_path)
    first_store = first.store.directory
    # another corpus version under the same name: other text, so other ids
    changed = PairCorpus(seed=1)
    second = _prepared(tmp_path, changed)
    assert second.store.directory != first_store and not first_store.exists()
    src = second.tokenizers.encode_src(changed.splits["valid"]["src"][:3])
    assert [second.encoded["valid"].source_ids(i) for i in range(3)] == src
    # another tokenizer in the tokenizer's place (sealed: its cache entry is intact, but its vocabulary differs)
    from seqbench.data.cache import seal
    from seqbench.data.tokenizer import train_bpe

    path = second.tokenizers.directory / "src.json"
    train_bpe(["q r s t"] * 10, 80).save(str(path))
    seal(path)
    third = _prepared(tmp_path, changed)
    assert third.store.directory != second.store.directory
    assert third.encoded["valid"].source_ids(0) == third.tokenizers.encode_src(changed.splits["valid"]["src"][:1])[0]


def test_once_prepared_a_run_opens_the_store_without_opening_the_corpus(tmp_path, monkeypatch):
    from seqbench.data.cache import remove, seal
    from seqbench.data.corpus import SyntheticCorpus

    options = dict(train_size=120, valid_per_bucket=1, test_per_bucket=1)
    first = _prepared(tmp_path, SyntheticCorpus(**options))
    expected = list(first.train_dataloader().batch_sampler), first.text, first.columns
    corpus = SyntheticCorpus(**options)
    monkeypatch.setattr(corpus, "load", lambda cache_dir: pytest.fail("the corpus was opened"))
    again = _prepared(tmp_path, corpus)  # what every rank of a run does once the data is prepared
    assert (list(again.train_dataloader().batch_sampler), again.text, again.columns) == expected
    assert again.store.directory == first.store.directory
    monkeypatch.undo()
    # the corpus rebuilt with other content under the same name (a new generator version): another store
    entry = tmp_path / corpus.name / "dataset"
    changed = corpus.load(tmp_path)
    changed = DatasetDict({split: data.map(lambda row: {"src": row["src"] + " extra"}) for split, data in
                           changed.items()})
    changed.save_to_disk(str(tmp_path / "changed"))
    remove(entry)
    (tmp_path / "changed").rename(entry)
    seal(entry)
    rebuilt = _prepared(tmp_path, SyntheticCorpus(**options))
    assert rebuilt.store.directory != first.store.directory and not first.store.directory.exists()
    assert rebuilt.text["test"]["src"][0].endswith(" extra")


def test_the_tokenizer_learns_from_a_seeded_sample_above_tokenizer_sample(tmp_path, monkeypatch):
    seen = []
    real = store_module.TokenizerPair.load_or_train.__func__

    def spy(cls, directory, texts, *args, **kwargs):
        def recorded():
            src, tgt = texts()
            src = list(src)
            seen.append(src)
            return src, tgt
        return real(cls, directory, recorded, *args, **kwargs)

    monkeypatch.setattr(store_module.TokenizerPair, "load_or_train", classmethod(spy))
    corpus = PairCorpus()
    sampled = _prepared(tmp_path / "a", corpus, tokenizer_sample=50)
    assert len(seen[0]) == 50 and set(seen[0]) <= set(corpus.splits["train"]["src"])
    assert sampled.tokenizers.directory.name.endswith("-sample50")
    _prepared(tmp_path / "b", corpus, tokenizer_sample=50, seed=7)  # another run seed: the same sample
    assert seen[-1] == seen[0]
    _prepared(tmp_path / "c", corpus, tokenizer_sample=1000)  # more than the corpus: all of it, as before
    assert seen[-1] == corpus.splits["train"]["src"]


def test_ranks_see_every_training_pair_once_per_epoch(tmp_path, monkeypatch):
    datamodule = _prepared(tmp_path, PairCorpus(train=333), max_tokens=60)
    for world in (2, 3):
        seen = []
        shares = []
        for rank in range(world):
            sampler = datamodule.train_dataloader().batch_sampler
            monkeypatch.setattr(sampler, "_rank_and_world", lambda r=rank, w=world: (r, w))
            sampler.set_epoch(4)
            shares.append(list(sampler))
            seen += [i for batch in shares[-1] for i in batch]
        assert sorted(seen) == list(range(len(datamodule.encoded["train"])))  # each pair once, none dropped
        assert len({len(share) for share in shares}) == 1  # DDP needs as many batches on every rank


def test_a_single_rank_keeps_its_batches_whole():
    sampler = TokenBudgetBatchSampler([[0, 1, 2], [3, 4], [5]], shuffle=True, seed=0)
    assert sorted(map(sorted, sampler)) == [[0, 1, 2], [3, 4], [5]]


def test_data_prepare_and_generate_commands(tmp_path, capsys):
    assert main(["generate", str(tmp_path / "corpus"), "--pairs", "400", "--eval-pairs", "30", "--vocab", "500"]) == 0
    lines = (tmp_path / "corpus" / "train.tsv").read_text().splitlines()
    assert len(lines) == 400 and all(5 <= len(line.split("\t")[0].split()) <= 60 for line in lines)
    assert all(len(line.split("\t")) == 2 for line in lines)
    printed = shlex.split(capsys.readouterr().out)  # a command that runs as printed: `seqbench train data=files ...`
    assert printed[:3] == ["seqbench", "train", "data=files"]
    assert printed[3] == f"data.corpus.train={tmp_path / 'corpus' / 'train.tsv'}"
    validate(compose_train(printed[2:]))  # its overrides compose and pass the config's checks as they stand
    overrides = printed[3:]
    args = ["prepare", "data=files", "data.corpus.format=tsv", *overrides, "data.vocab_size=300",
            f"paths.cache_dir={tmp_path / 'cache'}", "--json"]
    assert main(args) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["splits"]["train"]["pairs"] == 400 and report["ids_type"] == "uint16"
    store = next(p for p in (tmp_path / "cache").rglob("store-*") if p.is_dir() and p.suffix != ".plans")
    assert report["bytes"] == sum(p.stat().st_size for p in store.iterdir()) and report["training_batches"] > 0
    assert 2 <= report["bytes_per_token"] < 4
    assert main(args[:-1]) == 0 and "prepared store" in capsys.readouterr().out


def test_data_command_argument_errors_are_one_line(tmp_path, capsys, monkeypatch):
    from seqbench.measure import scale

    monkeypatch.setattr(scale, "measure_size", lambda *args: pytest.fail("work began before the refusal"))
    a_file = tmp_path / "a-file"
    a_file.write_text("not a folder")
    kept = tmp_path / "kept"
    kept.mkdir()
    (kept / "valid.tsv").write_text("the user's own\tcorpus\n")
    benchmark = ["data", "benchmark", "--pairs", "10"]
    cases = {"--pairs": ["data", "generate", str(tmp_path)], "0": ["data", "generate", str(tmp_path), "--pairs", "0"],
             "unrecognized arguments: --pairs": ["data", "prepare", "--pairs", "3"],
             "--seed: must be a non-negative integer": ["data", "generate", str(tmp_path / "c"), "--pairs", "10",
                                                        "--seed", "-1"],
             "--vocab 50000000: at most 41,478,400": ["data", "generate", str(tmp_path / "c"), "--pairs", "10",
                                                      "--vocab", "50000000"],
             f"{a_file}: is a file": ["data", "generate", str(a_file), "--pairs", "10"],
             f"{kept}: already holds valid.tsv": ["data", "generate", str(kept), "--pairs", "10"],
             f"{a_file}: is a file, not a folder": [*benchmark, "--work", str(a_file), "--out", str(tmp_path / "o")],
             f"{a_file / 'out' / 'scale.json'}: cannot be written": [*benchmark, "--work", str(tmp_path / "w"),
                                                                      "--out", str(a_file / "out")]}
    for expected, argv in cases.items():
        status, _, err = seqbench_cli(argv, capsys)
        assert status == 2 and len(err.strip().splitlines()) == 1 and err.startswith("error: "), argv
        assert expected in err, (argv, err)
    assert (kept / "valid.tsv").read_text() == "the user's own\tcorpus\n" and not (kept / "train.tsv").exists()
    assert not (tmp_path / "c").exists() and not (tmp_path / "w").exists()


def test_the_largest_vocabulary_is_the_generators_distinct_words():
    from seqbench.data.wmt_like import ALPHABETS, _words, max_vocab

    assert max_vocab() == 80 ** 2 + 80 ** 3 + 80 ** 4  # the source side's 16 consonants and 5 vowels
    two_letters = "bc|a"  # 2 forms per syllable: 4 + 8 + 16 words of 2 to 4 syllables
    assert len(_words(np.random.default_rng(0), 28, two_letters)) == 28
    assert set(ALPHABETS) == {"src", "tgt"}
