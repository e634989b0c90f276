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
    """A run's name in W&B: its label plus the shape settings a sweep varies and the seed, e.g.
    transformer-h4-L3-ff512-s42, rnn-bahdanau-gru256-L1-s42, cnn-L4-k3-c256-s42 (first encoder block's kernel and
    channels). Encoder and decoder depths are given apart when they differ (enc3-dec1)."""
    def depth(enc: int, dec: int) -> str:
        return f"L{enc}" if enc == dec else f"enc{enc}-dec{dec}"

    name = model.get("name")
    if name == "transformer":
        parts = [f"h{model.n_heads}", depth(model.encoder_layers, model.decoder_layers), f"ff{model.d_ff}"]
    elif name == "rnn":
        parts = [f"{model.cell}{model.hidden_size}", depth(model.encoder_layers, model.decoder_layers)]
    elif name == "cnn":
        channels, kernel = model.encoder_layers[0]
        parts = [depth(len(model.encoder_layers), len(model.decoder_layers)), f"k{kernel}", f"c{channels}"]
    else:
        parts = []
    return "-".join([label, *parts, f"s{seed}"])


def register_resolvers() -> None:
    for name, resolver in (("run_label", run_label), ("run_name", run_name), ("conv_blocks", conv_blocks)):
        if not OmegaConf.has_resolver(name):
            OmegaConf.register_new_resolver(name, resolver)
