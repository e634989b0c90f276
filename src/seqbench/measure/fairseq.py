"""fairseq as a measured anchor: the bench's reference families trained by fairseq 0.12.2 on the same generated pairs,
token budget, threads, optimizer and steps, in its own virtual environment (fairseq cannot share seqbench's:
`../shared/anchors/fairseq-install.sh VENV WORK` installs it, patched for this Python and torch).

The pairs are written as text over a numbered vocabulary (t4, t5, ...; fairseq adds its four specials, so the
vocabularies have the same size), binarised by fairseq-preprocess, and each family trained by fairseq-train with the
architecture of its reference shape: `transformer` (post-LN, sinusoidal positions, tied decoder embeddings), `lstm`
(bidirectional encoder, attention with input feeding) and `fconv` (ConvS2S). fairseq batches by its own rule (max of
source and target length x sentences <= --max-tokens), so the batches hold the same budget, not the same grouping:
fairseq trains on the sentences of the batches of one seqbench timing window: each window is one process, an untimed
epoch then a timed one, so both toolkits time passes over the same sentences, and the bench times fairseq's window
between seqbench's in each round. Every update is logged (`--log-interval 1`, JSON); a window's rate is its epoch's
target tokens over the time of its updates. fairseq's wps counts target tokens
with </s>, as seqbench's target tokens/s counts them with <eos>.
"""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import torch

from seqbench.common.errors import InputError
from seqbench.measure.workload import Setting


def _tool(venv: str | Path, name: str) -> Path:
    path = Path(venv) / "bin" / name
    if not path.is_file():
        raise InputError(f"--fairseq {venv}: no {name} there (install fairseq into it with "
                         "../shared/anchors/fairseq-install.sh VENV WORK)")
    return path


def check_installed(venv: str | Path) -> None:
    """The tools the fairseq rows run, checked before the bench measures anything (one line when one is missing)."""
    for name in ("fairseq-preprocess", "fairseq-train"):
        _tool(venv, name)


def architecture(family: str, config: dict) -> list[str]:
    """fairseq-train's arguments for the reference model of a family."""
    dropout = ["--dropout", str(config.get("dropout", 0.1))]
    if family == "transformer":
        d, h, ff = config["d_model"], config["n_heads"], config["d_ff"]
        # seqbench's feed-forward drops out its inner activation at the model's rate (as nn.TransformerEncoderLayer
        # and tensor2tensor's relu_dropout do), fairseq's only with --activation-dropout (default 0): the same model
        # needs it, or fairseq skips more than half of the dropout work (24 of 41 units of noise a step at the
        # reference shape: the 4x wider inner activations, profiled) and its row is not the same computation.
        return ["--arch", "transformer", "--share-decoder-input-output-embed", *dropout,
                "--activation-dropout", str(config.get("dropout", 0.1)),
                "--attention-dropout", str(config.get("attention_dropout", 0.0)),
                "--encoder-embed-dim", str(d), "--decoder-embed-dim", str(d), "--encoder-ffn-embed-dim", str(ff),
                "--decoder-ffn-embed-dim", str(ff), "--encoder-attention-heads", str(h),
                "--decoder-attention-heads", str(h), "--encoder-layers", str(config["encoder_layers"]),
                "--decoder-layers", str(config["decoder_layers"])]
    if family == "rnn":
        e, h = config["embed_dim"], config["hidden_size"]
        return ["--arch", "lstm", *dropout, "--encoder-embed-dim", str(e), "--decoder-embed-dim", str(e),
                "--encoder-hidden-size", str(h), "--decoder-hidden-size", str(h), "--decoder-out-embed-dim", str(h),
                "--encoder-layers", str(config["encoder_layers"]), "--decoder-layers", str(config["decoder_layers"]),
                "--encoder-bidirectional"]
    if family == "cnn":
        layers = lambda blocks: "[" + ", ".join(f"({c}, {k})" for c, k in blocks) + "]"  # noqa: E731
        return ["--arch", "fconv", *dropout, "--encoder-embed-dim", str(config["embed_dim"]),
                "--decoder-embed-dim", str(config["embed_dim"]), "--decoder-out-embed-dim",
                str(config["out_embed_dim"]), "--encoder-layers", layers(config["encoder_layers"]),
                "--decoder-layers", layers(config["decoder_layers"])]
    raise ValueError(f"no fairseq architecture for {family}")


