"""PAN's 2020 distance baseline ("cngdist", Kestemont et al.): TF-IDF of character n-grams, cosine, abstain band.

`TfidfCosineSystem` holds what the TF-IDF baselines share: a vectoriser fitted on the training texts,
the cosine similarity between the known text(s) and the unknown text, and an abstain band
(`toolkit.calibration`) grid-searched on out-of-fold similarities of the training split: each training
problem scored by a vectoriser fitted on the other folds, which hold none of its texts
(`toolkit.calibration.cross_fitted_scores`). PAN's script fitted the band on in-sample similarities,
which did not carry to test (issue 12); the vectoriser that answers is still fitted on all training texts.
`CharNgramDistance` is PAN's configuration of it; `systems.baselines.tfidf.WordTfidf` the word-level one.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar, TypeVar

import numpy as np
from scipy import sparse

from harness.errors import HarnessError
from harness.progress import pbar
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
from toolkit.checkpoint import CONFIG_NAME, check_tfidf_state, load_checkpoint, save_checkpoint
from toolkit.tfidf import TfidfModel

_System = TypeVar("_System", bound="TfidfCosineSystem")


class TfidfCosineSystem:
    """TF-IDF vectors, cosine similarity of known vs unknown text, abstain band fitted on out-of-fold scores.

    Several known texts count as one: their term counts are summed before weighting, which is the
    vector of their concatenation without the few n-grams that would span the joins.

    Subclasses name themselves (`name`), store their constructor parameters as attributes, and
    say how texts are cut into terms (`_analyzer_options`). `calibration_folds` is the k of the
    cross-fitting that gives the band its out-of-fold similarities.
    """

    name: ClassVar[str] = "tfidf-cosine"

    def __init__(
        self,
        *,
        max_features: int | None = None,
        sublinear_tf: bool = False,
        grid_step: float = 0.01,
        objective: str = "overall",
        calibration_folds: int = 5,
    ) -> None:
        if max_features is not None and max_features < 1:
            raise ValueError(f"max_features must be positive or None, got {max_features!r}")
        # refuse a bad step or objective now rather than after the features are computed
        band_grid(grid_step)
        check_objective(objective)
        if calibration_folds < 2:
            raise ValueError(f"calibration_folds must be at least 2, got {calibration_folds!r}")
        self.max_features = max_features
        self.sublinear_tf = sublinear_tf
        self.grid_step = grid_step
        self.objective = objective
        self.calibration_folds = calibration_folds
        self._tfidf: TfidfModel | None = None
        self._band: AbstainBand | None = None
        self._seed: int | None = None
        self._calibration: dict[str, Any] | None = None

    def _analyzer_options(self) -> dict[str, Any]:
        """Options of scikit-learn's vectorisers that say how a text becomes terms."""
        raise NotImplementedError

    def params(self) -> dict[str, Any]:
        """The constructor parameters."""
        return constructor_params(self)

    @property
    def band(self) -> AbstainBand:
        """The fitted abstain band (p1, p2) on the cosine similarity."""
        self._check_fitted()
        assert self._band is not None
        return self._band

    @property
    def calibration_info(self) -> dict[str, Any] | None:
        """How the band's out-of-fold scores were made (folds, grouping, dropped problems); None if unknown."""
        return self._calibration

    def fit(self, train: VerificationData, *, seed: int) -> None:
        """Band from out-of-fold similarities (folds seeded by `seed`); vocabulary and idf from all training texts."""
        labels = training_labels(train)
        problems = train.problems

        def fit_and_score(train_indices: np.ndarray, held_out_indices: np.ndarray) -> np.ndarray:
            model = self._fit_tfidf([problems[i] for i in train_indices])
            return self._similarities([problems[i] for i in held_out_indices], model)

        self._band = None
        out_of_fold, info = cross_fitted_scores(problems, fit_and_score, k=self.calibration_folds, seed=seed)
        self._tfidf = self._fit_tfidf(problems)
        self._seed = seed
        self._calibration = info
        self._band = fit_abstain_band(out_of_fold, labels, step=self.grid_step, **band_objective(self.objective, train))

    def raw_scores(self, problems: Sequence[VerificationProblem]) -> np.ndarray:
        """Cosine similarity (in [0, 1]) of each problem's known text(s) and unknown text, before calibration."""
        self._check_vectorizer()
        return self._similarities(problems)

    def predict(self, problems: Sequence[VerificationProblem]) -> list[Answer]:
        """Calibrated similarities: below the band a "different" answer, inside it 0.5, above it "same"."""
        values = self.band.apply(self._similarities(problems))
        return [Answer(problem.id, float(value)) for problem, value in zip(problems, values, strict=True)]

    def save(self, directory: Path) -> None:
        """Vocabulary, band and seed in config.json; idf in weights.safetensors."""
        band = self.band
        state, arrays = self._tfidf.state()
        state |= {"band": [band.p1, band.p2], "seed": self._seed, "calibration": self._calibration}
        save_checkpoint(directory, system=self.name, params=self.params(), state=state, arrays=arrays)

    @classmethod
    def load(cls: type[_System], directory: Path) -> _System:
        """Read a checkpoint written by `save` of the same class."""
        params, state, arrays = load_checkpoint(directory, system=cls.name)
        try:
            system = cls(**params)
            band = state["band"]
        except (KeyError, TypeError, ValueError) as error:
            raise HarnessError(f"{directory}: malformed {cls.name} checkpoint ({error!r})") from error
        analyzer, where = system._analyzer_options(), Path(directory) / CONFIG_NAME
        tfidf = TfidfModel.from_state(state, arrays, analyzer=analyzer, sublinear_tf=system.sublinear_tf, where=where)
        check_tfidf_state(tfidf.vocabulary, tfidf.idf, analyzer, system.max_features, where=where)
        system._tfidf = tfidf
        system._band = band_from_state(band, where=where)
        system._seed = state.get("seed")
        system._calibration = state.get("calibration")  # absent in checkpoints written before cross-fitting
        return system

    def _check_vectorizer(self) -> None:
        if self._tfidf is None:
            raise HarnessError(f"{self.name}: not fitted; call fit() or load() before predicting")

    def _check_fitted(self) -> None:
        self._check_vectorizer()
        if self._band is None:
            raise HarnessError(f"{self.name}: not fitted; call fit() or load() before predicting")

    def _fit_tfidf(self, problems: Sequence[VerificationProblem]) -> TfidfModel:
        texts = [text for problem in problems for text in problem.texts]
        return TfidfModel.fit(
            texts, analyzer=self._analyzer_options(), max_features=self.max_features, sublinear_tf=self.sublinear_tf
        )

    def _similarities(self, problems: Sequence[VerificationProblem], tfidf: TfidfModel | None = None) -> np.ndarray:
        if tfidf is None:
            self._check_vectorizer()
            tfidf = self._tfidf
        known_rows, unknown_rows = [], []
        for problem in pbar(problems, desc=f"{self.name}: vectorising", unit="problems"):
            if len(problem.texts) < 2:
                raise HarnessError(f"problem {problem.id}: needs at least one known text and the unknown text")
            counts = tfidf.counts(problem.texts)
            known_rows.append(sparse.csr_matrix(counts[:-1].sum(axis=0)))
            unknown_rows.append(counts[-1])
        if not problems:
            return np.zeros(0)
        known = tfidf.weigh(sparse.vstack(known_rows, format="csr"))
        unknown = tfidf.weigh(sparse.vstack(unknown_rows, format="csr"))
        # rows are unit length (or empty), so the cosine is their dot product; empty text -> 0
        similarities = np.asarray(known.multiply(unknown).sum(axis=1)).ravel()
        return np.clip(similarities, 0.0, 1.0)


