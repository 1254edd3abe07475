"""Ranking measures for retrieval tasks: MRR and recall@k over a query-by-item score matrix.

Conventions shared by all functions here:

- ``scores[q, j]`` is the similarity of item j to query q; higher ranks first.
- Ties are broken pessimistically: a non-relevant item with the same score as the best relevant
  item is ranked before it. The rank of the first relevant item of a query is therefore
  ``1 + #{non-relevant, non-excluded j : scores[q, j] >= max relevant score}``. This is the
  worst case over all orderings of tied items, so a constant scorer earns no credit from ties.
- ``exclude`` removes items from a query's ranking (neither ranked nor counted as relevant):
  either a boolean mask shaped like ``scores``, or a 1-D integer array with one item index per
  query (-1 for none), e.g. ``np.arange(n)`` to drop each query itself from a self-similarity
  matrix.
- A query with no relevant item left after exclusion has no defined rank. By default that is a
  ValueError naming how many queries are affected; with ``skip_empty=True`` such queries are left
  out of the mean and a warning states how many were skipped.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

# Row block size: bounds the temporary boolean arrays to about block * n_items bytes.
_BLOCK = 1024


def _exclusion_mask(exclude: Any, shape: tuple[int, int]) -> np.ndarray | None:
    """Turn `exclude` (None, a boolean mask, or one item index per query) into a mask or None."""
    if exclude is None:
        return None
    ex = np.asarray(exclude)
    if ex.dtype == np.bool_:
        if ex.shape != shape:
            raise ValueError(f"exclude mask has shape {ex.shape}, expected {shape}")
        return ex
    if ex.ndim != 1 or ex.shape[0] != shape[0] or not np.issubdtype(ex.dtype, np.integer):
        raise ValueError("exclude must be a boolean mask shaped like scores or one integer index per query")
    if np.any((ex < -1) | (ex >= shape[1])):
        raise ValueError(f"exclude indices must lie in [-1, {shape[1]})")
    mask = np.zeros(shape, dtype=bool)
    rows = np.flatnonzero(ex >= 0)
    mask[rows, ex[rows]] = True
    return mask


def first_relevant_ranks(scores: Any, relevant: Any, *, exclude: Any = None) -> np.ndarray:
    """1-based pessimistic rank of the first relevant item of each query; 0 where a query has none."""
    s = np.asarray(scores, dtype=np.float64)
    rel = np.asarray(relevant)
    if s.ndim != 2:
        raise ValueError(f"scores must be a 2-D (queries x items) matrix, got shape {s.shape}")
    if rel.shape != s.shape or rel.dtype != np.bool_:
        raise ValueError(f"relevant must be a boolean matrix of shape {s.shape}")
    if np.isnan(s).any():
        raise ValueError("scores contain NaN")
    mask = _exclusion_mask(exclude, s.shape)
    ranks = np.zeros(s.shape[0], dtype=np.int64)
    for start in range(0, s.shape[0], _BLOCK):
        block = slice(start, start + _BLOCK)
        s_b, rel_b = s[block], rel[block]
        keep = ~mask[block] if mask is not None else np.ones_like(rel_b)
        rel_kept = rel_b & keep
        best = np.where(rel_kept, s_b, -np.inf).max(axis=1, initial=-np.inf)
        ahead = np.count_nonzero(keep & ~rel_b & (s_b >= best[:, None]), axis=1)
        ranks[block] = np.where(rel_kept.any(axis=1), 1 + ahead, 0)
    return ranks


def _valid_ranks(ranks: np.ndarray, skip_empty: bool) -> np.ndarray:
    empty = ranks == 0
    n_empty = int(empty.sum())
    if n_empty == 0:
        return ranks
    if n_empty == ranks.size:
        raise ValueError(f"none of the {ranks.size} queries has a relevant item")
    if not skip_empty:
        first = int(np.flatnonzero(empty)[0])
        raise ValueError(
            f"{n_empty} of {ranks.size} queries have no relevant item (first: query {first}); "
            "pass skip_empty=True to leave them out"
        )
    warnings.warn(f"{n_empty} of {ranks.size} queries have no relevant item and were skipped", stacklevel=3)
    return ranks[~empty]


def mrr(scores: Any, relevant: Any, *, exclude: Any = None, skip_empty: bool = False) -> float:
    """Mean reciprocal rank of the first relevant item, with pessimistic ties (see module doc)."""
    ranks = _valid_ranks(first_relevant_ranks(scores, relevant, exclude=exclude), skip_empty)
    return float(np.mean(1.0 / ranks))


def recall_at_k(scores: Any, relevant: Any, k: int, *, exclude: Any = None, skip_empty: bool = False) -> float:
    """Share of queries whose first relevant item is ranked within the top k (pessimistic ties)."""
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    ranks = _valid_ranks(first_relevant_ranks(scores, relevant, exclude=exclude), skip_empty)
    return float(np.mean(ranks <= k))


def _ranked(ranked_relevance: Any) -> np.ndarray:
    r = np.asarray(ranked_relevance)
    if r.ndim != 2 or r.dtype != np.bool_:
        raise ValueError("ranked_relevance must be a boolean (queries x neighbours) matrix")
    if r.shape[0] == 0:
        raise ValueError("no queries")
    return r


def mrr_from_ranking(ranked_relevance: Any) -> float:
    """MRR from ranked neighbour lists, e.g. of a kNN search.

    ``ranked_relevance[q, i]`` says whether the i-th nearest neighbour of query q is relevant
    (the query itself already removed). A query without a relevant neighbour in its list counts
    as reciprocal rank 0, i.e. this is MRR@(list length).
    """
    r = _ranked(ranked_relevance)
    hit = r.any(axis=1)
    first = np.argmax(r, axis=1) + 1
    return float(np.mean(np.where(hit, 1.0 / first, 0.0)))


def recall_at_k_from_ranking(ranked_relevance: Any, k: int) -> float:
    """Share of queries with a relevant neighbour among the first k of their ranked list."""
    r = _ranked(ranked_relevance)
    if not 1 <= k <= r.shape[1]:
        raise ValueError(f"k must lie in [1, {r.shape[1]}] (the list length), got {k}")
    return float(np.mean(r[:, :k].any(axis=1)))
