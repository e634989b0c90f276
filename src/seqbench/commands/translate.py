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
from dataclasses import asdict, replace
from pathlib import Path

import torch

from seqbench.commands.arguments import ArgumentParser
from seqbench.common.errors import InputError
from seqbench.common.io import atomic_write_text, check_writable, read_lines
from seqbench.config.checks import check_decoding
from seqbench.decoding.search import DecodingConfig
from seqbench.decoding.translator import Translator, translate_file, translate_stream
from seqbench.rundir.loading import load_run


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = ArgumentParser(prog="seqbench translate", description=__doc__.split("\n\n")[0])
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


OPTIONS = {"beam_size": "--beam", "length_penalty": "--length-penalty", "max_len_a": "--max-len-a",
           "max_len_b": "--max-len-b"}  # DecodingConfig's field -> the option that overrides it


def decoding_config(base: DecodingConfig, args: argparse.Namespace) -> DecodingConfig:
    """The run's decoding settings with the options given over them, checked as a config's are."""
    given = {key: getattr(args, option[2:].replace("-", "_")) for key, option in OPTIONS.items()}
    cfg = replace(base, **{key: value for key, value in given.items() if value is not None})
    check_decoding(asdict(cfg), {key: OPTIONS[key] for key, value in given.items() if value is not None})
    return cfg


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
    decoder = loaded.decoder(args.engine, args.device)
    if args.engine == "ctranslate2" and args.attention is not None:
        raise InputError("--attention needs seqbench's own decoding: CTranslate2 returns no attention maps here")
    translator = Translator(decoder, loaded.tokenizers, decoding_config(loaded.decoding, args), loaded.position_limit)
    save = None
    if args.attention is not None:
        from seqbench.analysis.attention_maps import attention_writer  # matplotlib: only when maps are asked for

        save = attention_writer(loaded, args.attention, torch.device(args.device))
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
