"""Variable-size training samples (Khan et al. 2021, section 2.3) and where in a stream they are drawn.

A sample is a contiguous run of one author's actions. Its length is M = R + ceil(x (S - R)) with
x ~ Beta(alpha, beta) (paper: Beta(3, 1), R = 1, S = 16), its start uniform among the positions
where it fits. Taken literally, the formula gives M = R only when x = 0, which has probability 0:
with R = 1 the shortest sample drawn is 2 posts (single posts are still embedded fine at test
time). An author with fewer than M actions (in the stream, or in the sample's period) gives all
of them (the sample is shorter).

Where an author's K samples of a batch come from (the `sampling` part of a system):
- `PeriodSampling` ("periods", the default): the author's time-ordered posts are cut into
  W = max(K, floor(L / S)) contiguous periods of near-equal size (each at least S posts when
  L >= K S), K distinct periods are drawn at random, and each sample lies inside its own period.
  Two samples of an author never share a post and come from different times, as the paper draws
  "samples from an account ... from different time periods in each training iteration"
  (section 1). On this project's data the literal section 2.3 draw (independent starts, below)
  made 93% of positive pairs share a post and 42% identical (issue 13): the paper's streams have
  100 to 1000 posts (MUD, section 4.1), ours a median of 13. The price on short streams: a period
  shorter than S cuts its sample, so samples are smaller than the Beta law gives (on the
  development training split, K = 4: mean 5.0 posts against 10.2 for the overlapping sampler).
- `OverlappingSampling` ("overlapping"): each sample's start drawn independently over the whole
  stream (section 2.3 literally), so samples of an author may overlap. The sampler of every run
  before issue 13; `--param sampling=overlapping` reproduces those runs batch for batch.

Both take the paper's minimum-posts filter: authors with fewer than `min_posts` (or more than
`max_posts`) training posts give no training samples (MUD keeps authors with 100 to 1000 posts).

`SampleSizes` holds R, S and the Beta parameters as a part of a system (harness.params), as do
the two sampling parts.
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


@dataclass(frozen=True)
class PeriodSampling:
    """An author's samples of a batch drawn from distinct periods of their posts (see the module doc).

    min_posts, max_posts: the minimum-posts filter, authors with fewer (or more) training posts
    are left out of training (paper, MUD: 100 and 1000; an author needs at least K posts anyway).
    """

    name: ClassVar[str] = "periods"
    min_posts: int = 8
    max_posts: int | None = None

    def __post_init__(self) -> None:
        _check_filter(self.min_posts, self.max_posts)

    def keeps(self, n_posts: int, samples_per_author: int) -> bool:
        """Whether an author with `n_posts` training posts gives training samples (K disjoint ones need K posts)."""
        return max(self.min_posts, samples_per_author) <= n_posts and (
            self.max_posts is None or n_posts <= self.max_posts
        )

    def spans(
        self, rng: np.random.Generator, stream_length: int, sizes: SampleSizes, count: int
    ) -> list[tuple[int, int]]:
        """`count` (start, stop) spans of one stream, each inside its own period (`period_spans`)."""
        return period_spans(rng, stream_length, sizes, count)


@dataclass(frozen=True)
class OverlappingSampling:
    """Every sample's start drawn independently over the whole stream: samples of an author may overlap.

    The sampler before issue 13 (with min_posts 1: every author with a post trains), kept so old
    runs reproduce; min_posts and max_posts filter authors as PeriodSampling's do.
    """

    name: ClassVar[str] = "overlapping"
    min_posts: int = 1
    max_posts: int | None = None

    def __post_init__(self) -> None:
        _check_filter(self.min_posts, self.max_posts)

    def keeps(self, n_posts: int, samples_per_author: int) -> bool:
        """Whether an author with `n_posts` training posts gives training samples."""
        return max(self.min_posts, 1) <= n_posts and (self.max_posts is None or n_posts <= self.max_posts)

    def spans(
        self, rng: np.random.Generator, stream_length: int, sizes: SampleSizes, count: int
    ) -> list[tuple[int, int]]:
        """`count` independent (start, stop) spans (a size, then a start, per sample: the old order of draws)."""
        return [sample_span(rng, stream_length, sizes.draw(rng)) for _ in range(count)]


SAMPLINGS = (PeriodSampling, OverlappingSampling)


def _check_filter(min_posts: int, max_posts: int | None) -> None:
    if min_posts < 1:
        raise ValueError(f"min_posts must be positive, got {min_posts}")
    if max_posts is not None and max_posts < min_posts:
        raise ValueError(f"max_posts must be None or at least min_posts, got {max_posts} < {min_posts}")


def period_spans(rng: np.random.Generator, stream_length: int, sizes: SampleSizes, count: int) -> list[tuple[int, int]]:
    """`count` non-overlapping contiguous spans of a stream of `stream_length` posts, oldest first.

    The stream is cut into W = max(count, stream_length // S) periods of near-equal size (S =
    sizes.max_length); `count` distinct periods are drawn uniformly, and in each a sample of a size
    drawn from `sizes` (cut to the period's length) starts uniformly where it fits.
    """
    if count < 1:
        raise ValueError(f"need at least one sample, got {count}")
    if stream_length < count:
        raise ValueError(f"{stream_length} posts cannot give {count} samples that share no post")
    periods = max(count, stream_length // sizes.max_length)
    bounds = (np.arange(periods + 1) * stream_length) // periods  # steps >= 1: no period is empty
    spans = []
    for period in np.sort(rng.choice(periods, size=count, replace=False)):
        first, last = int(bounds[period]), int(bounds[period + 1])
        start, stop = sample_span(rng, last - first, sizes.draw(rng))
        spans.append((first + start, first + stop))
    return spans
