"""fold_prior="corrected" (compressor, pair_features): the band is fitted on each fold model's probabilities moved
from that fold's class balance to the whole split's, and nothing else changes (real CMCC texts, author-pair folds,
whose training parts hold more same-author problems than the split)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers.cmcc import cmcc_rows, cross_genre_training_data

from systems.baselines.compressor import CompressorBaseline
from systems.pair_features import PairFeatures
from toolkit.calibration import prior_corrected


def _band_scores(system: Any, train: Any) -> np.ndarray:
    """The scores `system` fits its answering band on."""
    system.fit(train, seed=0)
    return system.answering_band_fit().scores


@pytest.mark.parametrize(
    "make",
    [
        lambda **kw: CompressorBaseline(calibration_by="authors", **kw),
        lambda **kw: PairFeatures(trees=20, calibration_by="authors", **kw),
    ],
    ids=["compressor", "pair_features"],
)
def test_corrected_fold_scores_are_the_fold_models_moved_to_the_splits_balance(make, cmcc: Path, tmp_path: Path):
    rows = cmcc_rows(cmcc, topics="CG")
    train = cross_genre_training_data([r for r in rows if int(r[0]) <= 6], 80, np.random.default_rng(0), tmp_path)
    labels = np.array([train.truth[p.id].same for p in train.problems])

    as_fitted, corrected = make(), make(fold_prior="corrected")
    raw, moved = _band_scores(as_fitted, train), _band_scores(corrected, train)
    folds, _ = as_fitted.cross_fitting_folds(train, labels, seed=0)
    shares = [labels[fit_on].mean() for fit_on, _ in folds]
    assert max(shares) > 0.55  # leaving authors out skews the folds' balance, the case the correction is for
    expected = raw.copy()
    for fit_on, held_out in folds:
        expected[held_out] = prior_corrected(raw[held_out], labels[fit_on].mean(), labels.mean())
    np.testing.assert_allclose(moved, expected, rtol=1e-12, atol=1e-15)
    assert not np.allclose(moved, raw)
    # the answering model is the same either way: only the band can differ
    np.testing.assert_allclose(corrected.raw_scores(train.problems), as_fitted.raw_scores(train.problems))


def test_an_unknown_fold_prior_is_refused() -> None:
    with pytest.raises(ValueError, match="fold_prior must be one of"):
        CompressorBaseline(fold_prior="balanced")
    with pytest.raises(ValueError, match="fold_prior must be one of"):
        PairFeatures(fold_prior="balanced")
