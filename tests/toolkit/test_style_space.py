"""The style space's whitening (toolkit.style_space): what it must do to the within-author covariance."""

from __future__ import annotations

import numpy as np
import pytest

from core.errors import HarnessError
from core.records import VerificationProblem
from toolkit.style_space import text_types, within_author_whitening


def test_whitening_makes_the_within_author_covariance_the_identity():
    rng = np.random.default_rng(0)
    authors = np.repeat(np.arange(30), 6)
    vectors = rng.normal(size=(180, 5)) * [5.0, 1.0, 1.0, 0.2, 3.0] + rng.normal(size=(30, 5))[authors]
    whitening, used = within_author_whitening(vectors, authors, shrinkage=0.0)
    centred = np.vstack([vectors[authors == a] - vectors[authors == a].mean(axis=0) for a in range(30)])
    covariance = whitening @ (centred.T @ centred / len(centred)) @ whitening.T
    assert used == 30
    np.testing.assert_allclose(covariance, np.eye(5), atol=1e-9)


def test_no_author_with_two_texts_is_refused():
    with pytest.raises(HarnessError, match="no training author has two texts"):
        within_author_whitening(np.eye(3), np.arange(3), shrinkage=0.1)


def test_text_types_keeps_the_first_type_given_and_leaves_out_untyped_texts():
    problems = [
        VerificationProblem("a", ("t1", "t2"), ("email", "essay")),
        VerificationProblem("b", ("t2", "t3"), ("blog", "chat")),  # t2 keeps the type its first problem gave
        VerificationProblem("c", ("t4", "t1")),  # no types given: t4 stays out, t1 keeps "email"
    ]
    assert text_types(problems) == {"t1": "email", "t2": "essay", "t3": "chat"}
