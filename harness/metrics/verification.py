"""PAN's authorship-verification measures: AUC, c@1, F1, F0.5u, Brier, their mean, and AUC x c@1.

Pure functions, arrays in, a float out. `truth` holds the gold labels (1/True = same author),
`scores` the systems' answers in [0, 1], where exactly 0.5 is a non-answer. The semantics are
those of PAN's official evaluators (pan-webis-de/pan-code):

- ``pan20``: the 2020 evaluator. F0.5u binarises with ``score >= 0.5`` as "same", so an exact 0.5
  counts as a "same" decision (tp or fp) and never as a non-answer; `overall` is the mean of 4.
- ``pan23``: the 2021-2023 evaluator. F0.5u counts an exact 0.5 as a non-answer (n_u), and the
  complement of the Brier loss joins; `overall` is the mean of 5.

AUC, c@1 and F1 are the same in both profiles.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from core.records import NO_ANSWER

# Measure names in the order PAN's evaluators compute them; `overall` is their mean.
PROFILES: dict[str, tuple[str, ...]] = {
    "pan20": ("auc", "c_at_1", "f1", "f_05_u"),
    "pan23": ("auc", "c_at_1", "f_05_u", "f1", "brier"),
}


def _as_arrays(truth: Any, scores: Any) -> tuple[np.ndarray, np.ndarray]:
    """Validate and convert to (bool labels, float64 scores) of equal length."""
    y = np.asarray(truth)
    s = np.asarray(scores, dtype=np.float64)
    if y.ndim != 1 or s.ndim != 1:
        raise ValueError(f"truth and scores must be 1-D, got shapes {y.shape} and {s.shape}")
    if y.shape != s.shape:
        raise ValueError(f"truth and scores differ in length: {y.shape[0]} != {s.shape[0]}")
    if y.size == 0:
        raise ValueError("no problems to score")
    if y.dtype != np.bool_:
        y_num = y.astype(np.float64)
        if not np.all((y_num == 0) | (y_num == 1)):
            raise ValueError("truth must be binary (0/1 or False/True)")
        y = y_num == 1
    if not np.all(np.isfinite(s)):
        raise ValueError("scores must be finite (no NaN or inf)")
    return y, s


def auc(truth: Sequence[Any] | np.ndarray, scores: Sequence[float] | np.ndarray) -> float:
    """Area under the ROC curve over all problems, non-answers (0.5) included.

    Ties count half (as sklearn's trapezoidal ROC does). 0.0 when only one class is present,
    as PAN's evaluator returns on sklearn's ValueError.
    """
    y, s = _as_arrays(truth, scores)
    n_pos = int(y.sum())
    n_neg = y.size - n_pos
    if n_pos == 0 or n_neg == 0:
        return 0.0
    # Mann-Whitney U with mid-ranks for ties equals the trapezoidal ROC area exactly
    order = np.argsort(s, kind="mergesort")
    sorted_s = s[order]
    starts = np.flatnonzero(np.r_[True, sorted_s[1:] != sorted_s[:-1]])
    ends = np.r_[starts[1:], s.size]
    mid_ranks = (starts + ends + 1) / 2.0  # 1-based mean rank of each tie group
    ranks = np.empty(s.size, dtype=np.float64)
    ranks[order] = np.repeat(mid_ranks, ends - starts)
    u = ranks[y].sum() - n_pos * (n_pos + 1) / 2.0
    return float(u / (n_pos * n_neg))


def c_at_1(truth: Sequence[Any] | np.ndarray, scores: Sequence[float] | np.ndarray) -> float:
    """c@1 (Peñas & Rodrigo 2011): (n_c + n_u * n_c / n) / n, where 0.5 is unanswered.

    An answer is correct when ``score > 0.5`` agrees with the label.
    """
    y, s = _as_arrays(truth, scores)
    n = float(s.size)
    answered = s != NO_ANSWER
    n_u = float(np.count_nonzero(~answered))
    n_c = float(np.count_nonzero(answered & ((s > NO_ANSWER) == y)))
    return (1.0 / n) * (n_c + (n_u * n_c / n))


def f1(truth: Sequence[Any] | np.ndarray, scores: Sequence[float] | np.ndarray) -> float:
    """F1 of the same-author class over answered problems (``score > 0.5`` = same; 0.5 dropped).

    0.0 when undefined (no answered problem, or no positive in truth or prediction).
    """
    y, s = _as_arrays(truth, scores)
    answered = s != NO_ANSWER
    pred = s[answered] > NO_ANSWER
    gold = y[answered]
    tp = np.count_nonzero(pred & gold)
    fp = np.count_nonzero(pred & ~gold)
    fn = np.count_nonzero(~pred & gold)
    if tp == 0:
        return 0.0
    return float(2 * tp / (2 * tp + fp + fn))


def f_05_u(
    truth: Sequence[Any] | np.ndarray,
    scores: Sequence[float] | np.ndarray,
    *,
    abstain_counts_as_positive: bool = False,
) -> float:
    """F0.5u (Bevendorff et al. 2019): 1.25 tp / (1.25 tp + 0.25 (fn + n_u) + fp).

    By default (PAN 2021-2023) an exact 0.5 is a non-answer, counted in n_u. With
    ``abstain_counts_as_positive=True`` (the PAN 2020 evaluator) 0.5 counts as a "same"
    decision, so n_u is always 0. 0.0 when the denominator is 0 (all true negatives).
    """
    y, s = _as_arrays(truth, scores)
    if abstain_counts_as_positive:
        unanswered = np.zeros(s.size, dtype=bool)
        positive = s >= NO_ANSWER
    else:
        unanswered = s == NO_ANSWER
        positive = s > NO_ANSWER
    negative = ~positive & ~unanswered
    n_u = np.count_nonzero(unanswered)
    tp = np.count_nonzero(positive & y)
    fp = np.count_nonzero(positive & ~y)
    fn = np.count_nonzero(negative & y)
    denominator = 1.25 * tp + 0.25 * (fn + n_u) + fp
    if denominator == 0:
        return 0.0
    return float(1.25 * tp / denominator)


def brier(truth: Sequence[Any] | np.ndarray, scores: Sequence[float] | np.ndarray) -> float:
    """Complement of the Brier loss, 1 - mean((score - label)^2), over all problems (PAN 2021-2023)."""
    y, s = _as_arrays(truth, scores)
    return float(1.0 - np.mean((s - y.astype(np.float64)) ** 2))


def evaluate_all(
    truth: Sequence[Any] | np.ndarray,
    scores: Sequence[float] | np.ndarray,
    profile: str = "pan23",
) -> dict[str, float]:
    """All measures of a PAN profile (``pan20`` or ``pan23``) plus `overall`, their mean; unrounded."""
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r}; known: {', '.join(PROFILES)}")
    y, s = _as_arrays(truth, scores)
    measures = {
        "auc": lambda: auc(y, s),
        "c_at_1": lambda: c_at_1(y, s),
        "f1": lambda: f1(y, s),
        "f_05_u": lambda: f_05_u(y, s, abstain_counts_as_positive=profile == "pan20"),
        "brier": lambda: brier(y, s),
    }
    results = {name: measures[name]() for name in PROFILES[profile]}
    results["overall"] = float(np.mean(list(results.values())))
    return results


def overall(
    truth: Sequence[Any] | np.ndarray, scores: Sequence[float] | np.ndarray, *, profile: str = "pan23"
) -> float:
    """The mean of a profile's measures, as its evaluator computes it."""
    return evaluate_all(truth, scores, profile=profile)["overall"]


def auc_x_c_at_1_from_results(results: Mapping[str, float]) -> float:
    """AUC x c@1, the PAN 2014-2015 ranking score, from results holding `auc` and `c_at_1` (an evaluator's)."""
    return results["auc"] * results["c_at_1"]


def auc_x_c_at_1(truth: Sequence[Any] | np.ndarray, scores: Sequence[float] | np.ndarray) -> float:
    """AUC x c@1, the PAN 2014-2015 ranking score (Stamatatos et al. 2014)."""
    y, s = _as_arrays(truth, scores)
    return auc_x_c_at_1_from_results({"auc": auc(y, s), "c_at_1": c_at_1(y, s)})


def c_at_1_best_band(truth: Sequence[Any] | np.ndarray, scores: Sequence[float] | np.ndarray) -> float:
    """The c@1 the answers would reach with the best abstain band chosen on these answers: an upper bound.

    Keeps the answers' order and re-draws the decision: two cuts a <= b over the answered values give
    "different" below a, no answer in [a, b), "same" from b up; the best c@1 over all cuts is returned.
    Answers of exactly 0.5 stay non-answers (a band cannot tell them apart). The answers' own decision
    is one of the cuts, so this is never below `c_at_1`; the difference is the calibration gap, what a
    band fitted on other data lost (issue 12). It is chosen on the truth it is scored on: a bound, not a result.
    """
    return best_band_cuts(truth, scores)[0]


def best_band_cuts(
    truth: Sequence[Any] | np.ndarray, scores: Sequence[float] | np.ndarray
) -> tuple[float, float, float]:
    """`c_at_1_best_band` and where its cuts (a, b) fall, midway between neighbouring answered values (-inf or
    inf past the ends), so that the band can be scored on other answers (benchmarks/char_lm_calibration.py)."""
    y, s = _as_arrays(truth, scores)
    n = float(s.size)
    answered = s != NO_ANSWER
    n_u0 = float(np.count_nonzero(~answered))
    values, labels = s[answered], y[answered]
    if values.size == 0:
        return 0.0, np.inf, np.inf
    # groups of equal values, in increasing order: a cut falls between groups, never inside one
    distinct, group = np.unique(values, return_inverse=True)
    cuts = np.r_[-np.inf, (distinct[:-1] + distinct[1:]) / 2, np.inf]
    positives = np.bincount(group, weights=labels.astype(np.float64), minlength=distinct.size)
    sizes = np.bincount(group, minlength=distinct.size).astype(np.float64)
    negatives = sizes - positives
    # cut i (0..m): groups < i answer "different"; cut j >= i: groups >= j answer "same"
    neg_below = np.r_[0.0, np.cumsum(negatives)]
    pos_from = np.r_[np.cumsum(positives[::-1])[::-1], 0.0]
    size_below = np.r_[0.0, np.cumsum(sizes)]
    best = (0.0, np.inf, np.inf)
    for i in range(distinct.size + 1):
        n_c = neg_below[i] + pos_from[i:]
        n_u = n_u0 + size_below[i:] - size_below[i]
        value = (n_c + n_u * n_c / n) / n
        j = int(np.argmax(value))  # the first of equal values
        if float(value[j]) > best[0]:
            best = (float(value[j]), float(cuts[i]), float(cuts[i + j]))
    return best
