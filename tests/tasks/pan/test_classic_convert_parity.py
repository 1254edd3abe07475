"""`pan-classic` on a PAN 2013-2015 corpus and `pan23` on its `harness convert` output give the same answers.

On the real PAN14 English essays (train 200, test 200 problems; most have 2-5 known texts, and problems
share known texts). Before the converter kept each known text's span, the pan23 path saw one joined known
text per problem: cngdist's idf came from other documents, its cross-fitting folds from other groups
(190 instead of 159 text-disjoint groups), and every one of the 200 answers moved (by up to 0.058).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers.pan_corpora import extract_corpora

from harness.cli import main

TRAIN = "pan14-author-verification-training-corpus-english-essays-2014-04-22"
TEST = "pan14-author-verification-test-corpus2-english-essays-2014-04-22"


@pytest.fixture(scope="module")
def essays(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(pan-classic data folder, pan23 data folder converted from it) for the PAN14 essays."""
    root = tmp_path_factory.mktemp("essays")
    corpora = extract_corpora(root / "raw", (TRAIN, TEST))
    classic, converted = root / "classic", root / "jsonl"
    classic.mkdir()
    for split, corpus in (("train", TRAIN), ("test", TEST)):
        (classic / split).symlink_to(corpora[corpus], target_is_directory=True)
        result = CliRunner().invoke(main, ["convert", str(classic / split), str(converted / split)])
        assert result.exit_code == 0, result.output
    return classic, converted


def run(system: str, task: str, data: Path, out: Path) -> tuple[bytes, dict[str, float]]:
    """`harness run` of `system` on `data`: its answers.jsonl bytes and its scores."""
    args = ["run", "--system", system, "--task", task, "--data", str(data), "--out", str(out)]
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    (answers,) = out.rglob("answers.jsonl")
    scores = json.loads((answers.parent / "result.json").read_text(encoding="utf-8"))["scores"]
    return answers.read_bytes(), scores


@pytest.mark.parametrize("system", ["length_ratio", "cngdist"])
def test_same_answers_on_the_corpus_and_its_conversion(essays: tuple[Path, Path], tmp_path: Path, system: str) -> None:
    classic, converted = essays
    classic_answers, classic_scores = run(system, "pan-classic", classic, tmp_path / "classic")
    pan23_answers, pan23_scores = run(system, "pan23", converted, tmp_path / "pan23")
    assert pan23_answers == classic_answers  # byte for byte: every value to its last digit
    assert len(classic_answers.splitlines()) == 200
    assert pan23_scores == {name: classic_scores[name] for name in pan23_scores}


def test_without_the_spans_the_answers_move(essays: tuple[Path, Path], tmp_path: Path) -> None:
    """The control: the same pairs as PAN 2020-2023 tools read them (known texts joined, no spans)."""
    classic, converted = essays
    joined = tmp_path / "joined"
    for split in ("train", "test"):
        (joined / split).mkdir(parents=True)
        rows = [
            json.loads(line) for line in (converted / split / "pairs.jsonl").read_text(encoding="utf-8").splitlines()
        ]
        assert sum(len(row.pop("known_spans")) > 1 for row in rows) > 100  # most problems have several known texts
        lines = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
        (joined / split / "pairs.jsonl").write_text(lines, encoding="utf-8")
        (joined / split / "truth.jsonl").write_bytes((converted / split / "truth.jsonl").read_bytes())
    classic_answers, _ = run("length_ratio", "pan-classic", classic, tmp_path / "classic")
    joined_answers, _ = run("length_ratio", "pan23", joined, tmp_path / "pan23")
    values = [
        [json.loads(line)["value"] for line in answers.splitlines()] for answers in (classic_answers, joined_answers)
    ]
    assert sum(a != b for a, b in zip(*values, strict=True)) > 100
