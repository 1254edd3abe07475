"""benchmarks/thread_sharing.py: test problems touching a training thread found from pair_origins, AUC per part."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from helpers.paths import REPO

from harness.metrics.verification import auc

spec = importlib.util.spec_from_file_location("thread_sharing", REPO / "benchmarks" / "thread_sharing.py")
thread_sharing = importlib.util.module_from_spec(spec)
spec.loader.exec_module(thread_sharing)


def _write(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")


@pytest.fixture
def old_set(tmp_path: Path) -> Path:
    """Two training pairs (threads t1-t4) and six test pairs, three of which have a text from t1 or t3."""
    origins = [
        {"split": "train", "id": "a", "groups": [["t1"], ["t2"]]},
        {"split": "train", "id": "b", "groups": [["t3"], ["t4"]]},
    ]
    tests = [("p1", ["t1", "t5"], True), ("p2", ["t6", "t3"], False), ("p3", ["t7", "t1"], True)]
    tests += [("p4", ["t8", "t9"], True), ("p5", ["t10", "t11"], False), ("p6", ["t12", "t13"], False)]
    origins += [{"split": "test", "id": i, "groups": [[g] for g in groups]} for i, groups, _ in tests]
    _write(tmp_path / "set" / "pair_origins.jsonl", origins)
    _write(tmp_path / "set" / "test" / "truth.jsonl", [{"id": i, "same": same} for i, _, same in tests])
    return tmp_path / "set"


def test_touching_training_threads_read_from_pair_origins(old_set):
    touching = thread_sharing.touching_training_threads(old_set)
    assert touching == {"p1": True, "p2": True, "p3": True, "p4": False, "p5": False, "p6": False}


def test_each_part_gets_the_auc_of_its_own_problems(old_set, tmp_path):
    values = {"p1": 0.9, "p2": 0.2, "p3": 0.1, "p4": 0.3, "p5": 0.6, "p6": 0.4}
    _write(tmp_path / "answers.jsonl", [{"id": i, "value": v} for i, v in values.items()])
    parts = thread_sharing.split_aucs(old_set, tmp_path / "answers.jsonl")
    assert parts[True] == (3, auc([True, False, True], [0.9, 0.2, 0.1]))
    assert parts[False] == (3, auc([True, False, False], [0.3, 0.6, 0.4]))
    assert parts[True][1] == 0.5 and parts[False][1] == 0.0  # the parts differ: a mixed-up split would not
