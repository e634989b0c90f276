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


def register_resolvers() -> None:
    if not OmegaConf.has_resolver("wandb_offline"):
        OmegaConf.register_new_resolver("wandb_offline", wandb_offline)
