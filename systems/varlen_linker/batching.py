"""Actions -> the flat arrays the sample encoder takes; training batches of author samples.

`TokenisedPosts` holds every post of a set of streams once (subword ids, hour, subreddit), so a sample
is just a range of rows. Subreddit indices outside the model's buckets (an unknown subreddit, a
task built with another N) fall into the "other" bucket.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from systems.varlen_linker.sampling import OverlappingSampling, PeriodSampling, SampleSizes
from systems.varlen_linker.text import SubwordTokenizer
from tasks.reddit.records import Action

BLANK_HOUR = -1  # a blank (padding) post: no hour, no text, the blank subreddit row


class TokenisedPosts(NamedTuple):
    tokens: np.ndarray  # (posts, post_length) int64
    hours: np.ndarray  # (posts,) int64, -1 for blank posts
    subreddits: np.ndarray  # (posts,) int64


class SampleBatch(NamedTuple):
    """A batch ready for the model: posts flat, in sample order, and each sample's length."""

    tokens: np.ndarray
    hours: np.ndarray
    subreddits: np.ndarray
    lengths: np.ndarray
    labels: np.ndarray  # author index per sample (training) or unit index (embedding)


def post_table(
    actions: Sequence[Action], tokenizer: SubwordTokenizer, *, post_length: int, num_subreddits: int
) -> TokenisedPosts:
    """Encode actions once, plus one blank post as the last row (`blank_row`), for padding.

    Subreddits outside [0, num_subreddits) become "other" (num_subreddits - 1); the blank post
    has the extra subreddit row num_subreddits, no hour and all-padding text.
    """
    other = num_subreddits - 1
    subreddits = np.fromiter((a.subreddit for a in actions), dtype=np.int64, count=len(actions))
    subreddits[(subreddits < 0) | (subreddits > other)] = other
    hours = np.fromiter((a.hour for a in actions), dtype=np.int64, count=len(actions))
    if len(hours) and (hours.min() < 0 or hours.max() > 23):
        raise ValueError("hours of day must lie in 0..23")
    tokens = tokenizer.encode([a.text for a in actions], post_length)
    return TokenisedPosts(
        np.concatenate([tokens, np.zeros((1, post_length), dtype=np.int64)]),
        np.append(hours, BLANK_HOUR),
        np.append(subreddits, num_subreddits),
    )


def blank_row(table: TokenisedPosts) -> int:
    """Index of the table's blank post."""
    return len(table.hours) - 1


def make_batch(table: TokenisedPosts, units: Sequence[np.ndarray], labels: Sequence[int]) -> SampleBatch:
    """A batch of samples, each given as the table rows of its posts (blank rows included)."""
    rows = np.concatenate(units)
    return SampleBatch(
        table.tokens[rows],
        table.hours[rows],
        table.subreddits[rows],
        np.asarray([len(u) for u in units], dtype=np.int64),
        np.asarray(labels, dtype=np.int64),
    )


def padded(rows: np.ndarray, size: int, blank: int) -> np.ndarray:
    """Rows padded with the blank row to at least `size` posts."""
    if len(rows) >= size:
        return rows
    return np.concatenate([rows, np.full(size - len(rows), blank, dtype=np.int64)])


def training_batch(
    table: TokenisedPosts,
    offsets: np.ndarray,
    authors: np.ndarray,
    rng: np.random.Generator,
    *,
    samples_per_author: int,
    sizes: SampleSizes,
    sampling: PeriodSampling | OverlappingSampling,
    pad_to: int | None,
) -> SampleBatch:
    """`samples_per_author` contiguous samples of each author (stream i is rows offsets[i]:offsets[i+1]),
    each of a size drawn from `sizes`, placed in the stream by `sampling` (systems.varlen_linker.sampling).

    With `pad_to`, shorter samples are padded with blank posts to that many posts (the fixed-length
    IUR-style model sees padding as posts, as it does at test time).
    """
    units, labels = [], []
    for author in authors:
        start, stop = int(offsets[author]), int(offsets[author + 1])
        for first, last in sampling.spans(rng, stop - start, sizes, samples_per_author):
            rows = np.arange(start + first, start + last, dtype=np.int64)
            units.append(rows if pad_to is None else padded(rows, pad_to, blank_row(table)))
            labels.append(int(author))
    return make_batch(table, units, labels)
