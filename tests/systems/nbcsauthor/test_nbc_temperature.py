"""NBC-Softmax's two temperature forms against hand computations, and the per-term gradient norms
that training logs for each of them."""

from __future__ import annotations

import math

import pytest
import torch
from helpers.darkweb_data import TINY_PARAMS, synthetic_split

from core.errors import HarnessError
from harness.params import build
from systems.nbcsauthor.losses import NBCSoftmax, NBCSoftmaxLoss, negative_block_loss, term_gradient_norms
from systems.nbcsauthor.system import SYSML, EpisodeAuthor

# three classes, one sample each: the centres are the rows; cos(0,1) = 0, cos(0,2) = cos(1,2) = 1/sqrt(2)
Z = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
LABELS = torch.tensor([0, 1, 2])


def test_divide_form_matches_a_hand_computation():
    # eq. 8 with s = cos / tau, tau = 0.5: each unordered pair counted twice (a != b, both orders)
    expected = math.log(2 * math.exp(0.0) + 4 * math.exp(math.sqrt(2))) / 3
    assert negative_block_loss(Z, LABELS, 0.5, "divide").item() == pytest.approx(expected, rel=1e-6)


def test_multiply_form_is_the_papers_and_stays_the_default():
    expected = math.log(2 * math.exp(0.0) + 4 * math.exp(0.5 / math.sqrt(2))) / 3
    assert negative_block_loss(Z, LABELS, 0.5).item() == pytest.approx(expected, rel=1e-6)
    assert negative_block_loss(Z, LABELS, 0.5, "multiply").item() == pytest.approx(expected, rel=1e-6)
    assert NBCSoftmax().temperature_form == "multiply"


def test_the_divide_form_in_the_combined_loss():
    torch.manual_seed(0)
    z = torch.randn(6, 4)
    labels = torch.tensor([0, 0, 1, 2, 2, 3])
    loss = NBCSoftmax(tau=0.25, alpha=0.3, temperature_form="divide").build(5, 4)
    assert isinstance(loss, NBCSoftmaxLoss)
    ce = torch.nn.functional.cross_entropy(loss.softmax.classifier(z), labels)
    # by hand: class centres, their cosines, logsumexp over ordered pairs of different classes
    centres = torch.stack([z[labels == c].mean(0) for c in (0, 1, 2, 3)])
    unit = centres / centres.norm(dim=1, keepdim=True)
    pairs = [(unit[a] @ unit[b]) / 0.25 for a in range(4) for b in range(4) if a != b]
    negative = torch.logsumexp(torch.stack(pairs), 0) / 4
    assert loss(z, labels).item() == pytest.approx((0.3 * ce + 0.7 * negative).item(), rel=1e-5)
    terms = loss.terms(z, labels)
    assert terms["ce"].item() == pytest.approx(0.3 * ce.item(), rel=1e-5)
    assert terms["nbc"].item() == pytest.approx(0.7 * negative.item(), rel=1e-5)


def test_an_unknown_form_or_a_non_positive_tau_is_refused():
    with pytest.raises(ValueError, match="temperature_form must be one of multiply, divide, not 'power'"):
        NBCSoftmax(temperature_form="power")
    with pytest.raises(ValueError, match="tau must be positive, got 0"):
        NBCSoftmax(tau=0)
    with pytest.raises(HarnessError, match="loss: temperature_form must be one of"):
        build(EpisodeAuthor, {"loss.temperature_form": "exp"})


def test_term_gradient_norms_are_each_terms_own_gradient():
    torch.manual_seed(1)
    z = torch.randn(8, 3, requires_grad=True)
    labels = torch.tensor([0, 0, 1, 1, 2, 2, 3, 3])
    loss = NBCSoftmax(tau=0.2).build(4, 3)
    terms = loss.terms(z, labels)
    norms = term_gradient_norms(terms, z)
    for name in ("ce", "nbc"):
        (alone,) = torch.autograd.grad(loss.terms(z, labels)[name], z)
        assert norms[name].item() == pytest.approx(alone.norm().item(), rel=1e-6)
    # the graph is kept for the step's own backward pass
    (terms["ce"] + terms["nbc"]).backward()
    assert z.grad is not None
    # the scale the issue measured: tau multiplying the cosine leaves the block term's slope tiny
    divided = term_gradient_norms(NBCSoftmax(tau=0.2, temperature_form="divide").build(4, 3).terms(z, labels), z)
    assert divided["nbc"] > 5 * norms["nbc"]
    # one class in the batch: the block term is 0 and has no gradient
    single = term_gradient_norms(loss.terms(z[:2], labels[:2]), z)
    assert single["nbc"].item() == 0.0


@pytest.fixture(scope="module")
def train():
    return synthetic_split("train")


@pytest.mark.parametrize("form", ["multiply", "divide"])
def test_training_logs_both_terms_gradient_norms_per_epoch(form: str, train):
    system = build(EpisodeAuthor, {**TINY_PARAMS, "loss.temperature_form": form})
    system.fit(train, seed=0)
    epochs = system.info["epochs"]
    assert [e["epoch"] for e in epochs] == [1, 2]
    for record in epochs:
        assert record["grad_z_ce"] > 0 and record["grad_z_nbc"] > 0, record
        assert record["lr"] == system.training.lr
    assert system.params()["loss"]["temperature_form"] == form


def test_the_divide_form_gives_the_block_term_a_larger_gradient(train):
    norms = {}
    for form in ("multiply", "divide"):
        system = build(EpisodeAuthor, {**TINY_PARAMS, "training.epochs": 1, "loss.temperature_form": form})
        system.fit(train, seed=0)
        norms[form] = system.info["epochs"][0]["grad_z_nbc"]
    assert norms["divide"] > 5 * norms["multiply"], norms


def test_softmax_logs_its_one_term(train):
    system = build(SYSML, {**TINY_PARAMS, "training.epochs": 1})
    system.fit(train, seed=0)
    record = system.info["epochs"][0]
    assert record["grad_z_ce"] > 0 and "grad_z_nbc" not in record
