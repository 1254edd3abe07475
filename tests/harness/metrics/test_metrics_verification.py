"""PAN verification measures: the golden PAN 2020 score tables, and small hand-computed cases."""

from __future__ import annotations

import csv
import os
from pathlib import Path

import numpy as np
import pytest
from helpers.paths import REPO

from core.files import read_jsonl
from core.records import VerificationTruth
from harness.metrics.verification import PROFILES, auc, brier, c_at_1, evaluate_all, f1, f_05_u
from tasks.pan.evaluator import read_answers, score_answers

REPO_ROOT = REPO
DATA = Path(os.environ.get("HARNESS_SHARED_DATA", REPO_ROOT.parent / "shared" / "data"))
SCORED = DATA / "pan20-av-scored"

TEAMS = (
    "araujo20-large",
    "araujo20-small",
    "boenninghoff20-large",
    "boenninghoff20-small",
    "faber20-small",
    "gagala20-small",
    "halvani20-small",
    "ikae20-small",
    "kipnis20-small",
    "niven20-small",
    "ordonez20-large",
    "weerasinghe20-large",
    "weerasinghe20-small",
)
# column of each golden table -> our canonical measure name
COLUMNS = {
    "pan20": ("metrics-official-2020.csv", {"AUC": "auc", "c@1": "c_at_1", "F1": "f1", "F0.5u": "f_05_u"}),
    "pan23": (
        "scores-current-evaluator.csv",
        {"auc": "auc", "c@1": "c_at_1", "f_05_u": "f_05_u", "F1": "f1", "brier": "brier"},
    ),
}
OVERALL_COLUMN = {"pan20": "Overall", "pan23": "overall"}

needs_data = pytest.mark.skipif(not SCORED.is_dir(), reason=f"shared data not found at {SCORED}")


def _load_truth(path: Path) -> dict[str, VerificationTruth]:
    truth = {}
    for _, obj in read_jsonl(path):
        truth[obj["id"]] = VerificationTruth(obj["id"], bool(obj["same"]), tuple(obj["authors"]))
    return truth


def _load_table(name: str) -> dict[str, dict[str, float]]:
    with open(SCORED / name, newline="", encoding="utf-8") as handle:
        return {row.pop("system"): {k: float(v) for k, v in row.items()} for row in csv.DictReader(handle)}


@pytest.fixture(scope="module")
def truth() -> dict[str, VerificationTruth]:
    return _load_truth(SCORED / "truth.jsonl.gz")


@needs_data
def test_golden_tables_cover_all_teams() -> None:
    for profile, (table, _) in COLUMNS.items():
        assert sorted(_load_table(table)) == sorted(TEAMS), profile
    assert sorted(p.name.removesuffix(".jsonl.gz") for p in (SCORED / "answers").glob("*.jsonl.gz")) == sorted(TEAMS)


@needs_data
@pytest.mark.parametrize("profile", sorted(PROFILES))
@pytest.mark.parametrize("team", TEAMS)
def test_reproduces_official_scores(team: str, profile: str, truth: dict[str, VerificationTruth]) -> None:
    table, columns = COLUMNS[profile]
    expected = _load_table(table)[team]
    answers = read_answers(SCORED / "answers" / f"{team}.jsonl.gz")
    assert len(answers) == len(truth) == 14311
    got = score_answers(answers, truth, profile=profile)
    assert set(got) == set(PROFILES[profile]) | {"overall"}
    for column, measure in columns.items():
        assert got[measure] == pytest.approx(expected[column], abs=1e-9, rel=0), f"{team} {profile} {measure}"
    assert got["overall"] == pytest.approx(expected[OVERALL_COLUMN[profile]], abs=1e-9, rel=0)


@needs_data
def test_pan20_and_pan23_differ_only_where_teams_abstain(truth: dict[str, VerificationTruth]) -> None:
    # the 2021 fix of F0.5u only changes teams that answer exactly 0.5 somewhere
    for team in ("boenninghoff20-large", "ikae20-small"):
        answers = read_answers(SCORED / "answers" / f"{team}.jsonl.gz")
        abstains = any(v == 0.5 for v in answers.values())
        old = score_answers(answers, truth, profile="pan20")["f_05_u"]
        new = score_answers(answers, truth, profile="pan23")["f_05_u"]
        assert (old != new) == abstains, team


# ---- hand-computed cases ------------------------------------------------------------------


