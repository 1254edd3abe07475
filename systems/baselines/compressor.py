"""PAN's compression baseline (Teahan & Harper 2003; PAN 2020 script by Stamatatos), with real PPMd.

For a problem with known text(s) K and unknown text U, a PPM model of one text codes the other:
h(U | K) and h(K | U) are cross-entropies in bits per byte. The features are their mean and their
absolute difference, as in PAN's script, and a logistic regression fitted on the training split
turns them into the probability of "same author"; an abstain band on top leaves unsure problems
at 0.5. The band is fitted on out-of-fold probabilities of the training problems: each from a
regression fitted on the other folds, which hold none of its texts (`toolkit.calibration.cross_fitted_scores`,
`calibration_folds`, 5 by default); the regression that answers is fitted on all training problems.
With `fold_prior="corrected"` each fold regression's probabilities are first moved from its training part's
share of same-author problems to the whole split's (`toolkit.calibration.prior_corrected`), the balance the
answering regression learns; the default, "as_fitted", keeps them as they come.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from core.errors import HarnessError
from core.progress import pbar
from core.records import NO_ANSWER, VerificationData, VerificationProblem
from toolkit.calibration import AbstainBand, check_fold_prior, fold_model_scores
from toolkit.logistic import StandardisedLogistic, fit_standardised_logistic
from toolkit.verifier import CalibratedVerifier, require_both_classes

CALIBRATIONS = ("band", "radius", "none")
FEATURES = ("mean_cross_entropy", "abs_diff_cross_entropy")

# Known texts are joined with a blank line into one context for the model.
KNOWN_SEPARATOR = b"\n\n"


def cross_entropy(text: bytes | str, context: bytes | str, *, order: int = 5, memory: int = 16 << 20) -> float:
    """Bits per byte that PPMd (variant H, as in 7-Zip) spends on `text` after it has read `context`.

    A fresh encoder first codes `context` (its output is discarded: it only trains the model), then
    `text`; the bytes written from then on, flush included, are the cost of `text`. This is the
    compressed size of context+text minus that of context, measured in one pass; it is off by the
    few bytes the range coder holds back or flushes (5 bytes at the end), i.e. by about
    40 / len(text) bits per byte. Strings are coded as UTF-8; an empty text costs 8 bits per byte,
    the cost of no compression.
    """
    import pyppmd

    data = text.encode("utf-8") if isinstance(text, str) else bytes(text)
    prior = context.encode("utf-8") if isinstance(context, str) else bytes(context)
    if not data:
        return 8.0
    encoder = pyppmd.Ppmd7Encoder(order, memory)
    encoder.encode(prior)
    size = len(encoder.encode(data)) + len(encoder.flush())
    return 8.0 * size / len(data)


class CompressorBaseline(CalibratedVerifier):
    """PPMd cross-entropies of known vs unknown text -> logistic regression -> calibrated probability.

    calibration: "band" grid-searches an abstain band on out-of-fold probabilities of the training
    problems (as cngdist does on similarities; `calibration_folds` folds); "radius" is PAN's original
    rule, probabilities within `radius` of 0.5 become 0.5; "none" answers the probabilities as they are.
    """

    name: ClassVar[str] = "compressor"
    FITTED: ClassVar[tuple[str, ...]] = ("_model",)  # the band only with calibration "band"

    def __init__(
        self,
        *,
        order: int = 5,
        memory: int = 16 << 20,
        calibration: str = "band",
        radius: float = 0.05,
        grid_step: float = 0.01,
        objective: str = "overall",
        calibration_folds: int = 5,
        calibration_by: str = "texts",
        fold_prior: str = "as_fitted",
    ) -> None:
        if not 2 <= order <= 64:
            raise ValueError(f"PPMd order must be in 2..64, got {order!r}")
        if memory < 1 << 11:
            raise ValueError(f"PPMd memory must be at least 2 KiB, got {memory!r}")
        if calibration not in CALIBRATIONS:
            raise ValueError(f"calibration must be one of {CALIBRATIONS}, got {calibration!r}")
        if not 0.0 <= radius < 0.5:
            raise ValueError(f"radius must be in [0, 0.5), got {radius!r}")
        check_fold_prior(fold_prior)
        super().__init__(locals())
        # the fitted model: feature standardisation, logistic regression weights
        self._model: StandardisedLogistic | None = None

    @property
    def band(self) -> AbstainBand | None:
        """The fitted abstain band on the probabilities (None unless calibration is "band")."""
        self._check_fitted()
        return self._band

    def features(self, problems: Sequence[VerificationProblem]) -> np.ndarray:
        """(n, 2): mean and absolute difference of h(unknown | known) and h(known | unknown), bits per byte."""
        rows = np.zeros((len(problems), len(FEATURES)), dtype=np.float64)
        for i, problem in enumerate(pbar(problems, desc=f"{self.name}: compressing", unit="problems")):
            if len(problem.texts) < 2:
                raise HarnessError(f"problem {problem.id}: needs at least one known text and the unknown text")
            known = KNOWN_SEPARATOR.join(text.encode("utf-8") for text in problem.known)
            unknown = problem.unknown.encode("utf-8")
            h_unknown = cross_entropy(unknown, known, order=self.order, memory=self.memory)
            h_known = cross_entropy(known, unknown, order=self.order, memory=self.memory)
            rows[i] = ((h_unknown + h_known) / 2.0, abs(h_unknown - h_known))
        return rows

    def _fit(self, train: VerificationData, labels: np.ndarray, *, seed: int) -> None:
        """Fit the logistic regression on all training features; (calibration "band") the band on out-of-fold ones."""
        require_both_classes(train, labels)
        # the cross-entropies involve no fitting, so they are computed once and shared by the folds
        x = self.features(train.problems)
        if self.calibration == "band":

            def fit_and_score(train_indices: np.ndarray, held_out_indices: np.ndarray) -> np.ndarray:
                if len(np.unique(labels[train_indices])) < 2:
                    raise HarnessError(
                        f"{train.source}: a calibration fold's training part holds one class only; "
                        "use fewer calibration_folds"
                    )
                model = fit_standardised_logistic(x[train_indices], labels[train_indices], seed=seed)
                probabilities = model.probabilities(x[held_out_indices])
                return fold_model_scores(probabilities, labels[train_indices], labels, self.fold_prior)

            self.cross_fit_band(train, labels, fit_and_score, seed=seed)
        self._model = fit_standardised_logistic(x, labels, seed=seed)

    def raw_scores(self, problems: Sequence[VerificationProblem]) -> np.ndarray:
        """Probability of "same author" from the logistic regression, before calibration."""
        self._check_fitted()
        assert self._model is not None
        return self._model.probabilities(self.features(problems))

    def calibrate(self, raw: np.ndarray) -> np.ndarray:
        """The band ("band"), PAN's radius around 0.5 ("radius"), or the probabilities as they are ("none")."""
        if self.calibration == "band":
            return super().calibrate(raw)
        if self.calibration == "radius":
            return np.where(np.abs(raw - NO_ANSWER) <= self.radius, NO_ANSWER, raw)
        return raw

    def _state(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """Band and seed in config.json; standardisation and regression weights in weights.safetensors."""
        assert self._model is not None
        return {"features": list(FEATURES)} | self.band_state(), self._model.arrays()

    def _read_band(self, value: Any, *, where: Path) -> AbstainBand | None:
        if (value is None) != (self.calibration != "band"):
            raise HarnessError(f"{where.parent}: band {value!r} does not fit calibration {self.calibration!r}")
        return None if value is None else super()._read_band(value, where=where)

    def _restore(self, state: Mapping[str, Any], arrays: Mapping[str, np.ndarray], *, where: Path) -> None:
        if list(state["features"]) != list(FEATURES):
            raise ValueError(f"features {state['features']} are not {list(FEATURES)}")
        model = StandardisedLogistic.from_arrays(arrays)
        if not model.mean.shape == model.scale.shape == model.coef.shape == (len(FEATURES),):
            raise HarnessError(f"{where.parent}: weights must each have {len(FEATURES)} values")
        self._model = model
