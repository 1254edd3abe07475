"""Score calibration shared by the verification systems: an abstain band that maps to exactly 0.5.

This is the rescaling of PAN's 2020 distance baseline (Kestemont et al., `correct_scores` in
pan-webis-de/pan-code, clef20/authorship-verification): a raw similarity `s` in [0, 1] and two
thresholds `p1 <= p2` give

    s <= p1      ->  0.49 * s / p1                         (a "different authors" answer in [0, 0.49])
    p1 < s < p2  ->  0.5 exactly                           (no answer)
    s >= p2      ->  0.51 + 0.49 * (s - p2) / (1 - p2)      (a "same author" answer in [0.51, 1])

Scores outside [0, 1] are clipped into it first, so any monotone similarity that is mostly in
[0, 1] (cosine similarity, a probability) can be calibrated. `fit_abstain_band` grid-searches
`p1` and `p2` on a training split to maximise one of PAN's measures.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NamedTuple

import numpy as np

from harness.errors import HarnessError
from harness.metrics.verification import PROFILES
from harness.records import NO_ANSWER, VerificationData

# The calibrated ranges of PAN's baseline: answers avoid (0.49, 0.51) except for the 0.5 itself.
LOW_MAX = 0.49
HIGH_MIN = 0.51


class AbstainBand(NamedTuple):
    """Thresholds of an abstain band: raw scores strictly between `p1` and `p2` answer 0.5.

    `p1 == p2` is a band with no width: a plain decision threshold that never abstains.
    """

    p1: float
    p2: float

    def apply(self, scores: Sequence[float] | np.ndarray) -> np.ndarray:
        """Calibrate raw scores with this band (see `rescale_with_abstain_band`)."""
        return rescale_with_abstain_band(scores, self.p1, self.p2)


def rescale_with_abstain_band(scores: Sequence[float] | np.ndarray, p1: float, p2: float) -> np.ndarray:
    """Map raw scores in [0, 1] to answers in [0, 1] with an abstain band (p1, p2) answering 0.5.

    Scores are clipped to [0, 1] first (NaN is refused). The map is monotone non-decreasing;
    a score equal to `p1` goes to the low side (0.49), one equal to `p2` to the high side (0.51),
    as in PAN's `correct_scores`. Where a branch has no width (`p1 == 0` or `p2 == 1`), its only
    score goes to the end of the range (0 or 1) rather than through PAN's division by 1e-6.
    """
    if not 0.0 <= p1 <= p2 <= 1.0:
        raise ValueError(f"abstain band needs 0 <= p1 <= p2 <= 1, got p1={p1!r}, p2={p2!r}")
    s = np.asarray(scores, dtype=np.float64)
    if np.isnan(s).any():
        raise ValueError("cannot calibrate NaN scores")
    s = np.clip(s, 0.0, 1.0)
    low = LOW_MAX * s / p1 if p1 > 0 else np.zeros_like(s)
    high = HIGH_MIN + (1.0 - HIGH_MIN) * (s - p2) / (1.0 - p2) if p2 < 1 else np.ones_like(s)
    out = np.where(s <= p1, low, np.where(s >= p2, high, NO_ANSWER))
    # guard the ends against rounding (0.51 + 0.49 * 1.0 may land a hair above 1)
    return np.clip(out, 0.0, 1.0)


def band_grid(step: float = 0.01) -> np.ndarray:
    """The thresholds searched: step, 2*step, ... below 1 (0.01 ... 0.99 for the default step)."""
    if not 0.0 < step <= 0.5:
        raise ValueError(f"grid step must be in (0, 0.5], got {step!r}")
    count = int(np.floor((1.0 - 1e-9) / step))
    # rounded so that the chosen thresholds read as 0.07, not 0.07000000000000001, in result files
    return np.round(np.arange(1, count + 1) * step, 10)


def fit_abstain_band(
    scores: Sequence[float] | np.ndarray,
    labels: Sequence[bool] | np.ndarray,
    *,
    step: float = 0.01,
    objective: str = "overall",
    profile: str = "pan23",
) -> AbstainBand:
    """Grid-search the band (p1, p2) that maximises a PAN measure of the calibrated scores.

    Every pair `p1 <= p2` from `band_grid(step)` is tried (4,950 pairs for step 0.01): the pairs
    with `p1 < p2` that PAN's baseline searches, plus `p1 == p2`, the bands of no width, so that the
    fitted band is never worse on these data than the best plain threshold. The measure is `objective`
    of the measure table (harness.metrics.table) for `profile`, computed on the calibrated scores.

    Ties (equal measure, compared exactly) go to the narrowest band, then to the lowest `p1`:
    abstaining is kept only where it pays.

    Scores outside [0, 1] are clipped first, as in `rescale_with_abstain_band`. With step 0.01 and
    a few thousand scores the search takes a few seconds.
    """
    s = np.clip(np.asarray(scores, dtype=np.float64), 0.0, 1.0)
    y = np.asarray(labels, dtype=bool)
    if s.ndim != 1 or s.shape != y.shape:
        raise ValueError(f"scores and labels must be 1-D of the same length, got {s.shape} and {y.shape}")
    if s.size == 0:
        raise ValueError("cannot fit an abstain band on no scores")
    if np.isnan(s).any():
        raise ValueError("cannot fit an abstain band on NaN scores")
    measure = objective_function(objective, profile=profile)
    grid = band_grid(step)
    best_key: tuple[float, int, int] | None = None
    best = AbstainBand(float(grid[0]), float(grid[0]))
    for i, p1 in enumerate(grid):
        # rows of calibrated scores for every p2 >= p1 at once; the measure then scores them one by one
        high = HIGH_MIN + (1.0 - HIGH_MIN) * (s[None, :] - grid[i:, None]) / (1.0 - grid[i:, None])
        rows = np.where(s <= p1, LOW_MAX * s / p1, np.where(s[None, :] >= grid[i:, None], high, NO_ANSWER))
        for offset, row in enumerate(np.clip(rows, 0.0, 1.0)):
            # maximise the measure, then prefer the narrowest band, then the lowest p1 (grid indices: exact)
            key = (measure(y, row), -offset, -i)
            if best_key is None or key > best_key:
                best_key, best = key, AbstainBand(float(p1), float(grid[i + offset]))
    return best


def objective_function(objective: str, *, profile: str = "pan23") -> Callable[[np.ndarray, np.ndarray], float]:
    """The measure `fit_abstain_band` maximises: one the profile defines in the measure table (e.g. `auc_x_c_at_1`)."""
    from harness.metrics.table import answer_measures, measure_function

    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r}; known: {', '.join(PROFILES)}")
    known = answer_measures(profile)
    if objective not in known:
        raise ValueError(f"unknown objective {objective!r} for profile {profile!r}; known: {', '.join(known)}")
    compute = measure_function(objective, {"profile": profile})

    def measure(truth: np.ndarray, answers: np.ndarray) -> float:
        return float(compute(truth, answers))

    return measure


def training_labels(data: VerificationData) -> np.ndarray:
    """The truth of each problem of a training split, in problem order (True = same author)."""
    if data.truth is None:
        raise HarnessError(f"{data.source}: fitting needs a split with truth")
    missing = [problem.id for problem in data.problems if problem.id not in data.truth]
    if missing:
        raise HarnessError(f"{data.source}: no truth for {len(missing)} problem(s), e.g. {missing[0]!r}")
    if not data.problems:
        raise HarnessError(f"{data.source}: no problems to fit on")
    return np.array([bool(data.truth[problem.id].same) for problem in data.problems], dtype=bool)
