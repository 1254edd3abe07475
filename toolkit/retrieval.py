"""Shared machinery for embedding tasks: the metric a system asks for and the similarity of embeddings.

Scores are similarities (higher = more alike): cosine, or the negative Euclidean distance.
Every function here is exact; nothing is approximated for speed. Search over many candidates (top k,
first-match ranks at 10^5-10^6 items, on a GPU or with faiss) is toolkit.nearest's, built on these
scores. The measures computed from the ranks (MRR, R@k, ...) are harness.metrics'.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from core.errors import HarnessError

METRICS = ("cosine", "euclidean")


def system_metric(system: Any) -> str:
    """The similarity a system's embeddings are compared with: its `metric` attribute, "cosine" if it has none.

    "euclidean" scores a pair by the negative Euclidean distance (higher = same author), as
    `similarity` does. Every embedding task asks the system this way, so a system declares it once.
    """
    metric = getattr(system, "metric", "cosine")
    if metric not in METRICS:
        raise HarnessError(f"system {getattr(system, 'name', system)!r} asks for metric {metric!r}; known: {METRICS}")
    return metric


def _check_metric(metric: str) -> None:
    if metric not in METRICS:
        raise ValueError(f"metric must be one of {METRICS}, not {metric!r}")


def as_matrix(embeddings: Any, name: str) -> np.ndarray:
    matrix = np.ascontiguousarray(np.asarray(embeddings, dtype=np.float32))
    if matrix.ndim != 2:
        raise ValueError(f"{name} must be a 2-D (n x dim) array, got shape {matrix.shape}")
    if not np.isfinite(matrix).all():
        raise ValueError(f"{name} contain NaN or infinite values")
    return matrix


def unit_rows(matrix: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.maximum(norms, 1e-12)  # a zero vector stays zero: similarity 0 to everything


def similarity(queries: Any, items: Any, *, metric: str = "cosine") -> np.ndarray:
    """The (n_queries x n_items) similarity matrix."""
    _check_metric(metric)
    q, x = as_matrix(queries, "queries"), as_matrix(items, "items")
    if q.shape[1] != x.shape[1]:
        raise ValueError(f"queries have dimension {q.shape[1]}, items {x.shape[1]}")
    if metric == "cosine":
        return unit_rows(q) @ unit_rows(x).T
    squared = (q**2).sum(1)[:, None] + (x**2).sum(1)[None, :] - 2.0 * (q @ x.T)
    return -np.sqrt(np.maximum(squared, 0.0))
