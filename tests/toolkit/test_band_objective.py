"""The band objective "task": a split carries the measure its task ranks by, and a system fits its band for it."""

from __future__ import annotations

import inspect
from pathlib import Path

import numpy as np
import pytest
from helpers.paths import REPO

from core.records import RankingMeasure, VerificationData, VerificationProblem, VerificationTruth
from harness.params import build
from harness.registry import SYSTEMS, system_class
from toolkit.calibration import band_objective, check_objective, fit_abstain_band

SAMPLE = REPO / "samples" / "pan23-format-sample"
CLASSIC = RankingMeasure("auc_x_c_at_1", "pan23")
PAN23 = RankingMeasure("overall", "pan23")
# every registered verification system (each fits an abstain band)
VERIFIERS = sorted(name for name, entry in SYSTEMS.items() if "verification" in entry.serves)


def _objective_parameter(cls: type) -> str:
    """The parameter that names a system's band objective: `objective`, or the `objective` field of a part."""
    for name, parameter in inspect.signature(cls).parameters.items():
        if name == "objective":
            return name
        if hasattr(parameter.default, "objective"):
            return f"{name}.objective"
    raise AssertionError(f"{cls.__name__} has no band objective parameter")


def _classic_corpus(folder: Path) -> Path:
    folder.mkdir()
    for i in range(2):
        problem = folder / f"EN0{i}"
        problem.mkdir()
        (problem / "known01.txt").write_text(f"a known text number {i}", encoding="utf-8")
        (problem / "unknown.txt").write_text(f"an unknown text number {i}", encoding="utf-8")
    (folder / "truth.txt").write_text("EN00 Y\nEN01 N\n", encoding="utf-8")
    return folder


def test_every_pan_task_tells_its_splits_what_it_ranks_by(tmp_path: Path) -> None:
    from tasks.pan.classic import PanClassicTask
    from tasks.pan.pan20 import Pan20Task
    from tasks.pan.pan23 import Pan23Task

    assert Pan23Task().load(SAMPLE, "train").ranked_by == PAN23
    assert Pan23Task().load_inputs(SAMPLE / "test").ranked_by == PAN23  # TIRA mode carries it too
    assert Pan20Task().load(SAMPLE, "train").ranked_by == RankingMeasure("overall", "pan20")
    corpus = _classic_corpus(tmp_path / "corpus")
    assert PanClassicTask().load_split(corpus, "train").ranked_by == CLASSIC
    assert PanClassicTask().load_inputs(corpus).ranked_by == CLASSIC


def test_task_objective_follows_the_split_and_a_named_measure_does_not() -> None:
    def data(ranked_by: RankingMeasure | None) -> VerificationData:
        return VerificationData((), {}, Path("mem"), "0", ranked_by)

    assert band_objective("task", data(PAN23)) == {"objective": "overall", "profile": "pan23"}
    assert band_objective("task", data(CLASSIC)) == {"objective": "auc_x_c_at_1", "profile": "pan23"}
    pan20 = RankingMeasure("overall", "pan20")
    assert band_objective("task", data(pan20)) == {"objective": "overall", "profile": "pan20"}
    # data made in code names no task: PAN 2020-2023's ranking
    assert band_objective("task", data(None)) == {"objective": "overall", "profile": "pan23"}
    assert band_objective("brier", data(CLASSIC)) == {"objective": "brier", "profile": "pan23"}


@pytest.mark.parametrize("name", VERIFIERS)
def test_every_band_fitting_system_takes_task_and_refuses_an_unknown_objective(name: str) -> None:
    cls = system_class(name)
    parameter = _objective_parameter(cls)
    assert build(cls, {parameter: "task"}) is not None
    with pytest.raises(Exception, match="no_such_measure"):
        build(cls, {parameter: "no_such_measure"})


def test_check_objective_takes_task_and_measures_and_refuses_the_rest() -> None:
    check_objective("task")
    check_objective("overall")
    with pytest.raises(ValueError, match="no_such_measure"):
        check_objective("no_such_measure")


@pytest.mark.parametrize("name", ["pair_features", "stacked", "unmasking", "char_lm"])
def test_systems_that_tuned_for_auc_x_c_at_1_now_tune_for_the_task(name: str) -> None:
    """Their PAN 2013-2015 bands are unchanged (AUC x c@1 is that task's ranking); on PAN 2020-2023 data they
    fit for overall, which an answer of one class cannot win."""
    assert system_class(name)().objective == "task"


def test_a_system_fits_its_band_for_the_measure_its_split_is_ranked_by(tmp_path: Path) -> None:
    """length_ratio fits nothing but the band, on the pairs' length ratios: with objective "task" its band is
    the one fitted for the split's ranking measure, and the two rankings give different bands here (so the
    check would notice a system that ignored the split)."""
    from systems.baselines.length_ratio import LengthRatio, length_ratios

    rng = np.random.default_rng(3)
    lengths = rng.integers(20, 400, size=(120, 2))
    problems = tuple(
        VerificationProblem(f"p{i}", (f"known {i} " + "k" * int(a), f"unknown {i} " + "u" * int(b)))
        for i, (a, b) in enumerate(lengths)
    )
    same = rng.random(len(problems)) < 0.5
    truth = {p.id: VerificationTruth(p.id, bool(s)) for p, s in zip(problems, same, strict=True)}
    ratios = length_ratios(problems)
    bands = {}
    for ranking in (PAN23, CLASSIC):
        system = LengthRatio(objective="task")
        system.fit(VerificationData(problems, truth, tmp_path, "x", ranking), seed=0)
        assert system._band == fit_abstain_band(ratios, same, objective=ranking.name, profile=ranking.profile)
        bands[ranking] = system._band
    assert bands[PAN23] != bands[CLASSIC]


def test_stacked_folds_keep_the_ranking_of_their_split() -> None:
    from systems.stacked import _subset

    problems = tuple(VerificationProblem(f"p{i}", ("a", "b")) for i in range(3))
    truth = {p.id: VerificationTruth(p.id, True) for p in problems}
    part = _subset(VerificationData(problems, truth, Path("mem"), "0", CLASSIC), np.array([0, 2]))
    assert part.ranked_by == CLASSIC
    assert [p.id for p in part.problems] == ["p0", "p2"] and set(part.truth) == {"p0", "p2"}
