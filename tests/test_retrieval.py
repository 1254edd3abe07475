"""Shared embedding machinery: similarities, exact kNN, first-match ranks."""

from __future__ import annotations

import numpy as np
import pytest

from toolkit.retrieval import knn, rank_of_first_match, ranking_scores, similarity


def brute_ranks(emb: np.ndarray, labels: np.ndarray, metric: str) -> list[int]:
    """Per query: sort all other items by similarity (ties pessimistic) and find the first match."""
    ranks = []
    for i in range(len(emb)):
        sims = []
        for j in range(len(emb)):
            if j == i:
                continue
            if metric == "cosine":
                s = emb[i] @ emb[j] / (np.linalg.norm(emb[i]) * np.linalg.norm(emb[j]))
            else:
                s = -np.linalg.norm(emb[i] - emb[j])
            sims.append((s, labels[j] == labels[i]))
        matches = [s for s, same in sims if same]
        if not matches:
            ranks.append(0)
            continue
        best = max(matches)
        ranks.append(1 + sum(1 for s, same in sims if not same and s >= best - 1e-6))
    return ranks


@pytest.mark.parametrize("metric", ["cosine", "euclidean"])
def test_first_match_ranks_agree_with_a_loop(metric):
    rng = np.random.default_rng(3)
    emb = rng.normal(size=(60, 5)).astype(np.float32)
    labels = rng.integers(0, 12, size=60)
    ranks = rank_of_first_match(emb, labels, emb, labels, metric=metric, query_item_index=np.arange(60))
    assert ranks.tolist() == brute_ranks(emb, labels, metric)


def test_query_is_excluded_by_index_not_by_value():
    emb = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    labels = ["a", "a", "b"]
    # item 1 is an exact duplicate of query 0 and by the same author: it must still count
    ranks = rank_of_first_match(emb, labels, emb, labels, query_item_index=[0, 1, 2])
    assert ranks.tolist() == [1, 1, 0]
    scores = ranking_scores(ranks, ks=(1,))
    assert scores["mrr"] == 1.0 and scores["queries"] == 2.0 and scores["queries_without_match"] == 1.0


@pytest.mark.parametrize("metric", ["cosine", "euclidean"])
def test_knn_is_exact(metric):
    rng = np.random.default_rng(5)
    queries, items = rng.normal(size=(7, 4)), rng.normal(size=(40, 4))
    scores, indices = knn(queries, items, 6, metric=metric)
    full = similarity(queries, items, metric=metric)
    expected = np.argsort(-full, axis=1, kind="stable")[:, :6]
    assert np.array_equal(indices, expected)
    assert np.allclose(scores, np.take_along_axis(full, expected, axis=1), atol=1e-4)


def test_bad_inputs_are_refused():
    with pytest.raises(ValueError, match="metric"):
        similarity(np.zeros((1, 2)), np.zeros((1, 2)), metric="dot")
    with pytest.raises(ValueError, match="NaN"):
        similarity(np.array([[np.nan, 0.0]]), np.zeros((1, 2)))
    with pytest.raises(ValueError, match="no query"):
        ranking_scores([0, 0])
