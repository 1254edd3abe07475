"""Shared embedding machinery: the metric a system asks for, similarities, first-match ranks."""

from __future__ import annotations

import numpy as np
import pytest

from core.errors import HarnessError
from harness.metrics.ranking import ranking_scores
from toolkit.nearest import first_match_ranks
from toolkit.retrieval import similarity, system_metric


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
    ranks = first_match_ranks(emb, labels, emb, labels, metric, exclude=np.arange(60))
    assert ranks.tolist() == brute_ranks(emb, labels, metric)


def test_query_is_excluded_by_index_not_by_value():
    emb = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    labels = ["a", "a", "b"]
    # item 1 is an exact duplicate of query 0 and by the same author: it must still count
    ranks = first_match_ranks(emb, labels, emb, labels, exclude=[0, 1, 2])
    assert ranks.tolist() == [1, 1, 0]
    scores = ranking_scores(ranks, ("mrr", "recall_at_1"))
    assert scores["mrr"] == 1.0 and scores["queries"] == 2.0 and scores["queries_without_match"] == 1.0


def test_system_metric_is_the_systems_attribute_cosine_by_default():
    class Plain:
        name = "plain"

    class Distances:
        name = "distances"
        metric = "euclidean"

    class Odd:
        name = "odd"
        metric = "dot"

    assert system_metric(Plain()) == "cosine" and system_metric(Distances()) == "euclidean"
    with pytest.raises(HarnessError, match="'odd' asks for metric 'dot'"):
        system_metric(Odd())


def test_bad_inputs_are_refused():
    with pytest.raises(ValueError, match="metric"):
        similarity(np.zeros((1, 2)), np.zeros((1, 2)), metric="dot")
    with pytest.raises(ValueError, match="NaN"):
        similarity(np.array([[np.nan, 0.0]]), np.zeros((1, 2)))
    with pytest.raises(ValueError, match="no query"):
        ranking_scores([0, 0], ("mrr",))
