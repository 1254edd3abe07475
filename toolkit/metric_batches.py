"""Batches of distinct authors for metric learning, planned per epoch and made when the loop reaches them.

`author_batches` cuts shuffled passes over the training authors into batches that never repeat an author;
`epoch_plan` is that plan for one epoch of a seeded run (the same on every process, whatever their
number); `LazyBatches` makes an epoch's batches (or one process's share of them) one at a time, so an
epoch of thousands of steps never holds all of its batches at once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Generic, TypeVar

import numpy as np

B = TypeVar("B")


def author_batches(n_authors: int, authors_per_batch: int, rng: np.random.Generator, steps: int) -> list[np.ndarray]:
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


def epoch_plan(n_authors: int, authors_per_batch: int, *, seed: int, epoch: int, steps: int) -> list[np.ndarray]:
    """The `steps` author batches of one epoch of a run seeded `seed` (`author_batches`, its own generator)."""
    return author_batches(n_authors, authors_per_batch, np.random.default_rng([seed, epoch, 2**31]), steps)


class LazyBatches(Generic[B]):
    """An epoch's batches, by index (all of them, or one process's share), each made when the loop reaches it."""

    def __init__(self, indices: Sequence[int], make: Callable[[int], B]) -> None:
        self.indices, self.make = indices, make

    def __len__(self) -> int:
        return len(self.indices)

    def __iter__(self) -> Iterator[B]:
        return (self.make(index) for index in self.indices)
