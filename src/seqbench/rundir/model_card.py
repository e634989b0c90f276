"""The model card of an exported model (README.md): data, size, BLEU and chrF with their sacreBLEU signatures, test
BLEU by source length, speed and the training command line, all from the run's results.json and Hydra's record of its
overrides."""
from __future__ import annotations

from pathlib import Path

from seqbench.common.errors import InputError
from seqbench.rundir.layout import CONFIG_FILE, TOKENIZERS_DIR


def training_command(run_dir: Path) -> str:
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


def languages(corpus: dict) -> list[str]:
    """The ISO codes of a corpus config's two sides where it names them (a Bible pair, a Hugging Face dataset's or
    files' src_lang/tgt_lang), source first; [] for the synthetic pair, which is no natural language."""
    if corpus.get("pair"):  # the Bible: "en-fr", read backwards with direction=reverse
        sides = str(corpus["pair"]).split("-")
        return sides[::-1] if corpus.get("direction") == "reverse" else sides
    sides = [corpus.get("src_lang"), corpus.get("tgt_lang")]
    return [str(s) for s in sides] if all(sides) and not {"src", "tgt"} & set(sides) else []


def card_metadata(results: dict, license_id: str) -> dict:
    """The Hugging Face Hub metadata of the card (its YAML front matter): language pair, license, tags and the test
    scores as a model-index, so `huggingface_hub.upload_folder` publishes a searchable, scored model."""
    corpus = (results.get("config") or {}).get("data", {}).get("corpus", {})
    scores = [{"type": metric, "name": f"test {metric.upper() if metric == 'bleu' else 'chrF'}",
               "value": round(results["test"][metric], 2)} for metric in ("bleu", "chrf")
              if metric in results.get("test", {})]
    meta = {"library_name": "seqbench", "license": license_id, "pipeline_tag": "translation",
            "tags": ["translation", "seqbench", results["model"]["name"]], "metrics": ["bleu", "chrf"]}
    if languages(corpus):
        meta["language"] = languages(corpus)
    if scores:
        meta["model-index"] = [{"name": str(results.get("label", results["model"]["name"])), "results": [{
            "task": {"type": "translation", "name": "Translation"},
            "dataset": {"type": results["data"]["corpus"], "name": results["data"]["corpus"], "split": "test"},
            "metrics": scores}]}]
    return meta


def model_card(results: dict, command: str, weights_name: str, license_id: str = "mit") -> str:
    """README.md of an exported model, from the run's results.json, with the Hub's metadata as front matter."""
    import yaml

    data, model, throughput = results["data"], results["model"], results.get("throughput", {})
    evaluated = Path(str(results.get("train", {}).get("best_checkpoint") or "")).name
    lines = [
        "---", yaml.safe_dump(card_metadata(results, license_id), sort_keys=False).rstrip(), "---", "",
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


def _training_seconds(results: dict) -> float:
    """The training steps' seconds over every process that trained the run (a resumed run's too; validations
    excluded); results of older versions have only this process's fit time."""
    seconds = results.get("throughput", {}).get("train_seconds")
    return seconds if seconds is not None else results["train"]["wall_time_s"]
