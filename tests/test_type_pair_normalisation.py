"""benchmarks/type_pair_normalisation.py: per-type-pair statistics with the pooled fallback, on hand-made scores."""

from __future__ import annotations

import numpy as np
import pytest
from helpers.benchmark_script import load_benchmark

from core.records import VerificationProblem


@pytest.fixture(scope="module")
def script():
    return load_benchmark("type_pair_normalisation")


def problem(i: int, first: str, second: str) -> VerificationProblem:
    return VerificationProblem(f"p{i}", ("a", "b"), (first, second))


def test_each_type_pair_on_its_own_scale_and_the_rest_on_the_pooled_one(script) -> None:
    # 6 chat+email problems around 0.8, 6 essay+blog problems around 0.2 (either order), 2 chat+blog problems
    problems = [problem(i, "chat", "email") for i in range(6)]
    problems += [problem(6 + i, *(("essay", "blog") if i % 2 else ("blog", "essay"))) for i in range(6)]
    problems += [problem(12, "chat", "blog"), problem(13, "chat", "blog")]
    scores = np.array([0.7, 0.8, 0.9, 0.7, 0.8, 0.9, 0.1, 0.2, 0.3, 0.1, 0.2, 0.3, 0.5, 0.6])
    norm = script.TypePairNorm(problems, scores, np.ones(len(problems), dtype=bool))
    assert set(norm.by_pair) == {("chat", "email"), ("blog", "essay")}  # the order of the two types is ignored
    z = norm(problems, scores)
    np.testing.assert_allclose(z[:6], (scores[:6] - 0.8) / np.std([0.7, 0.8, 0.9]), atol=1e-9)
    np.testing.assert_allclose(z[6:12], (scores[6:12] - 0.2) / np.std([0.1, 0.2, 0.3]), atol=1e-9)
    # chat+blog has 2 problems (< MIN_PROBLEMS): the pooled mean and sd; so has a pair never seen
    pooled_mean, pooled_sd = scores.mean(), scores.std()
    np.testing.assert_allclose(z[12:], (scores[12:] - pooled_mean) / pooled_sd)
    unseen = norm([problem(99, "interview", "chat")], np.array([0.4]))
    np.testing.assert_allclose(unseen, (0.4 - pooled_mean) / pooled_sd)
    # the two type pairs' means (0.8 and 0.2) lie 0.3 from their middle: that is their spread, over the pooled sd
    assert norm.spread() == pytest.approx(0.3 / pooled_sd)
    assert script.TypePairNorm(problems[12:], scores[12:], np.ones(2, dtype=bool)).spread() == 0.0


def test_z_norm_reads_only_the_problems_it_is_given(script) -> None:
    problems = [problem(i, "chat", "email") for i in range(10)]
    scores = np.arange(10, dtype=float)
    different = np.arange(10) < 5  # statistics of the first five only
    norm = script.TypePairNorm(problems, scores, different)
    assert norm.by_pair[("chat", "email")] == pytest.approx((2.0, np.std([0, 1, 2, 3, 4])))
