"""benchmarks/char_lm_calibration.py: the best band's cuts and the bootstrap optimism of the best-band bound."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from helpers.paths import REPO

from harness.metrics.verification import best_band_cuts, c_at_1_best_band

sys.path.insert(0, str(REPO))
from benchmarks.char_lm_calibration import bound_optimism, c_at_1_of_cuts  # noqa: E402


@pytest.mark.parametrize("seed", range(5))
def test_best_band_cuts_find_the_harness_bound_and_reproduce_it(seed: int) -> None:
    rng = np.random.default_rng(seed)
    truth = rng.random(60) < 0.5
    answers = np.clip(np.round(0.5 + 0.3 * (truth - 0.5) + rng.normal(0, 0.25, 60), 2), 0, 1)
    answers[rng.random(60) < 0.15] = 0.5  # some unanswered, which stay so
    value, a, b = best_band_cuts(truth, answers)
    assert value == c_at_1_best_band(truth, answers)
    # no pair of cuts does better: every pair, tried by brute force, scored by the benchmark's own c@1 of cuts
    points = np.r_[-np.inf, np.unique(answers[answers != 0.5]) + 1e-9, np.inf]
    brute = max(c_at_1_of_cuts(truth, answers, lo, hi) for lo in points for hi in points if lo <= hi)
    assert value == pytest.approx(brute)
    assert a <= b
    assert c_at_1_of_cuts(truth, answers, a, b) == pytest.approx(value)


def test_the_bound_is_optimistic_on_noise_and_not_where_answers_separate_the_classes() -> None:
    rng = np.random.default_rng(0)
    truth = rng.random(100) < 0.5
    noise = rng.random(100)
    optimism = bound_optimism(truth, noise, repeats=200)
    # on answers that know nothing, the best band still finds c@1 above 0.5 by its choice on the truth
    assert c_at_1_best_band(truth, noise) > 0.55
    assert optimism > 0.03
    separating = np.where(truth, 0.9, 0.1) + rng.normal(0, 0.01, 100)
    assert c_at_1_best_band(truth, separating) == 1.0
    assert bound_optimism(truth, separating, repeats=50) == 0.0  # the cuts fall between the classes
