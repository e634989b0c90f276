"""A corpus's keys are checked with the rest of the config (seqbench.config.checks: each key an argument of the
corpus class, then the class's own `validate_config`), before any corpus is built or any of its files is read: one
`error:` line and exit status 2, from `seqbench train` and `seqbench data` alike. Every corpus class here is made to
fail as a bug (a traceback, exit status 1) if it is built or loaded at all."""
from __future__ import annotations

import functools

import pytest

from seqbench.data.bible import BibleCorpus
from seqbench.data.corpus import SyntheticCorpus
from seqbench.data.files import FileCorpus
from seqbench.data.hf import HubCorpus

from conftest import seqbench_cli

BAD_PAIR = "data.corpus.pair='en-de': must be one of en-es, en-fr, en-it, en-ru (public-domain translations only)"
FILES = ["data=files", "data.corpus.train=train.tsv", "data.corpus.valid=valid.tsv", "data.corpus.test=test.tsv"]
# (case id, overrides, the one line on stderr)
CASES = [
    ("files_unknown_key", [*FILES, "+data.corpus.fromat=jsonl"],
     "data.corpus.fromat='jsonl': not an argument of seqbench.data.files.FileCorpus; did you mean data.corpus.format?"),
    ("files_format_unknown", [*FILES, "data.corpus.format=xml"],
     "data.corpus.format='xml': must be one of tsv, jsonl, text"),
    ("files_split_not_set", ["data=files"], "data.corpus.train=null: must be a tsv file path"),
    ("files_split_a_number", [*FILES, "data.corpus.valid=3"], "data.corpus.valid=3: must be a tsv file path"),
    ("files_text_three_files", [*FILES, "data.corpus.format=text", "data.corpus.src_lang=en", "data.corpus.tgt_lang=de",
                                "data.corpus.train=[a,b,c]"],
     "data.corpus.train=['a', 'b', 'c']: must be a prefix (data/train: data/train.<src_lang> and "
     "data/train.<tgt_lang>) or [source file, target file]"),
    ("bible_unknown_key", ["data=bible", "+data.corpus.pairs=en-fr"],
     "data.corpus.pairs='en-fr': not an argument of seqbench.data.bible.BibleCorpus; did you mean data.corpus.pair?"),
    ("bible_pair_unknown", ["data=bible", "data.corpus.pair=en-de"], BAD_PAIR),
    ("bible_fraction_a_word", ["data=bible", "data.corpus.split=random", "data.corpus.test_fraction=half"],
     "data.corpus.test_fraction='half': must be a fraction in (0, 0.5)"),
    ("bible_books_not_a_list", ["data=bible", "data.corpus.test_books=Ruth"],
     "data.corpus.test_books='Ruth': must be a list of book names ('Ruth', '1 John') or numbers 1-66"),
    ("bible_books_shared", ["data=bible", "data.corpus.valid_books=[Ruth]", "data.corpus.test_books=[Ruth,Mark]"],
     "data.corpus.test_books=['Ruth', 'Mark']: shares Ruth with data.corpus.valid_books; a book is in one split only"),
    ("hf_dataset_not_set", ["data=hf"],
     "data.corpus.dataset=null: must be a Hugging Face Hub id (e.g. bentrevett/multi30k) or a local path"),
    ("synthetic_unknown_key", ["+data.corpus.train_sise=50"],
     "data.corpus.train_sise=50: not an option of the synthetic corpus; did you mean data.corpus.train_size?"),
    ("synthetic_count_a_word", ["data.corpus.train_size=many"],
     "data.corpus.train_size='many': must be an integer >= 0"),
]


def _refused(cls: type, method: str):
    """`cls.method` raising a bug, with the method's signature (functools.wraps): the checks read the constructor's."""
    @functools.wraps(getattr(cls, method))
    def reached(*args, **kwargs):
        raise RuntimeError(f"{cls.__name__}.{method} was reached before the corpus's config was checked")

    return reached


@pytest.fixture
def unreachable_corpora(monkeypatch):
    """Building or loading any corpus is a bug."""
    for cls in (BibleCorpus, FileCorpus, HubCorpus, SyntheticCorpus):
        for method in ("__init__", "load"):
            monkeypatch.setattr(cls, method, _refused(cls, method))


def train(overrides: list[str], tmp_path, monkeypatch, capsys) -> tuple[int, str]:
    monkeypatch.delenv("HYDRA_FULL_ERROR", raising=False)
    status, _, err = seqbench_cli(["train", *overrides, f"paths.cache_dir={tmp_path / 'cache'}",
                                   f"hydra.run.dir={tmp_path / 'run'}", "logger=none"], capsys)
    return status, err


@pytest.mark.parametrize("case, overrides, line", CASES, ids=[case[0] for case in CASES])
def test_a_bad_corpus_key_is_one_line_before_the_corpus_is_built(case, overrides, line, unreachable_corpora,
                                                                 tmp_path, monkeypatch, capsys):
    status, err = train(overrides, tmp_path, monkeypatch, capsys)
    assert status == 2 and err.strip().splitlines() == [f"error: {line}"], err[-3000:]
    assert not (tmp_path / "cache").exists()


def test_a_good_corpus_config_reaches_the_corpus(unreachable_corpora, tmp_path, monkeypatch, capsys):
    """The control: with its keys right, the run goes on to build the corpus, which the fixture turns into a bug."""
    status, err = train(FILES, tmp_path, monkeypatch, capsys)
    assert status == 1 and "FileCorpus.__init__ was reached" in err, err[-3000:]


@pytest.mark.parametrize("action", ["prepare", "describe"])
def test_the_data_command_checks_the_corpus_keys_first(action, unreachable_corpora, monkeypatch, capsys):
    monkeypatch.delenv("HYDRA_FULL_ERROR", raising=False)
    status, _, err = seqbench_cli(["data", action, "data=bible", "data.corpus.pair=en-de"], capsys)
    assert status == 2 and err.strip().splitlines() == [f"error: {BAD_PAIR}"], err[-3000:]
