"""compare.param_budget: every family resized to within 10% of the budget, with real vocabulary sizes."""
from __future__ import annotations

from pathlib import Path

import pytest
import torch
from omegaconf import OmegaConf

from seqbench.common.errors import ConfigError
from seqbench.models.sizing import TOLERANCE, count_parameters, fit_to_budget

CONF_DIR = Path(__file__).resolve().parents[1] / "conf"


def _model_cfg(preset: str) -> dict:
    from hydra import compose, initialize_config_dir

    from seqbench.config.resolvers import register_resolvers

    register_resolvers()
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        cfg = compose("train", overrides=[f"model={preset}"])
    return OmegaConf.to_container(cfg.model, resolve=True)


@pytest.mark.parametrize("preset", ["transformer", "rnnsearch_small", "rnnencdec", "cnn"])
@pytest.mark.parametrize("budget, vocab", [(3_000_000, (1500, 1700)), (800_000, (300, 280)),
                                           (12_000_000, (8000, 8000))])
def test_every_family_fits_the_budget(preset, budget, vocab):
    original = _model_cfg(preset)
    sized = fit_to_budget(original, budget, *vocab)
    count = count_parameters(sized, *vocab)
    assert abs(count - budget) <= TOLERANCE * budget, f"{preset}: {count:,} for a budget of {budget:,}"
    # only widths change: depth, kernels, heads and the family stay the preset's
    for key in ("name", "encoder_layers", "decoder_layers", "n_heads", "cell", "attention", "bidirectional"):
        if key in original and not isinstance(original[key], list):
            assert sized[key] == original[key]
    if preset == "transformer":
        assert sized["d_model"] % sized["n_heads"] == 0 and sized["d_model"] % 2 == 0
    if preset == "cnn":
        assert [k for _, k in sized["encoder_layers"]] == [k for _, k in original["encoder_layers"]]


def test_count_matches_a_real_model():
    cfg = _model_cfg("rnnsearch_small")
    from seqbench.training.run import instantiate_model

    torch.manual_seed(0)
    assert count_parameters(cfg, 300, 280) == instantiate_model(cfg, 300, 280).num_parameters()


def test_unreachable_budget_is_a_config_error():
    with pytest.raises(ConfigError, match="compare.param_budget=1000"):
        fit_to_budget(_model_cfg("transformer"), 1000, 4000, 4000)  # the smallest embeddings alone are larger
