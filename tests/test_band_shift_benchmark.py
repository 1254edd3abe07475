"""benchmarks/band_shift.py: the training scores it reports are the ones the band was fitted on, and its test
shares are the system's own answers (on real CMCC texts: authors 1-4 train, 5-7 test)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from helpers.benchmark_script import load_benchmark
from helpers.cmcc import cmcc_rows, cross_genre_training_data

from core.errors import HarnessError
from systems.baselines.tfidf import WordTfidf
from toolkit.calibration import AbstainBand


def _splits(cmcc: Path, tmp_path: Path):
    rows = cmcc_rows(cmcc, topics="CG")
    train = cross_genre_training_data([r for r in rows if int(r[0]) <= 4], 60, np.random.default_rng(0), tmp_path)
    test = cross_genre_training_data([r for r in rows if 5 <= int(r[0]) <= 7], 40, np.random.default_rng(1), tmp_path)
    return train, test


def test_the_recorded_scores_give_back_the_band_and_the_test_shares_are_the_answers(cmcc: Path, tmp_path: Path):
    script = load_benchmark("band_shift")
    train, test = _splits(cmcc, tmp_path)

    fitted = script.fit_and_score(train, test, "tfidf", {"objective": "c_at_1"}, seed=0)
    assert len(fitted.training_scores) == len(train.problems)
    fresh = WordTfidf(objective="c_at_1")
    assert fresh.fit_band(train, fitted.training_scores, fitted.training_labels) == fitted.system.band

    row = script.band_shift(train, test, "tfidf", {"objective": "c_at_1"}, seed=0)
    system = WordTfidf(objective="c_at_1")
    system.fit(train, seed=0)
    assert row["band"] == [system.band.p1, system.band.p2]
    answers = np.array([a.value for a in system.predict(test.problems)])
    assert row["test"]["answered_same"] == pytest.approx(np.mean(answers > 0.5))
    assert row["test"]["answered_different"] == pytest.approx(np.mean(answers < 0.5))
    assert row["test"]["unanswered"] == pytest.approx(np.mean(answers == 0.5))


def test_a_system_whose_band_is_not_fitted_by_fit_band_is_refused(cmcc: Path, tmp_path: Path) -> None:
    script = load_benchmark("band_shift")
    train, test = _splits(cmcc, tmp_path)

    class FixedBand(WordTfidf):
        def _fit(self, train, labels, *, seed):
            super()._fit(train, labels, seed=seed)
            self._band = AbstainBand(0.5, 0.5)  # answers with a band other than the one fit_band fitted

    script.system_class = lambda name: FixedBand
    with pytest.raises(HarnessError, match="its band was not fitted by fit_band"):
        script.fit_and_score(train, test, "fixed_band", {}, seed=0)


def test_parse_system_reads_json_values_and_refuses_a_bare_word() -> None:
    script = load_benchmark("band_shift")
    assert script.parse_system("pair_features:trees=200,objective=c_at_1") == (
        "pair_features",
        {"trees": 200, "objective": "c_at_1"},
    )
    assert script.parse_system("tfidf") == ("tfidf", {})
    with pytest.raises(HarnessError, match="not key=value"):
        script.parse_system("tfidf:c_at_1")
