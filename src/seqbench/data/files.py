"""Parallel data from local files, one split per path, validated line by line before any training.

Formats (`format`):

- tsv:   one pair per line, "source<TAB>target";
- jsonl: one JSON object per line, {"translation": {"<src_lang>": "...", "<tgt_lang>": "..."}};
- text:  two aligned plain-text files per split, one sentence per line. A split is given as a prefix
         (`data/train` -> data/train.<src_lang> and data/train.<tgt_lang>) or as a list [source file, target file].

Every problem is an InputError naming the file and line: a missing file, invalid UTF-8, an empty line or field,
a malformed TSV or JSON line, aligned files whose line counts differ. The parsed splits are cached as Arrow under
a name that includes a digest of the files' bytes, so an edited file is re-read and gets its own tokenizer.
"""
from __future__ import annotations

import hashlib
import itertools
import json
import tempfile
from pathlib import Path
from typing import Iterator, Mapping

from datasets import Dataset, DatasetDict, concatenate_datasets, load_from_disk

from seqbench.common.errors import ConfigError, InputError
from seqbench.common.io import file_lines
from seqbench.common.specs import Spec, check, check_keys, is_list, one_of, show, text, with_defaults
from seqbench.data.cache import cached
from seqbench.data.corpus import SPLITS, quiet_datasets, save_atomically

FORMATS = ("tsv", "jsonl", "text")
# What each key of data.corpus takes (seqbench.common.specs); a split's files depend on the format (_split_spec).
SPECS = {"format": one_of(*FORMATS), "src_lang": text("a language code"), "tgt_lang": text("a language code")}
PATH = text("a file path")


def _split_spec(format: str) -> Spec:
    if format != "text":
        return text(f"a {format} file path")
    return Spec(lambda v: PATH.ok(v) or is_list(v) and len(v) == 2 and all(PATH.ok(f) for f in v),
                "a prefix (data/train: data/train.<src_lang> and data/train.<tgt_lang>) or [source file, target file]")


def _require_text(path: Path, number: int, text: str, what: str, aligned: bool = False) -> str:
    text = " ".join(text.split())
    if not text:
        raise InputError(f"{path}:{number}: empty {what}; every line must hold a sentence"
                         f"{' (remove the line from both aligned files)' if aligned else ' pair'}")
    return text


def _file_sha1(path: Path) -> bytes:
    """The file's SHA-1, read a MiB at a time: every process names the corpus at every start, and a WMT-sized file
    read whole would cost each of them its size in memory."""
    sha = hashlib.sha1()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            sha.update(chunk)
    return sha.digest()


