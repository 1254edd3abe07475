"""A logistic regression on standardised features, kept as plain arrays (checkpoint-safe, no pickle).

Standardising first makes scikit-learn's default regularisation (C = 1) independent of the features'
units; probabilities are computed here rather than by scikit-learn, so a loaded checkpoint gives
the same bits as the fitted model.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

import numpy as np

from harness.seeding import legacy_seed


class StandardisedLogistic(NamedTuple):
    """Feature means and scales, weights and intercept: p = sigmoid(((x - mean) / scale) . coef + intercept)."""

    mean: np.ndarray
    scale: np.ndarray
    coef: np.ndarray
    intercept: float

    def probabilities(self, x: np.ndarray) -> np.ndarray:
        from scipy.special import expit

        return expit(((x - self.mean) / self.scale) @ self.coef + self.intercept)

    def arrays(self) -> dict[str, np.ndarray]:
        """The model as named arrays, for a safetensors checkpoint."""
        return {
            "mean": self.mean,
            "scale": self.scale,
            "coef": self.coef,
            "intercept": np.array([self.intercept], dtype=np.float64),
        }

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, Any]) -> StandardisedLogistic:
        """The model from `arrays()`; KeyError, ValueError or IndexError where they are missing or malformed."""
        mean, scale, coef = (np.asarray(arrays[key], dtype=np.float64) for key in ("mean", "scale", "coef"))
        return cls(mean, scale, coef, float(np.asarray(arrays["intercept"]).reshape(-1)[0]))


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
    model = LogisticRegression(random_state=legacy_seed(seed), max_iter=max_iter).fit((x - mean) / scale, labels)
    return StandardisedLogistic(mean, scale, np.asarray(model.coef_[0], dtype=np.float64), float(model.intercept_[0]))
