"""compare.param_budget: every family resized to within 10% of the budget, with real vocabulary sizes."""
from __future__ import annotations

import pytest
import torch
from omegaconf import OmegaConf

from seqbench.common.errors import ConfigError
from seqbench.models.sizing import TOLERANCE, count_parameters, fit_to_budget

from conftest import compose_train


def _model_cfg(preset: str) -> dict:
    return OmegaConf.to_container(compose_train([f"model={preset}"]).model, resolve=True)


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


@pytest.mark.parametrize("preset", ["transformer", "rnnsearch_small", "cnn"])
def test_the_count_on_the_meta_device_is_the_real_models(preset):
    """Sizing counts parameters of a model built on the meta device (no memory): the same count as the model itself
    on the CPU, tied weights counted once."""
    from seqbench.models.interface import build_model

    cfg = _model_cfg(preset)
    torch.manual_seed(0)
    model = build_model(cfg, 300, 280)
    assert count_parameters(cfg, 300, 280) == len(torch.nn.utils.parameters_to_vector(model.parameters()))


def test_unreachable_budget_is_a_config_error():
    with pytest.raises(ConfigError, match="compare.param_budget=1000"):
        fit_to_budget(_model_cfg("transformer"), 1000, 4000, 4000)  # the smallest embeddings alone are larger
