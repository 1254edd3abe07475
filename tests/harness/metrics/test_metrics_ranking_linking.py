"""Ranking (MRR, recall@k, mean rank) and linking (EER, minDCF, DET) measures against plain Python loops."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from harness.metrics.linking import det_curve, eer, min_dcf
from harness.metrics.ranking import (
    first_relevant_ranks,
    mean_rank_from_ranks,
    mrr,
    mrr_from_ranks,
    ranking_scores,
    recall_at_k,
    recall_at_k_from_ranks,
)

# ---- brute-force references ------------------------------------------------------------------


def brute_ranks(scores: np.ndarray, relevant: np.ndarray, exclude: np.ndarray) -> list[int | None]:
    """Sort each query's items by score, non-relevant first among ties (pessimistic); rank of first relevant."""
    ranks: list[int | None] = []
    for q in range(scores.shape[0]):
        items = [j for j in range(scores.shape[1]) if not exclude[q, j]]
        if not any(relevant[q, j] for j in items):
            ranks.append(None)
            continue
        ordered = sorted(items, key=lambda j: (-scores[q, j], bool(relevant[q, j])))
        ranks.append(next(pos for pos, j in enumerate(ordered, start=1) if relevant[q, j]))
    return ranks


def brute_points(scores: list[float], labels: list[bool]) -> list[tuple[float, float, float]]:
    """(threshold, FAR, FRR) for every distinct score and +inf, accepting score >= threshold."""
    pos = [s for s, y in zip(scores, labels, strict=True) if y]
    neg = [s for s, y in zip(scores, labels, strict=True) if not y]
    points = []
    for t in sorted(set(scores)) + [math.inf]:
        far = sum(s >= t for s in neg) / len(neg)
        frr = sum(s < t for s in pos) / len(pos)
        points.append((t, far, frr))
    return points


def brute_eer_nearest(scores: list[float], labels: list[bool]) -> float:
    best = None
    for _, far, frr in brute_points(scores, labels):
        if best is None or abs(far - frr) <= best[0]:  # <=: later (higher threshold) wins ties
            best = (abs(far - frr), (far + frr) / 2)
    return best[1]


def brute_eer_interpolated(scores: list[float], labels: list[bool]) -> float:
    points = brute_points(scores, labels)
    for (_, far0, frr0), (_, far1, frr1) in itertools.pairwise(points):
        d0, d1 = far0 - frr0, far1 - frr1
        if d0 == 0:
            return far0
        if d0 > 0 >= d1:
            # solve far0 + a (far1 - far0) == frr0 + a (frr1 - frr0) for a
            a = (far0 - frr0) / ((far0 - frr0) - (far1 - frr1))
            return far0 + a * (far1 - far0)
    raise AssertionError("FAR and FRR never cross")


def brute_min_dcf(scores, labels, p_target, c_miss, c_fa) -> float:
    pos = [s for s, y in zip(scores, labels, strict=True) if y]
    neg = [s for s, y in zip(scores, labels, strict=True) if not y]
    costs = []
    for t in [-math.inf, *sorted(set(scores)), math.inf]:
        p_miss = sum(s < t for s in pos) / len(pos)
        p_fa = sum(s >= t for s in neg) / len(neg)
        costs.append(p_target * c_miss * p_miss + (1 - p_target) * c_fa * p_fa)
    return min(costs)


# ---- strategies ------------------------------------------------------------------------------


@st.composite
def ranking_problem(draw):
    n_q = draw(st.integers(1, 6))
    n_items = draw(st.integers(1, 8))
    cells = n_q * n_items
    # few distinct values, so ties are common
    scores = np.array(draw(st.lists(st.integers(0, 3), min_size=cells, max_size=cells)), float).reshape(n_q, n_items)
    relevant = np.array(draw(st.lists(st.booleans(), min_size=cells, max_size=cells))).reshape(n_q, n_items)
    exclude = np.array(draw(st.lists(st.booleans(), min_size=cells, max_size=cells))).reshape(n_q, n_items)
    return scores, relevant, exclude


