import math

import torch

from seqbench.common.tokens import PAD_ID
from seqbench.models.losses import label_smoothed_nll


def test_label_smoothing_matches_hand_computation():
    # one sentence, two real tokens and one pad, vocabulary of 4 (ids 0..3; 0 is pad)
    logits = torch.tensor([[[0.0, 1.0, 2.0, 3.0], [1.0, 1.0, 1.0, 1.0], [5.0, 0.0, 0.0, 0.0]]])
    target = torch.tensor([[2, 1, PAD_ID]])
    eps = 0.1
    expected = 0.0
    for row, gold in ((logits[0, 0], 2), (logits[0, 1], 1)):
        logp = [x - math.log(sum(math.exp(v) for v in row.tolist())) for x in row.tolist()]
        # torch's smoothing: (1 - eps) on the gold class + eps spread uniformly over all V classes
        expected += -(1 - eps) * logp[gold] - eps * sum(logp) / 4
    loss, nll = label_smoothed_nll(logits, target, eps)
    assert math.isclose(loss.item(), expected / 2, rel_tol=1e-6)
    plain = -(math.log(math.exp(2) / sum(math.exp(v) for v in range(4))) + math.log(0.25)) / 2
    assert math.isclose(nll.item(), plain, rel_tol=1e-6)


def test_padding_is_ignored():
    logits = torch.randn(2, 5, 7)
    target = torch.randint(1, 7, (2, 5))
    target[1, 3:] = PAD_ID
    changed = logits.clone()
    changed[1, 3:] = torch.randn(2, 7) * 100
    assert torch.allclose(label_smoothed_nll(logits, target, 0.1)[0], label_smoothed_nll(changed, target, 0.1)[0])


def test_loss_and_its_gradient_are_torch_label_smoothed_cross_entropy():
    torch.manual_seed(0)
    logits = torch.randn(3, 6, 11, requires_grad=True)
    target = torch.randint(1, 11, (3, 6))
    target[0, 4:] = PAD_ID
    for eps in (0.0, 0.2):
        loss, nll = label_smoothed_nll(logits, target, eps)
        expected = torch.nn.functional.cross_entropy(logits.view(-1, 11), target.view(-1), ignore_index=PAD_ID,
                                                     label_smoothing=eps)
        assert torch.allclose(loss, expected, atol=1e-6)
        assert torch.allclose(torch.autograd.grad(loss, logits)[0], torch.autograd.grad(expected, logits)[0],
                              atol=1e-7)
        assert not nll.requires_grad
        assert torch.allclose(nll, torch.nn.functional.cross_entropy(logits.view(-1, 11), target.view(-1),
                                                                     ignore_index=PAD_ID), atol=1e-6)
