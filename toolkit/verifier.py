"""The base of the calibrated verifiers: a raw score per problem, an abstain band on top (`toolkit.calibration`).

A verifier writes `raw_scores` (a number per problem, higher: more likely the same author), passes its
constructor's `locals()` to the base (which keeps each parameter under its own name), and fits in `_fit`, where
it fits the band with `cross_fit_band` (out-of-fold raw scores) or `fit_band`. The base owns the rest: the band
settings (`grid_step`, `objective`, `calibration_folds`, `calibration_by`), the probability map and `predict` (which
refuses to answer about texts a pre-trained encoder read: `keep_texts_read`), the fitted check, `params`, and the
checkpoint (`save`/`load`; the band's state keys "band", "seed" and "calibration", the verifier's own through `_state`
and `_restore`). Each band `fit_band` fits is kept with its input in `band_fits` (not
saved), and `answering_band_fit` is the one that answers: a diagnosis reads there what the band was fitted on.
A new verifier is one class (tests/toolkit/test_verifier_base.py has it whole) and a line in
`harness.registry.SYSTEMS`:

    class WordOverlap(CalibratedVerifier):
        name = "word_overlap"

        def __init__(self, *, grid_step: float = 0.01, objective: str = "overall", calibration_folds: int = 5):
            super().__init__(locals())

        def _fit(self, train, labels, *, seed):
            scores = self.raw_scores(train.problems)  # nothing is fitted, so every score is out of fold
            self.cross_fit_band(train, labels, lambda fit_on, held_out: scores[held_out], seed=seed)

        def raw_scores(self, problems):
            return np.array([jaccard(p.known, p.unknown) for p in problems])

A verifier with several bands (siamese_bilstm: a band per route, and one for an ensemble of the routes'
calibrated answers) keeps them in an attribute of its own (in `FITTED`), says how a problem's answer comes from
them in `answer_values` (instead of `raw_scores`), and how they are written and read in `band_state` and
`restore_band`; it fits each with `fit_band`.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, NamedTuple, TypeVar

import numpy as np

from core.errors import HarnessError
from core.records import Answer, VerificationData, VerificationProblem
from harness.system import constructor_params
from toolkit.calibration import (
    AbstainBand,
    FitAndScore,
    author_disjoint_folds,
    band_from_state,
    band_grid,
    band_objective,
    check_objective,
    cross_fitted_folds,
    cross_fitted_scores,
    fit_abstain_band,
    training_labels,
    truth_authors,
)
from toolkit.checkpoint import CONFIG_NAME, load_checkpoint, save_checkpoint
from toolkit.read_texts import TextsRead, prepared_keys, read_outside, refuse_read_texts

_Verifier = TypeVar("_Verifier", bound="CalibratedVerifier")


CALIBRATION_BY = ("texts", "authors")


class BandFit(NamedTuple):
    """A band and the scores and truth it was fitted on (for a cross-fitted band, the out-of-fold training scores)."""

    band: AbstainBand
    scores: np.ndarray
    labels: np.ndarray


def check_folds(folds: int, name: str = "calibration_folds") -> None:
    """Refuse fewer than 2 cross-fitting folds (a ValueError naming the parameter)."""
    if folds < 2:
        raise ValueError(f"{name} must be at least 2, got {folds!r}")


def require_both_classes(train: VerificationData, labels: np.ndarray) -> None:
    """Refuse a training split whose problems are all same-author or all different-author."""
    if labels.all() or not labels.any():
        raise HarnessError(f"{train.source}: fitting needs both same-author and different-author problems")


class CalibratedVerifier:
    """A verifier whose answers are its raw scores through a probability map and an abstain band.

    Subclasses set `name`, check their own parameters and pass their `locals()` to `super().__init__`, and write
    `raw_scores` and `_fit`; those with fitted state of their own list it in `FITTED` and write `_state`/`_restore`;
    those with several bands write `answer_values`, `band_state` and `restore_band` (see the module docstring).
    """

    name: ClassVar[str]
    # the attributes that hold fitted state: a verifier with any of them None is not fitted
    FITTED: ClassVar[tuple[str, ...]] = ("_band",)
    # whether the checkpoint holds the cross-fitting summary under "calibration"; False for the verifiers that
    # keep their fit summary in a state entry of their own
    CALIBRATION_IN_STATE: ClassVar[bool] = True
    # what the cross-fitting folds keep apart: a verifier without the `calibration_by` parameter keeps texts apart
    calibration_by: str = "texts"

    def __init__(self, parameters: Mapping[str, Any]) -> None:
        """Keep each parameter of the subclass's signature under its own name (`parameters`: its `locals()`).

        The signature is the one list of a verifier's parameters: `params()` reads them back by it and result files
        record them. Bad band settings (`grid_step`, `objective`, `calibration_folds` where the verifier has it)
        are refused now rather than after the features are computed; the fitted state (`FITTED`) starts empty.
        """
        names = inspect.signature(type(self)).parameters
        for name in names:
            setattr(self, name, parameters[name])
        band_grid(self.grid_step)
        check_objective(self.objective)
        if "calibration_folds" in names:
            check_folds(self.calibration_folds)
        if self.calibration_by not in CALIBRATION_BY:
            raise ValueError(f"calibration_by must be one of {', '.join(CALIBRATION_BY)}, got {self.calibration_by!r}")
        for attribute in self.FITTED:
            setattr(self, attribute, None)
        self._band: AbstainBand | None = None
        self._seed: int | None = None
        self._calibration: dict[str, Any] | None = None
        self._read: TextsRead | None = None  # what a pre-trained encoder that answers read (`keep_texts_read`)
        # every band the last fit fitted, with its input, for diagnosis (benchmarks/band_shift.py); not saved
        self.band_fits: list[BandFit] = []

    def params(self) -> dict[str, Any]:
        """The constructor parameters."""
        return constructor_params(self)

    @property
    def band(self) -> AbstainBand:
        """The fitted abstain band (p1, p2) on the (mapped) raw scores."""
        self._check_fitted()
        if self._band is None:
            raise HarnessError(f"{self.name}: answers through several abstain bands, not one")
        return self._band

    @property
    def calibration_info(self) -> dict[str, Any] | None:
        """How the band's out-of-fold scores were made (folds, grouping, dropped problems); None if unknown."""
        return self._calibration

    # --- fitting -----------------------------------------------------------------------------------------

    def fit(self, train: VerificationData, *, seed: int) -> None:
        """Fit on a split with truth (`_fit`), the band included; `seed` seeds the folds and any randomness."""
        labels = training_labels(train)
        self._band, self._calibration, self._seed, self._read = None, None, seed, None
        self.band_fits = []
        self._fit(train, labels, seed=seed)

    def _fit(self, train: VerificationData, labels: np.ndarray, *, seed: int) -> None:
        """Fit the verifier's own state and its band (`cross_fit_band` or `fit_band`) on `train`."""
        raise NotImplementedError

    def keep_texts_read(self, reads: Sequence[np.ndarray | None], train: VerificationData, encoder: Any) -> None:
        """Keep what the pre-trained encoder(s) at `encoder` that answer read (`reads`: each one's `text_keys`, None
        where it keeps none) outside `train`'s texts: `predict` refuses to answer about it (`toolkit.read_texts`)."""
        if any(read is not None for read in reads):
            training = prepared_keys({text for problem in train.problems for text in problem.texts})
            self._read = read_outside(reads, training, encoder)

    def exempt_texts(self, train: VerificationData) -> None:
        """Count `train`'s texts as training data too: a model over this verifier (`stacked`) fits it on part of its own
        training split, and the rest of that split is no test text."""
        if self._read is not None:
            training = prepared_keys({text for problem in train.problems for text in problem.texts})
            self._read = self._read._replace(keys=np.setdiff1d(self._read.keys, training))

    def texts_read(self) -> list[TextsRead]:
        """What the pre-trained encoders that answer for this verifier read outside its training data."""
        return [] if self._read is None else [self._read]

    def fit_band(self, train: VerificationData, scores: np.ndarray, labels: np.ndarray) -> AbstainBand:
        """The band that maximises `objective` (for `train`'s ranking where it is "task") on these scores.

        Each call is kept in `band_fits`: a verifier may fit bands it does not answer with (stacked's candidates).
        """
        band = fit_abstain_band(scores, labels, step=self.grid_step, **band_objective(self.objective, train))
        self.band_fits.append(BandFit(band, np.array(scores, dtype=float), np.array(labels, dtype=bool)))
        return band

    def answering_band_fit(self) -> BandFit:
        """The answering band (`band`) with the scores and truth it was fitted on, as the last `fit` fitted it."""
        band = self.band
        matches = [fit for fit in self.band_fits if fit.band is band]  # by identity: other bands may equal it
        if not matches:
            raise HarnessError(f"{self.name}: its band was not fitted by fit_band in this process (loaded, or set)")
        return matches[-1]

    def cross_fit_band(
        self, train: VerificationData, labels: np.ndarray, fit_and_score: FitAndScore, *, seed: int
    ) -> np.ndarray:
        """Fit the band on out-of-fold raw scores (`calibration_folds` folds, seeded by `seed`); returns them.

        `fit_and_score(train_indices, held_out_indices)` fits the scorer on the first problems only and scores
        the second (`toolkit.calibration.cross_fitted_scores`); the folds' summary becomes `calibration_info`.
        """
        scores, self._calibration = cross_fitted_scores(
            train.problems, fit_and_score, folds=self.cross_fitting_folds(train, labels, seed=seed)
        )
        self._band = self.fit_band(train, scores, labels)
        return scores

    def cross_fitting_folds(
        self, train: VerificationData, labels: np.ndarray, *, seed: int
    ) -> tuple[list[tuple[np.ndarray, np.ndarray]], dict[str, Any]]:
        """(folds, info) for the out-of-fold scores: `calibration_folds` folds that keep texts apart, and with
        `calibration_by="authors"` authors too where the truth names them (`author_disjoint_folds`: a test split's
        authors are new, and a scorer that learnt a held-out problem's author scores it better than a test problem)."""
        if self.calibration_by == "authors":
            folds, info, _ = author_disjoint_folds(
                train.problems, truth_authors(train), labels, k=self.calibration_folds, seed=seed
            )
            return folds, info
        return cross_fitted_folds(train.problems, k=self.calibration_folds, seed=seed)

    # --- answering ---------------------------------------------------------------------------------------

    def raw_scores(self, problems: Sequence[VerificationProblem]) -> np.ndarray:
        """One raw score per problem, before calibration (higher: more likely the same author)."""
        raise NotImplementedError

    def probabilities(self, raw: np.ndarray) -> np.ndarray:
        """The map from raw scores to what the band calibrates; the identity here."""
        return raw

    def calibrate(self, raw: np.ndarray) -> np.ndarray:
        """Answers from raw scores: the probability map, then the band (0.5 exactly inside it)."""
        return self.band.apply(self.probabilities(raw))

    def predict(self, problems: Sequence[VerificationProblem]) -> list[Answer]:
        """Calibrated raw scores: below the band "different", inside it 0.5, above it "same"; refused where a
        pre-trained encoder that answers read any of the problems' texts (`texts_read`)."""
        self._check_fitted()
        if not problems:
            return []
        self._refuse_read_texts(problems)
        values = self.answer_values(problems)
        return [Answer(problem.id, float(value)) for problem, value in zip(problems, values, strict=True)]

    def answer_values(self, problems: Sequence[VerificationProblem]) -> np.ndarray:
        """One answer per problem: its raw score calibrated. A verifier with several bands picks each problem's."""
        return self.calibrate(self.raw_scores(problems))

    def scores(self, problems: Sequence[VerificationProblem]) -> np.ndarray:
        """The scores the band cuts (the probability map of the raw scores): what a model over this verifier reads.

        Unlike the answers they keep their order inside the band, where every answer is 0.5. A verifier with
        several bands has no one such score and gives its answers (`answer_values`) instead. Refused as `predict` is.
        """
        self._check_fitted()
        self._refuse_read_texts(problems)
        if type(self).answer_values is not CalibratedVerifier.answer_values:
            return self.answer_values(problems)
        return self.probabilities(self.raw_scores(problems))

    def _refuse_read_texts(self, problems: Sequence[VerificationProblem]) -> None:
        """A HarnessError where a pre-trained encoder that answers read any of the problems' texts (`texts_read`)."""
        reads = self.texts_read()
        if reads:
            keys = prepared_keys({text for problem in problems for text in problem.texts})
            refuse_read_texts(reads, keys, name=self.name)

    def _check_fitted(self) -> None:
        if any(getattr(self, attribute) is None for attribute in self.FITTED):
            raise HarnessError(f"{self.name}: not fitted; call fit() or load() before predicting")

    # --- checkpoint --------------------------------------------------------------------------------------

    def save(self, directory: Path) -> None:
        """The parameters, band, seed and the verifier's own state (`_state`) in config.json and safetensors."""
        self._check_fitted()
        state, arrays = self._state()
        if self._read is not None:
            read_state, read_arrays = self._read.checkpoint()
            state, arrays = state | read_state, arrays | read_arrays
        save_checkpoint(directory, system=self.name, params=self.params(), state=state, arrays=arrays)

    def _state(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """The checkpoint's state (with `band_state()` where the verifier places it) and arrays."""
        return self.band_state(), {}

    def band_state(self) -> dict[str, Any]:
        """The band's entries of a checkpoint's state: "band", "seed" and (`CALIBRATION_IN_STATE`) "calibration"."""
        state = {"band": None if self._band is None else [self._band.p1, self._band.p2], "seed": self._seed}
        if self.CALIBRATION_IN_STATE:
            state["calibration"] = self._calibration
        return state

    @classmethod
    def load(cls: type[_Verifier], directory: Path) -> _Verifier:
        """Read a checkpoint written by `save` of the same class."""
        params, state, arrays = load_checkpoint(directory, system=cls.name)
        where = Path(directory) / CONFIG_NAME
        try:
            system = cls(**params)
            system.restore_band(state, where=where)
            system.restore_texts_read(state, arrays)
            system._restore(state, arrays, where=where)
        except (KeyError, TypeError, ValueError, IndexError) as error:
            raise HarnessError(f"{directory}: malformed {cls.name} checkpoint ({error!r})") from error
        return system

    def restore_band(self, state: Mapping[str, Any], *, where: Path) -> None:
        """Set the band, seed and cross-fitting summary from a checkpoint's state; a bad band is a HarnessError."""
        self._band = self._read_band(state["band"], where=where)
        self._seed = state.get("seed")
        self._calibration = state.get("calibration")  # absent in checkpoints written before cross-fitting

    def restore_texts_read(self, state: Mapping[str, Any], arrays: Mapping[str, np.ndarray]) -> None:
        """Set what a pre-trained encoder read (`keep_texts_read`) from a checkpoint."""
        self._read = TextsRead.from_checkpoint(state, arrays)

    def _read_band(self, value: Any, *, where: Path) -> AbstainBand | None:
        return band_from_state(value, where=where)

    def _restore(self, state: Mapping[str, Any], arrays: Mapping[str, np.ndarray], *, where: Path) -> None:
        """Set the verifier's own fitted state from a checkpoint (`where`: its config.json)."""
