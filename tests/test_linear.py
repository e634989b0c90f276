"""seqbench.models.linear: oneDNN computes the same products as F.linear, and only where it is meant to."""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from seqbench.models import linear as linear_module
from seqbench.models.linear import MIN_MULTIPLY_ADDS, Linear, linear, uses_onednn

needs_onednn = pytest.mark.skipif(not linear_module.ENABLED, reason="no oneDNN linear in this torch build")


@needs_onednn
@pytest.mark.parametrize("shape", [(600, 256), (3, 200, 256), (1, 1, 33000, 256)])
def test_large_inference_products_go_through_onednn_and_equal_f_linear(shape):
    layer = Linear(256, 64)
    x = torch.randn(*shape)
    with torch.no_grad():
        assert uses_onednn(x, layer.weight)
        torch.testing.assert_close(layer(x), F.linear(x, layer.weight, layer.bias), atol=1e-5, rtol=1e-5)
        strided = torch.randn(shape[0], 512)[:, ::2] if len(shape) == 2 else x.transpose(0, -2).transpose(0, -2)
        torch.testing.assert_close(linear(strided, layer.weight), F.linear(strided, layer.weight))


@needs_onednn
def test_training_autocast_small_products_and_other_dtypes_keep_f_linear():
    layer = Linear(256, 256)
    big = torch.randn(MIN_MULTIPLY_ADDS // (256 * 256), 256)
    with torch.no_grad():
        assert uses_onednn(big, layer.weight)
        assert not uses_onednn(big[:-1], layer.weight)  # one row short of the threshold
        assert not uses_onednn(big.double(), layer.weight.double())
        with torch.autocast("cpu", dtype=torch.bfloat16):
            assert not uses_onednn(big, layer.weight)
            assert layer(big).dtype == torch.bfloat16  # autocast still applies through F.linear
    assert not uses_onednn(big, layer.weight)  # gradients on: training
    layer(big).sum().backward()
    assert layer.weight.grad is not None


def test_switched_off_by_the_environment(monkeypatch):
    monkeypatch.setattr(linear_module, "ENABLED", False)
    with torch.no_grad():
        assert not uses_onednn(torch.randn(4096, 256), torch.randn(256, 256))


def test_a_linear_is_an_nn_linear_with_its_state_dict():
    layer = Linear(8, 4)
    assert isinstance(layer, torch.nn.Linear) and set(layer.state_dict()) == {"weight", "bias"}


def test_the_config_key_defaults_to_the_environment_and_is_checked(monkeypatch):
    from seqbench.common.errors import ConfigError
    from seqbench.config.checks import validate

    from conftest import compose_train

    monkeypatch.delenv(linear_module.ENVIRONMENT, raising=False)
    assert compose_train().onednn_linear is True
    monkeypatch.setenv(linear_module.ENVIRONMENT, "0")
    assert compose_train().onednn_linear is False
    assert compose_train(["onednn_linear=true"]).onednn_linear is True  # the key wins over the environment
    with pytest.raises(ConfigError, match=r"^onednn_linear=1: must be true or false$"):
        validate(compose_train(["onednn_linear=1"]))


def test_a_runs_key_reaches_its_layers_and_its_results_json(tmp_path, monkeypatch):
    from seqbench.rundir.results import read_results

    from conftest import TINY, TINY_MODELS, train_in_process

    monkeypatch.setattr(linear_module, "ENABLED", True)  # on before the run (and restored after the test)
    switch, uses = [], linear_module.uses_onednn
    monkeypatch.setattr(linear_module, "uses_onednn", lambda x, w: switch.append(linear_module.ENABLED) or uses(x, w))
    train_in_process(tmp_path / "run", [*TINY, *TINY_MODELS["transformer"], "onednn_linear=false"])
    assert switch and not any(switch), "every Linear the run called saw the switch its config set"
    assert read_results(tmp_path / "run")["config"]["onednn_linear"] is False


@needs_onednn
def test_the_packed_weight_is_made_once_and_remade_when_the_weight_changes():
    import copy

    layer = Linear(256, 64)
    x = torch.randn(600, 256)
    with torch.no_grad():
        first = linear_module.packed(layer.weight)
        assert linear_module.packed(layer.weight) is first  # kept: made once per weight, not per call
        torch.testing.assert_close(layer(x), F.linear(x, layer.weight, layer.bias), atol=1e-5, rtol=1e-5)
        layer.weight.mul_(2.0)  # an optimizer step, a loaded checkpoint: in place
        assert linear_module.packed(layer.weight) is not first
        torch.testing.assert_close(layer(x), F.linear(x, layer.weight, layer.bias), atol=1e-5, rtol=1e-5)
        layer.weight.data = torch.randn(64, 256) * 0.05  # re-pointed
        torch.testing.assert_close(layer(x), F.linear(x, layer.weight, layer.bias), atol=1e-5, rtol=1e-5)
    twin = copy.deepcopy(layer)  # the layout lives outside the module: copies and state dicts never hold it
    assert set(twin.state_dict()) == {"weight", "bias"}
    with torch.inference_mode():
        torch.testing.assert_close(twin(x), layer(x))
    held = len(linear_module._PACKED)
    del layer, twin
    assert len(linear_module._PACKED) < held  # dropped with its weight
