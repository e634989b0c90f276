"""OmegaConf resolvers used by conf/."""
from __future__ import annotations

import os
from pathlib import Path

from omegaconf import OmegaConf


def wandb_offline() -> bool:
    """W&B runs offline unless credentials exist, so a run without network or API key never waits on a login."""
    if os.environ.get("WANDB_MODE") in ("online", "run"):
        return False
    if os.environ.get("WANDB_API_KEY"):
        return False
    netrc = Path.home() / ".netrc"
    return not (netrc.is_file() and "api.wandb.ai" in netrc.read_text(errors="ignore"))


def run_label(model_choice: str, model) -> str:
    """A run's default name in reports, as the model's family words it from the preset name and the model config
    (e.g. RNNs add their attention, so that a sweep over model.attention does not look like seeds of one model)."""
    from seqbench.models.interface import family_of

    return family_of(model).run_label(model_choice, model)


def conv_blocks(n_layers: int, channels: int, kernel: int) -> list[list[int]]:
    """ConvS2S's per-block [channels, kernel_width] list for n_layers identical blocks (conf/shape/cnn.yaml)."""
    return [[channels, kernel] for _ in range(n_layers)]


def register_resolvers() -> None:
    for name, resolver in (("wandb_offline", wandb_offline), ("run_label", run_label), ("conv_blocks", conv_blocks)):
        if not OmegaConf.has_resolver(name):
            OmegaConf.register_new_resolver(name, resolver)