def write_data(pairs, vocab_size: int, folder: Path) -> None:
    """The pairs as fairseq text over the numbered vocabulary, and its dictionary."""
    for side, index in (("src", 1), ("tgt", 2)):
        text = "".join(" ".join(f"t{i}" for i in pair[index]) + "\n" for pair in pairs)
        (folder / f"train.{side}").write_text(text, encoding="utf-8")
    (folder / "dict.txt").write_text("".join(f"t{i} 1\n" for i in range(4, vocab_size)), encoding="utf-8")


def parameter_count(output: str) -> int | None:
    """The model's parameter count from fairseq-train's log ("num. shared model params: 1,234,567 ...")."""
    import re

    found = re.search(r"num\. (?:shared )?model params: ([\d,]+)", output)
    return int(found.group(1).replace(",", "")) if found else None


def update_log(output: str) -> list[dict]:
    """fairseq-train's per-update JSON records (train_inner), in order."""
    records = []
    for line in output.splitlines():
        if "| train_inner |" in line:
            records.append(json.loads(line.split("| train_inner |", 1)[1]))
    return records


def epoch_window(records: list[dict], epoch: int) -> dict:
    """One epoch's updates as a timing window: its target tokens over the time of its updates (wpb / wps each)."""
    chunk = [r for r in records if int(r["epoch"]) == epoch]
    if not chunk:
        raise InputError(f"fairseq logged no update in epoch {epoch}")
    tokens = sum(float(r["wpb"]) for r in chunk)
    seconds = sum(float(r["wpb"]) / float(r["wps"]) for r in chunk)
    return {"steps": len(chunk), "seconds": seconds, "target_tokens_per_s": tokens / seconds,
            "src_tgt_tokens_per_s": None, "step_time_s": seconds / len(chunk)}


def prepare(venv: str | Path, pairs, vocab_size: int, folder: Path, env: dict) -> Path:
    """The pairs binarised for fairseq in folder/bin (once)."""
    if not (folder / "bin").is_dir():
        write_data(pairs, vocab_size, folder)
        subprocess.run([str(_tool(venv, "fairseq-preprocess")), "--source-lang", "src", "--target-lang", "tgt",
                        "--trainpref", str(folder / "train"), "--validpref", str(folder / "train"), "--destdir",
                        str(folder / "bin"), "--srcdict", str(folder / "dict.txt"), "--tgtdict",
                        str(folder / "dict.txt"), "--workers", "1"], check=True, capture_output=True, env=env)
    return folder / "bin"


class FairseqRow:
    """One family trained by fairseq, a timing window at a time: each window is a fairseq-train process over the
    pairs (one timing window's sentences) for two epochs, the first untimed."""

    def __init__(self, venv: str | Path, setting: Setting, family: str, pairs, device: torch.device,
                 work: str | Path):
        threads = str(torch.get_num_threads())
        self.env = {**os.environ, "OMP_NUM_THREADS": threads, "MKL_NUM_THREADS": threads}
        self.env.pop("PYTHONPATH", None)  # fairseq's own environment, not seqbench's
        self.family, self.parameters = family, None
        data = prepare(venv, pairs, setting.vocab_size, Path(work), self.env)
        self.args = [str(_tool(venv, "fairseq-train")), str(data), *architecture(family, setting.models[family]),
                     "--max-tokens", str(setting.max_tokens), "--max-epoch", "2", "--optimizer", "adam", "--lr",
                     "1e-4", "--criterion", "label_smoothed_cross_entropy", "--label-smoothing", "0.1",
                     "--disable-validation", "--no-save", "--log-format", "json", "--log-interval", "1", "--seed",
                     str(setting.seed), "--num-workers", "0", "--max-source-positions", "1024",
                     "--max-target-positions", "1024", *(["--cpu"] if device.type == "cpu" else [])]

    def window(self, _batches=None) -> dict:
        done = subprocess.run(self.args, capture_output=True, text=True, env=self.env)
        if done.returncode != 0:
            tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
            raise InputError(f"fairseq-train {self.family} failed: {tail[0][:300]}")
        output = done.stdout + done.stderr
        self.parameters = parameter_count(output)
        return epoch_window(update_log(output), 2)
