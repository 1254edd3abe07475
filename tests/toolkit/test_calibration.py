"""The shared abstain-band calibration: the map, its grid search, and the labels it is fitted on."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest

from core.errors import HarnessError
from core.records import NO_ANSWER, VerificationData, VerificationProblem, VerificationTruth
from harness.metrics.verification import evaluate_all
from toolkit.calibration import (
    AbstainBand,
    author_disjoint_folds,
    author_pair_folds,
    band_grid,
    check_fold_prior,
    class_balanced,
    cross_fitted_folds,
    cross_fitted_scores,
    fit_abstain_band,
    fold_model_scores,
    objective_function,
    prior_corrected,
    rescale_with_abstain_band,
    training_labels,
    truth_authors,
)
from toolkit.splits import shared_texts


def noisy_scores(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Scores that separate the classes only partly, so that abstaining can pay."""
    rng = np.random.default_rng(seed)
    labels = rng.random(n) < 0.5
    scores = np.clip(0.5 + 0.15 * (labels - 0.5) + 0.1 * rng.standard_normal(n), 0.0, 1.0)
    return scores, labels


def test_band_answers_exactly_one_half_inside_and_pan_ranges_outside() -> None:
    scores = [0.0, 0.2, 0.3, 0.31, 0.5, 0.69, 0.7, 0.85, 1.0]
    out = rescale_with_abstain_band(scores, 0.3, 0.7)
    assert out[0] == 0.0 and out[-1] == 1.0
    assert out[2] == pytest.approx(0.49)  # s == p1 goes to the low side, as in PAN's correct_scores
    assert out[6] == pytest.approx(0.51)  # s == p2 goes to the high side
    assert [v for v in out[3:6]] == [NO_ANSWER, NO_ANSWER, NO_ANSWER]  # exactly 0.5, not approximately
    assert out[1] == pytest.approx(0.49 * 0.2 / 0.3)
    assert out[7] == pytest.approx(0.51 + 0.49 * 0.15 / 0.3)
    assert np.all((out[:3] <= 0.49) | (out[:3] == 0.0))
    assert np.all(out[6:] >= 0.51)


def test_band_is_monotone_for_many_bands() -> None:
    rng = np.random.default_rng(1)
    scores = np.sort(np.r_[rng.random(500), 0.0, 1.0, band_grid(0.01)])
    for _ in range(200):
        p1, p2 = np.sort(rng.random(2))
        out = rescale_with_abstain_band(scores, p1, p2)
        assert np.all(np.diff(out) >= 0), (p1, p2)
        assert np.all((out >= 0) & (out <= 1))
        # nothing lands in the gaps around the non-answer
        assert not np.any(((out > 0.49 + 1e-12) & (out < 0.5)) | ((out > 0.5) & (out < 0.51 - 1e-12)))


def test_band_of_no_width_is_a_plain_threshold() -> None:
    out = rescale_with_abstain_band([0.1, 0.4, 0.4000001, 0.9], 0.4, 0.4)
    assert NO_ANSWER not in out.tolist()
    assert out[1] == pytest.approx(0.49) and out[2] >= 0.51


def test_scores_outside_unit_interval_are_clipped() -> None:
    out = rescale_with_abstain_band([-3.0, -0.01, 1.01, 7.0], 0.3, 0.7)
    assert out.tolist() == [0.0, 0.0, 1.0, 1.0]


def test_band_edges_at_zero_and_one() -> None:
    out = rescale_with_abstain_band([0.0, 0.5, 1.0], 0.0, 1.0)
    assert out.tolist() == [0.0, NO_ANSWER, 1.0]


@pytest.mark.parametrize(("p1", "p2"), [(0.6, 0.4), (-0.1, 0.5), (0.5, 1.1)])
def test_bad_band_is_refused(p1: float, p2: float) -> None:
    with pytest.raises(ValueError, match="p1"):
        rescale_with_abstain_band([0.5], p1, p2)


