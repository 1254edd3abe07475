"""The stacked ensemble (`stacked`): out-of-fold meta-features, checkpoints, and a small real corpus end to end.

The real-data test reads `pan13-15-av-en.tar.gz` from `$HARNESS_SHARED_DATA` (default `<repo>/../shared/data`)
and is skipped only when that file is absent; it runs offline.
"""

from __future__ import annotations

import json
import shutil
import tarfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest
from click.testing import CliRunner

from harness import registry
from harness.cli import main
from harness.errors import HarnessError
from harness.metrics.verification import auc
from harness.records import Answer, VerificationData, VerificationProblem, VerificationTruth
from systems.stacked import StackedEnsemble
from toolkit.checkpoint import load_checkpoint, save_checkpoint
from toolkit.splits import grouped_split, problem_groups, shared_texts, text_key

PAN15 = "pan15-authorship-verification-training-dataset-english-2015-04-19"


class RecordingMember:
    """A fake member: answers from the text lengths, and logs what each instance was fit on and answered."""

    name: ClassVar[str] = "recorder"
    log: ClassVar[list[dict[str, Any]]] = []

    def __init__(self) -> None:
        self.serial = len(RecordingMember.log)
        RecordingMember.log.append({"fit": None, "answered": {}})

    def params(self) -> dict[str, Any]:
        return {}

    def fit(self, train: VerificationData, *, seed: int) -> None:
        RecordingMember.log[self.serial]["fit"] = [p.id for p in train.problems]

    def predict(self, problems: Sequence[VerificationProblem]) -> list[Answer]:
        answers = [Answer(p.id, (len(p.unknown) % 97 + self.serial) / 200) for p in problems]
        RecordingMember.log[self.serial]["answered"].update(dict(answers))
        return answers

    def save(self, directory: Path) -> None:
        save_checkpoint(directory, system=self.name, params={}, state={"serial": self.serial})

    @classmethod
    def load(cls, directory: Path) -> RecordingMember:
        _, state, _ = load_checkpoint(directory, system=cls.name)
        member = cls.__new__(cls)
        member.serial = state["serial"]
        return member


def _toy_data(n: int = 24) -> VerificationData:
    """n problems; problems 2k and 2k+1 share their known text, so folds must keep them together."""
    rng = np.random.default_rng(0)
    problems, truth = [], {}
    for i in range(n):
        known = "".join(rng.choice(list("abcdef "), size=200)) + f" known {i // 2}"
        unknown = "".join(rng.choice(list("abcdef "), size=100 + 7 * i)) + f" unknown {i}"
        problems.append(VerificationProblem(f"p{i}", (known, unknown)))
        truth[f"p{i}"] = VerificationTruth(f"p{i}", i % 4 < 2)
    return VerificationData(tuple(problems), truth, Path("toy"), "toy")


@pytest.fixture
def recorder(monkeypatch: pytest.MonkeyPatch) -> type[RecordingMember]:
    monkeypatch.setitem(registry.SYSTEMS, "recorder", registry.Entry(f"{__name__}:RecordingMember", "test fake"))
    monkeypatch.setattr(RecordingMember, "log", [])
    return RecordingMember


def test_meta_features_come_from_members_that_did_not_see_the_problem(
    recorder: type[RecordingMember], tmp_path: Path
) -> None:
    data = _toy_data()
    system = StackedEnsemble(members=("recorder", "length_ratio"), folds=4)
    system.fit(data, seed=0)
    log = recorder.log
    assert len(log) == 4 + 1  # a fresh member per fold, then one refitted on all problems
    assert log[-1]["fit"] == [p.id for p in data.problems] and log[-1]["answered"] == {}
    by_id = {p.id: p for p in data.problems}
    assert system.meta_features is not None
    for row, problem in enumerate(data.problems):
        answered_by = [entry for entry in log[:-1] if problem.id in entry["answered"]]
        assert len(answered_by) == 1  # exactly one out-of-fold answer per training problem
        seen = answered_by[0]["fit"]
        assert problem.id not in seen
        # nor any problem sharing a text with it
        keys = {text_key(t) for t in problem.texts}
        assert not any(keys & {text_key(t) for t in by_id[other].texts} for other in seen)
        # and that answer is the meta-feature of the problem
        assert system.meta_features[row, 0] == answered_by[0]["answered"][problem.id]
    assert system.info is not None and system.info["folds"] == 4

    answers = system.predict(data.problems)
    assert all(0.0 <= a.value <= 1.0 for a in answers)
    assert len(log) == 5  # predicting builds no member
    system.save(tmp_path / "checkpoint")
    assert (tmp_path / "checkpoint" / "members" / "recorder" / "config.json").is_file()
    loaded = StackedEnsemble.load(tmp_path / "checkpoint")
    assert loaded.predict(data.problems) == answers
    assert loaded.params() == system.params()


