"""PAN's compression baseline (Teahan & Harper 2003; PAN 2020 script by Stamatatos), with real PPMd.

For a problem with known text(s) K and unknown text U, a PPM model of one text codes the other:
h(U | K) and h(K | U) are cross-entropies in bits per byte. The features are their mean and their
absolute difference, as in PAN's script, and a logistic regression fitted on the training split
turns them into the probability of "same author"; an abstain band on top leaves unsure problems
at 0.5. The band is fitted on out-of-fold probabilities of the training problems: each from a
regression fitted on the other folds, which hold none of its texts (`toolkit.calibration.cross_fitted_scores`,
`calibration_folds`, 5 by default); the regression that answers is fitted on all training problems.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from harness.errors import HarnessError
from harness.progress import pbar
from harness.records import NO_ANSWER, Answer, VerificationData, VerificationProblem
from harness.system import constructor_params
from toolkit.calibration import (
    AbstainBand,
    band_from_state,
    band_grid,
    band_objective,
    check_objective,
    cross_fitted_scores,
    fit_abstain_band,
    training_labels,
)
from toolkit.checkpoint import CONFIG_NAME, load_checkpoint, save_checkpoint
from toolkit.logistic import StandardisedLogistic, fit_standardised_logistic

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


class CompressorBaseline:
    """PPMd cross-entropies of known vs unknown text -> logistic regression -> calibrated probability.

    calibration: "band" grid-searches an abstain band on out-of-fold probabilities of the training
    problems (as cngdist does on similarities; `calibration_folds` folds); "radius" is PAN's original
    rule, probabilities within `radius` of 0.5 become 0.5; "none" answers the probabilities as they are.
    """

    name: ClassVar[str] = "compressor"

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
    ) -> None:
        if not 2 <= order <= 64:
            raise ValueError(f"PPMd order must be in 2..64, got {order!r}")
        if memory < 1 << 11:
            raise ValueError(f"PPMd memory must be at least 2 KiB, got {memory!r}")
        if calibration not in CALIBRATIONS:
            raise ValueError(f"calibration must be one of {CALIBRATIONS}, got {calibration!r}")
        if not 0.0 <= radius < 0.5:
            raise ValueError(f"radius must be in [0, 0.5), got {radius!r}")
        # refuse a bad step or objective now rather than after the features are computed
        band_grid(grid_step)
        check_objective(objective)
        if calibration_folds < 2:
            raise ValueError(f"calibration_folds must be at least 2, got {calibration_folds!r}")
        self.order = order
        self.memory = memory
        self.calibration = calibration
        self.radius = radius
        self.grid_step = grid_step
        self.objective = objective
        self.calibration_folds = calibration_folds
        # the fitted model: feature standardisation, logistic regression weights, band
        self._model: StandardisedLogistic | None = None
        self._band: AbstainBand | None = None
        self._seed: int | None = None
        self._calibration: dict[str, Any] | None = None

    def params(self) -> dict[str, Any]:
        """The constructor parameters."""
        return constructor_params(self)

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

    @property
    def calibration_info(self) -> dict[str, Any] | None:
        """How the band's out-of-fold scores were made (folds, grouping, dropped problems); None without a band."""
        return self._calibration

    def fit(self, train: VerificationData, *, seed: int) -> None:
        """Fit the logistic regression on all training features; (calibration "band") the band on out-of-fold ones."""
        labels = training_labels(train)
        if labels.all() or not labels.any():
            raise HarnessError(f"{train.source}: fitting needs both same-author and different-author problems")
        # the cross-entropies involve no fitting, so they are computed once and shared by the folds
        x = self.features(train.problems)
        self._band = None
        self._calibration = None
        if self.calibration == "band":

            def fit_and_score(train_indices: np.ndarray, held_out_indices: np.ndarray) -> np.ndarray:
                if len(np.unique(labels[train_indices])) < 2:
                    raise HarnessError(
                        f"{train.source}: a calibration fold's training part holds one class only; "
                        "use fewer calibration_folds"
                    )
                return fit_standardised_logistic(x[train_indices], labels[train_indices], seed=seed).probabilities(
                    x[held_out_indices]
                )

            out_of_fold, self._calibration = cross_fitted_scores(
                train.problems, fit_and_score, k=self.calibration_folds, seed=seed
            )
            self._band = fit_abstain_band(
                out_of_fold, labels, step=self.grid_step, **band_objective(self.objective, train)
            )
        self._model = fit_standardised_logistic(x, labels, seed=seed)
        self._seed = seed

    def raw_scores(self, problems: Sequence[VerificationProblem]) -> np.ndarray:
        """Probability of "same author" from the logistic regression, before calibration."""
        self._check_fitted()
        return self._probabilities(self.features(problems))

    def predict(self, problems: Sequence[VerificationProblem]) -> list[Answer]:
        """Calibrated probabilities, one per problem; 0.5 where the system abstains."""
        probabilities = self.raw_scores(problems)
        if self.calibration == "band":
            assert self._band is not None
            values = self._band.apply(probabilities)
        elif self.calibration == "radius":
            values = np.where(np.abs(probabilities - NO_ANSWER) <= self.radius, NO_ANSWER, probabilities)
        else:
            values = probabilities
        return [Answer(problem.id, float(value)) for problem, value in zip(problems, values, strict=True)]

    def save(self, directory: Path) -> None:
        """Band and seed in config.json; standardisation and regression weights in weights.safetensors."""
        self._check_fitted()
        state = {
            "features": list(FEATURES),
            "band": None if self._band is None else [self._band.p1, self._band.p2],
            "seed": self._seed,
            "calibration": self._calibration,
        }
        assert self._model is not None
        arrays = self._model.arrays()
        save_checkpoint(directory, system=self.name, params=self.params(), state=state, arrays=arrays)

    @classmethod
    def load(cls, directory: Path) -> CompressorBaseline:
        """Read a checkpoint written by `save`."""
        params, state, arrays = load_checkpoint(directory, system=cls.name)
        try:
            system = cls(**params)
            if list(state["features"]) != list(FEATURES):
                raise ValueError(f"features {state['features']} are not {list(FEATURES)}")
            band = state["band"]
            model = StandardisedLogistic.from_arrays(arrays)
        except (KeyError, TypeError, ValueError, IndexError) as error:
            raise HarnessError(f"{directory}: malformed {cls.name} checkpoint ({error!r})") from error
        if not model.mean.shape == model.scale.shape == model.coef.shape == (len(FEATURES),):
            raise HarnessError(f"{directory}: weights must each have {len(FEATURES)} values")
        if (band is None) != (system.calibration != "band"):
            raise HarnessError(f"{directory}: band {band!r} does not fit calibration {system.calibration!r}")
        system._model = model
        system._band = None if band is None else band_from_state(band, where=Path(directory) / CONFIG_NAME)
        system._seed = state.get("seed")
        system._calibration = state.get("calibration")  # absent in checkpoints written before cross-fitting
        return system

    def _check_fitted(self) -> None:
        if self._model is None:
            raise HarnessError(f"{self.name}: not fitted; call fit() or load() before predicting")

    def _probabilities(self, x: np.ndarray) -> np.ndarray:
        assert self._model is not None
        return self._model.probabilities(x)
