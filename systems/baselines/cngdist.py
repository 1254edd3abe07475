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

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
from scipy import sparse

from core.errors import HarnessError
from core.progress import pbar
from core.records import VerificationData, VerificationProblem
from toolkit.calibration import fit_then_score
from toolkit.checkpoint import check_tfidf_state
from toolkit.tfidf import TfidfModel
from toolkit.verifier import CalibratedVerifier


class TfidfCosineSystem(CalibratedVerifier):
    """TF-IDF vectors, cosine similarity of known vs unknown text, abstain band fitted on out-of-fold scores.

    Several known texts count as one: their term counts are summed before weighting, which is the
    vector of their concatenation without the few n-grams that would span the joins.

    Subclasses name themselves (`name`), pass their constructor's `locals()` up (with `max_features`), and
    say how texts are cut into terms (`_analyzer_options`). `calibration_folds` is the k of the
    cross-fitting that gives the band its out-of-fold similarities.
    """

    name: ClassVar[str] = "tfidf-cosine"
    FITTED: ClassVar[tuple[str, ...]] = ("_tfidf", "_band")

    sublinear_tf: ClassVar[bool] = False  # a subclass with the choice takes it as a parameter

    def __init__(self, parameters: Mapping[str, Any]) -> None:
        max_features = parameters["max_features"]
        if max_features is not None and max_features < 1:
            raise ValueError(f"max_features must be positive or None, got {max_features!r}")
        super().__init__(parameters)
        self._tfidf: TfidfModel | None = None

    def _analyzer_options(self) -> dict[str, Any]:
        """Options of scikit-learn's vectorisers that say how a text becomes terms."""
        raise NotImplementedError

    def _fit(self, train: VerificationData, labels: np.ndarray, *, seed: int) -> None:
        """Band from out-of-fold similarities (folds seeded by `seed`); vocabulary and idf from all training texts."""
        self.cross_fit_band(
            train, labels, fit_then_score(train.problems, self._fit_tfidf, self._similarities), seed=seed
        )
        self._tfidf = self._fit_tfidf(train.problems)

    def raw_scores(self, problems: Sequence[VerificationProblem]) -> np.ndarray:
        """Cosine similarity (in [0, 1]) of each problem's known text(s) and unknown text, before calibration."""
        self._check_fitted()
        assert self._tfidf is not None
        return self._similarities(problems, self._tfidf)

    def _state(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """Vocabulary, band and seed in config.json; idf in weights.safetensors."""
        assert self._tfidf is not None
        state, arrays = self._tfidf.state()
        return state | self.band_state(), arrays

    def _restore(self, state: Mapping[str, Any], arrays: Mapping[str, np.ndarray], *, where: Path) -> None:
        analyzer = self._analyzer_options()
        tfidf = TfidfModel.from_state(state, arrays, analyzer=analyzer, sublinear_tf=self.sublinear_tf, where=where)
        check_tfidf_state(tfidf.vocabulary, tfidf.idf, analyzer, self.max_features, where=where)
        self._tfidf = tfidf

    def _fit_tfidf(self, problems: Sequence[VerificationProblem]) -> TfidfModel:
        texts = [text for problem in problems for text in problem.texts]
        return TfidfModel.fit(
            texts, analyzer=self._analyzer_options(), max_features=self.max_features, sublinear_tf=self.sublinear_tf
        )

    def _similarities(self, problems: Sequence[VerificationProblem], tfidf: TfidfModel) -> np.ndarray:
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
        calibration_by: str = "texts",
    ) -> None:
        if ngram_size < 1:
            raise ValueError(f"ngram_size must be positive, got {ngram_size!r}")
        super().__init__(locals())

    def _analyzer_options(self) -> dict[str, Any]:
        return {"analyzer": "char", "ngram_range": (self.ngram_size, self.ngram_size), "lowercase": True}