def test_non_negative_meta_model_matches_sklearn_where_unconstrained_weights_are_positive() -> None:
    from sklearn.linear_model import LogisticRegression

    from systems.stacked import _non_negative_logistic

    rng = np.random.default_rng(0)
    x = rng.random((200, 3))
    y = x @ np.array([2.0, 1.0, 0.5]) + rng.normal(0, 0.5, 200) > 1.75
    reference = LogisticRegression(C=1.0).fit(x, y)
    assert (reference.coef_ > 0).all()
    w, b = _non_negative_logistic(x, y, 1.0)
    assert w == pytest.approx(reference.coef_[0], abs=1e-3) and b == pytest.approx(reference.intercept_[0], abs=1e-3)
    # a member that answers the wrong way round gets weight 0, not a negative one
    flipped = np.column_stack([x[:, 0], 1.0 - x[:, 1]])
    assert LogisticRegression(C=1.0).fit(flipped, y).coef_[0, 1] < 0
    w, _ = _non_negative_logistic(flipped, y, 1.0)
    assert w[0] > 0 and w[1] == 0.0


def test_parameters_and_errors(tmp_path: Path) -> None:
    assert StackedEnsemble(members="cngdist, compressor").members == ("cngdist", "compressor")
    with pytest.raises(ValueError, match="repeat"):
        StackedEnsemble(members=("cngdist", "cngdist"))
    with pytest.raises(ValueError, match="its own member"):
        StackedEnsemble(members=("stacked",))
    with pytest.raises(ValueError, match="folds"):
        StackedEnsemble(folds=1)
    with pytest.raises(HarnessError, match="unknown system"):
        StackedEnsemble(members=("nope",)).fit(_toy_data(), seed=0)
    with pytest.raises(HarnessError, match="not fitted"):
        StackedEnsemble().predict(_toy_data().problems)
    system = StackedEnsemble(members=("length_ratio",), folds=3)
    system.fit(_toy_data(), seed=0)
    system.save(tmp_path / "c")
    shutil.rmtree(tmp_path / "c" / "members" / "length_ratio")
    with pytest.raises(HarnessError, match="member checkpoint missing"):
        StackedEnsemble.load(tmp_path / "c")


def _write_subset(source: Path, target: Path, ids: list[str]) -> None:
    """A corpus folder holding only the problems `ids` of `source`, with their truth lines."""
    target.mkdir(parents=True)
    for problem_id in ids:
        shutil.copytree(source / problem_id, target / problem_id)
    lines = (source / "truth.txt").read_text(encoding="utf-8-sig").split()
    truth = dict(zip(lines[::2], lines[1::2], strict=True))
    (target / "truth.txt").write_text("".join(f"{i} {truth[i]}\n" for i in ids), encoding="utf-8")


def test_beats_chance_on_real_pan15_text_disjoint_split_and_harness_predict_reloads_it(tmp_path: Path) -> None:
    """PAN15 English training problems split 50/50 into text-disjoint halves (`grouped_split`, seed 0).

    Default members, seed 0. Observed when written: AUC 0.68 (c@1 0.40: the band, fitted on out-of-fold scores
    of 50 problems in 9 text groups, sat above every test score; best-band c@1 0.73) on the test half (50
    problems), trained on the other 50. Before the meta-model's weights were held non-negative it scored AUC 0.34
    here. The bar, 0.60, is about 1.2 standard deviations of a random scorer's AUC on such a half (sd ~0.084)
    above chance: a floor that catches a broken pipeline, not a claim of quality.
    """
    from conftest import SHARED_DATA

    from tasks.pan.folders import read_classic_corpus

    archive_path = SHARED_DATA / "pan13-15-av-en.tar.gz"
    if not archive_path.is_file():
        pytest.skip(f"{archive_path.name} not found in {SHARED_DATA} (set HARNESS_SHARED_DATA)")
    with tarfile.open(archive_path) as archive:
        members = [m for m in archive.getmembers() if f"/{PAN15}/" in f"/{m.name}/"]
        archive.extractall(tmp_path / "raw", members=members, filter="data")
    corpus = next((tmp_path / "raw").rglob(PAN15))
    problems = read_classic_corpus(corpus)[0]
    train, test = grouped_split(problem_groups(problems), 0.5, seed=0)
    assert shared_texts([problems[i] for i in train], [problems[i] for i in test]) == 0
    data = tmp_path / "data"
    _write_subset(corpus, data / "train", [problems[i].id for i in train])
    _write_subset(corpus, data / "test", [problems[i].id for i in test])

    runner = CliRunner()
    args = ["run", "--system", "stacked", "--task", "pan-classic", "--data", str(data)]
    result = runner.invoke(main, [*args, "--out", str(tmp_path / "runs")], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    run_dir = tmp_path / "runs" / "pan-classic" / "stacked" / "seed-0"
    scores = json.loads((run_dir / "result.json").read_text(encoding="utf-8"))["scores"]
    answers = [json.loads(line) for line in (run_dir / "answers.jsonl").read_text(encoding="utf-8").splitlines()]
    truth = dict(line.split() for line in (data / "test" / "truth.txt").read_text(encoding="utf-8").splitlines())
    labels = np.array([truth[a["id"]] == "Y" for a in answers])
    assert auc(labels, np.array([a["value"] for a in answers])) == pytest.approx(scores["auc"])
    assert scores["auc"] > 0.60

    args = ["predict", "--system", "stacked", "--task", "pan-classic", "--input", str(data / "test")]
    args += ["--output", str(tmp_path / "tira"), "--checkpoint", str(run_dir / "checkpoint")]
    result = runner.invoke(main, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert (tmp_path / "tira" / "answers.jsonl").read_bytes() == (run_dir / "answers.jsonl").read_bytes()