def test_nan_is_refused() -> None:
    with pytest.raises(ValueError, match="NaN"):
        rescale_with_abstain_band([0.2, float("nan")], 0.3, 0.7)
    with pytest.raises(ValueError, match="NaN"):
        fit_abstain_band([0.2, float("nan")], [True, False])


def test_abstain_band_apply_matches_function() -> None:
    scores, _ = noisy_scores(50)
    band = AbstainBand(0.42, 0.61)
    assert np.array_equal(band.apply(scores), rescale_with_abstain_band(scores, 0.42, 0.61))


def test_grid() -> None:
    grid = band_grid(0.01)
    assert len(grid) == 99 and grid[0] == 0.01 and grid[-1] == 0.99
    assert band_grid(0.25).tolist() == [0.25, 0.5, 0.75]
    with pytest.raises(ValueError):
        band_grid(0.0)


def test_fitted_band_is_at_least_as_good_as_no_band_on_training_data() -> None:
    scores, labels = noisy_scores(400)
    band = fit_abstain_band(scores, labels)
    fitted = evaluate_all(labels, band.apply(scores))["overall"]
    raw = evaluate_all(labels, scores)["overall"]
    best_threshold = max(evaluate_all(labels, rescale_with_abstain_band(scores, t, t))["overall"] for t in band_grid())
    assert fitted >= best_threshold
    assert fitted >= raw
    assert band.p1 <= band.p2


def test_abstaining_pays_where_classes_are_mixed() -> None:
    # clean negatives, clean positives, and a block of coin flips in the middle: c@1 rewards abstaining there
    scores = np.r_[np.linspace(0.1, 0.3, 20), np.linspace(0.7, 0.9, 20), np.full(20, 0.5)]
    labels = np.r_[np.zeros(20), np.ones(20), np.tile([0, 1], 10)].astype(bool)
    band = fit_abstain_band(scores, labels, objective="c_at_1")
    assert band.p1 < 0.5 < band.p2
    assert np.all(band.apply(scores)[40:] == NO_ANSWER)


def test_ties_go_to_the_narrowest_band_then_lowest_p1() -> None:
    # separable data: every threshold in [0.25, 0.69] gives c@1 = 1; the rule picks p1 = p2 = 0.25
    scores = np.r_[np.linspace(0.05, 0.25, 10), np.linspace(0.7, 0.95, 10)]
    labels = np.r_[np.zeros(10), np.ones(10)].astype(bool)
    assert fit_abstain_band(scores, labels, objective="c_at_1") == AbstainBand(0.25, 0.25)


def test_fit_is_deterministic_and_takes_seconds_for_thousands_of_scores() -> None:
    scores, labels = noisy_scores(3000, seed=3)
    start = time.perf_counter()
    first = fit_abstain_band(scores, labels)
    elapsed = time.perf_counter() - start
    assert fit_abstain_band(scores, labels) == first
    assert elapsed < 30  # about a second where it was written: seconds, not minutes


def test_objectives() -> None:
    scores, labels = noisy_scores(200)
    band = fit_abstain_band(scores, labels, objective="auc_x_c_at_1", step=0.05)
    assert 0 < band.p1 <= band.p2 < 1
    measure = objective_function("auc_x_c_at_1")
    result = evaluate_all(labels, band.apply(scores))
    assert measure(labels, band.apply(scores)) == pytest.approx(result["auc"] * result["c_at_1"])
    with pytest.raises(ValueError, match="unknown objective"):
        fit_abstain_band(scores, labels, objective="accuracy")
    with pytest.raises(ValueError, match="brier"):
        objective_function("brier", profile="pan20")
    with pytest.raises(ValueError, match="same length"):
        fit_abstain_band(scores, labels[:-1])


def test_training_labels() -> None:
    problems = (VerificationProblem("a", ("x", "y")), VerificationProblem("b", ("x", "z")))
    truth = {"a": VerificationTruth("a", True), "b": VerificationTruth("b", False)}
    data = VerificationData(problems, truth, Path("mem"), "0")
    assert training_labels(data).tolist() == [True, False]
    with pytest.raises(HarnessError, match="truth"):
        training_labels(data._replace(truth=None))
    with pytest.raises(HarnessError, match="'b'"):
        training_labels(data._replace(truth={"a": truth["a"]}))


