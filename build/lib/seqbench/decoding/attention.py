"""Attention maps of a few test sentences, saved at test time (`attention.pt`) for the report's heatmaps.

For each example the model translates the source with the run's decoding settings, then re-reads its own translation
with teacher forcing through `decode(..., return_attention=True)`: row t of a map is the attention paid while
predicting output token t (the last row is <eos>), as in Bahdanau et al.'s Fig. 3. Maps are [L, H, T, S]: RNN
attention is one layer and one head, ConvS2S one map per decoder layer, the Transformer one per layer and head;
models without attention store None.
"""
from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Callable

import torch

from seqbench.common.io import atomic_torch_save
from seqbench.common.subset import fixed_subset
from seqbench.common.tokens import BOS_ID, EOS
from seqbench.decoding.search import DecodingConfig, generate
from seqbench.models.interface import Seq2Seq

# Sources of 5-25 tokens: long enough to show reordering, short enough for readable axis labels.
MIN_TOKENS, MAX_TOKENS = 5, 25


@torch.no_grad()
def attention_examples(model: Seq2Seq, split, decoding: DecodingConfig, device: torch.device, n: int,
                       context: Callable[[], AbstractContextManager] = nullcontext) -> list[dict]:
    """`split`: the evaluation split to draw from (seqbench.data.eval_split.EvalSplit)."""
    candidates = [i for i in range(len(split)) if MIN_TOKENS <= len(split.source_ids(i)) <= MAX_TOKENS] \
        or list(range(len(split)))
    model.eval()
    examples = []
    for i in [candidates[j] for j in fixed_subset(len(candidates), n)]:
        src = torch.tensor([split.source_ids(i)], device=device)
        mask = torch.ones_like(src, dtype=torch.bool)
        with context():
            hypothesis = generate(model, src, mask, decoding)[0]
            example = attention_example(model, split.tokenizers, split.source_ids(i), hypothesis, device)
        examples.append({"index": i, "source": split.sources[i], **example})
    return examples


@torch.no_grad()
def attention_example(model: Seq2Seq, tokenizers, src_ids: list[int], hypothesis: list[int],
                      device: torch.device) -> dict:
    """The translation `hypothesis` (token ids, no <eos>) of `src_ids`, re-read with teacher forcing: its text,
    both token sequences and the attention map [L,H,T,S] (None for models without attention)."""
    src = torch.tensor([src_ids], device=device)
    tgt_in = torch.tensor([[BOS_ID] + hypothesis], device=device)
    _, attention = model.decode(tgt_in, model.encode(src, torch.ones_like(src, dtype=torch.bool)),
                                return_attention=True)
    return {
        "hypothesis": tokenizers.decode_tgt([hypothesis])[0],
        "src_tokens": [tokenizers.src.id_to_token(t) for t in src_ids],
        "tgt_tokens": [tokenizers.tgt.id_to_token(t) for t in hypothesis] + [EOS],
        "attention": None if attention is None else attention[0].float().cpu(),  # [L,H,T,S]
    }


def save_attention(path: str | Path, label: str, model_name: str, examples: list[dict]) -> Path:
    return atomic_torch_save({"label": label, "model": model_name, "examples": examples}, path)


def load_attention(path: str | Path) -> dict:
    return torch.load(path, map_location="cpu", weights_only=True)
