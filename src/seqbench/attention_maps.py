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

from seqbench.benchmark import fixed_subset
from seqbench.data.tokenizer import BOS_ID, EOS
from seqbench.decoding import DecodingConfig, generate
from seqbench.io import atomic_torch_save
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
            tgt_in = torch.tensor([[BOS_ID] + hypothesis], device=device)
            _, attention = model.decode(tgt_in, model.encode(src, mask), return_attention=True)
        examples.append({
            "index": i,
            "source": split.sources[i],
            "hypothesis": split.detokenize([hypothesis])[0],
            "src_tokens": split.source_pieces(i),
            "tgt_tokens": split.target_pieces(hypothesis) + [EOS],
            "attention": None if attention is None else attention[0].float().cpu(),  # [L,H,T,S]
        })
    return examples


def save_attention(path: str | Path, label: str, model_name: str, examples: list[dict]) -> Path:
    return atomic_torch_save({"label": label, "model": model_name, "examples": examples}, path)


def load_attention(path: str | Path) -> dict:
    return torch.load(path, map_location="cpu", weights_only=True)
