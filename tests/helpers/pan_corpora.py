"""Real PAN 2013-2015 corpora for tests: extracted from the shared tarball, cut into leak-free subsets."""

from __future__ import annotations

import json
import shutil
import tarfile
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from harness.cli import main
from harness.metrics.verification import auc
from toolkit.splits import grouped_split, problem_groups, shared_texts

PAN15 = "pan15-authorship-verification-training-dataset-english-2015-04-19"
# PAN14 English as PAN distributed it: (training corpus, test corpus 2) folder names in the shared tarball
PAN14_ESSAYS = ("pan14-author-verification-training-corpus-english-essays-2014-04-22",
                "pan14-author-verification-test-corpus2-english-essays-2014-04-22")  # fmt: skip
PAN14_NOVELS = ("pan14-author-verification-training-corpus-english-novels-2014-04-22",
                "pan14-author-verification-test-corpus2-english-novels-2014-04-22")  # fmt: skip


def extract_corpora(folder: Path, corpora: tuple[str, ...], archive: str = "pan13-15-av-en.tar.gz") -> dict[str, Path]:
    """Extract the named corpus folders of a shared PAN tarball into `folder`; skip the test where it is absent."""
    from helpers.paths import SHARED_DATA

    archive_path = SHARED_DATA / archive
    if not archive_path.is_file():
        pytest.skip(f"{archive_path.name} not found in {SHARED_DATA} (set HARNESS_SHARED_DATA)")
    with tarfile.open(archive_path) as tar:
        members = [m for m in tar.getmembers() if any(f"/{c}/" in f"/{m.name}/" for c in corpora)]
        tar.extractall(folder, members=members, filter="data")
    return {c: next(folder.rglob(c)) for c in corpora}


def write_subset(source: Path, target: Path, ids: list[str]) -> None:
    """A corpus folder holding only the problems `ids` of `source`, with their truth lines."""
    target.mkdir(parents=True)
    for problem_id in ids:
        shutil.copytree(source / problem_id, target / problem_id)
    lines = (source / "truth.txt").read_text(encoding="utf-8-sig").split()
    truth = dict(zip(lines[::2], lines[1::2], strict=True))
    (target / "truth.txt").write_text("".join(f"{i} {truth[i]}\n" for i in ids), encoding="utf-8")


def pan15_text_disjoint_halves(tmp_path: Path) -> Path:
    """PAN15 English training problems split 50/50 into halves that share no text (seed 0): DIR/train, DIR/test."""
    from tasks.pan.folders import read_classic_corpus

    corpus = extract_corpora(tmp_path / "raw", (PAN15,))[PAN15]
    problems = read_classic_corpus(corpus)[0]
    train, test = grouped_split(problem_groups(problems), 0.5, seed=0)
    assert shared_texts([problems[i] for i in train], [problems[i] for i in test]) == 0
    data = tmp_path / "data"
    write_subset(corpus, data / "train", [problems[i].id for i in train])
    write_subset(corpus, data / "test", [problems[i].id for i in test])
    return data


def run_and_predict(system: str, data: Path, tmp_path: Path, params: dict | None = None) -> dict[str, float]:
    """`harness run` on DIR/train -> DIR/test, then `harness predict` from its checkpoint, which must give the
    same answers file byte for byte; returns the run's scores (their AUC checked against the answers)."""
    runner = CliRunner()
    args = ["run", "--system", system, "--task", "pan-classic", "--data", str(data), "--out", str(tmp_path / "runs")]
    for key, value in (params or {}).items():
        args += ["--param", f"{key}={json.dumps(value)}"]
    result = runner.invoke(main, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    runs = tmp_path / "runs" / "pan-classic" / data.name
    (run_dir,) = runs.glob(f"{system}*/seed-0")  # system@<params hash> with params
    scores = json.loads((run_dir / "result.json").read_text(encoding="utf-8"))["scores"]
    answers = [json.loads(line) for line in (run_dir / "answers.jsonl").read_text(encoding="utf-8").splitlines()]
    truth = dict(line.split() for line in (data / "test" / "truth.txt").read_text(encoding="utf-8").splitlines())
    labels = np.array([truth[a["id"]] == "Y" for a in answers])
    assert auc(labels, np.array([a["value"] for a in answers])) == pytest.approx(scores["auc"])

    args = ["predict", "--system", system, "--task", "pan-classic", "--input", str(data / "test")]
    args += ["--output", str(tmp_path / "tira"), "--checkpoint", str(run_dir / "checkpoint")]
    result = runner.invoke(main, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert (tmp_path / "tira" / "answers.jsonl").read_bytes() == (run_dir / "answers.jsonl").read_bytes()
    return scores
