"""The modified contrastive loss on cosine similarity, over all pairs of a batch (the paper's eq. 1).

A batch holds B authors, two chunks each: anchors `a[i]` and positives `b[i]` by the same author,
and every author at most once. The B x B matrix `S[i, j] = cos(a[i], b[j])` has the same-author
pairs on its diagonal and different-author pairs everywhere else (the paper's Figure 5). Each entry
contributes

    Y = 1 (i == j):  1/2 * max(m_p - S, 0)^2     a positive is pulled up until it reaches m_p
    Y = 0 (i != j):  1/2 * max(S - m_n, 0)^2     a negative is pushed down until it falls below m_n

and the loss is the mean over all B * B entries. The paper prints the margins the way round that
suits a distance (max(D - m_p, 0) for Y = 1); with D a similarity in [-1, 1] and its margins
m_p = 1, m_n = 0 that would never pull positives together, while its text says "values above the
positive margin and under the negative margin do not contribute", which is the form above.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch

from systems.siamese_bilstm.model import cosine_matrix
from systems.siamese_bilstm.settings import coerce


@dataclass(frozen=True)
class ModifiedContrastive:
    """The modified contrastive loss as a part of `SiameseBiLSTM`: its margins m_p and m_n (paper: 1 and 0)."""

    name: ClassVar[str] = "modified_contrastive"
    positive_margin: float = 1.0
    negative_margin: float = 0.0

    def __post_init__(self) -> None:
        coerce(self, "positive_margin", float)
        coerce(self, "negative_margin", float)

    def __call__(self, anchors: torch.Tensor, positives: torch.Tensor) -> torch.Tensor:
        """The loss of one batch (see `modified_contrastive_loss`)."""
        return modified_contrastive_loss(
            anchors, positives, positive_margin=self.positive_margin, negative_margin=self.negative_margin
        )


def modified_contrastive_loss(
    anchors: torch.Tensor,
    positives: torch.Tensor,
    *,
    positive_margin: float = 1.0,
    negative_margin: float = 0.0,
) -> torch.Tensor:
    """Mean over all B x B anchor/positive pairs; row i of both inputs is author i."""
    if anchors.shape != positives.shape or anchors.dim() != 2:
        raise ValueError(
            f"expected two (B, d) tensors of one shape, got {tuple(anchors.shape)}, {tuple(positives.shape)}"
        )
    similarity = cosine_matrix(anchors, positives)
    same = torch.eye(similarity.shape[0], dtype=torch.bool, device=similarity.device)
    pull = torch.clamp(positive_margin - similarity, min=0.0) ** 2
    push = torch.clamp(similarity - negative_margin, min=0.0) ** 2
    return 0.5 * torch.where(same, pull, push).mean()
