"""Ranking measures for retrieval tasks: MRR, recall@k and mean rank, from first-match ranks.

Every ranking measure is a function of the 1-based rank of each query's first relevant item
(``*_from_ranks``), with 0 for a query that has none: such queries are left out of the mean.
`first_relevant_ranks` computes those ranks from a query-by-item score matrix; `mrr` and
`recall_at_k` do both steps. Conventions of the matrix functions:

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
from collections.abc import Sequence
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


def _matched(ranks: Any) -> np.ndarray:
    """The ranks of the queries that have a match (rank > 0); ValueError if there are none."""
    r = np.asarray(ranks)
    if r.ndim != 1:
        raise ValueError(f"ranks must be 1-D (one per query), got shape {r.shape}")
    if np.any(r < 0):
        raise ValueError("ranks must be 1-based, or 0 for a query without a match")
    used = r[r > 0]
    if used.size == 0:
        raise ValueError("no query has a matching item: ranking measures are undefined")
    return used


def mrr_from_ranks(ranks: Any) -> float:
    """Mean reciprocal rank over the queries with a match (rank 0 = no match, left out)."""
    return float(np.mean(1.0 / _matched(ranks)))


def recall_at_k_from_ranks(ranks: Any, k: int) -> float:
    """Share of the queries with a match whose first match is ranked within the top k (R@k)."""
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    return float(np.mean(_matched(ranks) <= k))


def mean_rank_from_ranks(ranks: Any) -> float:
    """Mean rank of the first match over the queries with a match (MnR; lower is better)."""
    return float(np.mean(_matched(ranks)))


def ranking_scores(ranks: Any, measures: Sequence[str]) -> dict[str, float]:
    """The named ranking measures (e.g. "mrr", "recall_at_10") from first-match ranks, by the measure table.

    The count of queries used and of queries left out (rank 0) is returned with the scores.
    """
    from harness.metrics.table import measure_function, resolve

    r = np.asarray(ranks)
    used = _matched(r)
    scores = {}
    for name in measures:
        if resolve(name).measure.inputs != "ranks":
            raise ValueError(f"measure {name!r} is not computed from ranks")
        scores[name] = measure_function(name)(r)
    scores["queries"] = float(used.size)
    scores["queries_without_match"] = float(r.size - used.size)
    return scores


def mrr(scores: Any, relevant: Any, *, exclude: Any = None, skip_empty: bool = False) -> float:
    """Mean reciprocal rank of the first relevant item, with pessimistic ties (see module doc)."""
    return mrr_from_ranks(_valid_ranks(first_relevant_ranks(scores, relevant, exclude=exclude), skip_empty))


def recall_at_k(scores: Any, relevant: Any, k: int, *, exclude: Any = None, skip_empty: bool = False) -> float:
    """Share of queries whose first relevant item is ranked within the top k (pessimistic ties)."""
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    ranks = _valid_ranks(first_relevant_ranks(scores, relevant, exclude=exclude), skip_empty)
    return recall_at_k_from_ranks(ranks, k)
