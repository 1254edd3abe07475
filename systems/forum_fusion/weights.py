"""Weights of a fused cosine, learned by a listwise ranking loss over training queries.

A query's score for a candidate is sum_v w_v cos_v(query, candidate), one cosine per view. The
weights minimise the mean over training queries of -log(sum over the query's positives of
softmax(scores)), the loss of neighbourhood component analysis restricted to one weight per view.
Weights are kept >= 0, so the fused score is itself a cosine of weighted, concatenated unit views
(see system.py); their overall size is the softmax's inverse temperature. Deterministic (L-BFGS-B
from a fixed start).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
from scipy.optimize import minimize
from scipy.special import logsumexp

START_WEIGHT = 10.0  # every view starts equal, at an inverse temperature that spreads cosines in [0, 1]


class RankingList(NamedTuple):
    """One training query: each candidate's cosine per view, and which candidates are its author's."""

    cosines: np.ndarray  # (candidates, views), float64
    positive: np.ndarray  # (candidates,) bool, at least one True and one False


def listwise_loss(weights: np.ndarray, lists: Sequence[RankingList]) -> tuple[float, np.ndarray]:
    """Mean loss over the lists and its gradient with respect to the weights (one list at a time: the reference)."""
    total, gradient = 0.0, np.zeros_like(weights, dtype=np.float64)
    for ranking in lists:
        scores = ranking.cosines @ weights
        log_all = logsumexp(scores)
        log_positive = logsumexp(scores[ranking.positive])
        p_all = np.exp(scores - log_all)
        p_positive = np.where(ranking.positive, np.exp(scores - log_positive), 0.0)
        total += log_all - log_positive
        gradient += ranking.cosines.T @ (p_all - p_positive)
    return total / len(lists), gradient / len(lists)


class _PaddedLists(NamedTuple):
    """The lists stacked into one array, shorter lists padded (what the optimiser evaluates fast)."""

    cosines: np.ndarray  # (lists, longest, views)
    candidate: np.ndarray  # (lists, longest) bool: a real candidate, not padding
    positive: np.ndarray  # (lists, longest) bool

    @classmethod
    def of(cls, lists: Sequence[RankingList], views: int) -> _PaddedLists:
        longest = max(len(r.positive) for r in lists)
        cosines = np.zeros((len(lists), longest, views))
        candidate = np.zeros((len(lists), longest), dtype=bool)
        positive = np.zeros((len(lists), longest), dtype=bool)
        for row, ranking in enumerate(lists):
            size = len(ranking.positive)
            cosines[row, :size], candidate[row, :size], positive[row, :size] = ranking.cosines, True, ranking.positive
        return cls(cosines, candidate, positive)

    def loss(self, weights: np.ndarray) -> tuple[float, np.ndarray]:
        """As `listwise_loss`, all lists at once."""
        scores = self.cosines @ weights
        all_scores = np.where(self.candidate, scores, -np.inf)
        positive_scores = np.where(self.positive, scores, -np.inf)
        log_all = logsumexp(all_scores, axis=1, keepdims=True)
        log_positive = logsumexp(positive_scores, axis=1, keepdims=True)
        share = np.exp(all_scores - log_all) - np.exp(positive_scores - log_positive)
        gradient = np.einsum("lc,lcv->v", share, self.cosines)
        rows = len(scores)
        return float((log_all - log_positive).sum() / rows), gradient / rows


def fit_view_weights(lists: Sequence[RankingList], views: int, *, max_iterations: int = 200) -> np.ndarray:
    """Non-negative weights, one per view, minimising `listwise_loss` over `lists`."""
    usable = [r for r in lists if r.positive.any() and not r.positive.all()]
    if not usable:
        raise ValueError("no training query has both a same-author and another candidate: cannot learn weights")
    padded = _PaddedLists.of(usable, views)
    result = minimize(
        padded.loss,
        np.full(views, START_WEIGHT),
        jac=True,
        method="L-BFGS-B",
        bounds=[(0.0, None)] * views,
        options={"maxiter": max_iterations},
    )
    return np.asarray(result.x, dtype=np.float64)
