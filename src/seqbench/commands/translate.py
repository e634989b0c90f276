"""Translate with a trained model: `seqbench translate RUN_DIR [options]`.

RUN_DIR is a run directory (its best checkpoint unless `--checkpoint last|PATH`), a .ckpt inside one, or an exported
folder (`seqbench export`); nothing else is read, so a run copied to another machine works offline.
Without --input, sentences are read from stdin and each translation is written to stdout (and flushed) as soon as
its line is read: interactive use, or a pipe. Every input line gets one output line: a line longer than the model's
positions is cut to what it can take (warned once on stderr). With --input, the file is translated in token-budget
batches of similar lengths (as at test time) with a progress bar on stderr, and written to --output (or stdout) in input
order. Decoding uses the run's own settings (`module.decoding`) unless --beam, --length-penalty, --max-len-a or
--max-len-b say otherwise, through the same beam search as validation and test. `--attention DIR` writes the
attention map of every translated sentence as DIR/<line number>.png. An empty line translates to an empty line.
Lines end at "\n" (or "\r\n") only, on stdin and in --input alike: a form feed or U+2028 inside a line stays in it,
so output lines always match input lines. Input must be UTF-8: invalid bytes are one error line naming their byte
offset (stdin, after the lines before them were translated) or their line (--input, before anything is translated).
Ctrl-C ends with exit status 130, the lines translated so far written.
`--engine ctranslate2` decodes a folder exported with `--format ctranslate2` in CTranslate2 instead (the same
tokenizers, length limits and, with beam search, GNMT length penalty; seqbench.decoding.ctranslate2).
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

import torch

from seqbench.commands.cli import ArgumentParser
from seqbench.common.errors import InputError
from seqbench.common.io import atomic_write_text, check_writable, read_lines, stream_lines
from seqbench.decoding.attention import attention_example
from seqbench.decoding.search import DecodingConfig
from seqbench.decoding.translator import SearchDecoder, Translator
from seqbench.models.interface import family_of
from seqbench.rundir.loading import LoadedModel, load_run


def attention_writer(loaded: LoadedModel, directory: Path, device: torch.device):
    """save(line number, source line, source ids, hypothesis ids): the sentence's attention map as
    DIR/<line number>.png. A model without attention is refused here, before anything is translated."""
    from seqbench.analysis.plots import plot_attention

    model = loaded.model.to(device)
    if attention_example(model, loaded.tokenizers, [4], [], device)["attention"] is None:
        raise InputError(f"{loaded.root}: this model has no attention: --attention does not apply")
    directory.mkdir(parents=True, exist_ok=True)

    def save(number: int, source: str, source_ids: list[int], hypothesis: list[int]) -> None:
        if not source_ids:
            return
        example = attention_example(model, loaded.tokenizers, source_ids, hypothesis, device)
        title = f"line {number}: {source[:80]}{'...' if len(source) > 80 else ''}"
        plot_attention(example, title).savefig(directory / f"{number:06d}.png", dpi=120)

    return save


def translate_stream(translator: Translator, stdin, stdout, save=None) -> None:
    """One line of the byte stream `stdin` in, one line out, flushed: usable interactively and as a filter in a pipe.
    `save`: an attention_writer's."""
    for number, line in enumerate(stream_lines(stdin), start=1):
        each = None if save is None else \
            lambda _, source_ids, hypothesis, n=number, text=line: save(n, text, source_ids, hypothesis)
        print(translator.translate([line], each=each)[0], file=stdout, flush=True)


def translate_file(translator: Translator, lines: list[str], max_tokens: int, save=None) -> list[str]:
    """All lines in token-budget batches of similar source lengths, with a progress bar on stderr. `save`: an
    attention_writer's."""
    from rich.console import Console
    from rich.progress import Progress

    each = None if save is None else lambda i, source_ids, hypothesis: save(i + 1, lines[i], source_ids, hypothesis)
    with Progress(console=Console(stderr=True), transient=False) as progress:
        task = progress.add_task("translating", total=len(lines))
        return translator.translate(lines, max_tokens, lambda n: progress.advance(task, n), each)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = ArgumentParser(prog="seqbench translate", description=__doc__.split("\n\n")[0],
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


def decoder(args: argparse.Namespace, loaded: LoadedModel):
    """The decoder --engine names: seqbench's search over the loaded model, or CTranslate2 over its export."""
    if args.engine == "seqbench":
        return SearchDecoder(loaded.model, args.device)
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
    lines = read_lines(args.input, empty_ok=True) if args.input is not None else None
    if args.output is not None:
        check_writable(args.output)
    loaded = load_run(args.run, args.checkpoint)
    device = torch.device(args.device)
    limit = family_of(loaded.spec["model"]).position_limit(loaded.spec["model"])
    translator = Translator(decoder(args, loaded), loaded.tokenizers, decoding_config(loaded.decoding, args), limit)
    save = attention_writer(loaded, args.attention, device) if args.attention is not None else None
    if lines is None:
        if sys.stdin.isatty():
            print(f"translating with {loaded.weights}: one sentence per line, Ctrl-D to end", file=sys.stderr)
        translate_stream(translator, sys.stdin.buffer, sys.stdout, save)
        return
    text = "".join(line + "\n" for line in translate_file(translator, lines, args.max_tokens, save))
    if args.output is None:
        sys.stdout.write(text)
    else:
        atomic_write_text(args.output, text)
