"""Leak-free splits (toolkit.splits): no text on both sides, on toy problems and on every real PAN13-15 corpus."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from core.errors import HarnessError
from core.records import VerificationProblem
from toolkit.splits import grouped_folds, grouped_split, normalise_text, problem_groups, shared_texts, text_key


def _problem(pid: str, *texts: str) -> VerificationProblem:
    return VerificationProblem(pid, tuple(texts))


def test_texts_equal_after_normalisation_share_a_key() -> None:
    assert text_key("\ufeffA  text\r\nhere ") == text_key("A text here")
    assert text_key("A text") != text_key("a text")  # case is style, not noise
    assert normalise_text(" x\t\ny ") == "x y"


def test_problems_sharing_a_text_or_an_author_are_grouped_transitively() -> None:
    problems = [
        _problem("a", "t1", "t2"),
        _problem("b", "t3", "t2 "),
        _problem("c", "t4", "t5"),
        _problem("d", "t6", "t7"),
    ]
    assert problem_groups(problems).tolist() == [0, 0, 1, 2]
    authors = [None, None, ("x",), ("x", "y")]
    assert problem_groups(problems, authors).tolist() == [0, 0, 1, 1]


def _leak_free(problems: list[VerificationProblem], train: np.ndarray, test: np.ndarray) -> bool:
    return shared_texts([problems[i] for i in train], [problems[i] for i in test]) == 0


def test_folds_hold_each_problem_out_once_and_never_share_a_text() -> None:
    rng = np.random.default_rng(0)
    problems = [_problem(str(i), f"k{rng.integers(0, 60)}", f"u{i}") for i in range(80)]
    groups = problem_groups(problems)
    folds = grouped_folds(groups, 5, seed=3)
    held = np.concatenate([test for _, test in folds])
    assert sorted(held.tolist()) == list(range(80))
    for train, test in folds:
        assert _leak_free(problems, train, test)
        assert len(test) >= 8  # roughly balanced: 16 each on average
    assert [t.tolist() for _, t in folds] == [t.tolist() for _, t in grouped_folds(groups, 5, seed=3)]


def test_too_few_groups_for_the_folds_is_an_error() -> None:
    with pytest.raises(HarnessError, match="2 groups of problems that share no text cannot make 3 folds"):
        grouped_folds([0, 0, 1], 3, seed=0)


def test_a_split_keeps_groups_whole_and_is_near_the_share() -> None:
    problems = [_problem(str(i), f"k{i // 3}", f"u{i}") for i in range(90)]  # 30 groups of 3
    train, test = grouped_split(problem_groups(problems), 0.5, seed=1)
    assert len(train) + len(test) == 90 and abs(len(test) - 45) <= 3
    assert _leak_free(problems, train, test)


def _corpora(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    import tarfile

    from helpers.paths import SHARED_DATA

    folder = tmp_path_factory.mktemp("pan13-15")
    for name in ("pan13-15-av-en.tar.gz", "pan13-av-en.tar.gz"):
        if not (SHARED_DATA / name).is_file():
            pytest.skip(f"{name} not found in {SHARED_DATA} (set HARNESS_SHARED_DATA)")
        with tarfile.open(SHARED_DATA / name) as archive:
            archive.extractall(folder, filter="data")
    return sorted(p.parent for p in folder.rglob("truth.txt"))


def test_no_split_or_fold_shares_a_text_on_any_real_pan13_15_corpus(tmp_path_factory: pytest.TempPathFactory) -> None:
    from tasks.pan.folders import read_classic_corpus

    corpora = _corpora(tmp_path_factory)
    assert len(corpora) == 9  # PAN13 train/test, PAN14 essays and novels train/test1/test2, PAN15 train
    for corpus in corpora:
        problems = list(read_classic_corpus(corpus)[0])
        groups = problem_groups(problems)
        if len(np.unique(groups)) >= 5:
            for train, test in grouped_folds(groups, 5, seed=0):
                assert _leak_free(problems, train, test), corpus.name
        if len(np.unique(groups)) >= 2:
            train, test = grouped_split(groups, 0.5, seed=0)
            assert _leak_free(problems, train, test), corpus.name
