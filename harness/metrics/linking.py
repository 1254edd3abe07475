"""Detection measures for account linking: EER, minimum DCF and the DET curve.

`scores` are higher for "more likely the same author"; `labels` are True for same-author
(target) trials. A threshold t accepts a trial when ``score >= t``. The operating points are
every distinct score as a threshold (the lowest accepts all trials) plus ``t = +inf``, which
rejects all. At each point

- ``p_fa`` (false-acceptance rate, FAR) = share of non-target trials accepted,
- ``p_miss`` (false-rejection rate, FRR) = share of target trials rejected.

Both classes must be present; otherwise the rates are undefined and a ValueError is raised.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np


def _operating_points(scores: Any, labels: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(thresholds ascending with +inf last, p_fa, p_miss) at every operating point."""
    s = np.asarray(scores, dtype=np.float64)
    y = np.asarray(labels)
    if s.ndim != 1 or y.shape != s.shape:
        raise ValueError(f"scores and labels must be 1-D of equal length, got {s.shape} and {y.shape}")
    if y.dtype != np.bool_:
        raise ValueError("labels must be boolean (True = same author)")
    if np.isnan(s).any():
        raise ValueError("scores contain NaN")
    n_pos = int(y.sum())
    n_neg = y.size - n_pos
    if n_pos == 0 or n_neg == 0:
        raise ValueError(f"need both target and non-target trials, got {n_pos} and {n_neg}")
    order = np.argsort(s, kind="mergesort")
    s_sorted, y_sorted = s[order], y[order]
    starts = np.flatnonzero(np.r_[True, s_sorted[1:] != s_sorted[:-1]])
    thresholds = np.r_[s_sorted[starts], np.inf]
    # trials strictly below each threshold are rejected; the last point rejects everything
    pos_below = np.r_[np.cumsum(y_sorted)[starts - 1] * (starts > 0), n_pos]
    neg_below = np.r_[np.cumsum(~y_sorted)[starts - 1] * (starts > 0), n_neg]
    p_miss = pos_below / n_pos
    p_fa = (n_neg - neg_below) / n_neg
    return thresholds, p_fa, p_miss


def det_curve(scores: Any, labels: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(thresholds, p_fa, p_miss) at every operating point, thresholds ascending, +inf last.

    p_fa falls from 1 (accept all) to 0 and p_miss rises from 0 to 1 (reject all).
    """
    return _operating_points(scores, labels)


def eer(scores: Any, labels: Any, *, variant: Literal["interpolated", "nearest"] = "interpolated") -> float:
    """Equal error rate, where FAR equals FRR.

    ``interpolated``: FAR and FRR are joined linearly between adjacent operating points and the
    EER is their value where they cross. ``nearest``: the operating point with the smallest
    |FAR - FRR| (ties go to the higher threshold), returning (FAR + FRR) / 2 there.
    """
    _, p_fa, p_miss = _operating_points(scores, labels)
    diff = p_fa - p_miss  # non-increasing from +1 (accept all: FAR 1, FRR 0) to -1 (reject all)
    if variant == "nearest":
        gap = np.abs(diff)
        i = len(gap) - 1 - int(np.argmin(gap[::-1]))  # last minimum = highest threshold
        return float((p_fa[i] + p_miss[i]) / 2.0)
    if variant != "interpolated":
        raise ValueError(f"unknown EER variant {variant!r}; use 'interpolated' or 'nearest'")
    i = int(np.argmax(diff <= 0))  # first point at or past the crossing; i >= 1 since diff[0] > 0
    if diff[i] == 0:
        return float(p_fa[i])
    alpha = diff[i - 1] / (diff[i - 1] - diff[i])
    return float(p_fa[i - 1] + alpha * (p_fa[i] - p_fa[i - 1]))


def min_dcf(
    scores: Any,
    labels: Any,
    *,
    p_target: float = 0.05,
    c_miss: float = 1.0,
    c_fa: float = 2.0,
    normalized: bool = False,
) -> float:
    """Minimum detection cost over all operating points, accept-all and reject-all included.

    C_det = p_target * c_miss * P_miss + (1 - p_target) * c_fa * P_fa (van Leeuwen & Brümmer;
    Khan et al. 2021). ``normalized`` divides by min(p_target * c_miss, (1 - p_target) * c_fa),
    the cost of the better trivial system, so 1.0 means "no better than accepting or rejecting all".
    """
    if not 0.0 < p_target < 1.0:
        raise ValueError(f"p_target must lie in (0, 1), got {p_target}")
    if c_miss <= 0 or c_fa <= 0:
        raise ValueError(f"costs must be positive, got c_miss={c_miss}, c_fa={c_fa}")
    _, p_fa, p_miss = _operating_points(scores, labels)
    cost = p_target * c_miss * p_miss + (1.0 - p_target) * c_fa * p_fa
    best = float(cost.min())
    if normalized:
        best /= min(p_target * c_miss, (1.0 - p_target) * c_fa)
    return best