# --- cross-fitted calibration ---------------------------------------------------------------------


def _problems_with_groups(sizes: list[int]) -> list[VerificationProblem]:
    """Problems in chains: within a chain each problem shares a text with the next, chains share nothing."""
    problems = []
    for chain, size in enumerate(sizes):
        for i in range(size):
            texts = (f"chain {chain} text {i}", f"chain {chain} text {i + 1}", f"unknown {chain}.{i}")
            problems.append(VerificationProblem(f"c{chain}-{i}", texts))
    return problems


def _leak_checking_scorer(problems: list[VerificationProblem], seen: list[set[int]]):
    """A toy fit_and_score: 'fits' on the training texts, scores a held-out problem by how many it has seen.

    A held-out problem's score is the number of its texts the scorer was fitted on: any leak makes it > 0.
    """

    def fit_and_score(train: np.ndarray, held_out: np.ndarray) -> np.ndarray:
        vocabulary = {text for i in train for text in problems[i].texts}
        seen.append({int(i) for i in held_out})
        return np.array([sum(text in vocabulary for text in problems[i].texts) for i in held_out], dtype=float)

    return fit_and_score


def test_cross_fitted_scores_over_text_disjoint_groups_never_score_with_a_scorer_that_saw_the_texts() -> None:
    problems = _problems_with_groups([3, 1, 4, 2, 2, 5, 1, 3])
    seen: list[set[int]] = []
    scores, info = cross_fitted_scores(problems, _leak_checking_scorer(problems, seen), k=5, seed=3)
    assert info == {"folds": 5, "grouping": "text-disjoint", "groups": 8, "dropped": 0}
    assert np.array_equal(scores, np.zeros(len(problems)))
    # every problem held out exactly once
    assert sorted(i for fold in seen for i in fold) == list(range(len(problems)))


def test_cross_fitted_scores_drop_problems_sharing_a_text_when_groups_are_too_few() -> None:
    # two chains of 10: only 2 text-disjoint groups for 5 folds (as PAN14 novels, one group)
    problems = _problems_with_groups([10, 10])
    seen: list[set[int]] = []
    folds, fold_info = cross_fitted_folds(problems, k=5, seed=0)
    scores, info = cross_fitted_scores(problems, _leak_checking_scorer(problems, seen), k=5, seed=0)
    assert info == fold_info
    assert info["grouping"] == "drop-shared" and info["folds"] == 5 and info["groups"] == 2
    assert info["dropped"] > 0
    assert np.array_equal(scores, np.zeros(len(problems)))  # no held-out text was in any fold's training part
    assert sorted(i for fold in seen for i in fold) == list(range(len(problems)))
    for train, held_out in folds:
        assert not set(train) & set(held_out)
        assert shared_texts([problems[i] for i in train], [problems[i] for i in held_out]) == 0


def test_one_dominant_text_group_gives_way_to_folds_that_drop_only_the_shared_problems() -> None:
    """Issue 27: on CMCC pairs one text-connected group held 180 of 200 training problems, and its fold's model was
    fitted on the other 20. Here a chain of 60 and five lone problems: held out whole, the chain leaves its fold 5
    training problems; dropping only the problems that share a text with each held-out part leaves many more."""
    problems = _problems_with_groups([60, 1, 1, 1, 1, 1])
    folds, info = cross_fitted_folds(problems, k=5, seed=0)
    assert info["grouping"] == "drop-shared" and info["groups"] == 6 and info["dropped"] > 0
    assert min(len(train) for train, _ in folds) > 20
    assert sorted(i for _, held_out in folds for i in held_out) == list(range(len(problems)))
    for train, held_out in folds:
        assert shared_texts([problems[i] for i in train], [problems[i] for i in held_out]) == 0
    # groups of like size keep the whole-group folds, which drop nothing
    _, balanced = cross_fitted_folds(_problems_with_groups([12, 12, 12, 12, 12]), k=5, seed=0)
    assert balanced["grouping"] == "text-disjoint"