@st.composite
def trials(draw):
    n = draw(st.integers(2, 30))
    labels = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    assume(any(labels) and not all(labels))
    scores = draw(st.lists(st.integers(0, 6).map(lambda v: v / 6), min_size=n, max_size=n))
    return scores, labels


# ---- ranking ---------------------------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(ranking_problem(), st.integers(1, 8))
def test_mrr_and_recall_match_brute_force(problem, k) -> None:
    scores, relevant, exclude = problem
    expected = brute_ranks(scores, relevant, exclude)
    got = first_relevant_ranks(scores, relevant, exclude=exclude)
    assert [r or 0 for r in expected] == got.tolist()
    valid = [r for r in expected if r is not None]
    if not valid:
        with pytest.raises(ValueError, match="none of the"):
            mrr(scores, relevant, exclude=exclude, skip_empty=True)
        return
    if len(valid) < len(expected):
        with pytest.raises(ValueError, match="no relevant item"):
            mrr(scores, relevant, exclude=exclude)
        with pytest.warns(UserWarning, match=f"{len(expected) - len(valid)} of {len(expected)} queries"):
            got_mrr = mrr(scores, relevant, exclude=exclude, skip_empty=True)
        with pytest.warns(UserWarning):
            got_recall = recall_at_k(scores, relevant, k, exclude=exclude, skip_empty=True)
    else:
        got_mrr = mrr(scores, relevant, exclude=exclude)
        got_recall = recall_at_k(scores, relevant, k, exclude=exclude)
    assert got_mrr == pytest.approx(sum(1 / r for r in valid) / len(valid), abs=1e-12)
    assert got_recall == pytest.approx(sum(r <= k for r in valid) / len(valid), abs=1e-12)


@settings(max_examples=100, deadline=None)
@given(ranking_problem())
def test_exclude_by_index_equals_mask(problem) -> None:
    scores, relevant, _ = problem
    n_q, n_items = scores.shape
    index = np.array([q % (n_items + 1) - 1 for q in range(n_q)])  # includes -1 = exclude nothing
    mask = np.zeros_like(relevant)
    for q, j in enumerate(index):
        if j >= 0:
            mask[q, j] = True
    assert (
        first_relevant_ranks(scores, relevant, exclude=index).tolist()
        == first_relevant_ranks(scores, relevant, exclude=mask).tolist()
    )


def test_ties_are_pessimistic() -> None:
    scores = np.array([[0.9, 0.5, 0.5, 0.1]])
    relevant = np.array([[False, True, False, False]])
    assert mrr(scores, relevant) == pytest.approx(1 / 3)  # the tied non-relevant item goes first
    assert recall_at_k(scores, relevant, 2) == 0.0
    assert recall_at_k(scores, relevant, 3) == 1.0
    # two tied relevant items at the top: the first relevant item is still rank 1
    assert mrr(np.array([[1.0, 1.0, 0.0]]), np.array([[True, True, False]])) == 1.0
    # a constant scorer gets the worst rank
    assert mrr(np.zeros((1, 4)), np.array([[True, False, False, False]])) == pytest.approx(1 / 4)


def test_self_similarity_with_query_excluded() -> None:
    # items 0 and 1 share an author, item 2 is alone; each query is also an item
    sim = np.array([[1.0, 0.8, 0.3], [0.8, 1.0, 0.9], [0.3, 0.9, 1.0]])
    same = np.array([[True, True, False], [True, True, False], [False, False, True]])
    ranks = first_relevant_ranks(sim, same, exclude=np.arange(3))
    assert ranks.tolist() == [1, 2, 0]
    with pytest.warns(UserWarning, match="1 of 3 queries"):
        assert mrr(sim, same, exclude=np.arange(3), skip_empty=True) == pytest.approx((1 + 1 / 2) / 2)


def test_ranking_input_errors() -> None:
    with pytest.raises(ValueError, match="boolean"):
        mrr(np.zeros((2, 2)), np.zeros((2, 2)))
    with pytest.raises(ValueError, match="NaN"):
        mrr(np.full((1, 2), np.nan), np.ones((1, 2), bool))
    with pytest.raises(ValueError, match="k must"):
        recall_at_k(np.zeros((1, 2)), np.ones((1, 2), bool), 0)
    with pytest.raises(ValueError, match="exclude"):
        mrr(np.zeros((2, 2)), np.ones((2, 2), bool), exclude=np.array([0, 5]))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 12), min_size=1, max_size=30), st.integers(1, 12))
