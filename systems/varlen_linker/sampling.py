"""Variable-size training samples (Khan et al. 2021, section 2.3).

A sample is a contiguous run of one author's actions. Its length is M = R + ceil(x (S - R)) with
x ~ Beta(alpha, beta) (paper: Beta(3, 1), R = 1, S = 16), its start uniform among the positions
where it fits. Taken literally, the formula gives M = R only when x = 0, which has probability 0:
with R = 1 the shortest sample drawn is 2 posts (single posts are still embedded fine at test
time). An author with fewer than M actions gives all of them (the sample is shorter).

`SampleSizes` holds R, S and the Beta parameters as a part of a system (harness.params).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np


@dataclass(frozen=True)
class SampleSizes:
    """Training sample sizes: R = min_length, S = max_length, x ~ Beta(beta_a, beta_b) (paper: 1, 16, 3, 1).

    R = S gives fixed-size samples of S posts.
    """

    name: ClassVar[str] = "beta"
    min_length: int = 1
    max_length: int = 16
    beta_a: float = 3.0
    beta_b: float = 1.0

    def __post_init__(self) -> None:
        if not 1 <= self.min_length <= self.max_length:
            raise ValueError(f"need 1 <= min_length <= max_length, got {self.min_length} and {self.max_length}")
        if self.beta_a <= 0 or self.beta_b <= 0:
            raise ValueError(f"beta_a and beta_b must be positive, got {self.beta_a} and {self.beta_b}")

    def draw(self, rng: np.random.Generator) -> int:
        """One training sample's size (`sample_length`)."""
        return sample_length(
            rng, min_length=self.min_length, max_length=self.max_length, alpha=self.beta_a, beta=self.beta_b
        )


def sample_length(rng: np.random.Generator, *, min_length: int, max_length: int, alpha: float, beta: float) -> int:
    """M = R + ceil(x (S - R)), x ~ Beta(alpha, beta)."""
    if not 1 <= min_length <= max_length:
        raise ValueError(f"need 1 <= min_length <= max_length, got {min_length} and {max_length}")
    if min_length == max_length:
        return min_length
    x = rng.beta(alpha, beta)
    return min_length + math.ceil(x * (max_length - min_length))


def length_distribution(*, min_length: int, max_length: int, alpha: float, beta: float) -> dict[int, float]:
    """The exact distribution of `sample_length`: P(M = R + j) = F(j / (S - R)) - F((j - 1) / (S - R)).

    F is the Beta(alpha, beta) CDF; P(M = R) = F(0) = 0 unless R = S.
    """
    from scipy.stats import beta as beta_dist

    if min_length == max_length:
        return {min_length: 1.0}
    span = max_length - min_length
    cdf = beta_dist(alpha, beta).cdf
    probs = {min_length: float(cdf(0.0))}
    for j in range(1, span + 1):
        probs[min_length + j] = float(cdf(j / span) - cdf((j - 1) / span))
    return probs


def sample_span(rng: np.random.Generator, stream_length: int, length: int) -> tuple[int, int]:
    """(start, stop) of a contiguous sample of `length` actions, start uniform; all actions if too few."""
    if stream_length < 1:
        raise ValueError("cannot sample from an empty stream")
    length = min(length, stream_length)
    start = int(rng.integers(0, stream_length - length + 1))
    return start, start + length


def epoch_batches(n_authors: int, authors_per_batch: int, rng: np.random.Generator, steps: int) -> list[np.ndarray]:
    """`steps` batches of distinct author indices: shuffled passes over all authors, cut into batches.

    A batch never repeats an author; when a pass runs out, the next shuffled pass starts.
    """
    if n_authors < 2:
        raise ValueError(f"metric learning needs at least 2 authors, got {n_authors}")
    per_batch = min(authors_per_batch, n_authors)
    batches: list[np.ndarray] = []
    order = rng.permutation(n_authors)
    position = 0
    while len(batches) < steps:
        if position + per_batch > n_authors:
            order, position = rng.permutation(n_authors), 0
        batches.append(order[position : position + per_batch])
        position += per_batch
    return batches
