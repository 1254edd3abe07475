"""The modified contrastive loss on cosine similarity, over all pairs of a batch (the paper's eq. 1).

A batch holds B authors, two chunks each: its 2B embeddings are the B anchors `a[i]`, then their B
positives `b[i]`, with each row's author as its label (`AuthorBatchSampler` draws every author at most
once). The B x B matrix `S[i, j] = cos(a[i], b[j])` has the same-author pairs (Y = 1, equal labels) on its
diagonal and different-author pairs (Y = 0) everywhere else (the paper's Figure 5). Each entry contributes

    Y = 1:  1/2 * max(m_p - S, 0)^2     a positive is pulled up until it reaches m_p
    Y = 0:  1/2 * max(S - m_n, 0)^2     a negative is pushed down until it falls below m_n

and the loss is the mean over all B * B entries. The paper prints the margins the way round that
suits a distance (max(D - m_p, 0) for Y = 1); with D a similarity in [-1, 1] and its margins
m_p = 1, m_n = 0 that would never pull positives together, while its text says "values above the
positive margin and under the negative margin do not contribute", which is the form above.

The part follows the interface of the project's loss parts (`toolkit.metric_losses`): `build(num_classes,
dim)` makes the loss, called as `loss(embeddings, labels)`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch

from harness.params import coerce
from systems.siamese_bilstm.model import cosine_matrix
from toolkit.metric_losses import LossFunction


@dataclass(frozen=True)
class ModifiedContrastive:
    """The modified contrastive loss as a part of `SiameseBiLSTM`: its margins m_p and m_n (paper: 1 and 0)."""

    name: ClassVar[str] = "modified_contrastive"
    positive_margin: float = 1.0
    negative_margin: float = 0.0

    def __post_init__(self) -> None:
        coerce(self, "positive_margin", float)
        coerce(self, "negative_margin", float)
        # margins on the cosine: outside [-1, 1], or m_n >= m_p, a pull or push never acts (audit 22, F6)
        if not -1.0 <= self.negative_margin < self.positive_margin <= 1.0:
            raise ValueError(
                "the margins must satisfy -1 <= negative_margin < positive_margin <= 1 (cosine similarities), got "
                f"{self.negative_margin!r} and {self.positive_margin!r}"
            )

    def build(self, num_classes: int, dim: int) -> LossFunction:
        """The loss as a function of (embeddings, labels) (`modified_contrastive_loss`); it has no class weights."""
        return lambda embeddings, labels: modified_contrastive_loss(
            embeddings, labels, positive_margin=self.positive_margin, negative_margin=self.negative_margin
        )


def modified_contrastive_loss(
    embeddings: torch.Tensor,
    labels: torch.Tensor,
    *,
    positive_margin: float = 1.0,
    negative_margin: float = 0.0,
) -> torch.Tensor:
    """Mean over all B x B anchor/positive pairs of a (2B, d) batch: B anchors, then their B positives.

    `labels` (2B,) are the rows' authors: a pair is same-author where its anchor's and positive's are equal.
    """
    if embeddings.dim() != 2 or embeddings.shape[0] % 2 or tuple(labels.shape) != tuple(embeddings.shape[:1]):
        raise ValueError(
            "expected (2B, d) embeddings, B anchors then B positives, and (2B,) labels; got "
            f"{tuple(embeddings.shape)}, {tuple(labels.shape)}"
        )
    half = embeddings.shape[0] // 2
    similarity = cosine_matrix(embeddings[:half], embeddings[half:])
    same = labels[:half, None] == labels[None, half:]
    pull = torch.clamp(positive_margin - similarity, min=0.0) ** 2
    push = torch.clamp(similarity - negative_margin, min=0.0) ** 2
    return 0.5 * torch.where(same, pull, push).mean()
