"""Metric-learning objectives on episode embeddings z: NBC-Softmax (written here, paper eq. 7-11),
SYSML's softmax, and CosFace, ArcFace, MultiSimilarity and contrastive from pytorch-metric-learning.

Each loss is a part (a frozen dataclass of its settings, chosen with `--param loss=NAME`) whose
`build(num_classes, dim)` makes the module, called as `loss(z, labels)` with integer class labels;
the ones with class weights (softmax, NBC-Softmax, CosFace, ArcFace) own them, so a multitask model
builds one per head.

NBC-Softmax follows the paper's equations, not the authors' released `code.py` (gayanku/NBC-Softmax),
which differs: it contrasts a learnt linear projection of z, takes the mean over classes of each
class's log-sum (with the exp(0) of the diagonal kept) rather than one log over all pairs, and
divides by the number of all classes rather than |C'|. Either way the term is small next to the
cross-entropy: with |C'| classes in a batch, l_NEG lies near log(|C'|^2 - |C'|) / |C'|.
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


def negative_block_loss(z: torch.Tensor, labels: torch.Tensor, tau: float) -> torch.Tensor:
    """Eq. 8: l_NEG = 1/|C'| * log sum_{a != b in C'} exp(tau * cos(mu_a, mu_b)).

    Only classes present in the batch take part (eq. 10). With fewer than two present the sum is
    empty and the term is defined as 0 (nothing to push apart).
    """
    centres = class_centres(_full(z), labels)
    count = centres.shape[0]
    if count < 2:
        return centres.new_zeros(())
    unit = F.normalize(centres, dim=1, eps=1e-12)
    similarity = tau * (unit @ unit.T)
    off_diagonal = ~torch.eye(count, dtype=torch.bool, device=z.device)
    return torch.logsumexp(similarity[off_diagonal], dim=0) / count


class SoftmaxLoss(nn.Module):
    """Eq. 7: cross-entropy of a linear classifier over the classes (SYSML's metric objective)."""

    def __init__(self, num_classes: int, dim: int) -> None:
        super().__init__()
        self.classifier = nn.Linear(dim, num_classes)

    def forward(self, z: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return F.cross_entropy(_full(self.classifier(z)), labels)


class NBCSoftmaxLoss(nn.Module):
    """Eq. 11: alpha * softmax cross-entropy + (1 - alpha) * the negative block contrastive term."""

    def __init__(self, num_classes: int, dim: int, tau: float = 0.2, alpha: float = 0.5) -> None:
        super().__init__()
        if not 0.0 <= alpha <= 1.0:
            raise ValueError(f"alpha must lie in [0, 1], got {alpha!r}")
        self.softmax = SoftmaxLoss(num_classes, dim)
        self.tau = float(tau)
        self.alpha = float(alpha)

    def forward(self, z: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return self.alpha * self.softmax(z, labels) + (1.0 - self.alpha) * negative_block_loss(z, labels, self.tau)


class MetricLearningLoss(nn.Module):
    """A pytorch-metric-learning loss module, given z in full precision."""

    def __init__(self, loss: nn.Module) -> None:
        super().__init__()
        self.loss = loss

    def forward(self, z: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return self.loss(_full(z), labels)


@dataclass(frozen=True)
class NBCSoftmax:
    """NBC-Softmax (eq. 11): `tau` multiplies the cosine of class centres, `alpha` weighs the
    cross-entropy against the negative block term (paper: 0.2, 0.5)."""

    name: ClassVar[str] = "nbc_softmax"
    tau: float = 0.2
    alpha: float = 0.5

    def __post_init__(self) -> None:
        if not 0.0 <= self.alpha <= 1.0:
            raise ValueError(f"alpha must lie in [0, 1], got {self.alpha!r}")

    def build(self, num_classes: int, dim: int) -> nn.Module:
        return NBCSoftmaxLoss(num_classes, dim, tau=self.tau, alpha=self.alpha)


@dataclass(frozen=True)
class Softmax:
    """SYSML's softmax cross-entropy over the classes (eq. 7)."""

    name: ClassVar[str] = "softmax"

    def build(self, num_classes: int, dim: int) -> nn.Module:
        return SoftmaxLoss(num_classes, dim)


@dataclass(frozen=True)
class CosFace:
    """pytorch-metric-learning's CosFaceLoss (its defaults: margin 0.35, scale 64)."""

    name: ClassVar[str] = "cosface"
    margin: float = 0.35
    scale: float = 64.0

    def build(self, num_classes: int, dim: int) -> nn.Module:
        from pytorch_metric_learning import losses

        return MetricLearningLoss(
            losses.CosFaceLoss(num_classes=num_classes, embedding_size=dim, margin=self.margin, scale=self.scale)
        )


@dataclass(frozen=True)
class ArcFace:
    """pytorch-metric-learning's ArcFaceLoss (its defaults: margin 28.6 degrees, scale 64)."""

    name: ClassVar[str] = "arcface"
    margin: float = 28.6
    scale: float = 64.0

    def build(self, num_classes: int, dim: int) -> nn.Module:
        from pytorch_metric_learning import losses

        return MetricLearningLoss(
            losses.ArcFaceLoss(num_classes=num_classes, embedding_size=dim, margin=self.margin, scale=self.scale)
        )


@dataclass(frozen=True)
class MultiSimilarity:
    """pytorch-metric-learning's MultiSimilarityLoss on the batch's pairs (its defaults: 2, 50, 0.5)."""

    name: ClassVar[str] = "multi_similarity"
    alpha: float = 2.0
    beta: float = 50.0
    base: float = 0.5

    def build(self, num_classes: int, dim: int) -> nn.Module:
        from pytorch_metric_learning import losses

        return MetricLearningLoss(losses.MultiSimilarityLoss(alpha=self.alpha, beta=self.beta, base=self.base))


@dataclass(frozen=True)
class Contrastive:
    """pytorch-metric-learning's ContrastiveLoss on the batch's pairs (its defaults: margins 0 and 1)."""

    name: ClassVar[str] = "contrastive"
    pos_margin: float = 0.0
    neg_margin: float = 1.0

    def build(self, num_classes: int, dim: int) -> nn.Module:
        from pytorch_metric_learning import losses

        return MetricLearningLoss(losses.ContrastiveLoss(pos_margin=self.pos_margin, neg_margin=self.neg_margin))


LOSSES = (NBCSoftmax, Softmax, CosFace, ArcFace, MultiSimilarity, Contrastive)
Loss = NBCSoftmax | Softmax | CosFace | ArcFace | MultiSimilarity | Contrastive
