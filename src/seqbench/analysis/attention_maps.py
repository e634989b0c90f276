"""The attention map of every translated sentence as a PNG file (`seqbench translate --attention DIR`)."""
from __future__ import annotations

from pathlib import Path
from typing import Callable

import torch

from seqbench.analysis.plots import plot_attention
from seqbench.common.errors import InputError
from seqbench.decoding.attention import attention_example
from seqbench.rundir.loading import LoadedModel


def attention_writer(loaded: LoadedModel, directory: Path,
                     device: torch.device) -> Callable[[int, str, list[int], list[int]], None]:
    """save(line number, source line, source ids, hypothesis ids): the sentence's attention map as
    DIR/<line number>.png. A model without attention is refused here, before anything is translated."""
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
