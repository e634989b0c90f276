"""Export a trained model: `seqbench export RUN_DIR OUT/ [--checkpoint best|last|PATH] [--format ctranslate2
[--quantization int8|...]]`.

OUT/ holds what translation needs and nothing from training: the model's weights as safetensors (no optimizer
state, no pickle), the tokenizers, model.json (model config, vocabulary sizes and fingerprint, decoding settings),
the run's config.yaml and results.json, and a model card (README.md) generated from results.json: data, size, BLEU
and chrF with their sacreBLEU signatures, test BLEU by source length, speed and the training command line.
`seqbench translate OUT/` translates with it. `--format ctranslate2` (Transformer runs) adds OUT/ctranslate2/, the
same weights as a CTranslate2 model (seqbench.decoding.ctranslate2), optionally quantised; `seqbench translate OUT/
--engine ctranslate2` decodes with it.
"""
from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

from seqbench.commands.cli import ArgumentParser
from seqbench.common.errors import InputError
from seqbench.common.io import atomic_path, check_writable
from seqbench.rundir.layout import CONFIG_FILE, TOKENIZERS_DIR, RunDir
from seqbench.rundir.loading import load_run
from seqbench.rundir.results import read_results


def _training_command(run_dir: Path) -> str:
    """`seqbench train` with the run's Hydra overrides (.hydra/overrides.yaml), as it was started."""
    overrides_file = run_dir / ".hydra" / "overrides.yaml"
    if not overrides_file.is_file():
        return "seqbench train  # overrides not recorded (.hydra/overrides.yaml missing)"
    import yaml

    try:
        overrides = yaml.safe_load(overrides_file.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as error:
        raise InputError(f"{overrides_file}: not readable YAML, cut short or damaged ({' '.join(str(error).split())}"
                         f"); restore it, or delete it to export without the training command") from None
    if not isinstance(overrides, list):
        raise InputError(f"{overrides_file}: not Hydra's list of overrides; restore it, or delete it to export "
                         f"without the training command")
    return " ".join(["seqbench train", *map(str, overrides)])


def _number(value, fmt: str = ",.1f") -> str:
    return "—" if value is None else format(value, fmt)


def model_card(results: dict, command: str, weights_name: str) -> str:
    """README.md of an exported model, from the run's results.json."""
    data, model, throughput = results["data"], results["model"], results.get("throughput", {})
    evaluated = Path(str(results.get("train", {}).get("best_checkpoint") or "")).name
    lines = [
        f"# {results.get('label', model['name'])}: a seqbench {model['name']} translation model", "",
        f"A `{model['class']}` with {results['parameters']:,} parameters, trained with seqbench on "
        f"`{data['corpus']}`.", "",
        "```bash",
        "seqbench translate .                      # stdin -> stdout, one sentence per line",
        "seqbench translate . --input src.txt --output hyp.txt", "```", "",
        "## Data", "",
        "| split | pairs | removed by length filters |", "|---|---|---|",
        *(f"| {split} | {size:,} | {data.get('filtered', {}).get(split, 0):,} |"
          for split, size in data["sizes"].items()), "",
        f"BPE vocabularies (Hugging Face tokenizers, in `{TOKENIZERS_DIR}/`): {data['src_vocab_size']:,} source, "
        f"{data['tgt_vocab_size']:,} target tokens.", "",
        "## Model", "",
        "| key | value |", "|---|---|",
        *(f"| {key} | `{value}` |" for key, value in model["config"].items()), "",
        "## Results", "",
        "| split | BLEU | chrF | sentences |", "|---|---|---|---|",
    ]
    splits = [s for s in ("valid", "test") if s in results]
    lines += [f"| {s} | {results[s]['bleu']:.1f} | {results[s]['chrf']:.1f} | {results[s]['n_sentences']:,} |"
              for s in splits]
    lines += ["", *(f"- {s} sacreBLEU signatures: BLEU `{results[s]['bleu_signature']}`, "
                    f"chrF `{results[s]['chrf_signature']}`" for s in splits)]
    if evaluated and evaluated != weights_name:
        lines += ["", f"These scores were measured on checkpoint `{evaluated}`; the weights exported here come from "
                      f"`{weights_name}`."]
    if "test" in results and results["test"].get("bleu_by_length"):
        lines += ["", "### Test BLEU by source length (words)", "", "| words | sentences | BLEU |", "|---|---|---|",
                  *(f"| {b['bucket']} | {b['sentences']:,} | {_number(b['bleu'])} |"
                    for b in results["test"]["bleu_by_length"])]
    lines += ["", "## Speed", "", f"Measured on {results.get('device', '?')} ({results.get('threads', '?')} threads).",
              "", f"- training: {results['train']['steps']:,} updates in {_training_seconds(results):.0f} s of "
                  f"training steps, {_number(throughput.get('target_tokens_per_s'), ',.0f')} target tokens/s"]
    for kind, speed in results.get("decoding", {}).items():
        lines.append(f"- decoding ({kind}, beam {speed['beam_size']}): {speed['sentences_per_s']:,.1f} sentences/s, "
                     f"{speed['target_tokens_per_s']:,.0f} tokens/s")
    versions = results.get("versions", {})
    lines += ["", "## Training command", "", "```bash", command, "```", "",
              f"Seed {results.get('seed')}; torch {versions.get('torch', '?')}, lightning "
              f"{versions.get('lightning', '?')}, sacrebleu {versions.get('sacrebleu', '?')}. The whole resolved "
              f"config is in `{CONFIG_FILE}`, every measurement in `results.json`.", ""]
    return "\n".join(lines)


FORMATS = ("seqbench", "ctranslate2")


def export(run: Path, out: Path, checkpoint: str = "best", model_format: str = "seqbench",
           quantization: str | None = None) -> Path:
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
    command = _training_command(root)
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
        (tmp / "README.md").write_text(model_card(results, command, loaded.weights.name),
                                       encoding="utf-8")
        if model_format == "ctranslate2":
            from seqbench.decoding.ctranslate2 import convert, vocabulary

            convert(loaded.model, vocabulary(loaded.tokenizers.src), vocabulary(loaded.tokenizers.tgt),
                    exported.ctranslate2, quantization)
    return out


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The command's arguments (one convention for every command: the tests parse the documented commands)."""
    parser = ArgumentParser(prog="seqbench export", description=__doc__.split("\n\n")[0])
    parser.add_argument("run", type=Path, help="run directory (or a .ckpt inside one)")
    parser.add_argument("out", type=Path, help="folder to create (must not exist, or be empty)")
    parser.add_argument("--checkpoint", default="best", help="best, last, or a .ckpt path")
    parser.add_argument("--format", default="seqbench", choices=FORMATS,
                        help="ctranslate2: also write the weights as a CTranslate2 model (Transformer runs)")
    parser.add_argument("--quantization", help="with --format ctranslate2: CTranslate2's weight type, e.g. int8, "
                                               "int8_float32, int16, float16 (default: float32)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    out = export(args.run, args.out, args.checkpoint, args.format, args.quantization)
    engine = " --engine ctranslate2" if args.format == "ctranslate2" else ""
    print(f"exported to {out}: seqbench translate {out}{engine}", file=sys.stderr)


def _training_seconds(results: dict) -> float:
    """The training steps' seconds over every process that trained the run (a resumed run's too; validations
    excluded); results of older versions have only this process's fit time."""
    seconds = results.get("throughput", {}).get("train_seconds")
    return seconds if seconds is not None else results["train"]["wall_time_s"]