def test_cross_fitted_folds_refuse_a_fold_left_without_training_problems() -> None:
    problems = [VerificationProblem(f"p{i}", ("the one shared text", f"unknown {i}")) for i in range(10)]
    with pytest.raises(HarnessError, match="fold 1 of 5.*shares a text"):
        cross_fitted_folds(problems, k=5, seed=0)


def test_cross_fitted_scores_check_what_the_scorer_returns() -> None:
    problems = _problems_with_groups([1] * 6)
    with pytest.raises(HarnessError, match="fold 1"):
        cross_fitted_scores(problems, lambda train, held_out: np.zeros(len(held_out) + 1), k=3)
    with pytest.raises(HarnessError, match="NaN"):
        cross_fitted_scores(problems, lambda train, held_out: np.full(len(held_out), np.nan), k=3)
    with pytest.raises(HarnessError, match="at least 2 folds"):
        cross_fitted_scores(problems, lambda train, held_out: np.zeros(len(held_out)), k=1)


def _author_pair_problems(authors: int, per_pair: int = 2) -> tuple[list[VerificationProblem], list[tuple[str, ...]]]:
    """Same-author problems for every author and different-author problems for every pair of them (each text its
    own), as `harness pairs` builds from few authors: no k folds keep authors apart."""
    names = [f"A{i}" for i in range(authors)]
    problems: list[VerificationProblem] = []
    owners: list[tuple[str, ...]] = []
    cells = [(a,) for a in names] + [(a, b) for i, a in enumerate(names) for b in names[i + 1 :]]
    for cell in cells:
        for n in range(per_pair):
            texts = (f"{cell[0]} text {n} {cell}", f"{cell[-1]} text {n} {cell} (unknown)")
            problems.append(VerificationProblem(f"p{len(problems)}", texts))
            owners.append(cell)
    return problems, owners


def test_author_pair_folds_keep_every_held_out_author_out_of_training() -> None:
    """Issue 27: CMCC's 7 training authors each write many problems, so no 5 folds keep authors apart, and with
    text-only folds wccn, which learns the training authors, scored out-of-fold AUC 0.92 there against 0.62 on the
    test split. Each fold now leaves two authors out, whatever its problems' label."""
    problems, owners = _author_pair_problems(7)
    with pytest.raises(HarnessError):  # the k-fold route finds an empty fold, as on CMCC
        cross_fitted_folds(problems, k=5, seed=0, authors=owners)
    folds, info = author_pair_folds(problems, owners, seed=0)
    assert info == {"folds": 21, "grouping": "author pairs", "author_groups": 7, "authors": 7}
    assert sorted(i for _, held_out in folds for i in held_out) == list(range(len(problems)))  # each once
    for train, held_out in folds:
        held_authors = {a for i in held_out for a in owners[i]}
        assert len(held_authors) == 2  # a same-author problem joins one of its author's pairs
        assert not held_authors & {a for i in train for a in owners[i]}
        assert len(train) == 5 * 2 + 10 * 2  # the other 5 authors' problems: 5 same-author and 10 pairs, 2 each
        assert shared_texts([problems[i] for i in train], [problems[i] for i in held_out]) == 0
    # every fold's model is fitted on as many problems, so out-of-fold scores do not track the label
    assert len({len(train) for train, _ in folds}) == 1
    again, _ = author_pair_folds(problems, owners, seed=0)
    assert all(np.array_equal(a[1], b[1]) for a, b in zip(folds, again, strict=True))


