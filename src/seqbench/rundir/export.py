"""Export a trained model (`seqbench export`): a folder holding what translation needs and nothing from training:
the weights as safetensors (no optimizer state, no pickle), the tokenizers, model.json, the run's config.yaml and
results.json, a model card (seqbench.rundir.model_card) and, with the ctranslate2 format, the same weights as a
CTranslate2 model (seqbench.decoding.ctranslate2)."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

from seqbench.common.errors import InputError
from seqbench.common.io import atomic_path, check_writable
from seqbench.rundir.layout import RunDir
from seqbench.rundir.loading import load_run
from seqbench.rundir.model_card import model_card, training_command
from seqbench.rundir.results import read_results

FORMATS = ("seqbench", "ctranslate2")


def export(run: Path, out: Path, checkpoint: str = "best", model_format: str = "seqbench",
           quantization: str | None = None, license_id: str = "mit") -> Path:
    """Writes the run's `checkpoint` (best, last or a path) as an exported folder `out` (which must not exist, or be
    empty), in `model_format` (FORMATS; ctranslate2 with CTranslate2's `quantization`), its model card declaring
    `license_id`; returns `out`."""
    from safetensors.torch import save_model

    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise InputError(f"{out}: exists and is not an empty folder")
    check_writable(out)
    loaded = load_run(run, checkpoint)
    root = loaded.root
    if loaded.weights.suffix == ".safetensors":
        raise InputError(f"{run}: already an exported model")
    run = RunDir(root)
    if not run.results.is_file():
        raise InputError(f"{root}: no results.json (the run did not finish); evaluate a checkpoint with "
                         f"`seqbench train train=false ckpt_path=...` and export that run")
    results = read_results(run.results)
    command = training_command(root)
    if model_format == "ctranslate2":
        from seqbench.decoding.ctranslate2 import check_convertible

        check_convertible(loaded.model)  # before anything is written
    elif quantization is not None:
        raise InputError("--quantization applies to --format ctranslate2")
    # Built beside OUT and renamed into place: an interrupted export leaves no half-written model folder.
    with atomic_path(out) as tmp:
        tmp.mkdir(parents=True)
        exported = RunDir(tmp)
        save_model(loaded.model, str(exported.weights),
                   metadata={"format": "pt", "source": loaded.weights.name, "model": loaded.spec["model"]["name"]})
        loaded.tokenizers.save(exported.tokenizers)
        for name in ("model_file", "results", "config_file"):
            if getattr(run, name).is_file():
                shutil.copyfile(getattr(run, name), getattr(exported, name))
        (tmp / "README.md").write_text(model_card(results, command, loaded.weights.name, license_id),
                                       encoding="utf-8")
        if model_format == "ctranslate2":
            from seqbench.decoding.ctranslate2 import convert, vocabulary

            convert(loaded.model, vocabulary(loaded.tokenizers.src), vocabulary(loaded.tokenizers.tgt),
                    exported.ctranslate2, quantization)
        _readable_as_umask_allows(tmp)
    return out


def _readable_as_umask_allows(folder: Path) -> None:
    """Every file and folder of the export with the modes the user's umask gives new files (safetensors writes
    through a private temporary file, 0600): an export on shared storage is readable like the rest of the run."""
    mask = os.umask(0)
    os.umask(mask)
    for path in [folder, *folder.rglob("*")]:
        path.chmod((0o777 if path.is_dir() else 0o666) & ~mask)
