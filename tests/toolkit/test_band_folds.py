"""Which training problems a band-fold folder was made for: its pairs' ids and truth, not the ids alone, since the
sets of one seed built from two corpora share their pair ids."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import pytest

from core.errors import DataError, HarnessError
from core.records import VerificationData, VerificationProblem, VerificationTruth
from toolkit.band_folds import made_for, out_of_fold_scores, pair_digest, training_digests


def split(truths: list[VerificationTruth]) -> VerificationData:
    problems = tuple(VerificationProblem(truth.id, ("a text", "another")) for truth in truths)
    return VerificationData(problems, {truth.id: truth for truth in truths}, Path("mem"), "0")


FORUM = [VerificationTruth("p1", True, ("ann", "ann")), VerificationTruth("p2", False, ("bob", "cy")),
         VerificationTruth("p3", False, ("cy", "dee"))]  # fmt: skip
RECORD = {"set": "forum-seed0", "folds": [{"pair_ids": ["p1"]}, {"pair_ids": ["p3"]}], "across_folds": ["p2"]}


def test_the_folds_are_read_on_their_own_sets_pairs_only():
    record = RECORD | {"pair_digests": {truth.id: pair_digest(truth) for truth in FORUM}}
    assert made_for(split(FORUM), record) and made_for(split(FORUM[1:]), record)  # a part of it too (stacked)
    # another corpus's set of the same seed: the same ids, other authors
    cmcc = [VerificationTruth("p1", False, ("4", "12")), VerificationTruth("p2", True, ("8", "8"))]
    assert not made_for(split(cmcc), record)
    assert not made_for(split([VerificationTruth("q9", True, ("ann", "ann"))]), record)
    flipped = [VerificationTruth("p1", False, ("ann", "ann"))]  # the same authors, another label
    assert not made_for(split(flipped), record)
    # a set that shares some pairs with it and ids with others (rebuilt with another --pairs, same seed) is another
    assert not made_for(split([FORUM[0], cmcc[1]]), record)
    # its pairs beside pairs it lacks: made for it (the folds then refuse the pairs they lack)
    assert made_for(split([FORUM[0], VerificationTruth("q9", True, ("ann", "ann"))]), record)
    with pytest.raises(HarnessError, match="1 of 2 training problems .* are in no band fold"):
        out_of_fold_scores(split([FORUM[0], VerificationTruth("q9", True, ("ann", "ann"))]).problems, record,
                           lambda problems, k: np.zeros(len(problems)))  # fmt: skip


def test_folds_written_before_the_digests_are_matched_by_ids_with_a_warning(caplog: pytest.LogCaptureFixture):
    cmcc = [VerificationTruth("p1", False, ("4", "12"))]
    with caplog.at_level(logging.WARNING, logger="harness"):
        assert made_for(split(cmcc), RECORD)
    assert "hold no pair digests" in caplog.text and "--reuse-from" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="harness"):
        assert not made_for(split([VerificationTruth("q9", True, ("a", "a"))]), RECORD)
    assert not caplog.text


def test_folds_written_before_the_digests_take_them_from_their_set_where_it_is_there(tmp_path: Path):
    (tmp_path / "train").mkdir()
    lines = [json.dumps({"id": t.id, "same": t.same, "authors": list(t.authors or ())}) for t in FORUM]
    (tmp_path / "train" / "truth.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    record = RECORD | {"set": str(tmp_path)}
    assert training_digests(tmp_path) == {truth.id: pair_digest(truth) for truth in FORUM}
    assert made_for(split(FORUM), record)
    assert not made_for(split([VerificationTruth("p1", False, ("4", "12"))]), record)  # CMCC's pair of that id
    (tmp_path / "train" / "truth.jsonl").write_text('{"id": "p1", "same": "yes", "authors": []}\n', encoding="utf-8")
    with pytest.raises(DataError, match="truth.jsonl:1.*same"):
        made_for(split(FORUM), record)