def test_author_pair_folds_group_many_authors_and_refuse_too_few() -> None:
    problems, owners = _author_pair_problems(10, per_pair=1)
    folds, info = author_pair_folds(problems, owners, seed=1, groups=4)
    assert info["author_groups"] == 4 and info["folds"] == 6  # every pair of 4 groups
    for train, held_out in folds:
        assert not {a for i in held_out for a in owners[i]} & {a for i in train for a in owners[i]}
    assert sorted(i for _, held_out in folds for i in held_out) == list(range(len(problems)))
    few, few_owners = _author_pair_problems(2)
    with pytest.raises(HarnessError, match="at least 3 authors, got 2"):
        author_pair_folds(few, few_owners, seed=0)


def test_author_disjoint_folds_keep_authors_apart_by_k_folds_then_author_pairs() -> None:
    """Many authors: k author- and text-disjoint folds. CMCC's shape (7 authors in every problem): k folds would leave
    one empty, so two author groups out a fold. No authors named: texts apart only, and the info says why."""
    owners = [(f"a{i}",) for i in range(30)] + [(f"b{i}", f"c{i}") for i in range(30)]
    texts = [(f"{o[0]} known {i}", f"{o[-1]} unknown {i}") for i, o in enumerate(owners)]
    problems = [VerificationProblem(f"p{i}", pair) for i, pair in enumerate(texts)]
    labels = np.array([len(o) == 1 for o in owners])
    folds, info, apart = author_disjoint_folds(problems, owners, labels, k=5, seed=0)
    assert apart and info["by"] == "texts and authors" and len(folds) == 5
    for train, held_out in folds:
        assert not {a for i in held_out for a in owners[i]} & {a for i in train for a in owners[i]}

    few, few_owners = _author_pair_problems(7)
    few_labels = np.array([len(set(o)) == 1 for o in few_owners])
    folds, info, apart = author_disjoint_folds(few, few_owners, few_labels, k=5, seed=0)
    assert apart and info["grouping"] == "author pairs" and info["by"].startswith("authors, two groups left out")

    folds, info, apart = author_disjoint_folds(problems, None, labels, k=5, seed=0)
    texts_only, _ = cross_fitted_folds(problems, k=5, seed=0)
    assert not apart and info["by"] == "texts (the truth names no authors)"
    assert all(np.array_equal(a[1], b[1]) for a, b in zip(folds, texts_only, strict=True))


def test_truth_authors_are_none_unless_the_truth_names_every_problems_authors(tmp_path: Path) -> None:
    problems = (VerificationProblem("p0", ("a", "b")), VerificationProblem("p1", ("c", "d")))
    named = {"p0": VerificationTruth("p0", True, ("x", "x")), "p1": VerificationTruth("p1", False, ("y", "z"))}
    assert truth_authors(VerificationData(problems, named, tmp_path, "train")) == [("x", "x"), ("y", "z")]
    partly = named | {"p1": VerificationTruth("p1", False)}
    assert truth_authors(VerificationData(problems, partly, tmp_path, "train")) is None


def test_two_or_three_authors_leave_only_text_disjoint_folds() -> None:
    """With fewer than 3 authors no fold can leave two out and keep a training problem, and with 3 a fold trains
    on one author's same-author problems only: folds keep texts apart, and `info["by"]` says so (stacked warns)."""
    for names in ("AB", "ABC"):
        authors = [(names[i % len(names)],) if i % 2 else (names[i % len(names)], names[(i + 1) % len(names)])
                   for i in range(12)]  # fmt: skip
        texts = [(f"{a[0]} text {i}", f"{a[-1]} text {i}") for i, a in enumerate(authors)]
        problems = [VerificationProblem(f"p{i}", pair) for i, pair in enumerate(texts)]
        labels = np.array([len(a) == 1 for a in authors])
        folds, info, authors_apart = author_disjoint_folds(problems, authors, labels, k=5, seed=0)
        reason = "need at least 3 authors, got 2" if names == "AB" else "training problems are of one class"
        assert not authors_apart and info["by"].startswith("texts (author-pair folds cannot be used: "), names
        assert reason in info["by"], info["by"]
        assert sorted(i for _, held_out in folds for i in held_out) == list(range(12))


