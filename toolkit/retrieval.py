"""Shared machinery for embedding tasks: similarity of embeddings, exact kNN, ranking evaluation.

Scores are similarities (higher = more alike): cosine, or the negative Euclidean distance.
Every function here is exact; nothing is approximated for speed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from harness.metrics.ranking import first_relevant_ranks

METRICS = ("cosine", "euclidean")
_BLOCK = 1024  # queries per block: bounds the similarity block to 1024 x n_items floats


def _check_metric(metric: str) -> None:
    if metric not in METRICS:
        raise ValueError(f"metric must be one of {METRICS}, not {metric!r}")


def _as_matrix(embeddings: Any, name: str) -> np.ndarray:
    matrix = np.ascontiguousarray(np.asarray(embeddings, dtype=np.float32))
    if matrix.ndim != 2:
        raise ValueError(f"{name} must be a 2-D (n x dim) array, got shape {matrix.shape}")
    if not np.isfinite(matrix).all():
        raise ValueError(f"{name} contain NaN or infinite values")
    return matrix


def _unit_rows(matrix: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.maximum(norms, 1e-12)  # a zero vector stays zero: similarity 0 to everything


def similarity(queries: Any, items: Any, *, metric: str = "cosine") -> np.ndarray:
    """The (n_queries x n_items) similarity matrix."""
    _check_metric(metric)
    q, x = _as_matrix(queries, "queries"), _as_matrix(items, "items")
    if q.shape[1] != x.shape[1]:
        raise ValueError(f"queries have dimension {q.shape[1]}, items {x.shape[1]}")
    if metric == "cosine":
        return _unit_rows(q) @ _unit_rows(x).T
    squared = (q**2).sum(1)[:, None] + (x**2).sum(1)[None, :] - 2.0 * (q @ x.T)
    return -np.sqrt(np.maximum(squared, 0.0))


def knn(queries: Any, items: Any, k: int, *, metric: str = "cosine") -> tuple[np.ndarray, np.ndarray]:
    """Exact k nearest items of each query with faiss: (similarities, indices), best first."""
    import faiss

    _check_metric(metric)
    q, x = _as_matrix(queries, "queries"), _as_matrix(items, "items")
    k = min(k, x.shape[0])
    if metric == "cosine":
        index = faiss.IndexFlatIP(x.shape[1])
        index.add(_unit_rows(x))
        scores, indices = index.search(_unit_rows(q), k)
        return scores, indices
    index = faiss.IndexFlatL2(x.shape[1])
    index.add(x)
    squared, indices = index.search(q, k)
    return -np.sqrt(np.maximum(squared, 0.0)), indices


def rank_of_first_match(
    query_embeddings: Any,
    query_labels: Sequence[Any],
    item_embeddings: Any,
    item_labels: Sequence[Any],
    *,
    metric: str = "cosine",
    query_item_index: Any = None,
) -> np.ndarray:
    """For each query, the 1-based rank of the first item with the query's label (0 where none).

    `query_item_index[i]` is the index among the items of query i itself (-1 if it is not an
    item): it is excluded by index, so identical duplicates elsewhere still count. Ties are
    ranked pessimistically (see harness.metrics.ranking).
    """
    q_labels = np.asarray(query_labels)
    i_labels = np.asarray(item_labels)
    n_queries = len(q_labels)
    if len(query_embeddings) != n_queries or len(item_embeddings) != len(i_labels):
        raise ValueError("each embedding needs exactly one label")
    exclude = None if query_item_index is None else np.asarray(query_item_index, dtype=np.int64)
    ranks = np.zeros(n_queries, dtype=np.int64)
    for start in range(0, n_queries, _BLOCK):
        stop = min(start + _BLOCK, n_queries)
        block = similarity(query_embeddings[start:stop], item_embeddings, metric=metric)
        relevant = q_labels[start:stop, None] == i_labels[None, :]
        ranks[start:stop] = first_relevant_ranks(
            block, relevant, exclude=None if exclude is None else exclude[start:stop]
        )
    return ranks


def ranking_scores(ranks: Any, ks: Sequence[int] = (1, 2, 5, 10)) -> dict[str, float]:
    """MRR and R@k from first-match ranks; queries without a match (rank 0) are left out.

    The count of queries used and of queries left out is returned with the scores.
    """
    ranks = np.asarray(ranks)
    used = ranks[ranks > 0]
    if used.size == 0:
        raise ValueError("no query has a matching item: MRR and R@k are undefined")
    scores = {"mrr": float(np.mean(1.0 / used))}
    for k in ks:
        scores[f"recall_at_{k}"] = float(np.mean(used <= k))
    scores["queries"] = float(used.size)
    scores["queries_without_match"] = float(ranks.size - used.size)
    return scores
