"""Batches of `batch_size` chunks: `batch_size / 2` distinct authors, each with a positive pair of
chunks from two *different* texts (the paper's batch of 32 is 32 chunks = 16 authors x 2).

The loss treats every off-diagonal pair of a batch as a negative, so an author twice in a batch
would put same-author pairs among the negatives (the paper's false-negative problem, its Figure 4).
This sampler never does that: each batch draws distinct authors. Chunks of a positive pair come
from two different texts of the author, so a pair cannot be recognised by a shared topic or by
the text overlap of neighbouring chunks.

Authors are drawn in sweeps: a shuffled order of all eligible authors is consumed batch by batch,
so over an epoch every author appears about equally often; a batch that straddles two sweeps
takes the rest of the old one and fills up from a new one without repeating anybody.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import NamedTuple

import numpy as np

# pool[author][text] = the rows (in a feature matrix) of that text's chunks
Pool = Sequence[Sequence[Sequence[int]]]


class ChunkPairBatch(NamedTuple):
    """A batch of positive chunk pairs: A = batch_size / 2 authors (fewer where the pool has fewer), 2A chunks."""

    authors: np.ndarray  # (A,) indices into the pool, all distinct
    texts: np.ndarray  # (A, 2) the two texts (indices into pool[author]) of each pair, never equal
    rows: np.ndarray  # (A, 2) feature rows: [:, 0] anchors, [:, 1] positives


def eligible_authors(pool: Pool) -> list[int]:
    """Authors with at least two texts that have chunks: only they can give a positive pair."""
    return [a for a, texts in enumerate(pool) if sum(1 for t in texts if len(t) > 0) >= 2]


class AuthorBatchSampler:
    """Draws `ChunkPairBatch`es of `batch_size` chunks, two from each of `min(batch_size / 2, eligible
    authors)` distinct authors of `pool`."""

    def __init__(self, pool: Pool, batch_size: int, *, seed: int) -> None:
        if batch_size < 4 or batch_size % 2:
            raise ValueError(
                f"batch_size counts chunks, two per author, and a batch needs two authors: "
                f"it must be even and at least 4, got {batch_size}"
            )
        self.pool = pool
        self.batch_size = batch_size
        self.authors_per_batch = batch_size // 2
        self.eligible = eligible_authors(pool)
        if len(self.eligible) < 2:
            raise ValueError(
                f"need at least 2 authors with 2 or more texts to form batches, found {len(self.eligible)}"
            )
        self.rng = np.random.default_rng(seed)
        self._queue: list[int] = []

    def _next_authors(self) -> list[int]:
        k = min(self.authors_per_batch, len(self.eligible))
        chosen, self._queue = self._queue[:k], self._queue[k:]
        if len(chosen) < k:
            taken = set(chosen)
            fresh = [int(a) for a in self.rng.permutation(self.eligible) if int(a) not in taken]
            need = k - len(chosen)
            # the authors that ended the old sweep go to the back of the new one: each sweep has everybody
            chosen, self._queue = chosen + fresh[:need], fresh[need:] + chosen
        return chosen

    def batch(self) -> ChunkPairBatch:
        authors = self._next_authors()
        texts = np.empty((len(authors), 2), dtype=np.int64)
        rows = np.empty((len(authors), 2), dtype=np.int64)
        for i, author in enumerate(authors):
            usable = [t for t, chunks in enumerate(self.pool[author]) if len(chunks) > 0]
            first, second = self.rng.choice(usable, size=2, replace=False)
            texts[i] = (first, second)
            for side, text in enumerate((first, second)):
                chunks = self.pool[author][text]
                rows[i, side] = chunks[int(self.rng.integers(len(chunks)))]
        return ChunkPairBatch(np.asarray(authors, dtype=np.int64), texts, rows)

    def batches(self, steps: int) -> Iterator[ChunkPairBatch]:
        for _ in range(steps):
            yield self.batch()