def test_simple_case_without_abstentions() -> None:
    truth, scores = [1, 1, 0, 0], [0.9, 0.4, 0.6, 0.1]
    assert auc(truth, scores) == pytest.approx(3 / 4)  # pairs: 0.9>0.6, 0.9>0.1, 0.4>0.1
    assert c_at_1(truth, scores) == pytest.approx(2 / 4)
    assert f1(truth, scores) == pytest.approx(2 / 4)  # tp 1, fp 1, fn 1
    assert f_05_u(truth, scores) == pytest.approx(1.25 / 2.5)
    assert brier(truth, scores) == pytest.approx(1 - 0.74 / 4)


def test_abstentions_pan23_and_pan20() -> None:
    truth = [True, True, False, False, True]
    scores = [0.9, 0.5, 0.5, 0.2, 0.7]
    assert auc(truth, scores) == pytest.approx(5.5 / 6)  # the 0.5 vs 0.5 pair counts half
    assert c_at_1(truth, scores) == pytest.approx((3 + 2 * 3 / 5) / 5)
    assert f1(truth, scores) == pytest.approx(1.0)  # the two 0.5s are dropped
    assert f_05_u(truth, scores) == pytest.approx(2.5 / (2.5 + 0.25 * 2))  # n_u = 2
    # 2020: both 0.5s are "same" decisions, one tp and one fp
    assert f_05_u(truth, scores, abstain_counts_as_positive=True) == pytest.approx(3.75 / 4.75)
    assert brier(truth, scores) == pytest.approx(1 - 0.64 / 5)
    pan23 = evaluate_all(truth, scores, "pan23")
    assert list(pan23) == ["auc", "c_at_1", "f_05_u", "f1", "brier", "overall"]
    assert pan23["overall"] == pytest.approx(np.mean([5.5 / 6, 0.84, 2.5 / 3, 1.0, 0.872]))
    pan20 = evaluate_all(truth, scores, "pan20")
    assert list(pan20) == ["auc", "c_at_1", "f1", "f_05_u", "overall"]
    assert pan20["f_05_u"] == pytest.approx(3.75 / 4.75)
    assert pan20["overall"] == pytest.approx(np.mean([5.5 / 6, 0.84, 1.0, 3.75 / 4.75]))


def test_all_answers_are_non_answers() -> None:
    truth, scores = [1, 0, 1, 0], [0.5] * 4
    assert auc(truth, scores) == 0.5
    assert c_at_1(truth, scores) == 0.0
    assert f1(truth, scores) == 0.0  # nothing answered: undefined -> 0
    assert f_05_u(truth, scores) == 0.0  # tp 0, n_u 4
    assert f_05_u(truth, scores, abstain_counts_as_positive=True) == pytest.approx(2.5 / 4.5)
    assert brier(truth, scores) == 0.75


def test_one_class_only() -> None:
    truth, scores = [1, 1, 1], [0.9, 0.2, 0.5]
    assert auc(truth, scores) == 0.0  # undefined; PAN returns 0.0
    assert c_at_1(truth, scores) == pytest.approx(4 / 9)
    assert f1(truth, scores) == pytest.approx(2 / 3)
    assert f_05_u(truth, scores) == pytest.approx(1.25 / 1.75)
    assert brier(truth, scores) == pytest.approx(0.7)


def test_only_true_negatives() -> None:
    truth, scores = [0, 0], [0.1, 0.2]
    assert f1(truth, scores) == 0.0
    assert f_05_u(truth, scores) == 0.0  # 0 / 0 -> 0
    assert c_at_1(truth, scores) == 1.0


def test_auc_matches_sklearn_with_ties() -> None:
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(0)
    for _ in range(50):
        n = int(rng.integers(2, 40))
        truth = rng.integers(0, 2, n)
        scores = rng.integers(0, 5, n) / 4  # many ties, including 0.5
        expected = roc_auc_score(truth, scores) if 0 < truth.sum() < n else 0.0
        assert auc(truth, scores) == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize(
    ("truth", "scores", "message"),
    [
        ([1, 0], [0.5], "differ in length"),
        ([1, 0], [0.5, float("nan")], "finite"),
        ([1, 2], [0.5, 0.5], "binary"),
        ([], [], "no problems"),
        ([[1]], [[0.5]], "1-D"),
    ],
)
def test_bad_input_is_rejected(truth: list, scores: list, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        evaluate_all(truth, scores)


def test_unknown_profile() -> None:
    with pytest.raises(ValueError, match="unknown profile"):
        evaluate_all([1, 0], [0.7, 0.2], profile="pan19")
