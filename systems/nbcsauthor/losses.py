"""Metric-learning objectives on episode embeddings z: NBC-Softmax (written here, paper eq. 7-11),
SYSML's softmax, and CosFace, ArcFace, MultiSimilarity and contrastive from pytorch-metric-learning.

Each loss is a part (a frozen dataclass of its settings, chosen with `--param loss=NAME`) whose
`build(num_classes, dim)` makes the module, called as `loss(z, labels)` with integer class labels (the
loss-part interface of toolkit.metric_losses);
the ones with class weights (softmax, NBC-Softmax, CosFace, ArcFace) own them, so a multitask model
builds one per head. `module.terms(z, labels)` gives the loss as its weighted terms (they sum to it),
so training can log each term's gradient (`term_gradient_norms`).

NBC-Softmax follows the paper's equations: l = alpha * l_SCE + (1 - alpha) * l_NEG with
l_NEG = 1/|C'| * log sum_{a != b in C'} exp(tau * cos(mu_a, mu_b)) over the centres mu of the
classes present in the batch (eq. 8-11). The temperature *multiplies* the cosine there (eq. 8,
`temperature_form="multiply"`, the default); `temperature_form="divide"` is the usual contrastive
form, exp(cos / tau). The authors' released `code.py` (gayanku/NBC-Softmax) also multiplies, but
differs otherwise: it keeps each class's exp(0) for the zeroed diagonal, takes the mean over the
classes of each class's log-sum instead of one log over all pairs, and then divides by the number
of *all* training classes (on top of that mean); it can contrast a learnt projection of z, but its
README runs it with `proj_dim=0`, i.e. on z itself. We follow the paper.

Why the term hardly trains with the multiplied temperature: d l_NEG / d cos(mu_a, mu_b) =
tau * w_ab / |C'|, where the weights w_ab (a softmax over the |C'|^2 - |C'| pairs) sum to 1; with
tau * cos in [-tau, tau] they stay near uniform, so each pair gets about tau / |C'|^3, and the
gradient reaching z is orders of magnitude below the cross-entropy's (the value of l_NEG itself
sits near log(|C'|^2 - |C'|) / |C'|, a constant offset). Dividing by tau (1/tau = 5 at 0.2)
sharpens the weights on the closest pairs and scales the slope by 1/tau instead of tau.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch
import torch.nn.functional as F
from torch import nn


def _full(x: torch.Tensor) -> torch.Tensor:
    """Half-precision activations (autocast on CUDA) in float32 for the loss; float32/64 unchanged."""
    return x.float() if x.dtype in (torch.float16, torch.bfloat16) else x


def class_centres(z: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Eq. 9-10: the mean embedding of each class present in the batch (C' rows, by increasing label)."""
    present, inverse = torch.unique(labels, return_inverse=True)
    sums = torch.zeros(len(present), z.shape[1], dtype=z.dtype, device=z.device).index_add(0, inverse, z)
    counts = torch.bincount(inverse, minlength=len(present)).to(z.dtype)
    return sums / counts[:, None]


TEMPERATURE_FORMS = ("multiply", "divide")


def negative_block_loss(z: torch.Tensor, labels: torch.Tensor, tau: float, form: str = "multiply") -> torch.Tensor:
    """Eq. 8: l_NEG = 1/|C'| * log sum_{a != b in C'} exp(s(mu_a, mu_b)), with s = tau * cos (the
    paper's form, `form="multiply"`) or s = cos / tau (the usual contrastive form, `form="divide"`).

    Only classes present in the batch take part (eq. 10). With fewer than two present the sum is
    empty and the term is defined as 0 (nothing to push apart).
    """
    if form not in TEMPERATURE_FORMS:
        raise ValueError(f"temperature form must be one of {', '.join(TEMPERATURE_FORMS)}, not {form!r}")
    centres = class_centres(_full(z), labels)
    count = centres.shape[0]
    if count < 2:
        return centres.new_zeros(())
    unit = F.normalize(centres, dim=1, eps=1e-12)
    cosine = unit @ unit.T
    similarity = tau * cosine if form == "multiply" else cosine / tau
    off_diagonal = ~torch.eye(count, dtype=torch.bool, device=z.device)
    return torch.logsumexp(similarity[off_diagonal], dim=0) / count