def test_measures_from_ranks_match_plain_loops(ranks, k) -> None:
    matched = [r for r in ranks if r > 0]  # rank 0 = no match: left out of the mean
    if not matched:
        for measure in (mrr_from_ranks, mean_rank_from_ranks):
            with pytest.raises(ValueError, match="no query has a matching item"):
                measure(ranks)
        return
    assert mrr_from_ranks(ranks) == pytest.approx(sum(1 / r for r in matched) / len(matched), abs=1e-12)
    assert recall_at_k_from_ranks(ranks, k) == pytest.approx(sum(r <= k for r in matched) / len(matched), abs=1e-12)
    assert mean_rank_from_ranks(ranks) == pytest.approx(sum(matched) / len(matched), abs=1e-12)


@settings(max_examples=100, deadline=None)
@given(ranking_problem(), st.integers(1, 8))
def test_matrix_measures_are_the_rank_measures_of_their_ranks(problem, k) -> None:
    scores, relevant, _ = problem
    assume(relevant.any(axis=1).all())
    ranks = first_relevant_ranks(scores, relevant)
    assert mrr(scores, relevant) == mrr_from_ranks(ranks)  # the same floats, not just close
    assert recall_at_k(scores, relevant, k) == recall_at_k_from_ranks(ranks, k)


def test_mean_rank_by_hand() -> None:
    assert mean_rank_from_ranks([1, 3, 0, 2, 12]) == 4.5  # (1 + 3 + 2 + 12) / 4; the unmatched query is left out
    assert mean_rank_from_ranks(np.array([1, 1])) == 1.0


def test_ranking_scores_by_name_with_query_counts() -> None:
    ranks = np.array([1, 3, 0, 2, 12])
    scores = ranking_scores(ranks, ("mrr", "recall_at_2", "recall_at_10", "mean_rank"))
    assert scores == {
        "mrr": pytest.approx((1 + 1 / 3 + 1 / 2 + 1 / 12) / 4),
        "recall_at_2": 0.5,
        "recall_at_10": 0.75,
        "mean_rank": 4.5,
        "queries": 4.0,
        "queries_without_match": 1.0,
    }
    assert list(scores)[:4] == ["mrr", "recall_at_2", "recall_at_10", "mean_rank"]  # in the order asked
    with pytest.raises(ValueError, match="not computed from ranks"):
        ranking_scores(ranks, ("eer",))
    with pytest.raises(KeyError, match="unknown measure 'recall_at_0'"):
        ranking_scores(ranks, ("recall_at_0",))


def test_rank_input_errors() -> None:
    with pytest.raises(ValueError, match="1-D"):
        mrr_from_ranks(np.ones((2, 2), dtype=int))
    with pytest.raises(ValueError, match="1-based"):
        mrr_from_ranks([1, -1])
    with pytest.raises(ValueError, match="k must"):
        recall_at_k_from_ranks([1, 2], 0)


# ---- linking ---------------------------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(trials())
def test_eer_matches_brute_force(trial) -> None:
    scores, labels = trial
    y = np.array(labels)
    assert eer(scores, y, variant="nearest") == pytest.approx(brute_eer_nearest(scores, labels), abs=1e-12)
    assert eer(scores, y, variant="interpolated") == pytest.approx(brute_eer_interpolated(scores, labels), abs=1e-12)


