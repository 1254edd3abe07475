"""Scoring: hand-made embeddings whose ranks are known, within markets and for migrants.

These episodes have no posts, hence no threads: both protocols rank them alike (the protocols
themselves: test_darkweb_protocol)."""

from __future__ import annotations

import numpy as np
import pytest

from tasks.darkweb import DarkwebTask
from tasks.darkweb.evaluation import evaluate_embeddings, sample_queries
from tasks.darkweb.records import Episode


def episode(i: int, author: str, market: str, person: str | None = None) -> Episode:
    return Episode(f"e{i}", author, market, (), person or author, i)


# market m: a0 a1 (alice), b0 b1 (bob), c0 (carol, alone); market n: alice again (n0), dave (n1, n2)
EPISODES = [
    episode(0, "alice", "m"),
    episode(1, "alice", "m"),
    episode(2, "bob", "m"),
    episode(3, "bob", "m"),
    episode(4, "carol", "m"),
    episode(5, "alice", "n"),
    episode(6, "dave", "n"),
    episode(7, "dave", "n"),
]
# angles (degrees) on the unit circle: cosine ranks follow angular distance
ANGLES = [0, 50, 10, 80, 20, 5, 100, 110]
EMB = np.array([[np.cos(np.radians(a)), np.sin(np.radians(a))] for a in ANGLES])


def ranks(evaluation, kind: str = "within") -> dict[str, int]:
    return {row["query"]: row["rank"] for row in evaluation.details if row["set"] == kind}


def test_within_market_ranks_are_as_worked_out_by_hand():
    evaluation = evaluate_embeddings(EMB, EPISODES)
    # e0 (0 deg): nearest in m are e2 (10, bob), e4 (20, carol), e1 (50, alice) -> rank 3
    # e1 (50): e3 (30 away), e4 (30), e2 (40), e0 (50, alice) -> rank 4
    # e2 (10): e0 (10 away, alice), e4 (10 away, carol), e1 (40), e3 (70, bob) -> rank 4
    # e3 (80): e1 (30), e4 (60), e2 (70, bob) -> rank 3
    # e4 has no other episode by carol: no rank (0), left out of the means
    # n: e5 alone for alice; e6 (100) -> e7 (110) first -> rank 1; e7 -> e6 rank 1
    assert ranks(evaluation) == {"e0": 3, "e1": 4, "e2": 4, "e3": 3, "e4": 0, "e5": 0, "e6": 1, "e7": 1}
    scores = evaluation.scores
    assert scores["m/mrr"] == pytest.approx((1 / 3 + 1 / 4 + 1 / 4 + 1 / 3) / 4)
    assert scores["m/queries"] == 4 and scores["m/queries_without_match"] == 1
    assert scores["n/mrr"] == 1.0 and scores["n/recall_at_1"] == 1.0
    assert scores["mrr"] == pytest.approx((1 / 3 + 1 / 4 + 1 / 4 + 1 / 3 + 1 + 1) / 6)
    assert scores["recall_at_2"] == pytest.approx(2 / 6) and scores["recall_at_5"] == 1.0


def test_migrant_linking_ranks_the_other_market():
    evaluation = evaluate_embeddings(EMB, EPISODES, heldout=lambda person, source, target: person != "alice")
    # alice is in m and n: m -> n queries e0, e1 rank n's e5, e6, e7; e0 (0): e5 (5) first -> 1;
    # e1 (50): e5 at 45, e6 at 50 -> 1. n -> m: e5 (5): e0 at 5, e2 at 5 (tie, bob) -> pessimistic 2
    assert ranks(evaluation, "migrant m->n") == {"e0": 1, "e1": 1}
    assert ranks(evaluation, "migrant n->m") == {"e5": 2}
    scores = evaluation.scores
    assert scores["migrant/m->n/mrr"] == 1.0 and scores["migrant/n->m/mrr"] == 0.5
    assert scores["migrant/mrr"] == pytest.approx(2.5 / 3) and scores["migrant/m->n/persons"] == 1
    assert "migrant_heldout/mrr" not in scores  # alice had a CROSS label: no held-out migrant


def test_query_excluded_by_index_so_a_duplicate_still_counts():
    episodes = [episode(0, "a", "m"), episode(1, "a", "m"), episode(2, "b", "m"), episode(3, "b", "m")]
    emb = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0], [0.0, 1.0]])
    assert evaluate_embeddings(emb, episodes).scores["mrr"] == 1.0


def test_seeded_query_sample():
    rng = np.random.default_rng(0)
    episodes = [episode(i, f"a{i // 4}", "m") for i in range(40)]
    emb = rng.normal(size=(40, 3))
    first = evaluate_embeddings(emb, episodes, query_sample=10, query_seed=7)
    again = evaluate_embeddings(emb, episodes, query_sample=10, query_seed=7)
    other = evaluate_embeddings(emb, episodes, query_sample=10, query_seed=8)
    assert len(first.details) == 10 and first.details == again.details and first.details != other.details
    # the sampled queries still rank against all 39 other episodes: same ranks as the full evaluation
    full = ranks(evaluate_embeddings(emb, episodes))
    assert all(full[q] == r for q, r in ranks(first).items())
    assert sample_queries(np.arange(5), None, 0).tolist() == [0, 1, 2, 3, 4]


def test_embedding_shape_is_checked():
    with pytest.raises(ValueError, match="one embedding row per episode"):
        evaluate_embeddings(EMB[:3], EPISODES)
    with pytest.raises(ValueError, match="nothing to evaluate"):
        evaluate_embeddings(EMB[:1], EPISODES[:1])


class FixedSystem:
    """Returns the same embeddings whatever it is given; compared by the metric it declares (if any)."""

    name = "fixed"

    def __init__(self, embeddings: np.ndarray, metric: str | None = None) -> None:
        self.embeddings = embeddings
        if metric is not None:
            self.metric = metric

    def embed(self, episodes):
        return self.embeddings


def test_the_system_declares_the_metric_not_the_task():
    class Split:
        episodes = EPISODES
        cross_accounts = frozenset()

    # scaling rows changes Euclidean ranks but not cosine ranks
    scaled = EMB * np.array([1.0, 3.0, 1.0, 0.5, 2.0, 1.0, 1.0, 4.0])[:, None]
    task = DarkwebTask()
    default = task.evaluate(FixedSystem(scaled), Split())
    euclidean = task.evaluate(FixedSystem(scaled, "euclidean"), Split())
    assert default.settings["metric"] == "cosine" and ranks(default) == ranks(evaluate_embeddings(EMB, EPISODES))
    assert euclidean.settings["metric"] == "euclidean"
    assert ranks(euclidean) == ranks(evaluate_embeddings(scaled, EPISODES, metric="euclidean")) != ranks(default)
    with pytest.raises(TypeError):
        DarkwebTask(metric="euclidean")  # no longer a task parameter