def test_cross_fitted_folds_are_seeded() -> None:
    problems = _problems_with_groups([2] * 12)
    first, _ = cross_fitted_folds(problems, k=4, seed=1)
    again, _ = cross_fitted_folds(problems, k=4, seed=1)
    other, _ = cross_fitted_folds(problems, k=4, seed=2)
    assert all(np.array_equal(a[1], b[1]) for a, b in zip(first, again, strict=True))
    assert not all(np.array_equal(a[1], b[1]) for a, b in zip(first, other, strict=True))


def test_class_balanced_repeats_the_rarer_class_to_about_the_commoner_ones_count() -> None:
    labels = np.array([True] * 33 + [False] * 8)
    scores = np.linspace(0.0, 1.0, labels.size)
    balanced_scores, balanced_labels = class_balanced(scores, labels)
    assert int(balanced_labels.sum()) == 33 and int((~balanced_labels).sum()) == 32  # 8 x round(33 / 8)
    assert np.array_equal(balanced_scores[:41], scores)  # the problems themselves come first, unchanged
    assert set(balanced_scores[41:]) == set(scores[~labels])
    for one_class in (np.ones(5, dtype=bool), np.zeros(5, dtype=bool)):
        assert np.array_equal(class_balanced(scores[:5], one_class)[1], one_class)
    assert class_balanced(scores[:4], np.array([True, False, True, False]))[0].size == 4


def test_a_band_fitted_on_skewed_weak_scores_answers_one_class_and_on_balanced_ones_both() -> None:
    """The siamese_bilstm failure (issue 27): validation problems mostly same-author, a weak score; the band that
    maximises `overall` there says "same" to everything, while the classes weighed alike give a band between them."""
    rng = np.random.default_rng(0)
    labels = np.array([True] * 330 + [False] * 80)
    scores = np.clip(np.where(labels, 0.62, 0.58) + rng.normal(0, 0.05, labels.size), 0, 1)
    skewed = fit_abstain_band(scores, labels, step=0.01)
    assert not (skewed.apply(scores) < 0.5).any()  # "same" or no answer, never "different"
    band = fit_abstain_band(*class_balanced(scores, labels), step=0.01)
    answers = band.apply(scores)
    assert (answers < 0.5).any() and (answers > 0.5).any()


def test_prior_corrected_is_bayes_rule_for_a_new_class_balance() -> None:
    # two Gaussian classes: the posterior of "same" under one prior, moved to another, is the posterior there
    x = np.linspace(-3.0, 3.0, 25)
    same, different = np.exp(-0.5 * (x - 1.0) ** 2), np.exp(-0.5 * (x + 1.0) ** 2)

    def posterior(prior: float) -> np.ndarray:
        return prior * same / (prior * same + (1 - prior) * different)

    np.testing.assert_allclose(prior_corrected(posterior(0.62), 0.62, 0.5), posterior(0.5), rtol=1e-12)
    np.testing.assert_allclose(prior_corrected(posterior(0.5), 0.5, 0.3), posterior(0.3), rtol=1e-12)
    assert list(prior_corrected(np.array([0.0, 1.0]), 0.62, 0.5)) == [0.0, 1.0]  # a pure leaf stays pure
    with pytest.raises(ValueError, match="strictly between 0 and 1"):
        prior_corrected(np.array([0.5]), 1.0, 0.5)


def test_fold_model_scores_corrects_only_when_asked() -> None:
    p = np.array([0.2, 0.6, 0.9])
    fold_labels, labels = np.array([1, 1, 1, 0]), np.array([1, 1, 0, 0])
    assert np.array_equal(fold_model_scores(p, fold_labels, labels, "as_fitted"), p)
    np.testing.assert_allclose(fold_model_scores(p, fold_labels, labels, "corrected"), prior_corrected(p, 0.75, 0.5))
    with pytest.raises(ValueError, match="fold_prior must be one of as_fitted, corrected"):
        check_fold_prior("balanced")
