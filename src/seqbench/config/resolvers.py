"""OmegaConf resolvers used by conf/."""
from __future__ import annotations

from omegaconf import OmegaConf


def run_label(model_choice: str, model) -> str:
    """A run's default name in reports, as the model's family words it from the preset name and the model config
    (e.g. RNNs add their attention, so that a sweep over model.attention does not look like seeds of one model)."""
    from seqbench.models.interface import family_of

    return family_of(model).run_label(model_choice, model)


def conv_blocks(n_layers: int, channels: int, kernel: int) -> list[list[int]]:
    """ConvS2S's per-block [channels, kernel_width] list for n_layers identical blocks (conf/shape/cnn.yaml)."""
    return [[channels, kernel] for _ in range(n_layers)]


def run_name(label: str, model, seed) -> str:
    """A run's name in W&B: its label plus the shape settings a sweep varies (as the model's family words them,
    `shape_tags`) and the seed, e.g. transformer-h4-L3-ff512-s42, rnn-bahdanau-gru256-L1-s42, cnn-L4-k3-c256-s42."""
    from seqbench.models.interface import family_of

    return "-".join([label, *family_of(model).shape_tags(model), f"s{seed}"])


def onednn_linear_default() -> bool:
    """`onednn_linear`'s default: the environment's SEQBENCH_ONEDNN_LINEAR, as a process without a config reads it
    (seqbench.models.linear)."""
    from seqbench.models.linear import environment_default

    return environment_default()


def register_resolvers() -> None:
    for name, resolver in (("run_label", run_label), ("run_name", run_name), ("conv_blocks", conv_blocks),
                           ("onednn_linear_default", onednn_linear_default)):
        if not OmegaConf.has_resolver(name):
            OmegaConf.register_new_resolver(name, resolver)
