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
from typing import ClassVar

import numpy as np

from core.errors import HarnessError
from core.records import VerificationData, VerificationProblem
from toolkit.verifier import CalibratedVerifier


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


class LengthRatio(CalibratedVerifier):
    """Length ratio of the unknown text and the known texts, calibrated with an abstain band fitted on train."""

    name: ClassVar[str] = "length_ratio"

    def __init__(
        self,
        *,
        grid_step: float = 0.01,
        objective: str = "overall",
        calibration_folds: int = 5,
        calibration_by: str = "texts",
    ) -> None:
        super().__init__(locals())

    def _fit(self, train: VerificationData, labels: np.ndarray, *, seed: int) -> None:
        """Grid-search the abstain band on the training problems' (out-of-fold) length ratios."""
        ratios = length_ratios(train.problems)

        def fit_and_score(train_indices: np.ndarray, held_out_indices: np.ndarray) -> np.ndarray:
            return ratios[held_out_indices]  # nothing to fit: a ratio depends on its own problem only

        # the seed also seeds the folds, which change nothing here
        self.cross_fit_band(train, labels, fit_and_score, seed=seed)

    def raw_scores(self, problems: Sequence[VerificationProblem]) -> np.ndarray:
        """The length ratio of each problem (`length_ratios`), before calibration."""
        return length_ratios(problems)
