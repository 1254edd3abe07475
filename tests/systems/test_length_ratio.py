"""The `length_ratio` sanity-floor baseline: length ratios, calibration, checkpoint, a run end to end."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers.paths import REPO

from core.errors import HarnessError
from core.records import VerificationProblem
from harness.cli import main
from systems.baselines.length_ratio import LengthRatio, length_ratios
from tasks.pan.pan23 import Pan23Task

SAMPLE = REPO / "samples" / "pan23-format-sample"


def test_length_ratios() -> None:
    problems = [
        VerificationProblem("half", ("a" * 10, "b" * 5)),
        VerificationProblem("same", ("abc", "xyz")),
        VerificationProblem("mean of known", ("a" * 2, "a" * 6, "b" * 8)),  # known mean 4, unknown 8
        VerificationProblem("empty", ("", "")),
        VerificationProblem("one empty", ("abc", "")),
    ]
    assert length_ratios(problems).tolist() == [0.5, 1.0, 0.5, 1.0, 0.0]
    with pytest.raises(HarnessError, match="needs at least one known text"):
        length_ratios([VerificationProblem("alone", ("abc",))])


def test_fit_predict_save_load(tmp_path: Path) -> None:
    task = Pan23Task()
    train, test = task.load(SAMPLE, "train"), task.load(SAMPLE, "test")
    system = LengthRatio()
    with pytest.raises(HarnessError, match="not fitted"):
        system.predict(test.problems)
    system.fit(train, seed=0)
    answers = system.predict(test.problems)
    assert [a.id for a in answers] == [p.id for p in test.problems]
    assert all(0.0 <= a.value <= 1.0 for a in answers)
    system.save(tmp_path / "checkpoint")
    assert LengthRatio.load(tmp_path / "checkpoint").predict(test.problems) == answers
    assert LengthRatio.load(tmp_path / "checkpoint").params() == {
        "grid_step": 0.01,
        "objective": "overall",
        "calibration_folds": 5,
        "calibration_by": "texts",
    }
    with pytest.raises(ValueError):
        LengthRatio(objective="nope")


def test_run_and_tira_predict_end_to_end(tmp_path: Path) -> None:
    runner = CliRunner()
    args = ["run", "--system", "length_ratio", "--task", "pan23", "--data", str(SAMPLE), "--out", str(tmp_path)]
    result = runner.invoke(main, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    run_dir = tmp_path / "pan23" / "pan23-format-sample" / "length_ratio" / "seed-0"
    assert json.loads((run_dir / "result.json").read_text(encoding="utf-8"))["system"]["name"] == "length_ratio"
    args = ["predict", "--system", "length_ratio", "--task", "pan23", "--input", str(SAMPLE / "test")]
    args += ["--output", str(tmp_path / "tira"), "--checkpoint", str(run_dir / "checkpoint")]
    result = runner.invoke(main, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert (tmp_path / "tira" / "answers.jsonl").read_bytes() == (run_dir / "answers.jsonl").read_bytes()


def test_band_is_fitted_through_the_cross_fitting_and_records_it(tmp_path: Path) -> None:
    from core.records import VerificationData, VerificationProblem, VerificationTruth
    from toolkit.calibration import fit_abstain_band

    problems = tuple(
        VerificationProblem(f"p{i}", (f"known {i} " + "k" * (50 + 7 * i), f"unknown {i} " + "u" * (60 + 3 * i)))
        for i in range(12)
    )
    truth = {p.id: VerificationTruth(p.id, i % 3 == 0) for i, p in enumerate(problems)}
    data = VerificationData(problems, truth, tmp_path, "x")
    system = LengthRatio()
    system.fit(data, seed=0)
    assert system.calibration_info == {"folds": 5, "grouping": "text-disjoint", "groups": 12, "dropped": 0}
    labels = [truth[p.id].same for p in problems]
    # nothing is fitted but the band, so out-of-fold ratios are the ratios: the band is the in-sample one
    assert system._band == fit_abstain_band(length_ratios(problems), labels)
    system.save(tmp_path / "checkpoint")
    assert LengthRatio.load(tmp_path / "checkpoint").calibration_info == system.calibration_info
