"""The calibrated-verifier base (toolkit.verifier): a new verifier is `raw_scores`, its parameters and a fitting hook.

`WordOverlap` below is a whole verifier written on the base: fitted on the PAN 2023 format sample, saved, loaded,
answering the same; then the base's refusals (unfitted, bad band settings, a tampered band).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from helpers.paths import REPO

from core.errors import HarnessError
from core.records import NO_ANSWER, VerificationData, VerificationProblem
from tasks.pan.pan23 import Pan23Task
from toolkit.calibration import fit_abstain_band, training_labels
from toolkit.verifier import CalibratedVerifier

SAMPLE = REPO / "samples" / "pan23-format-sample"


class WordOverlap(CalibratedVerifier):
    """Jaccard overlap of the known and unknown texts' word sets; nothing but the band is fitted."""

    name = "word_overlap"

    def __init__(
        self, *, lowercase: bool = True, grid_step: float = 0.01, objective: str = "overall", calibration_folds: int = 5
    ) -> None:
        super().__init__(locals())

    def _fit(self, train: VerificationData, labels: np.ndarray, *, seed: int) -> None:
        scores = self.raw_scores(train.problems)  # a score depends on its own problem only: out of fold as it is
        self.cross_fit_band(train, labels, lambda fit_on, held_out: scores[held_out], seed=seed)

    def raw_scores(self, problems: Sequence[VerificationProblem]) -> np.ndarray:
        def words(texts: Sequence[str]) -> set[str]:
            return {w for t in texts for w in re.findall(r"\w+", t.lower() if self.lowercase else t)}

        overlap = [(words(p.known), words([p.unknown])) for p in problems]
        return np.array([len(k & u) / max(1, len(k | u)) for k, u in overlap], dtype=np.float64)


@pytest.fixture(scope="module")
def sample() -> tuple[VerificationData, VerificationData]:
    task = Pan23Task()
    return task.load(SAMPLE, "train"), task.load(SAMPLE, "test")


@pytest.fixture(scope="module")
def fitted(sample) -> WordOverlap:
    system = WordOverlap(grid_step=0.05)
    system.fit(sample[0], seed=0)
    return system


def test_a_verifier_written_on_the_base_fits_saves_loads_and_answers_alike(sample, fitted, tmp_path: Path) -> None:
    train, test = sample
    # out-of-fold scores equal the in-sample ones here, so the band is the one fitted on all training scores
    band = fit_abstain_band(fitted.raw_scores(train.problems), training_labels(train), step=0.05)
    assert fitted.band == band
    assert fitted.calibration_info is not None and fitted.calibration_info["folds"] == 5
    answers = fitted.predict(test.problems)
    assert [a.id for a in answers] == [p.id for p in test.problems]
    assert [a.value for a in answers] == list(band.apply(fitted.raw_scores(test.problems)))
    assert fitted.params() == {"lowercase": True, "grid_step": 0.05, "objective": "overall", "calibration_folds": 5}

    fitted.save(tmp_path / "checkpoint")
    state = json.loads((tmp_path / "checkpoint" / "config.json").read_text(encoding="utf-8"))["state"]
    assert state == {"band": [band.p1, band.p2], "seed": 0, "calibration": fitted.calibration_info}
    loaded = WordOverlap.load(tmp_path / "checkpoint")
    assert loaded.params() == fitted.params() and loaded.band == band
    assert loaded.calibration_info == fitted.calibration_info
    assert loaded.predict(test.problems) == answers
    assert loaded.predict([]) == []


def test_the_answering_band_keeps_the_scores_and_truth_it_was_fitted_on(sample, tmp_path: Path) -> None:
    """What benchmarks/band_shift.py reads: the band that answers, with the out-of-fold scores and truth it was fitted
    on. A band fitted but not answering is not taken for it, a new fit starts the record afresh, and a loaded
    verifier, whose band was fitted in another process, has none."""
    train = sample[0]
    system = WordOverlap(grid_step=0.05, calibration_folds=2)
    system.fit(train, seed=0)
    band_fit = system.answering_band_fit()
    assert band_fit.band is system.band
    assert np.array_equal(band_fit.scores, system.raw_scores(train.problems))  # out of fold = in sample here
    assert np.array_equal(band_fit.labels, training_labels(train))
    assert fit_abstain_band(band_fit.scores, band_fit.labels, step=0.05) == system.band

    system.fit_band(train, 1 - band_fit.scores, band_fit.labels)  # another band, not the answering one
    assert len(system.band_fits) == 2 and system.answering_band_fit() is band_fit
    system.fit(train, seed=1)
    assert len(system.band_fits) == 1 and system.answering_band_fit() is not band_fit

    system.save(tmp_path / "checkpoint")
    with pytest.raises(HarnessError, match="word_overlap: its band was not fitted by fit_band in this process"):
        WordOverlap.load(tmp_path / "checkpoint").answering_band_fit()


