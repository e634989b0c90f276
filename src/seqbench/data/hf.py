"""Any translation dataset on the Hugging Face Hub, or saved locally, as a seqbench corpus.

`dataset` is a Hub id (`datasets.load_dataset(dataset, config)`) or a local path: a folder written by
`save_to_disk`, a folder of JSON/JSONL files named by split (train.jsonl, validation.jsonl, test.jsonl), or one
JSON/JSONL file (its train split). Two row schemas:

- translation: {"translation": {"de": "...", "en": "..."}} (WMT, IWSLT, OPUS); the column name is configurable;
- columns:     {"de": "...", "en": "..."} (multi30k); the column names default to the language codes.

Split names are mapped onto train/valid/test (validation, dev -> valid); a dataset without a valid or test split
(OPUS Books has only train) gets them carved out of train, seeded. Whitespace is normalised and empty pairs are
dropped. The converted dataset is cached as Arrow under the cache dir, so later runs do not touch the Hub.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import re
from pathlib import Path
from typing import Mapping

from datasets import DatasetDict, load_dataset, load_from_disk

from seqbench.common.errors import InputError
from seqbench.common.specs import Spec, check_keys, integer, one_of, text
from seqbench.data.cache import cached
from seqbench.data.corpus import SPLITS, save_atomically

log = logging.getLogger(__name__)

DEFAULT_SPLIT_NAMES = {"train": "train", "validation": "valid", "valid": "valid", "dev": "valid", "test": "test"}
SCHEMAS = ("auto", "translation", "columns")
# What each key of data.corpus takes (seqbench.common.specs). Whether the dataset has those columns, languages and
# splits, and enough training pairs to carve valid_size and test_size from, is known once it is read.
SPECS = {
    "dataset": text("a Hugging Face Hub id (e.g. bentrevett/multi30k) or a local path"),
    "config": text("the Hub dataset's config name", none=True),
    "src_lang": text("a language code"),
    "tgt_lang": text("a language code"),
    "schema": one_of(*SCHEMAS),
    "translation_column": text("a column name"),
    "src_column": text("a column name", none=True),
    "tgt_column": text("a column name", none=True),
    "split_names": Spec(lambda v: isinstance(v, Mapping) and all(name in SPLITS for name in v.values()),
                        f"a mapping of the dataset's split names to {', '.join(SPLITS)}"),
    "revision": text("a Hub branch, tag or commit", none=True),
    "valid_size": integer(1),
    "test_size": integer(1),
    "split_seed": integer(0),
    "max_train_pairs": integer(1, none=True, note=" (null: every pair)"),
}


def _one_line(error: BaseException) -> str:
    text = " ".join(str(error).split())
    return (text[:300] + "...") if len(text) > 300 else text or type(error).__name__


def _normalize(texts) -> list[str]:
    return [" ".join(t.split()) if isinstance(t, str) else "" for t in texts]


class HubCorpus:
    def __init__(self, dataset: str | None = None, config: str | None = None, src_lang: str = "de",
                 tgt_lang: str = "en", schema: str = "auto", translation_column: str = "translation",
                 src_column: str | None = None, tgt_column: str | None = None, split_names: dict | None = None,
                 revision: str | None = None, valid_size: int = 1000, test_size: int = 1000, split_seed: int = 1234,
                 max_train_pairs: int | None = None):
        self.dataset = "" if dataset is None else str(dataset)
        self.config, self.revision = config, revision
        self.src_lang, self.tgt_lang, self.schema = str(src_lang), str(tgt_lang), str(schema)
        self.translation_column = translation_column
        self.src_column, self.tgt_column = src_column or self.src_lang, tgt_column or self.tgt_lang
        self.split_names = {**DEFAULT_SPLIT_NAMES, **dict(split_names or {})}
        self.valid_size, self.test_size, self.split_seed = valid_size, test_size, split_seed
        self.max_train_pairs = max_train_pairs

    @classmethod
    def validate_config(cls, cfg: Mapping) -> None:
        """Each key against SPECS (seqbench.config.checks runs this)."""
        check_keys(cfg, SPECS, prefix="data.corpus.")

    # -- identity
    @property
    def local_path(self) -> Path | None:
        if not self.dataset:
            return None
        path = Path(self.dataset).expanduser()
        return path if path.exists() or self.dataset.startswith((".", "/", "~")) else None

    def _options(self) -> dict:
        options = {k: v for k, v in vars(self).items()}
        local = self.local_path
        if local is not None and local.exists():
            files = sorted(p for p in ([local] if local.is_file() else local.rglob("*")) if p.is_file())
            options["local_files"] = [(str(p.relative_to(local) if p != local else p.name), p.stat().st_size,
                                       int(p.stat().st_mtime)) for p in files]
        return options

    @property
    def name(self) -> str:
        key = hashlib.sha1(json.dumps(self._options(), sort_keys=True, default=str).encode()).hexdigest()[:10]
        local = self.local_path
        label = (local.name if local is not None else self.dataset) + (f"-{self.config}" if self.config else "")
        slug = re.sub(r"[^A-Za-z0-9._-]+", "_", label).strip("_")[:60]
        return f"hf-{slug}-{self.src_lang}-{self.tgt_lang}-{key}"

    # -- load
    def load(self, cache_dir: str | Path) -> DatasetDict:
        path = Path(cache_dir) / self.name / "dataset"

        def build() -> None:
            dataset = self._convert(self._fetch())
            path.parent.mkdir(parents=True, exist_ok=True)
            save_atomically(dataset, path)

        return cached(path, lambda: load_from_disk(str(path)), build, "dataset")

    def _fetch(self) -> DatasetDict:
        where = f"data.corpus.dataset={self.dataset}" + (f" (config {self.config})" if self.config else "")
        local = self.local_path
        try:
            if local is not None:
                if not local.exists():
                    raise InputError(f"{where}: no such file or folder")
                if local.is_dir() and ((local / "dataset_dict.json").exists() or (local / "state.json").exists()):
                    loaded = load_from_disk(str(local))
                elif local.is_file():
                    loaded = load_dataset("json", data_files={"train": str(local)})
                else:
                    loaded = load_dataset(str(local), self.config)
            else:
                loaded = load_dataset(self.dataset, self.config, revision=self.revision)
        except InputError:
            raise
        except ConnectionError as error:
            offline = [v for v in ("HF_DATASETS_OFFLINE", "HF_HUB_OFFLINE") if os.environ.get(v)]
            hint = f"{' and '.join(offline)} set; unset to download" if offline else "check the network"
            raise InputError(f"{where}: cannot reach the Hugging Face Hub ({_one_line(error)}; {hint}); or save the "
                             "dataset with save_to_disk on a connected machine and pass that folder as "
                             "data.corpus.dataset") from None
        except RuntimeError as error:
            if "scripts are no longer supported" in str(error):
                raise InputError(f"{where}: a script-based dataset, which datasets>=4 cannot load; try "
                                 "data.corpus.revision=refs/convert/parquet or a parquet copy") from None
            raise InputError(f"{where}: could not load ({_one_line(error)})") from None
        except (OSError, ValueError) as error:  # not found, gated, bad config name, unreadable local files
            raise InputError(f"{where}: could not load ({type(error).__name__}: {_one_line(error)})") from None
        if not isinstance(loaded, DatasetDict):
            loaded = DatasetDict({"train": loaded})
        return loaded

    def _columns(self, features, split: str) -> tuple[str, ...]:
        where = f"data.corpus.dataset={self.dataset}, split {split}"
        schema = self.schema
        if schema == "auto":
            schema = "translation" if self.translation_column in features else "columns"
        if schema == "translation":
            if self.translation_column not in features:
                raise InputError(f"{where}: no column {self.translation_column!r} (columns: {', '.join(features)}); "
                                 "set data.corpus.translation_column, or schema=columns")
            feature = features[self.translation_column]
            languages = list(getattr(feature, "languages", None) or (feature.keys() if hasattr(feature, "keys")
                                                                      else []))
            for lang in (self.src_lang, self.tgt_lang):
                if lang not in languages:
                    raise InputError(f"{where}: no language {lang!r} in column {self.translation_column!r} "
                                     f"(languages: {', '.join(map(str, languages))}); "
                                     "set data.corpus.src_lang/tgt_lang")
            return ("translation",)
        for key, column in (("src_column", self.src_column), ("tgt_column", self.tgt_column)):
            if column not in features:
                raise InputError(f"{where}: no column {column!r} (columns: {', '.join(features)}); "
                                 f"set data.corpus.{key}")
        return ("columns",)

    def _convert(self, loaded: DatasetDict) -> DatasetDict:
        # A local dataset is converted in memory: mapping it on disk would write cache files into the user's folder.
        in_memory = self.local_path is not None
        splits = {}
        for hub_name, split in loaded.items():
            ours = self.split_names.get(hub_name)
            if ours is None:
                log.info("hub dataset %s: ignoring split %r", self.dataset, hub_name)
                continue
            if ours in splits:
                raise InputError(f"data.corpus.dataset={self.dataset}: splits {hub_name!r} and another both map "
                                 f"to {ours!r}; set data.corpus.split_names")
            (kind,) = self._columns(split.features, hub_name)
            src_lang, tgt_lang, tcol = self.src_lang, self.tgt_lang, self.translation_column
            src_col, tgt_col = self.src_column, self.tgt_column

            def to_pairs(batch, kind=kind, tcol=tcol, src_lang=src_lang, tgt_lang=tgt_lang, src_col=src_col,
                         tgt_col=tgt_col):
                if kind == "translation":
                    rows = batch[tcol]
                    return {"src": _normalize(r.get(src_lang) if r else None for r in rows),
                            "tgt": _normalize(r.get(tgt_lang) if r else None for r in rows)}
                return {"src": _normalize(batch[src_col]), "tgt": _normalize(batch[tgt_col])}

            converted = split.map(to_pairs, batched=True, remove_columns=split.column_names,
                                  desc=f"{hub_name} -> {ours}", keep_in_memory=in_memory)
            kept = converted.filter(lambda b: [bool(s and t) for s, t in zip(b["src"], b["tgt"])], batched=True,
                                    keep_in_memory=in_memory)
            if len(kept) < len(converted):
                log.info("hub dataset %s: dropped %d empty pairs from %s", self.dataset, len(converted) - len(kept),
                         hub_name)
            splits[ours] = kept
        if "train" not in splits or not len(splits["train"]):
            raise InputError(f"data.corpus.dataset={self.dataset}: no train split (splits: {', '.join(loaded)}); "
                             "map one with data.corpus.split_names")
        for ours, size in (("test", self.test_size), ("valid", self.valid_size)):
            if ours not in splits:
                if size >= len(splits["train"]):
                    raise InputError(f"data.corpus.{ours}_size={size!r}: {self.dataset} has no {ours} split, so it is "
                                     f"carved from train ({len(splits['train'])} pairs); use a positive count below it")
                parts = splits["train"].train_test_split(test_size=size, seed=self.split_seed, shuffle=True,
                                                         keep_in_memory=in_memory)
                splits["train"], splits[ours] = parts["train"], parts["test"]
                log.info("hub dataset %s: %s split carved from train (%d pairs, seed %d)", self.dataset, ours, size,
                         self.split_seed)
        if self.max_train_pairs and len(splits["train"]) > self.max_train_pairs:
            splits["train"] = splits["train"].shuffle(seed=self.split_seed, keep_in_memory=in_memory) \
                .select(range(self.max_train_pairs), keep_in_memory=in_memory)
        for ours in SPLITS:
            if not len(splits[ours]):
                raise InputError(f"data.corpus.dataset={self.dataset}: the {ours} split is empty")
        return DatasetDict({ours: splits[ours] for ours in SPLITS})  # save_to_disk flattens index mappings
