"""NBC-Softmax against a plain Python computation of the paper's eq. 7-11; every loss part builds a loss that trains."""

from __future__ import annotations

import math
import random

import pytest
import torch

from systems.nbcsauthor.losses import (
    LOSSES,
    ArcFace,
    CosFace,
    NBCSoftmax,
    NBCSoftmaxLoss,
    class_centres,
    negative_block_loss,
)


def plain_nbc(z: list[list[float]], labels: list[int], weight: list[list[float]], bias: list[float], tau, alpha):
    """Eq. 7-11 with lists and loops: softmax CE over all classes + l_NEG over the classes present."""
    n, classes = len(z), len(weight)
    ce = 0.0
    for i in range(n):
        logits = [sum(w * x for w, x in zip(weight[c], z[i], strict=True)) + bias[c] for c in range(classes)]
        top = max(logits)
        ce -= logits[labels[i]] - (top + math.log(sum(math.exp(v - top) for v in logits)))
    ce /= n
    # eq. 9-10: the centre of each class with at least one sample in the batch
    present = sorted(set(labels))
    centres = []
    for c in present:
        members = [z[i] for i in range(n) if labels[i] == c]
        centres.append([sum(col) / len(members) for col in zip(*members, strict=True)])

    def cosine(a, b):
        dot = sum(x * y for x, y in zip(a, b, strict=True))
        return dot / (math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b)))

    # eq. 8: 1/|C'| log sum_{a != b} exp(sim * tau)
    total = sum(
        math.exp(cosine(centres[a], centres[b]) * tau)
        for a in range(len(present))
        for b in range(len(present))
        if a != b
    )
    negative = math.log(total) / len(present) if len(present) > 1 else 0.0
    return alpha * ce + (1 - alpha) * negative, negative


@pytest.mark.parametrize("seed", range(6))
def test_nbc_softmax_matches_plain_python(seed: int):
    rng = random.Random(seed)
    classes, dim, n = 7, 4, rng.randint(3, 12)
    # labels drawn from a subset: some classes are absent from the batch
    labels = [rng.choice([0, 2, 3, 5]) for _ in range(n)]
    z = [[rng.gauss(0, 1) for _ in range(dim)] for _ in range(n)]
    tau, alpha = rng.choice([0.2, 0.3, 1.0]), rng.choice([0.5, 0.25, 1.0])
    loss = NBCSoftmax(tau=tau, alpha=alpha).build(classes, dim).double()
    assert isinstance(loss, NBCSoftmaxLoss)
    weight = loss.softmax.classifier.weight.tolist()
    bias = loss.softmax.classifier.bias.tolist()
    got = loss(torch.tensor(z, dtype=torch.float64), torch.tensor(labels))
    expected, negative = plain_nbc(z, labels, weight, bias, tau, alpha)
    assert got.item() == pytest.approx(expected, rel=1e-9, abs=1e-12)
    assert negative_block_loss(torch.tensor(z), torch.tensor(labels), tau).item() == pytest.approx(negative, rel=1e-5)


def test_absent_classes_take_no_part_and_one_class_gives_zero():
    z = torch.tensor([[1.0, 0.0], [3.0, 0.0], [0.0, 2.0]])
    centres = class_centres(z, torch.tensor([4, 4, 9]))
    assert centres.tolist() == [[2.0, 0.0], [0.0, 2.0]]  # rows for classes 4 and 9 only, means of members
    # two orthogonal centres: log(2 * exp(0)) / 2, whatever the number of classes the head has
    assert negative_block_loss(z, torch.tensor([4, 4, 9]), 0.2).item() == pytest.approx(math.log(2) / 2)
    assert negative_block_loss(z, torch.tensor([1, 1, 1]), 0.2).item() == 0.0


def test_nbc_term_pushes_class_centres_apart():
    z = torch.tensor([[1.0, 0.1], [1.0, -0.1], [0.9, 0.3]], requires_grad=True)
    labels = torch.tensor([0, 1, 2])
    negative_block_loss(z, labels, 0.2).backward()
    step = z.detach() - 0.5 * z.grad
    before = negative_block_loss(z.detach(), labels, 0.2)
    assert negative_block_loss(step, labels, 0.2) < before


@pytest.mark.parametrize("part", LOSSES, ids=lambda part: part.name)
def test_every_loss_trains_its_parameters(part: type):
    name = part.name
    torch.manual_seed(0)
    z = torch.randn(12, 6, requires_grad=True)
    labels = torch.tensor([0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 0, 1])
    loss = part().build(5, 6)
    value = loss(z, labels)
    value.backward()
    assert torch.isfinite(value) and z.grad is not None and z.grad.abs().sum() > 0
    if name in ("nbc_softmax", "softmax", "cosface", "arcface"):
        assert all(p.grad is not None for p in loss.parameters())  # class weights of their own
    if name in ("cosface", "arcface", "multi_similarity", "contrastive"):
        assert type(loss.loss).__module__.startswith("pytorch_metric_learning")


def test_library_loss_fields_reach_the_library():
    assert (CosFace(margin=0.2, scale=30.0).build(4, 3).loss.margin, ArcFace().build(4, 3).loss.scale) == (0.2, 64.0)
    with pytest.raises(ValueError, match=r"alpha must lie in \[0, 1\], got 1.5"):
        NBCSoftmax(alpha=1.5)
