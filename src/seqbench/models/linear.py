"""nn.Linear whose float32 inference on the CPU goes through oneDNN (the library PyTorch bundles as MKL-DNN) when the
product is large enough to pay for it; training, autocast, other devices and small products keep F.linear.

Why: on the decode step's shapes F.linear's library (MKL's sgemm) was the slower of the two on the CPU measured, by
most on the output projection to a large vocabulary, while oneDNN's fixed cost per call makes small products slower
through it; MIN_MULTIPLY_ADDS is where the two crossed. The measurements, per product and end to end (the same
hypotheses either way), are in docs/speed.md ("Measured 2026-12-03 (night)") and
docs/results/bench/2026-12-03_onednn_linear.txt.

The library that wins depends on the CPU, so the path can be turned off (for comparison, or where it measures
slower): by a run's config key `onednn_linear`, recorded in results.json and applied by `use_onednn` before the model
is built. Its default, and the switch of a process that reads no config (translate, bench), is the environment:
SEQBENCH_ONEDNN_LINEAR=0 turns it off.

oneDNN reads the weight in its own blocked layout: given a plain matrix, it reorders the weight on every call. The
layout is therefore made once per weight (`packed`) and kept beside it, outside the module (so it never reaches a
state dict, a copy or a device move), until the weight changes (an optimizer step, a loaded checkpoint): the same
products, bit for bit, up to 1.85x faster on the decode step's shapes, and decoding 1.05-1.10x faster end to end
(docs/speed.md, "Measured 2026-12-06 (later)").
"""
from __future__ import annotations

import os
import weakref

import torch
import torch.nn.functional as F
from torch import nn

MIN_MULTIPLY_ADDS = 2 ** 23  # below this, oneDNN's fixed cost per call outweighs its faster product
ENVIRONMENT = "SEQBENCH_ONEDNN_LINEAR"
AVAILABLE = torch.backends.mkldnn.is_available() and hasattr(torch.ops.mkldnn, "_linear_pointwise")


def environment_default() -> bool:
    """Whether the environment leaves the oneDNN path on: unless SEQBENCH_ONEDNN_LINEAR=0."""
    return os.environ.get(ENVIRONMENT, "1") != "0"


ENABLED = AVAILABLE and environment_default()  # this process's switch; a run sets it from its config (use_onednn)


def use_onednn(enabled: bool) -> None:
    """Turns the oneDNN path on or off for every Linear of this process (a torch build without it stays off)."""
    global ENABLED
    ENABLED = AVAILABLE and enabled


def uses_onednn(x: torch.Tensor, weight: torch.Tensor) -> bool:
    """Whether x @ weight.T (+ bias) goes through oneDNN: float32 inference on the CPU, large enough, enabled."""
    return (ENABLED and not torch.is_grad_enabled() and x.device.type == "cpu"  # training stops here
            and x.dtype == weight.dtype == torch.float32 and not torch.is_autocast_enabled("cpu")
            and x.numel() * weight.size(0) >= MIN_MULTIPLY_ADDS)


_PACKED: dict[int, tuple] = {}  # id(weight) -> ((its version, its storage), layout); dropped with the weight


def packed(weight: torch.Tensor) -> torch.Tensor:
    """The weight [out, in] in oneDNN's layout, made once and remade when the weight has changed since: in place (its
    version counter moved) or re-pointed (`.data =`, a device move). An inference tensor has no version counter to
    tell: it is passed as it is (oneDNN then reorders it per call)."""
    if weight.is_inference():
        return weight
    key = (weight._version, weight.data_ptr())
    held = _PACKED.get(id(weight))
    if held is None or held[0] != key:
        if held is None:
            weakref.finalize(weight, _PACKED.pop, id(weight), None)
        held = _PACKED[id(weight)] = (key, torch.ops.mkldnn._reorder_linear_weight(weight.detach(), None))
    return held[1]


def linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
    """F.linear (x [..., in], weight [out, in] -> [..., out]), through oneDNN where `uses_onednn` says so."""
    if not uses_onednn(x, weight):
        return F.linear(x, weight, bias)
    rows = x.reshape(-1, x.size(-1))  # oneDNN's linear takes a matrix
    return torch.ops.mkldnn._linear_pointwise(rows, packed(weight), bias, "none", [], "").view(
        *x.shape[:-1], weight.size(0))


class Linear(nn.Linear):
    """nn.Linear (same parameters, state-dict keys and initialisation) computed by `linear`."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return linear(x, self.weight, self.bias)
