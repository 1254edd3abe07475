"""The order of a training split's lines is not part of the data (audits 16 and 17): `harness run` on the same
pairs.jsonl and truth.jsonl with their lines reversed writes the same answers, byte for byte.

In file order, tfidf's cross-fitting folds were dealt by it (its abstain band moved) and wccn's SVD basis and
whitening followed it (its raw scores moved), on real PAN15 problems in PAN 2023's layout.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from helpers.cli import invoke
from helpers.pan_corpora import pan15_text_disjoint_halves


@pytest.fixture(scope="module")
def two_orders(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """PAN15 English halves converted to pan23 (DIR/train, DIR/test), and a copy whose training lines are reversed."""
    root = tmp_path_factory.mktemp("order")
    halves = pan15_text_disjoint_halves(root)
    as_read = root / "as-read"
    for split in ("train", "test"):
        invoke("convert", halves / split, as_read / split)
    reversed_ = root / "reversed"
    shutil.copytree(as_read, reversed_)
    for name in ("pairs.jsonl", "truth.jsonl"):
        path = reversed_ / "train" / name
        lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
        assert len(lines) > 10 and lines != lines[::-1]
        path.write_text("".join(lines[::-1]), encoding="utf-8")
    return as_read, reversed_


@pytest.mark.parametrize("system", ["tfidf", "wccn"])
def test_reversed_training_lines_give_the_same_answers(system: str, two_orders: tuple[Path, Path], tmp_path: Path):
    answers = []
    for data in two_orders:
        out = tmp_path / data.name
        invoke("run", "--system", system, "--task", "pan23", "--train", data / "train", "--test", data / "test",
               "--name", "pan15-halves", "--out", out)  # fmt: skip
        (found,) = out.rglob("answers.jsonl")
        answers.append(found.read_bytes())
    assert answers[0] == answers[1]
