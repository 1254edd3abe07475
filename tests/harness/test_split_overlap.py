"""`harness run` counts the texts a train and a test split share, records them and warns when there are any."""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

import pytest
from helpers.paths import REPO

from harness import runner
from harness.task import SplitOverlap
from tasks.pan.pan23 import Pan23Task

SAMPLE = REPO / "samples" / "pan23-format-sample"


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _write_rows(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")


def _run(data: Path, out: Path) -> dict:
    outcome = runner.run(system_name="length_ratio", task_name="pan23", data=data, out_dir=out)
    return outcome.result


def test_pan_tasks_count_overlap_and_other_tasks_need_not() -> None:
    from harness import registry

    for name in ("pan23", "pan20", "pan-classic"):
        assert isinstance(registry.task_class(name)(), SplitOverlap)
    assert not isinstance(registry.task_class("reddit")(), SplitOverlap)  # optional: the runner skips it


def test_a_run_on_disjoint_splits_records_zero_and_does_not_warn(tmp_path: Path, caplog: pytest.LogCaptureFixture):
    with caplog.at_level(logging.WARNING, logger="harness"):
        result = _run(SAMPLE, tmp_path / "runs")
    assert result["task"]["data"]["shared_texts"] == 0
    assert result["task"]["data"]["test_problems_sharing_a_text"] == 0
    assert not [r for r in caplog.records if "share" in r.getMessage()]


def test_a_run_on_a_pair_sharing_a_text_records_the_count_and_warns(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    data = tmp_path / "data"
    shutil.copytree(SAMPLE, data)
    train_text = _rows(data / "train" / "pairs.jsonl")[3]["pair"][1]
    test_rows = _rows(data / "test" / "pairs.jsonl")
    # the same text with other white space and a BOM: equal after normalisation
    test_rows[2]["pair"][0] = "\ufeff  " + train_text.replace(" ", "\n  ", 2) + "\n"
    _write_rows(data / "test" / "pairs.jsonl", test_rows)
    with caplog.at_level(logging.WARNING, logger="harness"):
        result = _run(data, tmp_path / "runs")
    assert result["task"]["data"]["shared_texts"] == 1
    assert result["task"]["data"]["test_problems_sharing_a_text"] == 1
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING and "share" in r.getMessage()]
    assert len(warnings) == 1 and "shared_texts = 1" in warnings[0].getMessage()


def test_overlap_counts_distinct_texts_and_the_test_problems_holding_them(tmp_path: Path) -> None:
    task = Pan23Task()
    data = tmp_path / "data"
    shutil.copytree(SAMPLE, data)
    train_rows = _rows(data / "train" / "pairs.jsonl")
    test_rows = _rows(data / "test" / "pairs.jsonl")
    test_rows[0]["pair"] = [train_rows[0]["pair"][0], train_rows[1]["pair"][1]]  # two shared texts, one problem
    test_rows[1]["pair"][1] = train_rows[0]["pair"][0]  # the first again: still two texts, now two problems
    _write_rows(data / "test" / "pairs.jsonl", test_rows)
    counts = task.overlap(task.load(data, "train"), task.load(data, "test"))
    assert counts == {"shared_texts": 2, "test_problems_sharing_a_text": 2}


def test_a_task_without_overlap_records_nothing() -> None:
    class NoOverlap:
        pass

    assert runner.split_overlap(NoOverlap(), object(), object()) == {}
