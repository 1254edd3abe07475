"""Training samples from a forum split: each author's posts cut into periods, one sample per period.

A training batch holds `authors_per_batch` authors x `samples_per_author` (K) samples. An author's
posts (all their sequences of the split, oldest first) are cut into K contiguous periods of about
equal size, and each sample is a run of consecutive posts inside its own period: two samples of an
author never share a post and come from different times, as Khan et al. 2021 sample an account's
two episodes (issue 13 found that 93% of varlen_linker's positive pairs shared a post). An author
with fewer than K posts cannot give K such samples and is left out of training (counted).

Author labels: `ForumSplit.post_texts()` gives the texts only, so the label of each of its
sequences comes from `post_authors()` where the split has one, else from the records the forum tasks
load: a darkweb episode's market and account, a reddit stream's author.

`Sampling` holds the sample sizes as a part of the system (harness.params).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, NamedTuple

import numpy as np

from core.errors import HarnessError
from tasks.forum.records import ForumSplit


@dataclass(frozen=True)
class Sampling:
    """Posts per training sample, uniform in [min_posts, max_posts] (cut to the period's posts).

    Both None: every sample has as many posts as the split's typical (median) sequence, which for
    darkweb is the task's episode length, so training samples look like the episodes ranked at test time.
    """

    name: ClassVar[str] = "periods"
    min_posts: int | None = None
    max_posts: int | None = None

    def __post_init__(self) -> None:
        if (self.min_posts is None) != (self.max_posts is None):
            raise ValueError("min_posts and max_posts must both be set or both be None")
        if self.min_posts is not None and not 1 <= self.min_posts <= self.max_posts:  # type: ignore[operator]
            raise ValueError(f"need 1 <= min_posts <= max_posts, got {self.min_posts} and {self.max_posts}")

    def sizes(self, typical: int) -> tuple[int, int]:
        """(min, max) posts per sample, given the split's typical sequence length."""
        if self.min_posts is None or self.max_posts is None:
            return typical, typical
        return self.min_posts, self.max_posts


class AuthorPosts(NamedTuple):
    """The training posts of one author: their rows in the split's post table, oldest first."""

    label: str
    rows: np.ndarray


class TrainingPosts(NamedTuple):
    """A training split as the sampler reads it: every post's text once, and each author's rows."""

    texts: list[str]
    authors: list[AuthorPosts]
    typical_length: int  # median posts per sequence of the split
    left_out: int  # authors with too few posts for K periods


class PostRowsBatch(NamedTuple):
    """Training samples as rows of the post table: posts flat, the sample each belongs to, labels."""

    rows: np.ndarray  # (posts,) rows of TrainingPosts.texts
    owners: np.ndarray  # (posts,) sample index of each post
    labels: np.ndarray  # (samples,) author index


def sequence_authors(split: ForumSplit) -> list[str]:
    """The author label of each sequence of `split.post_texts()`."""
    if hasattr(split, "post_authors"):
        return [str(author) for author in split.post_authors()]
    episodes: Any = getattr(split, "episodes", None)
    if episodes is not None:  # darkweb: an account is an author within one market
        return [f"{episode.market}/{episode.author}" for episode in episodes]
    streams: Any = getattr(split, "streams", None)
    if streams is not None:  # reddit: one stream per author
        return [stream.author for stream in streams]
    raise HarnessError(
        f"{type(split).__name__} gives no author labels: a forum encoder needs post_authors(), episodes or streams"
    )


def training_posts(split: ForumSplit, *, periods: int) -> TrainingPosts:
    """The split's posts grouped by author, authors sorted by label; those with fewer than `periods` posts left out."""
    sequences = split.post_texts()
    labels = sequence_authors(split)
    if len(labels) != len(sequences):
        raise HarnessError(f"{len(labels)} author labels for {len(sequences)} sequences of posts")
    by_author: dict[str, list[str]] = {}
    for label, texts in zip(labels, sequences, strict=True):
        by_author.setdefault(label, []).extend(texts)  # sequences of an author come oldest first
    texts: list[str] = []
    authors: list[AuthorPosts] = []
    left_out = 0
    for label in sorted(by_author):
        own = by_author[label]
        if len(own) < periods:
            left_out += 1
            continue
        authors.append(AuthorPosts(label, np.arange(len(texts), len(texts) + len(own), dtype=np.int64)))
        texts.extend(own)
    lengths = [len(sequence) for sequence in sequences if sequence]
    typical = int(np.median(lengths)) if lengths else 1
    return TrainingPosts(texts, authors, max(1, typical), left_out)


def period_windows(
    n_posts: int, periods: int, rng: np.random.Generator, *, min_size: int, max_size: int
) -> list[tuple[int, int]]:
    """One (start, stop) run of consecutive posts inside each of `periods` contiguous, near-equal periods."""
    if n_posts < periods:
        raise ValueError(f"{n_posts} posts cannot be cut into {periods} periods")
    bounds = (np.arange(periods + 1) * n_posts) // periods  # integer steps >= 1: no period is empty
    windows = []
    for first, last in zip(bounds[:-1], bounds[1:], strict=True):
        size = min(int(rng.integers(min_size, max_size + 1)), int(last - first))
        start = int(first) + int(rng.integers(0, last - first - size + 1))
        windows.append((start, start + size))
    return windows


def post_rows_batch(
    posts: TrainingPosts,
    authors: Sequence[int],
    rng: np.random.Generator,
    *,
    samples_per_author: int,
    min_size: int,
    max_size: int,
) -> PostRowsBatch:
    """`samples_per_author` samples of each listed author (indices into `posts.authors`), one per period."""
    rows, owners, labels = [], [], []
    for author in authors:
        own = posts.authors[author].rows
        for start, stop in period_windows(len(own), samples_per_author, rng, min_size=min_size, max_size=max_size):
            owners.append(np.full(stop - start, len(labels), dtype=np.int64))
            rows.append(own[start:stop])
            labels.append(int(author))
    return PostRowsBatch(np.concatenate(rows), np.concatenate(owners), np.asarray(labels, dtype=np.int64))