def test_scores_are_what_the_band_cuts_and_keep_their_order_inside_it(sample) -> None:
    """`scores`, read by a model over verifiers (stacked), is the probability map of the raw scores: where the
    answers tie at 0.5 inside the band, the scores still differ."""
    test = sample[1].problems
    fitted = WordOverlap(grid_step=0.05)
    fitted.fit(sample[0], seed=0)
    fitted._band = type(fitted.band)(0.1, 0.16)  # wide enough to hold several of the 8 test problems
    scores = fitted.scores(test)
    assert np.array_equal(scores, fitted.probabilities(fitted.raw_scores(test)))
    answers = np.array([a.value for a in fitted.predict(test)])
    inside = answers == NO_ANSWER
    assert np.array_equal(answers, fitted.band.apply(scores))
    assert len(set(scores[inside])) == inside.sum() > 1
    with pytest.raises(HarnessError, match="not fitted"):
        WordOverlap().scores(test)


def test_a_band_with_no_width_never_abstains(sample) -> None:
    train, test = sample
    system = WordOverlap(grid_step=0.05)
    system.fit(train, seed=0)
    system._band = type(system.band)(0.3, 0.3)
    assert NO_ANSWER not in [a.value for a in system.predict(test.problems)]


def test_an_unfitted_verifier_refuses_to_predict_or_save(sample, tmp_path: Path) -> None:
    system = WordOverlap()
    for call in (lambda: system.predict(sample[1].problems), lambda: system.save(tmp_path / "x"), lambda: system.band):
        with pytest.raises(HarnessError, match="word_overlap: not fitted") as info:
            call()
        assert "\n" not in str(info.value)
    assert not (tmp_path / "x").exists()


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"grid_step": 0.0}, "grid step"),
        ({"grid_step": 1e-9}, r"grid step must be in \[0.002, 0.5\], got 1e-09"),  # asked for 119 GiB
        ({"grid_step": 0.7}, "grid step"),
        ({"objective": "no_such_measure"}, "no_such_measure"),
        ({"calibration_folds": 1}, "calibration_folds must be at least 2"),
    ],
)
def test_bad_band_settings_are_refused_when_made(params: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        WordOverlap(**params)


@pytest.mark.parametrize("band", [[0.7, 0.3], [float("nan"), 0.5], [0.5], None])
def test_a_tampered_band_is_refused_at_load_in_one_line(fitted, tmp_path: Path, band) -> None:
    folder = tmp_path / "checkpoint"
    fitted.save(folder)
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    config.pop("checksums")  # as written before checksums, so that the band itself is what is checked
    config["state"]["band"] = band
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    with pytest.raises(HarnessError, match="abstain band") as info:
        WordOverlap.load(folder)
    assert "\n" not in str(info.value) and str(folder / "config.json") in str(info.value)


def test_a_sealed_checkpoint_refuses_any_edit_of_its_band(fitted, tmp_path: Path) -> None:
    folder = tmp_path / "checkpoint"
    fitted.save(folder)
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    config["state"]["band"] = [0.1, 0.2]
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    with pytest.raises(HarnessError, match="config.json"):
        WordOverlap.load(folder)


def test_a_missing_band_is_a_malformed_checkpoint(fitted, tmp_path: Path) -> None:
    folder = tmp_path / "checkpoint"
    fitted.save(folder)
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    config.pop("checksums")
    del config["state"]["band"]
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    with pytest.raises(HarnessError, match="malformed word_overlap checkpoint"):
        WordOverlap.load(folder)