@settings(max_examples=300, deadline=None)
@given(
    trials(),
    st.sampled_from([0.01, 0.05, 0.5, 0.9]),
    st.sampled_from([1.0, 10.0]),
    st.sampled_from([1.0, 2.0]),
)
def test_min_dcf_matches_brute_force(trial, p_target, c_miss, c_fa) -> None:
    scores, labels = trial
    y = np.array(labels)
    expected = brute_min_dcf(scores, labels, p_target, c_miss, c_fa)
    got = min_dcf(scores, y, p_target=p_target, c_miss=c_miss, c_fa=c_fa)
    assert got == pytest.approx(expected, abs=1e-12)
    norm = min_dcf(scores, y, p_target=p_target, c_miss=c_miss, c_fa=c_fa, normalized=True)
    assert norm == pytest.approx(expected / min(p_target * c_miss, (1 - p_target) * c_fa), abs=1e-12)
    assert norm <= 1.0 + 1e-12  # never worse than the better trivial system


@settings(max_examples=200, deadline=None)
@given(trials())
def test_det_curve_matches_brute_force(trial) -> None:
    scores, labels = trial
    thresholds, p_fa, p_miss = det_curve(scores, np.array(labels))
    expected = brute_points(scores, labels)
    assert thresholds.tolist() == [t for t, _, _ in expected]
    assert p_fa.tolist() == pytest.approx([far for _, far, _ in expected], abs=1e-12)
    assert p_miss.tolist() == pytest.approx([frr for _, _, frr in expected], abs=1e-12)
    assert np.all(np.diff(p_fa) <= 0) and np.all(np.diff(p_miss) >= 0)
    assert (p_fa[0], p_miss[0], p_fa[-1], p_miss[-1]) == (1.0, 0.0, 0.0, 1.0)


def test_perfect_separation() -> None:
    scores = [0.1, 0.2, 0.3, 0.7, 0.8]
    labels = np.array([False, False, False, True, True])
    assert eer(scores, labels) == 0.0
    assert eer(scores, labels, variant="nearest") == 0.0
    assert min_dcf(scores, labels) == 0.0


def test_inverted_scores() -> None:
    labels = np.array([True, True, False, False])
    assert eer([0.0, 1.0, 2.0, 3.0], labels) == 1.0
    assert eer([0.0, 1.0, 2.0, 3.0], labels, variant="nearest") == 1.0


def test_hand_computed_eer_and_min_dcf() -> None:
    # targets 0.9, 0.8, 0.3; non-targets 0.7, 0.1. At t=0.7 FAR 1/2, FRR 1/3; at t=0.8 FAR 0, FRR 1/3.
    scores = [0.9, 0.8, 0.3, 0.7, 0.1]
    labels = np.array([True, True, True, False, False])
    assert eer(scores, labels) == pytest.approx(1 / 3)  # FAR falls to 1/3 a third of the way along
    assert eer(scores, labels, variant="nearest") == pytest.approx((1 / 2 + 1 / 3) / 2)
    # best cost at t=0.8: 0.05 * 1 * 1/3 + 0.95 * 2 * 0
    assert min_dcf(scores, labels) == pytest.approx(0.05 / 3)
    assert min_dcf(scores, labels, normalized=True) == pytest.approx(1 / 3)


def test_linking_input_errors() -> None:
    with pytest.raises(ValueError, match="both target and non-target"):
        eer([0.1, 0.2], np.array([True, True]))
    with pytest.raises(ValueError, match="boolean"):
        eer([0.1, 0.2], [1, 0])
    with pytest.raises(ValueError, match="variant"):
        eer([0.1, 0.2], np.array([True, False]), variant="bogus")
    with pytest.raises(ValueError, match="p_target"):
        min_dcf([0.1, 0.2], np.array([True, False]), p_target=1.0)


def test_many_queries_cross_row_blocks() -> None:
    # more queries than one row block of the vectorised code
    rng = np.random.default_rng(1)
    scores = rng.integers(0, 4, (2500, 6)).astype(float)
    relevant = rng.random((2500, 6)) < 0.3
    relevant[:, 0] |= ~relevant.any(axis=1)
    exclude = np.arange(2500) % 7 - 1  # some queries exclude nothing (-1)
    mask = np.zeros_like(relevant)
    rows = np.flatnonzero(exclude >= 0)
    mask[rows, exclude[rows]] = True
    expected = brute_ranks(scores, relevant, mask)
    assert first_relevant_ranks(scores, relevant, exclude=exclude).tolist() == [r or 0 for r in expected]