class CharNgramDistance(TfidfCosineSystem):
    """PAN 2020's baseline: TF-IDF of character n-grams (n = 4, 3,000 most frequent), cosine, abstain band.

    As PAN's script: lower-cased text, plain term frequency, vocabulary and idf fitted on all
    training texts, band (p1, p2) grid-searched to maximise `overall`. Unlike PAN's script, the band
    is searched on out-of-fold similarities of the training problems (`calibration_folds`, 5 by
    default; see the module docstring), not on similarities made by the vectoriser that saw them.
    """

    name: ClassVar[str] = "cngdist"

    def __init__(
        self,
        *,
        ngram_size: int = 4,
        max_features: int | None = 3000,
        grid_step: float = 0.01,
        objective: str = "overall",
        calibration_folds: int = 5,
    ) -> None:
        if ngram_size < 1:
            raise ValueError(f"ngram_size must be positive, got {ngram_size!r}")
        super().__init__(
            max_features=max_features,
            sublinear_tf=False,
            grid_step=grid_step,
            objective=objective,
            calibration_folds=calibration_folds,
        )
        self.ngram_size = ngram_size

    def _analyzer_options(self) -> dict[str, Any]:
        return {"analyzer": "char", "ngram_range": (self.ngram_size, self.ngram_size), "lowercase": True}
