"""Sentences in, translations out: one protocol for every decoder, and a translator on top of it.

A decoder is anything with `generate(sources: list[list[int]], cfg: DecodingConfig) -> list[list[int]]` (source
token ids in, hypothesis token ids out, in order): seqbench's own search over a model (`SearchDecoder`) and the
CTranslate2 engine (seqbench.decoding.ctranslate2.Engine) both are, so `translate` and `bench` never ask which one
they hold.

`Translator` tokenises, decodes in token-budget batches of similar lengths and detokenises. A source longer than the
model's positions is cut to what it can take (warned once on stderr, as fairseq and CTranslate2 do), and the
hypothesis length is capped the same way, so every input line gets one output line. `translate_stream` and
`translate_file` are `seqbench translate`'s two ways through it: line by line, or a whole file in batches.
"""
from __future__ import annotations

import sys
from dataclasses import replace
from typing import Callable, Protocol

import torch

from seqbench.common.io import stream_lines
from seqbench.data.batching import collate, token_budget_batches
from seqbench.decoding.search import DecodingConfig, generate


class Decoder(Protocol):
    def generate(self, sources: list[list[int]], cfg: DecodingConfig) -> list[list[int]]: ...


class SearchDecoder:
    """seqbench's greedy and beam search (seqbench.decoding.search) over a model, on one device."""

    def __init__(self, model, device: torch.device | str = "cpu"):
        self.device = torch.device(device)
        self.model = model.to(self.device).eval()

    @torch.no_grad()
    def generate(self, sources: list[list[int]], cfg: DecodingConfig) -> list[list[int]]:
        batch = collate([(i, ids, []) for i, ids in enumerate(sources)])
        return generate(self.model, batch["src"].to(self.device), batch["src_mask"].to(self.device), cfg)


class Translator:
    """Source lines -> detokenised translations with a decoder and a tokenizer pair. `position_limit`: the most
    tokens the model can take on either side (None: any length)."""

    def __init__(self, decoder: Decoder, tokenizers, decoding: DecodingConfig, position_limit: int | None = None,
                 warn: Callable[[str], None] | None = None):
        self.decoder, self.tokenizers, self.position_limit = decoder, tokenizers, position_limit
        if position_limit is not None:  # <eos> takes a position on each side
            cap = position_limit - 1 if decoding.max_len is None else min(decoding.max_len, position_limit - 1)
            decoding = replace(decoding, max_len=cap)
        self.decoding = decoding
        self._warn = warn or (lambda text: print(f"warning: {text}", file=sys.stderr, flush=True))
        self._warned = False

    def source_ids(self, lines: list[str]) -> list[list[int]]:
        """Token ids of each line, cut to the model's positions (the first cut warns once)."""
        ids = self.tokenizers.encode_src(lines)
        if self.position_limit is None:
            return ids
        limit = self.position_limit - 1
        longest = max(map(len, ids), default=0)
        if longest > limit and not self._warned:
            self._warned = True
            self._warn(f"a source line of {longest} tokens is longer than the model's {self.position_limit} "
                       f"positions: such lines are cut to their first {limit} tokens")
        return [s[:limit] for s in ids]

    def hypotheses(self, ids: list[list[int]]) -> list[list[int]]:
        """Hypothesis ids of one batch of source ids; an empty source gets an empty hypothesis."""
        todo = [i for i, s in enumerate(ids) if s]  # an empty source has nothing to attend to
        out: list[list[int]] = [[] for _ in ids]
        if todo:
            for i, hypothesis in zip(todo, self.decoder.generate([ids[i] for i in todo], self.decoding)):
                out[i] = hypothesis
        return out

    def translate(self, lines: list[str], max_tokens: int | None = None, advance: Callable[[int], None] | None = None,
                  each: Callable[[int, list[int], list[int]], None] | None = None) -> list[str]:
        """Every line, in input order: in token-budget batches of similar source lengths with `max_tokens`, as one
        batch without. `advance(n)` after each batch of n lines (a progress bar); `each(line index, source ids,
        hypothesis ids)` after each line (attention maps)."""
        ids = self.source_ids(lines)
        lengths = [len(s) for s in ids]
        batches = [list(range(len(lines)))] if max_tokens is None else \
            token_budget_batches(lengths, lengths, max(max_tokens, max(lengths, default=1)))
        out = [""] * len(lines)
        for batch in batches:
            hypotheses = self.hypotheses([ids[i] for i in batch])
            for i, hypothesis, text in zip(batch, hypotheses, self.tokenizers.decode_tgt(hypotheses)):
                out[i] = text
                if each is not None:
                    each(i, ids[i], hypothesis)
            if advance is not None:
                advance(len(batch))
        return out


AttentionSaver = Callable[[int, str, list[int], list[int]], None]  # (line number, line, source ids, hypothesis ids)


def translate_stream(translator: Translator, stdin, stdout, save: AttentionSaver | None = None) -> None:
    """One line of the byte stream `stdin` in, one line out, flushed: usable interactively and as a filter in a pipe.
    `save`: called with each translated line (attention maps)."""
    for number, line in enumerate(stream_lines(stdin), start=1):
        each = None
        if save is not None:
            def each(_, source_ids, hypothesis, n=number, text=line):
                save(n, text, source_ids, hypothesis)
        print(translator.translate([line], each=each)[0], file=stdout, flush=True)


def translate_file(translator: Translator, lines: list[str], max_tokens: int,
                   save: AttentionSaver | None = None) -> list[str]:
    """All lines in token-budget batches of similar source lengths, with a progress bar on stderr. `save`: called
    with each translated line (attention maps)."""
    from rich.console import Console
    from rich.progress import Progress

    each = None if save is None else lambda i, source_ids, hypothesis: save(i + 1, lines[i], source_ids, hypothesis)
    with Progress(console=Console(stderr=True), transient=False) as progress:
        task = progress.add_task("translating", total=len(lines))
        return translator.translate(lines, max_tokens, lambda n: progress.advance(task, n), each)
