"""Result files: one `result.json` per run, with its scores and where they came from.

`harness run` writes them; `harness score --record` writes the same for an answers file made
elsewhere (a PAN submission); `harness leaderboard`, `plot` and `report` read them.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from core.errors import DataError, HarnessError
from core.files import file_sha256, parse_json, read_jsonl, write_json, write_jsonl
from harness.metrics.table import higher_is_better
from harness.provenance import environment
from harness.task import Evaluation, TaskMetadata

RESULT_SCHEMA_VERSION = 1
RESULT_NAME = "result.json"
DETAILS_NAME = "details.jsonl"


def task_record(
    meta: TaskMetadata, params: dict[str, Any], evaluation: Evaluation, data: dict[str, Any]
) -> dict[str, Any]:
    """The `task` section: what was measured, how, and on which data (by checksum)."""
    return {
        "name": meta.name,
        "version": meta.version,
        "kind": meta.kind,
        "main_score": meta.main_score,
        "measures": list(meta.measures),
        "lower_is_better": [m for m in meta.measures if not higher_is_better(m)],
        "evaluator": meta.evaluator,
        "plot_parameters": list(meta.plot_parameters),  # what `harness plot` draws the main score against
        "params": params,
        "measure_settings": evaluation.settings,
        "data": data,
    }


def build_result(
    *,
    task: dict[str, Any],
    system: dict[str, Any],
    seed: int | None,
    evaluation: Evaluation,
    timings: dict[str, float],
    fingerprint: str,
    command: list[str],
) -> dict[str, Any]:
    """A complete result record (schema version RESULT_SCHEMA_VERSION)."""
    main = task["main_score"]
    return {
        "schema_version": RESULT_SCHEMA_VERSION,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "command": command,
        "fingerprint": fingerprint,
        "task": task,
        "system": system,
        "seeds": {"seed": seed},
        "scores": evaluation.scores,
        "main_score": {"name": main, "value": evaluation.scores[main]},
        "details": {"path": DETAILS_NAME, "count": len(evaluation.details)},
        "curves": evaluation.curves,
        "notes": list(evaluation.notes),
        "timings_s": timings,
        "environment": environment(),
    }


def write_result(run_dir: Path, result: dict[str, Any], details: list[dict[str, Any]]) -> None:
    """Write details.jsonl, then result.json last (its presence marks a finished run), recording the details'
    checksum in `result["details"]["checksum"]`."""
    result.setdefault("details", {})["checksum"] = write_details(run_dir, details)
    write_result_file(run_dir, result)


def write_details(run_dir: Path, details: list[dict[str, Any]]) -> str:
    """details.jsonl: the per-problem or per-query rows that confidence intervals resample; returns its checksum,
    for the result's `details.checksum` (`read_details` refuses a details file that no longer matches it)."""
    path = Path(run_dir) / DETAILS_NAME
    write_jsonl(path, details)
    return details_checksum(path)


def details_checksum(path: Path) -> str:
    """The checksum "sha256:<hex>" of a details file's bytes (the hex is what `sha256sum details.jsonl` prints)."""
    return "sha256:" + file_sha256(path)


def write_result_file(run_dir: Path, result: dict[str, Any]) -> None:
    """result.json alone (atomically); write it after everything else of its run."""
    write_json(Path(run_dir) / RESULT_NAME, result)


def read_result(path: Path) -> dict[str, Any]:
    """Read one result.json, checking that it is one."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise HarnessError(f"{path}: cannot read this result file ({exc})") from None
    except UnicodeDecodeError as exc:  # re-encoded or damaged: one line, not a traceback
        raise HarnessError(f"{path}: cannot read this result file (not UTF-8 at byte {exc.start})") from None
    try:
        result = parse_json(text, path)
    except DataError as error:
        where = f", line {error.line}" if error.line else ""
        raise HarnessError(f"{path}: cannot read this result file ({error.message}{where})") from None
    if not isinstance(result, dict) or "schema_version" not in result or "scores" not in result:
        raise HarnessError(f"{path}: not a harness result file (no schema_version/scores)")
    version = result["schema_version"]
    if not isinstance(version, int) or isinstance(version, bool):  # "1" would fail the comparison below
        raise DataError(f"must be an integer, not {version!r}", path=path, field="schema_version")
    if version > RESULT_SCHEMA_VERSION:
        raise HarnessError(f"{path}: result schema {result['schema_version']} is newer than this harness reads")
    return result


def read_details(result_path: Path, checksum: str | None = None) -> list[dict[str, Any]]:
    """The per-problem or per-query rows stored beside a result.

    With `checksum` (the result's `details.checksum`) a details file whose bytes no longer match it (edited or
    replaced after the run) is refused in one line (a DataError) naming it; None reads it unchecked, for results
    written before the checksum was recorded (`harness.run_result.RunResult.details` says so in a warning).
    """
    path = Path(result_path).parent / DETAILS_NAME
    if not path.is_file():
        raise HarnessError(f"{path}: missing; the run's per-item details are needed for this")
    if checksum is not None:
        check_details(result_path, checksum)
    if path.stat().st_size == 0:
        return []
    rows = []
    for line, row in read_jsonl(path):  # a malformed line is a one-line error naming file and line
        _check_details_row(path, line, row)
        rows.append(row)
    return rows


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


# The fields that resampling reads (harness.item_statistics), and what each must hold: a hand-edited row of an older
# run (no checksum) is refused here, by file, line and field, not half way through a bootstrap.
_DETAILS_FIELDS = {
    "value": ("a number", _is_number),
    "score": ("a number", _is_number),
    "same": ("true or false", lambda value: isinstance(value, bool)),
    "rank": ("an integer >= 0", lambda value: isinstance(value, int) and not isinstance(value, bool) and value >= 0),
}


def _check_details_row(path: Path, line: int, row: dict[str, Any]) -> None:
    for name, (kind, holds) in _DETAILS_FIELDS.items():
        if name in row and not holds(row[name]):
            raise DataError(f"must be {kind}, not {json.dumps(row[name])[:40]}", path=path, line=line, field=name)


def check_details(result_path: Path, checksum: str) -> None:
    """A DataError, in one line naming it, where the details.jsonl beside a result is not the one whose `checksum`
    the result recorded (edited or replaced after the run); a missing details file is left to `read_details`."""
    path = Path(result_path).parent / DETAILS_NAME
    if path.is_file() and details_checksum(path) != checksum:
        raise DataError(
            f"its sha256 differs from the one {Path(result_path).name} recorded ({checksum[:23]}...): edited or "
            "replaced after the run; restore it or run again",
            path=path,
        )
