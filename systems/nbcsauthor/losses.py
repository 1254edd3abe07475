"""Metric-learning objectives on episode embeddings z: NBC-Softmax (written here, paper eq. 7-11),
SYSML's softmax, and CosFace, ArcFace, MultiSimilarity and contrastive from pytorch-metric-learning.

Every loss is a module called as `loss(z, labels)` with integer class labels; the ones with class
weights (softmax, NBC-Softmax, CosFace, ArcFace) own them, so a multitask model has one per head.

NBC-Softmax follows the paper's equations, not the authors' released `code.py` (gayanku/NBC-Softmax),
which differs: it contrasts a learnt linear projection of z, takes the mean over classes of each
class's log-sum (with the exp(0) of the diagonal kept) rather than one log over all pairs, and
divides by the number of all classes rather than |C'|. Either way the term is small next to the
cross-entropy: with |C'| classes in a batch, l_NEG lies near log(|C'|^2 - |C'|) / |C'|.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

LOSSES = ("nbc_softmax", "softmax", "cosface", "arcface", "multi_similarity", "contrastive")


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


class NBCSoftmax(nn.Module):
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
    """A pytorch-metric-learning loss (CosFace, ArcFace, MultiSimilarity, contrastive), with defaults."""

    def __init__(self, name: str, num_classes: int, dim: int) -> None:
        super().__init__()
        from pytorch_metric_learning import losses

        if name == "cosface":
            self.loss = losses.CosFaceLoss(num_classes=num_classes, embedding_size=dim)
        elif name == "arcface":
            self.loss = losses.ArcFaceLoss(num_classes=num_classes, embedding_size=dim)
        elif name == "multi_similarity":
            self.loss = losses.MultiSimilarityLoss()
        elif name == "contrastive":
            self.loss = losses.ContrastiveLoss()
        else:
            raise ValueError(f"not a pytorch-metric-learning loss here: {name!r}")

    def forward(self, z: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return self.loss(_full(z), labels)


def make_loss(name: str, num_classes: int, dim: int, *, tau: float = 0.2, alpha: float = 0.5) -> nn.Module:
    """The loss module `name` (one of LOSSES) for `num_classes` classes of `dim`-dimensional z."""
    if name == "nbc_softmax":
        return NBCSoftmax(num_classes, dim, tau=tau, alpha=alpha)
    if name == "softmax":
        return SoftmaxLoss(num_classes, dim)
    if name in LOSSES:
        return MetricLearningLoss(name, num_classes, dim)
    raise ValueError(f"loss must be one of {LOSSES}, not {name!r}")
