"""Decoding tuned like the recipe: beam size and length penalty chosen on validation, by one rule for every family.

A fixed beam and length penalty can favour one family: a penalty that helps one model's beam may hurt another's.
`tune_decoding` decodes the validation split of a model's runs (its seeds) with every setting of a grid, beam size x
length penalty x normalisation (GNMT's ((5 + |y|) / 6) ** alpha and fairseq's |y| ** alpha; alpha 0 is the
unnormalised score, and beam 1 is greedy whatever the penalty), and keeps the setting with the highest mean
validation BLEU over the runs; a tie goes to the smaller beam, then the smaller penalty (the cheaper, plainer
setting). The test split is never read.
"""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from seqbench.common.errors import InputError
from seqbench.common.progress import progress_bar
from seqbench.decoding.search import NORMALIZATIONS
from seqbench.decoding.translator import SearchDecoder, Translator
from seqbench.models.interface import family_of
from seqbench.rundir.loading import load_run
from seqbench.rundir.reader import Run
from seqbench.scoring.metrics import corpus_bleu

BEAMS = (1, 2, 4, 8)
LENGTH_PENALTIES = (0.0, 0.3, 0.6, 1.0, 1.5)
RULE = ("the highest mean validation BLEU over the runs; ties to the smaller beam, then the smaller length penalty")


def grid(beams=BEAMS, penalties=LENGTH_PENALTIES, normalizations=NORMALIZATIONS) -> list[dict]:
    """The distinct settings of the grid: greedy once, alpha 0 once per beam (no normalisation either way)."""
    out = []
    for beam in sorted(set(beams)):
        for alpha in sorted(set(penalties)) if beam > 1 else [0.0]:
            for normalization in normalizations if alpha > 0 else [NORMALIZATIONS[0]]:
                out.append({"beam_size": beam, "length_penalty": float(alpha), "length_normalization": normalization})
    return out


def _choice_key(setting: dict) -> tuple:
    return (-round(setting["mean"], 6), setting["beam_size"], setting["length_penalty"],
            NORMALIZATIONS.index(setting["length_normalization"]))


def tune_decoding(run_dirs: list[str | Path], settings: list[dict], split: str = "valid", max_tokens: int = 4096,
                  checkpoint: str = "best") -> dict:
    """Every setting on every run's `split` (its sources and references as the run wrote them): {"split", "runs",
    "settings": [{setting, "bleu": [per run], "mean"}], "chosen": the best setting by RULE, "rule"}."""
    if not run_dirs:
        raise InputError("tune-decoding needs at least one run directory")
    texts = []
    for path in run_dirs:
        run = Run(Path(path), {})
        sources, references = run.lines("sources", split), run.lines("references", split)
        if sources is None or references is None:
            raise InputError(f"{path}: no sources.{split}.txt and references.{split}.txt (the run's final "
                             f"validation writes them)")
        texts.append((sources, references))
    scores = [[] for _ in settings]
    # one step per decoding pass of a run's split (on a terminal only: seqbench.common.progress)
    with progress_bar(f"decoding {split}", total=len(run_dirs) * len(settings), unit="passes") as advance:
        for path, (sources, references) in zip(run_dirs, texts):
            loaded = load_run(path, checkpoint)
            limit = family_of(loaded.spec["model"]).position_limit(loaded.spec["model"])
            decoder = SearchDecoder(loaded.model)
            for setting, row in zip(settings, scores):
                translator = Translator(decoder, loaded.tokenizers, replace(loaded.decoding, **setting), limit)
                row.append(corpus_bleu(translator.translate(sources, max_tokens), references)[0])
                advance(1)
    rows = [{**setting, "bleu": row, "mean": sum(row) / len(row)} for setting, row in zip(settings, scores)]
    chosen = min(rows, key=_choice_key)
    return {"split": split, "runs": [str(p) for p in run_dirs], "settings": rows, "chosen": chosen, "rule": RULE}


def overrides(setting: dict) -> list[str]:
    """The chosen setting as Hydra overrides of module.decoding."""
    return [f"module.decoding.{key}={setting[key]}" for key in ("beam_size", "length_penalty", "length_normalization")]


def markdown(result: dict) -> str:
    from seqbench.analysis.seeds import spread

    lines = [f"# Decoding tuned on the {result['split']} split", "",
             f"{len(result['runs'])} run(s): " + ", ".join(result["runs"]) + ".", "",
             f"Chosen by {result['rule']}: **beam {result['chosen']['beam_size']}, length penalty "
             f"{result['chosen']['length_penalty']:g} ({result['chosen']['length_normalization']})**, mean BLEU "
             f"{result['chosen']['mean']:.2f}; greedy "
             f"{next(s['mean'] for s in result['settings'] if s['beam_size'] == 1):.2f}.", "",
             "| beam | length penalty | normalisation | BLEU per run | mean ± 95% CI |", "|---|---|---|---|---|"]
    for s in sorted(result["settings"], key=_choice_key):
        spread_ = spread(s["bleu"])
        interval = f" ± {spread_.ci:.2f}" if spread_.ci is not None else ""
        lines.append(f"| {s['beam_size']} | {s['length_penalty']:g} | {s['length_normalization']} | "
                     + ", ".join(f"{b:.2f}" for b in s["bleu"]) + f" | {s['mean']:.2f}{interval} |")
    return "\n".join(lines) + "\n"
