"""benchmarks/verification_pan.py builds its corpora as promised: PAN15 folds text-disjoint, PAN13 loadable."""

from __future__ import annotations

import tarfile
from pathlib import Path
from typing import Any

import pytest
from helpers.benchmark_script import load_benchmark

from tasks.pan.classic import PanClassicTask
from toolkit.splits import shared_texts


def _script() -> Any:
    return load_benchmark("verification_pan")


@pytest.fixture(scope="module")
def extracted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from helpers.paths import SHARED_DATA

    root = tmp_path_factory.mktemp("verification-pan") / "extracted"
    for name in ("pan13-15-av-en.tar.gz", "pan13-av-en.tar.gz"):
        if not (SHARED_DATA / name).is_file():
            pytest.skip(f"{name} not found in {SHARED_DATA} (set HARNESS_SHARED_DATA)")
        with tarfile.open(SHARED_DATA / name) as archive:
            archive.extractall(root / name.split(".")[0], filter="data")
    return root


def test_pan15_folds_hold_every_problem_once_and_share_no_text(extracted: Path, tmp_path: Path) -> None:
    task = PanClassicTask()
    folds = _script().prepare("pan15", extracted, tmp_path, 5, 0)
    assert len(folds) == 5
    held: list[str] = []
    for folder in folds:
        train, test = task.load(folder, "train"), task.load(folder, "test")
        assert shared_texts(train.problems, test.problems) == 0
        assert task.overlap(train, test) == {"shared_texts": 0, "test_problems_sharing_a_text": 0}
        assert len(train.problems) + len(test.problems) == 100
        assert all(p.discourse_types[0] == "dialogue" for p in test.problems)  # genre still read from the names
        held += [p.id for p in test.problems]
    assert sorted(held) == sorted(set(held)) and len(held) == 100


def test_pan13_keeps_the_english_problems_of_its_truth(extracted: Path, tmp_path: Path) -> None:
    task = PanClassicTask()
    (folder,) = _script().prepare("pan13", extracted, tmp_path, 5, 0)
    train, test = task.load(folder, "train"), task.load(folder, "test")
    assert (len(train.problems), len(test.problems)) == (10, 30)
    assert all(p.id.startswith("EN") and p.discourse_types[0] == "textbook" for p in train.problems + test.problems)


def test_params_are_read_per_system() -> None:
    parse = _script().parse_params
    assert parse(["a:x=3", "a:y=text", 'b:z={"k": 1}']) == {"a": {"x": 3, "y": "text"}, "b": {"z": {"k": 1}}}
    with pytest.raises(SystemExit, match="SYSTEM:KEY=VALUE"):
        parse(["x=3"])