def term_gradient_norms(terms: dict[str, torch.Tensor], z: torch.Tensor) -> dict[str, torch.Tensor]:
    """The Frobenius norm of each (weighted) loss term's gradient with respect to the batch's z.

    The graph is kept for the step's own backward pass; a term that does not depend on z (l_NEG of
    a batch with one class) has gradient 0. Norms come back as detached 0-d tensors (no device sync).
    """
    norms = {}
    for name, term in terms.items():
        if not term.requires_grad:
            norms[name] = torch.zeros((), device=z.device)
            continue
        (grad,) = torch.autograd.grad(term, z, retain_graph=True, allow_unused=True)
        norms[name] = torch.zeros((), device=z.device) if grad is None else grad.detach().float().norm()
    return norms


class SoftmaxLoss(nn.Module):
    """Eq. 7: cross-entropy of a linear classifier over the classes (SYSML's metric objective)."""

    def __init__(self, num_classes: int, dim: int) -> None:
        super().__init__()
        self.classifier = nn.Linear(dim, num_classes)

    def terms(self, z: torch.Tensor, labels: torch.Tensor) -> dict[str, torch.Tensor]:
        return {"ce": F.cross_entropy(_full(self.classifier(z)), labels)}

    def forward(self, z: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return self.terms(z, labels)["ce"]


class NBCSoftmaxLoss(nn.Module):
    """Eq. 11: alpha * softmax cross-entropy + (1 - alpha) * the negative block contrastive term."""

    def __init__(
        self, num_classes: int, dim: int, tau: float = 0.2, alpha: float = 0.5, temperature_form: str = "multiply"
    ) -> None:
        super().__init__()
        if not 0.0 <= alpha <= 1.0:
            raise ValueError(f"alpha must lie in [0, 1], got {alpha!r}")
        if temperature_form not in TEMPERATURE_FORMS:
            forms = ", ".join(TEMPERATURE_FORMS)
            raise ValueError(f"temperature_form must be one of {forms}, not {temperature_form!r}")
        self.softmax = SoftmaxLoss(num_classes, dim)
        self.tau = float(tau)
        self.alpha = float(alpha)
        self.temperature_form = temperature_form

    def terms(self, z: torch.Tensor, labels: torch.Tensor) -> dict[str, torch.Tensor]:
        """The two weighted terms of eq. 11: "ce" = alpha * l_SCE, "nbc" = (1 - alpha) * l_NEG."""
        negative = negative_block_loss(z, labels, self.tau, self.temperature_form)
        return {"ce": self.alpha * self.softmax(z, labels), "nbc": (1.0 - self.alpha) * negative}

    def forward(self, z: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        terms = self.terms(z, labels)
        return terms["ce"] + terms["nbc"]


class MetricLearningLoss(nn.Module):
    """A pytorch-metric-learning loss module, given z in full precision."""

    def __init__(self, loss: nn.Module) -> None:
        super().__init__()
        self.loss = loss

    def terms(self, z: torch.Tensor, labels: torch.Tensor) -> dict[str, torch.Tensor]:
        return {"loss": self.loss(_full(z), labels)}

    def forward(self, z: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return self.loss(_full(z), labels)


@dataclass(frozen=True)
class NBCSoftmax:
    """NBC-Softmax (eq. 11): `tau` the temperature of the centres' cosines, `alpha` weighs the
    cross-entropy against the negative block term (paper: 0.2 single-market, 0.3 multitask; 0.5).

    temperature_form: "multiply" (the paper's eq. 8, exp(tau * cos)) or "divide" (the usual
    contrastive form, exp(cos / tau)).
    """

    name: ClassVar[str] = "nbc_softmax"
    tau: float = 0.2
    alpha: float = 0.5
    temperature_form: str = "multiply"

    def __post_init__(self) -> None:
        if not 0.0 <= self.alpha <= 1.0:
            raise ValueError(f"alpha must lie in [0, 1], got {self.alpha!r}")
        if not self.tau > 0:
            raise ValueError(f"tau must be positive, got {self.tau!r}")
        if self.temperature_form not in TEMPERATURE_FORMS:
            forms = ", ".join(TEMPERATURE_FORMS)
            raise ValueError(f"temperature_form must be one of {forms}, not {self.temperature_form!r}")

    def build(self, num_classes: int, dim: int) -> nn.Module:
        return NBCSoftmaxLoss(num_classes, dim, tau=self.tau, alpha=self.alpha, temperature_form=self.temperature_form)


@dataclass(frozen=True)
class Softmax:
    """SYSML's softmax cross-entropy over the classes (eq. 7)."""

    name: ClassVar[str] = "softmax"

    def build(self, num_classes: int, dim: int) -> nn.Module:
        return SoftmaxLoss(num_classes, dim)


class _MarginLoss:
    """What CosFace and ArcFace share: pytorch-metric-learning's loss `PML_LOSS` over learnt class centres.

    Not a dataclass: the subclasses declare `margin` and `scale` (their fields) with their own defaults.
    """

    PML_LOSS: ClassVar[str]
    margin: float
    scale: float

    def __post_init__(self) -> None:  # a dataclass subclass's __init__ calls it
        if not self.margin >= 0 or not self.scale > 0:  # accepted silently before (audit 22, F6)
            raise ValueError(f"margin must be >= 0 and scale > 0, got {self.margin!r} and {self.scale!r}")

    def build(self, num_classes: int, dim: int) -> nn.Module:
        from pytorch_metric_learning import losses

        loss = getattr(losses, self.PML_LOSS)
        return MetricLearningLoss(
            loss(num_classes=num_classes, embedding_size=dim, margin=self.margin, scale=self.scale)
        )


@dataclass(frozen=True)
class CosFace(_MarginLoss):
    """pytorch-metric-learning's CosFaceLoss (its defaults: margin 0.35, scale 64)."""

    name: ClassVar[str] = "cosface"
    PML_LOSS: ClassVar[str] = "CosFaceLoss"
    margin: float = 0.35
    scale: float = 64.0


@dataclass(frozen=True)
class ArcFace(_MarginLoss):
    """pytorch-metric-learning's ArcFaceLoss (its defaults: margin 28.6 degrees, scale 64)."""

    name: ClassVar[str] = "arcface"
    PML_LOSS: ClassVar[str] = "ArcFaceLoss"
    margin: float = 28.6
    scale: float = 64.0


@dataclass(frozen=True)
class MultiSimilarity:
    """pytorch-metric-learning's MultiSimilarityLoss on the batch's pairs (its defaults: 2, 50, 0.5)."""

    name: ClassVar[str] = "multi_similarity"
    alpha: float = 2.0
    beta: float = 50.0
    base: float = 0.5

    def __post_init__(self) -> None:
        if not self.alpha > 0 or not self.beta > 0:
            raise ValueError(f"alpha and beta must be positive, got {self.alpha!r} and {self.beta!r}")

    def build(self, num_classes: int, dim: int) -> nn.Module:
        from pytorch_metric_learning import losses

        return MetricLearningLoss(losses.MultiSimilarityLoss(alpha=self.alpha, beta=self.beta, base=self.base))


@dataclass(frozen=True)
class Contrastive:
    """pytorch-metric-learning's ContrastiveLoss on the batch's pairs (its defaults: margins 0 and 1)."""

    name: ClassVar[str] = "contrastive"
    pos_margin: float = 0.0
    neg_margin: float = 1.0

    def __post_init__(self) -> None:  # distances: positives pulled within pos_margin, negatives pushed past neg_margin
        if not 0 <= self.pos_margin < self.neg_margin:
            raise ValueError(
                "the margins must satisfy 0 <= pos_margin < neg_margin, got "
                f"{self.pos_margin!r} and {self.neg_margin!r}"
            )

    def build(self, num_classes: int, dim: int) -> nn.Module:
        from pytorch_metric_learning import losses

        return MetricLearningLoss(losses.ContrastiveLoss(pos_margin=self.pos_margin, neg_margin=self.neg_margin))


LOSSES = (NBCSoftmax, Softmax, CosFace, ArcFace, MultiSimilarity, Contrastive)
Loss = NBCSoftmax | Softmax | CosFace | ArcFace | MultiSimilarity | Contrastive