class FileCorpus:
    def __init__(self, format: str = "tsv", src_lang: str = "src", tgt_lang: str = "tgt", train=None, valid=None,
                 test=None):
        self.format, self.src_lang, self.tgt_lang = str(format), str(src_lang), str(tgt_lang)
        self.paths = {"train": train, "valid": valid, "test": test}
        self._digest: str | None = None

    @classmethod
    def validate_config(cls, cfg: Mapping) -> None:
        """Each key against SPECS and its format's split files (seqbench.config.checks runs this); whether the files
        exist is for the corpus to find when it reads them."""
        options = with_defaults(cls, cfg)
        check_keys(options, SPECS, prefix="data.corpus.")
        for split in SPLITS:
            check(f"data.corpus.{split}", options[split], _split_spec(options["format"]))
        format, tgt_lang = options["format"], options["tgt_lang"]
        if format != "tsv" and tgt_lang == options["src_lang"]:
            raise ConfigError(f"data.corpus.tgt_lang={show(tgt_lang)}: must differ from data.corpus.src_lang with "
                              f"format={format}, which tells the sides apart by their language codes")

    def _files(self, split: str) -> list[Path]:
        value = self.paths[split]
        if self.format == "text" and isinstance(value, str):
            files = [Path(f"{value}.{self.src_lang}"), Path(f"{value}.{self.tgt_lang}")]
        else:
            files = [Path(str(v)) for v in ([value] if isinstance(value, str) else value)]
        files = [p.expanduser() for p in files]
        for path in files:
            if not path.is_file():
                raise InputError(f"data.corpus.{split}: file not found: {path}")
        return files

    def _split_files(self) -> dict[str, list[Path]]:
        return {split: self._files(split) for split in SPLITS}

    @property
    def name(self) -> str:
        if self._digest is None:
            digest = hashlib.sha1(json.dumps([self.format, self.src_lang, self.tgt_lang]).encode())
            for split, files in self._split_files().items():
                for path in files:
                    digest.update(f"{split}:{path.name}:".encode())
                    digest.update(_file_sha1(path))
            self._digest = digest.hexdigest()[:12]
        return f"files-{self.format}-{self.src_lang}-{self.tgt_lang}-{self._digest}"

    def load(self, cache_dir: str | Path) -> DatasetDict:
        self._digest = None  # files may have changed since the name was last computed
        path = Path(cache_dir) / self.name / "dataset"

        def build() -> None:
            files = self._split_files()
            parse = {"tsv": self._parse_tsv, "jsonl": self._parse_jsonl, "text": self._parse_text}[self.format]
            path.parent.mkdir(parents=True, exist_ok=True)
            with tempfile.TemporaryDirectory(dir=path.parent, prefix=".staging-") as staging:
                dataset = DatasetDict({split: _dataset(parse(files[split]), Path(staging) / split)
                                       for split in SPLITS})
                save_atomically(dataset, path)

        return cached(path, lambda: load_from_disk(str(path)), build, "dataset")

    def where(self, split: str, row: int) -> str:
        """Where a split's pair `row` is: every line is a pair (an empty one is an error), so it is line row + 1."""
        return " and ".join(f"{path}:{row + 1}" for path in self._files(split))

    def _parse_tsv(self, files: list[Path]) -> Iterator[tuple[str, str]]:
        (path,) = files
        for number, line in _numbered(path):
            if not line.strip():
                _require_text(path, number, line, "line")
            fields = line.split("\t")
            if len(fields) != 2:
                raise InputError(f"{path}:{number}: expected 2 tab-separated columns (source<TAB>target), "
                                 f"found {len(fields)}")
            yield _require_text(path, number, fields[0], "source field"), _require_text(path, number, fields[1],
                                                                                         "target field")

    def _parse_jsonl(self, files: list[Path]) -> Iterator[tuple[str, str]]:
        (path,) = files
        for number, line in _numbered(path):
            if not line.strip():
                _require_text(path, number, line, "line")
            try:
                row = json.loads(line)
            except json.JSONDecodeError as error:
                raise InputError(f"{path}:{number}: invalid JSON ({error.msg} at column {error.colno})") from None
            pair = row.get("translation") if isinstance(row, dict) else None
            if not isinstance(pair, dict):
                raise InputError(f"{path}:{number}: expected an object {{\"translation\": {{\"{self.src_lang}\": ..., "
                                 f"\"{self.tgt_lang}\": ...}}}}")
            texts = []
            for lang in (self.src_lang, self.tgt_lang):
                text = pair.get(lang)
                if not isinstance(text, str):
                    found = ", ".join(map(str, pair)) or "none"
                    raise InputError(f"{path}:{number}: translation.{lang} is "
                                     f"{'missing' if text is None else 'not a string'} (languages: {found})")
                texts.append(_require_text(path, number, text, f"translation.{lang}"))
            yield texts[0], texts[1]

    def _parse_text(self, files: list[Path]) -> Iterator[tuple[str, str]]:
        src_path, tgt_path = files
        for (number, src), (_, tgt) in itertools.zip_longest(_numbered(src_path), _numbered(tgt_path),
                                                               fillvalue=(0, None)):
            if src is None or tgt is None:
                counts = [sum(1 for _ in file_lines(path)) for path in files]
                raise InputError(f"{src_path} has {counts[0]} lines but {tgt_path} has {counts[1]} (first unpaired "
                                 f"line: {min(counts) + 1}); aligned files need one sentence per line, line by line")
            yield (_require_text(src_path, number, src, "line", aligned=True),
                   _require_text(tgt_path, number, tgt, "line", aligned=True))


def _numbered(path: Path) -> Iterator[tuple[int, str]]:
    """The file's lines, numbered from 1, read a line at a time; an empty file is an InputError."""
    number = 0
    for number, line in enumerate(file_lines(path), start=1):
        yield number, line
    if not number:
        raise InputError(f"{path}: the file is empty")


def _dataset(pairs: Iterator[tuple[str, str]], staging: Path, chunk: int = 100_000) -> Dataset:
    """An Arrow dataset of (src, tgt) pairs written a chunk at a time into `staging` and mapped from there: a
    WMT-sized file is held neither as Python lists nor as one Arrow table in memory."""
    parts = []
    with quiet_datasets():  # one "Saving the dataset" bar per chunk says nothing
        while batch := list(itertools.islice(pairs, chunk)):
            part = staging / f"{len(parts):05d}"
            Dataset.from_dict({"src": [s for s, _ in batch], "tgt": [t for _, t in batch]}).save_to_disk(str(part))
            parts.append(load_from_disk(str(part)))
    return concatenate_datasets(parts)
