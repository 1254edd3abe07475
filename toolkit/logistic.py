"""A logistic regression on standardised features, kept as plain arrays (checkpoint-safe, no pickle).

Standardising first makes scikit-learn's default regularisation (C = 1) independent of the features'
units; probabilities are computed here rather than by scikit-learn, so a loaded checkpoint gives
the same bits as the fitted model.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np


class StandardisedLogistic(NamedTuple):
    """Feature means and scales, weights and intercept: p = sigmoid(((x - mean) / scale) . coef + intercept)."""

    mean: np.ndarray
    scale: np.ndarray
    coef: np.ndarray
    intercept: float

    def probabilities(self, x: np.ndarray) -> np.ndarray:
        from scipy.special import expit

        return expit(((x - self.mean) / self.scale) @ self.coef + self.intercept)


def fit_standardised_logistic(
    x: np.ndarray, labels: np.ndarray, *, seed: int, max_iter: int = 100
) -> StandardisedLogistic:
    """Fit on rows `x` with 0/1 `labels`; labels of one class only give a constant model at that class's rate."""
    from sklearn.linear_model import LogisticRegression

    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale == 0] = 1.0
    if labels.all() or not labels.any():  # e.g. a cross-fitting fold that holds one class
        rate = float(np.clip(labels.mean(), 1e-6, 1 - 1e-6))
        return StandardisedLogistic(mean, scale, np.zeros(x.shape[1]), float(np.log(rate / (1 - rate))))
    model = LogisticRegression(random_state=seed, max_iter=max_iter).fit((x - mean) / scale, labels)
    return StandardisedLogistic(mean, scale, np.asarray(model.coef_[0], dtype=np.float64), float(model.intercept_[0]))
