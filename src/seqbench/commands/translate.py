"""Translate with a trained model: `seqbench translate RUN_DIR [options]`.

RUN_DIR is a run directory (its best checkpoint unless `--checkpoint last|PATH`), a .ckpt inside one, or an exported
folder (`seqbench export`); nothing else is read, so a run copied to another machine works offline.
Without --input, sentences are read from stdin and each translation is written to stdout (and flushed) as soon as
its line is read: interactive use, or a pipe. With --input, the file is translated in token-budget batches of
similar lengths (as at test time) with a progress bar on stderr, and written to --output (or stdout) in input
order. Decoding uses the run's own settings (`module.decoding`) unless --beam, --length-penalty, --max-len-a or
--max-len-b say otherwise, through the same beam search as validation and test. `--attention DIR` writes the
attention map of every translated sentence as DIR/<line number>.png. An empty line translates to an empty line.
`--engine ctranslate2` decodes a folder exported with `--format ctranslate2` in CTranslate2 instead (the same
tokenizers, length limits and, with beam search, GNMT length penalty; seqbench.decoding.ctranslate2).
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

import torch

from seqbench.common.errors import InputError
from seqbench.common.io import atomic_write_text
from seqbench.data.batching import collate, token_budget_batches
from seqbench.decoding.attention import attention_example
from seqbench.decoding.search import DecodingConfig, generate
from seqbench.rundir.loading import LoadedModel, load_run


class Translator:
    """Source sentences -> detokenised translations with a loaded model, on one device."""

    def __init__(self, loaded: LoadedModel, decoding: DecodingConfig, device: torch.device,
                 attention_dir: Path | None = None, engine=None):
        self.model, self.tokenizers = loaded.model.to(device), loaded.tokenizers
        self.decoding, self.device, self.attention_dir = decoding, device, attention_dir
        self.engine = engine  # a seqbench.decoding.ctranslate2.Engine, or None: seqbench's own search
        if attention_dir is not None:
            if self._attention([4], []) is None:  # any token will do: the model either returns maps or never does
                raise InputError(f"{loaded.root}: this model has no attention: --attention does not apply")
            attention_dir.mkdir(parents=True, exist_ok=True)

    def _attention(self, src_ids: list[int], hypothesis: list[int]):
        return attention_example(self.model, self.tokenizers, src_ids, hypothesis, self.device)["attention"]

    @torch.no_grad()
    def translate(self, lines: list[str], numbers: list[int]) -> list[str]:
        """`numbers` are the sentences' line numbers, which name their attention maps."""
        ids = self.tokenizers.encode_src(lines)
        todo = [i for i, s in enumerate(ids) if s]  # an empty source has nothing to attend to: empty output
        out = [""] * len(lines)
        if not todo:
            return out
        if self.engine is not None:
            hypotheses = self.engine.generate([ids[i] for i in todo], self.decoding)
        else:
            batch = collate([(i, ids[i], []) for i in todo])
            hypotheses = generate(self.model, batch["src"].to(self.device), batch["src_mask"].to(self.device),
                                  self.decoding)
        for i, hypothesis, text in zip(todo, hypotheses, self.tokenizers.decode_tgt(hypotheses)):
            out[i] = text
            if self.attention_dir is not None:
                self._save_attention(ids[i], hypothesis, numbers[i], lines[i])
        return out

    def _save_attention(self, src_ids: list[int], hypothesis: list[int], number: int, source: str) -> None:
        from seqbench.analysis.plots import plot_attention

        example = attention_example(self.model, self.tokenizers, src_ids, hypothesis, self.device)
        title = f"line {number}: {source[:80]}{'...' if len(source) > 80 else ''}"
        plot_attention(example, title).savefig(self.attention_dir / f"{number:06d}.png", dpi=120)


def translate_stream(translator: Translator, stdin, stdout) -> None:
    """One line in, one line out, flushed: usable interactively and as a filter in a pipe."""
    for number, line in enumerate(iter(stdin.readline, ""), start=1):
        print(translator.translate([line.rstrip("\r\n")], [number])[0], file=stdout, flush=True)


