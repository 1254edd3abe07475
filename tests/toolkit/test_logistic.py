"""The standardised logistic regression shared by compressor and unmasking (toolkit.logistic)."""

from __future__ import annotations

import numpy as np
from sklearn.linear_model import LogisticRegression

from toolkit.logistic import StandardisedLogistic, fit_standardised_logistic


def test_probabilities_equal_scikit_learn_on_standardised_features() -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(80, 3)) * [1.0, 100.0, 0.01]
    labels = (x[:, 0] + x[:, 1] / 100 + rng.normal(size=80) > 0).astype(int)
    model = fit_standardised_logistic(x, labels, seed=0)
    reference = LogisticRegression(random_state=0).fit((x - x.mean(0)) / x.std(0), labels)
    expected = reference.predict_proba((x - x.mean(0)) / x.std(0))[:, 1]
    np.testing.assert_allclose(model.probabilities(x), expected, rtol=1e-12, atol=1e-12)


def test_one_class_gives_a_constant_model_at_its_rate_and_constant_columns_are_kept() -> None:
    x = np.array([[1.0, 5.0], [2.0, 5.0], [3.0, 5.0]])
    model = fit_standardised_logistic(x, np.ones(3, dtype=int), seed=0)
    assert model.scale[1] == 1.0  # a constant column is not divided by zero
    np.testing.assert_allclose(model.probabilities(x), 1 - 1e-6)
    rebuilt = StandardisedLogistic.from_arrays(model.arrays())  # the checkpoint round trip
    np.testing.assert_array_equal(rebuilt.probabilities(x), model.probabilities(x))
    assert rebuilt.intercept == model.intercept
