"""`c_at_1_best_band`: the c@1 an abstain band chosen on the scored answers would reach (an upper bound)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from harness.metrics import table
from harness.metrics.verification import c_at_1, c_at_1_best_band


def brute_force(truth: np.ndarray, answers: np.ndarray) -> float:
    """Every pair of cuts a <= b: below a "different", from b up "same", 0.5 kept as non-answers."""
    cuts = [-1.0, *np.unique(answers[answers != 0.5]), 2.0]
    best = 0.0
    for a, b in itertools.combinations_with_replacement(cuts, 2):
        decided = np.where(answers == 0.5, 0.5, np.where(answers < a, 0.0, np.where(answers >= b, 1.0, 0.5)))
        best = max(best, c_at_1(truth, decided))
    return best


@pytest.mark.parametrize("seed", range(40))
def test_equals_the_exhaustive_search_and_bounds_the_obtained_c_at_1(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 15))
    truth = rng.random(n) < 0.5
    answers = np.round(rng.random(n), 1)  # ties and exact 0.5 answers
    answers[rng.random(n) < 0.2] = 0.5
    assert c_at_1_best_band(truth, answers) == pytest.approx(brute_force(truth, answers), abs=1e-12)
    assert c_at_1_best_band(truth, answers) >= c_at_1(truth, answers) - 1e-12


def test_a_badly_placed_threshold_shows_a_gap_and_a_good_one_none() -> None:
    truth = np.array([False, False, False, True, True, True])
    scores = np.array([0.1, 0.2, 0.3, 0.4, 0.8, 0.9])  # perfectly ordered, but 0.4 answers "different"
    assert c_at_1(truth, scores) == pytest.approx(5 / 6)
    assert c_at_1_best_band(truth, scores) == 1.0
    assert c_at_1_best_band(truth, np.array([0.1, 0.2, 0.3, 0.7, 0.8, 0.9])) == 1.0


def test_exact_one_half_stays_a_non_answer() -> None:
    truth = np.array([True, True, False, False])
    answers = np.array([0.5, 0.5, 0.5, 0.5])
    # nothing answered: c@1 is 0 whatever band is chosen
    assert c_at_1_best_band(truth, answers) == 0.0
    half = np.array([0.9, 0.5, 0.5, 0.1])
    assert c_at_1_best_band(truth, half) == pytest.approx(c_at_1(truth, half))


def test_is_an_answers_measure_of_both_profiles_higher_is_better() -> None:
    assert table.higher_is_better("c_at_1_best_band")
    assert table.resolve("c_at_1_best_band").measure.inputs == "answers"
    for profile in ("pan20", "pan23"):
        assert "c_at_1_best_band" in table.answer_measures(profile)
    truth, answers = np.array([True, False, True]), np.array([0.6, 0.4, 0.45])
    function = table.measure_function("c_at_1_best_band", {"profile": "pan23"})
    assert function(truth, answers) == c_at_1_best_band(truth, answers) == 1.0


def test_the_pan_tasks_report_it() -> None:
    from core.records import VerificationTruth
    from tasks.pan.classic import PanClassicTask
    from tasks.pan.pan23 import Pan23Task

    truth = {f"p{i}": VerificationTruth(f"p{i}", same) for i, same in enumerate([True, False, True, False])}
    answers = {"p0": 0.9, "p1": 0.3, "p2": 0.4, "p3": 0.2}
    for task in (PanClassicTask(), Pan23Task()):
        assert "c_at_1_best_band" in task.metadata.measures
        scores = task.score_truth(answers, truth)
        assert scores["c_at_1"] == 0.75 and scores["c_at_1_best_band"] == 1.0


def test_thousands_of_distinct_answers_take_well_under_a_second() -> None:
    import time

    rng = np.random.default_rng(0)
    truth = rng.random(3000) < 0.5
    answers = np.clip(0.5 + 0.2 * (truth - 0.5) + 0.2 * rng.standard_normal(3000), 0, 1)
    start = time.perf_counter()
    value = c_at_1_best_band(truth, answers)
    assert time.perf_counter() - start < 2.0
    assert c_at_1(truth, answers) <= value <= 1.0
