"""A sample's embedding from its posts' vectors: their mean, a linear projection, L2 normalisation.

The mean over a user's posts is LUAR's idea in its simplest form (Rivera-Soto et al. 2021 pool
post vectors with attention; a mean has no parameters to fit on small data). With `dim` left at
None the projection is square and starts as the identity, so an untrained head (`epochs=0`) gives
the pretrained encoder's own mean-pooled embedding, and training starts from it.

`ProjectionHead` is the head as a part of the system (harness.params); `build` gives the module.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch
from torch import nn
from torch.nn import functional as F


@dataclass(frozen=True)
class ProjectionHead:
    """dim: the embedding's size (None: the encoder's width, the projection starting as the identity)."""

    name: ClassVar[str] = "linear"
    dim: int | None = None

    def __post_init__(self) -> None:
        if self.dim is not None and (isinstance(self.dim, bool) or not isinstance(self.dim, int) or self.dim < 1):
            raise ValueError(f"dim must be a positive integer or None, got {self.dim!r}")

    def build(self, width: int) -> SampleHead:
        """The head for post vectors of `width` dimensions."""
        return SampleHead(width, self.dim or width, identity=self.dim in (None, width))


class SampleHead(nn.Module):
    """Mean over each sample's post vectors, a linear layer, L2 normalisation."""

    def __init__(self, width: int, dim: int, *, identity: bool) -> None:
        super().__init__()
        self.linear = nn.Linear(width, dim)
        if identity:
            with torch.no_grad():
                self.linear.weight.copy_(torch.eye(dim, width))
                self.linear.bias.zero_()

    def forward(self, post_vectors: torch.Tensor, owners: torch.Tensor, samples: int) -> torch.Tensor:
        """(samples, dim) unit rows; `owners[i]` is the sample of post i (every sample has a post)."""
        return F.normalize(self.linear(sample_means(post_vectors, owners, samples)), dim=1)


def sample_means(post_vectors: torch.Tensor, owners: torch.Tensor, samples: int) -> torch.Tensor:
    """The mean post vector of each sample."""
    sums = torch.zeros(samples, post_vectors.shape[1], dtype=post_vectors.dtype, device=post_vectors.device)
    sums = sums.index_add(0, owners, post_vectors)
    counts = torch.bincount(owners, minlength=samples).clamp(min=1).to(post_vectors.dtype)
    return sums / counts[:, None]
