"""benchmarks/type_compensation.py: the nuisance directions are the ones types move an author in, the plain variant
is wccn's own space, and the screen's folds keep authors apart (on real CMCC texts)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from helpers.benchmark_script import load_benchmark
from helpers.cmcc import cmcc_rows, cross_genre_training_data

from systems.wccn import WccnCosine
from toolkit.calibration import author_disjoint_folds, truth_authors
from toolkit.style_space import text_types


def _script() -> Any:
    return load_benchmark("type_compensation")


def test_nap_finds_the_direction_a_type_moves_every_author_in_and_projects_it_out() -> None:
    rng = np.random.default_rng(0)
    shift = np.zeros(20)
    shift[3] = 4.0  # a comment lies 4 units along axis 3 from the same author's submission
    authors = np.repeat(np.arange(30), 4)
    types = np.tile(np.array(["submission", "submission", "comment", "comment"]), 30)
    centres = rng.normal(size=(30, 20))[authors]
    vectors = centres + rng.normal(scale=0.3, size=(120, 20)) + np.where(types == "comment", 1.0, 0.0)[:, None] * shift
    directions, used = _script().nap_directions(vectors, authors, types, 1)
    assert used == 30
    assert abs(directions[:, 0] @ shift / 4.0) > 0.99
    projected = _script().project_out(vectors, directions)
    assert np.allclose(projected @ directions, 0.0)
    # what is left of a comment's offset from its own author's submissions is the noise, not the shift
    gap = projected[types == "comment"].mean(axis=0) - projected[types == "submission"].mean(axis=0)
    assert np.linalg.norm(gap) < 0.5


def test_screen_on_cmcc_plain_is_wccns_space_and_folds_leave_authors_out(cmcc: Path, tmp_path: Path) -> None:
    script = _script()
    rows = [r for r in cmcc_rows(cmcc) if int(r[0]) <= 7]
    train = cross_genre_training_data(rows, 120, np.random.default_rng(0), tmp_path)
    assert train.truth is not None
    labels = np.array([train.truth[p.id].same for p in train.problems])
    folds, info, _ = author_disjoint_folds(train.problems, truth_authors(train), labels, k=5, seed=0)
    assert info["grouping"] == "author pairs"  # 7 authors: five author-disjoint folds would leave one empty
    for fitted, held_out in folds:
        seen = {a for i in fitted for a in train.truth[train.problems[i].id].authors}
        held = {a for i in held_out for a in train.truth[train.problems[i].id].authors}
        assert not seen & held

    fitted, held_out = folds[0]
    problems = list(train.problems)
    types_of = text_types(problems)
    scores = script.fold_scores(train, types_of, [problems[i] for i in fitted], [problems[i] for i in held_out], 0)
    # the control is wccn itself: its cosine on the same fold, from wccn's own fitted space
    wccn = WccnCosine()
    space = wccn._fit_space([problems[i] for i in fitted], train.truth, None, seed=0)
    own = wccn._similarities([problems[i] for i in held_out], space)
    assert np.allclose(scores["plain"], own)
    assert not np.allclose(scores["centre"], own)  # six genres' means differ: centring moves the scores
    result = script.screen(train, seed=0)
    assert set(result["auc"]) == set(script.VARIANTS)
    assert all(0.0 <= value <= 1.0 for value in result["auc"].values())