def translate_file(translator: Translator, lines: list[str], max_tokens: int) -> list[str]:
    """All lines in token-budget batches of similar source lengths, with a progress bar on stderr."""
    from rich.console import Console
    from rich.progress import Progress

    lengths = [len(s) for s in translator.tokenizers.encode_src(lines)]
    batches = token_budget_batches(lengths, lengths, max(max_tokens, max(lengths, default=1)))
    out = [""] * len(lines)
    with Progress(console=Console(stderr=True), transient=False) as progress:
        task = progress.add_task("translating", total=len(lines))
        for batch in batches:
            for i, text in zip(batch, translator.translate([lines[i] for i in batch], [i + 1 for i in batch])):
                out[i] = text
            progress.advance(task, len(batch))
    return out


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="seqbench translate", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("run", type=Path, help="run directory, a .ckpt inside one, or an exported folder")
    parser.add_argument("--checkpoint", default="best", help="best, last, or a .ckpt path (run directories only)")
    parser.add_argument("--input", type=Path, help="file of source sentences, one per line (default: stdin, "
                                                   "translated line by line)")
    parser.add_argument("--output", type=Path, help="where --input's translations go (default: stdout)")
    parser.add_argument("--beam", type=int, help="beam size, 1 = greedy (default: the run's)")
    parser.add_argument("--length-penalty", type=float, help="GNMT alpha (default: the run's)")
    parser.add_argument("--max-len-a", type=float, help="at most a * source tokens + b output tokens")
    parser.add_argument("--max-len-b", type=int, help="see --max-len-a")
    parser.add_argument("--max-tokens", type=int, default=4096,
                        help="batch budget with --input: sentences x longest source, in tokens")
    parser.add_argument("--attention", type=Path, metavar="DIR", help="write each sentence's attention map here")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--engine", default="seqbench", choices=["seqbench", "ctranslate2"],
                        help="ctranslate2: decode a folder exported with --format ctranslate2 in CTranslate2")
    return parser.parse_args(argv)


def decoding_config(base: DecodingConfig, args: argparse.Namespace) -> DecodingConfig:
    overrides = {key: value for key, value in (("beam_size", args.beam), ("length_penalty", args.length_penalty),
                                               ("max_len_a", args.max_len_a), ("max_len_b", args.max_len_b))
                 if value is not None}
    cfg = replace(base, **overrides)
    if cfg.beam_size < 1:
        raise InputError(f"--beam {cfg.beam_size}: must be at least 1")
    if cfg.length_penalty < 0:
        raise InputError(f"--length-penalty {cfg.length_penalty}: must be >= 0")
    if cfg.max_len_a < 0 or cfg.max_len_b < 0:
        raise InputError(f"--max-len-a {cfg.max_len_a} --max-len-b {cfg.max_len_b}: must be >= 0")
    return cfg


def _engine(args: argparse.Namespace, loaded: LoadedModel):
    if args.engine == "seqbench":
        return None
    from seqbench.decoding.ctranslate2 import Engine
    from seqbench.rundir.layout import RunDir

    folder = RunDir(loaded.root).ctranslate2
    if not folder.is_dir():
        raise InputError(f"{args.run}: no CTranslate2 model; export one with `seqbench export RUN OUT "
                         f"--format ctranslate2`, then translate OUT with --engine ctranslate2")
    if args.attention is not None:
        raise InputError("--attention needs seqbench's own decoding: CTranslate2 returns no attention maps here")
    return Engine.for_tokenizers(folder, loaded.tokenizers, device=args.device)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if args.output is not None and args.input is None:
        raise InputError("--output needs --input (stdin is translated line by line to stdout)")
    if args.max_tokens < 1:
        raise InputError(f"--max-tokens {args.max_tokens}: must be positive")
    if args.input is not None and not args.input.is_file():
        raise InputError(f"--input {args.input}: no such file")
    loaded = load_run(args.run, args.checkpoint)
    translator = Translator(loaded, decoding_config(loaded.decoding, args), torch.device(args.device),
                            args.attention, _engine(args, loaded))
    if args.input is None:
        if sys.stdin.isatty():
            print(f"translating with {loaded.weights}: one sentence per line, Ctrl-D to end", file=sys.stderr)
        translate_stream(translator, sys.stdin, sys.stdout)
        return
    try:
        lines = args.input.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError as error:
        raise InputError(f"--input {args.input}: not UTF-8 text ({error.reason} at byte {error.start})") from error
    text = "".join(line + "\n" for line in translate_file(translator, lines, args.max_tokens))
    if args.output is None:
        sys.stdout.write(text)
    else:
        atomic_write_text(args.output, text)

