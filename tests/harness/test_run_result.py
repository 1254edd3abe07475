"""The typed record of a result file: defaults for what older or hand-made files lack, one-line refusals."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from core.errors import HarnessError
from harness.results import RESULT_SCHEMA_VERSION
from harness.run_result import read_run_result

MINIMAL = {
    "schema_version": RESULT_SCHEMA_VERSION,
    "task": {"name": "ranks", "version": "1", "main_score": "mrr"},
    "system": {"name": "a"},
    "scores": {"mrr": 0.5, "eer": None},
}


def written(tmp_path: Path, result: dict) -> Path:
    path = tmp_path / "seed-0" / "result.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result), encoding="utf-8")
    return path


def test_a_hand_made_result_reads_with_empty_defaults(tmp_path: Path) -> None:
    record = read_run_result(written(tmp_path, MINIMAL))
    assert (record.task_name, record.task_version, record.main_score, record.system_name) == ("ranks", "1", "mrr", "a")
    assert record.folder == tmp_path / "seed-0" and record.raw == MINIMAL
    assert record.seed is None and record.measures == () and record.data_checksums == {} and not record.format_sample
    assert record.score("mrr") == 0.5 and math.isnan(record.score("eer")) and math.isnan(record.score("absent"))


@pytest.mark.parametrize(
    ("edit", "field"),
    [
        (lambda r: r["task"].pop("version"), "task.version must be a non-empty string, not missing"),
        (lambda r: r.update(system=["a"]), "system must be an object"),
        (lambda r: r.update(seeds={"seed": "0"}), "seeds.seed must be an integer"),
        (lambda r: r["task"].update(measures="mrr"), "task.measures must be a list of names"),
    ],
)
def test_a_malformed_field_is_refused_naming_the_file_and_the_field(tmp_path: Path, edit, field: str) -> None:
    result = json.loads(json.dumps(MINIMAL))
    edit(result)
    path = written(tmp_path, result)
    with pytest.raises(HarnessError, match=f"^{path}: not a harness result file \\({field}"):
        read_run_result(path)
