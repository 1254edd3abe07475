"""A sanity floor for verification: how alike the texts' lengths are, and nothing about their style.

The raw score of a problem is shorter / longer of two lengths in characters: the unknown text's and
the mean of the known texts'. Identical lengths give 1, an empty text against a non-empty one 0. The
score goes through the same abstain band as cngdist (`toolkit.calibration`), grid-searched on the
training split through the same cross-fitting (`cross_fitted_scores`); no other part is fitted, so
the out-of-fold scores equal the in-sample ones and the band is the one in-sample scores give: the
cross-fitting only records its folds, as the other baselines do.

A system that does not clearly beat this floor may be reading length rather than style; a corpus on
which this floor scores well leaks the label through length (compare the BOM and line-end artefacts
of the PAN 2014 corpora that `tasks.pan.folders.read_text_file` removes).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from harness.errors import HarnessError
from harness.records import Answer, VerificationData, VerificationProblem
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


def length_ratios(problems: Sequence[VerificationProblem]) -> np.ndarray:
    """Per problem: min / max of the unknown text's length and the known texts' mean length (characters)."""
    ratios = np.empty(len(problems), dtype=np.float64)
    for i, problem in enumerate(problems):
        if len(problem.texts) < 2:
            raise HarnessError(f"problem {problem.id}: needs at least one known text and the unknown text")
        known = float(np.mean([len(text) for text in problem.known]))
        unknown = float(len(problem.unknown))
        longer = max(known, unknown)
        ratios[i] = min(known, unknown) / longer if longer > 0 else 1.0
    return ratios


class LengthRatio:
    """Length ratio of the unknown text and the known texts, calibrated with an abstain band fitted on train."""

    name: ClassVar[str] = "length_ratio"

    def __init__(self, *, grid_step: float = 0.01, objective: str = "overall", calibration_folds: int = 5) -> None:
        band_grid(grid_step)  # refuse a bad step or objective now, not after reading the data
        check_objective(objective)
        if calibration_folds < 2:
            raise ValueError(f"calibration_folds must be at least 2, got {calibration_folds!r}")
        self.grid_step = grid_step
        self.objective = objective
        self.calibration_folds = calibration_folds
        self._band: AbstainBand | None = None
        self._seed: int | None = None
        self._calibration: dict[str, Any] | None = None

    def params(self) -> dict[str, Any]:
        """The constructor parameters."""
        return constructor_params(self)

    @property
    def calibration_info(self) -> dict[str, Any] | None:
        """How the band's out-of-fold scores were made (folds, grouping, dropped problems); None if unknown."""
        return self._calibration

    def fit(self, train: VerificationData, *, seed: int) -> None:
        """Grid-search the abstain band on the training problems' (out-of-fold) length ratios."""
        labels = training_labels(train)
        ratios = length_ratios(train.problems)

        def fit_and_score(train_indices: np.ndarray, held_out_indices: np.ndarray) -> np.ndarray:
            return ratios[held_out_indices]  # nothing to fit: a ratio depends on its own problem only

        out_of_fold, info = cross_fitted_scores(train.problems, fit_and_score, k=self.calibration_folds, seed=seed)
        self._seed = seed  # also seeds the folds, which change nothing here
        self._calibration = info
        self._band = fit_abstain_band(out_of_fold, labels, step=self.grid_step, **band_objective(self.objective, train))

    def predict(self, problems: Sequence[VerificationProblem]) -> list[Answer]:
        """Calibrated length ratios: below the band "different", inside it 0.5, above it "same"."""
        if self._band is None:
            raise HarnessError(f"{self.name}: not fitted; call fit() or load() before predicting")
        values = self._band.apply(length_ratios(problems))
        return [Answer(problem.id, float(value)) for problem, value in zip(problems, values, strict=True)]

    def save(self, directory: Path) -> None:
        """The band and seed in config.json (there are no weights)."""
        if self._band is None:
            raise HarnessError(f"{self.name}: not fitted; nothing to save")
        state = {"band": [self._band.p1, self._band.p2], "seed": self._seed, "calibration": self._calibration}
        save_checkpoint(directory, system=self.name, params=self.params(), state=state)

    @classmethod
    def load(cls, directory: Path) -> LengthRatio:
        """Read a checkpoint written by `save`."""
        params, state, _ = load_checkpoint(directory, system=cls.name)
        try:
            system = cls(**params)
            band = state["band"]
        except (KeyError, TypeError, ValueError) as error:
            raise HarnessError(f"{directory}: malformed {cls.name} checkpoint ({error!r})") from error
        system._band = band_from_state(band, where=Path(directory) / CONFIG_NAME)
        system._seed = state.get("seed")
        system._calibration = state.get("calibration")  # absent in checkpoints written before cross-fitting
        return system
