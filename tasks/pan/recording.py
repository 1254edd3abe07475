"""Turn an answers file made elsewhere (e.g. a PAN submission) into a result for the leaderboard."""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from harness.files import sha256_files
from harness.records import NO_ANSWER, VerificationTruth
from harness.results import build_result, task_record, write_result
from harness.task import Evaluation


def record_answers(
    task: Any,
    truth_path: Path,
    truth: Mapping[str, VerificationTruth],
    answers: Mapping[str, float],
    scores: dict[str, float],
    system_name: str,
    record_dir: Path,
    *,
    answers_path: Path,
) -> dict[str, Any]:
    """Write result.json + details.jsonl for scored answers; missing answers are recorded as 0.5."""
    truth_files = sorted(Path(truth_path).glob("truth*")) if Path(truth_path).is_dir() else [Path(truth_path)]
    ids = sorted(truth)  # PAN's evaluator orders problems by id
    details = [{"id": i, "value": answers.get(i, NO_ANSWER), "same": truth[i].same} for i in ids]
    evaluation = Evaluation(scores=scores, details=details)
    data = {"test": {"checksum": sha256_files(truth_files), "size": len(ids), "truth_only": True}}
    answers_checksum = sha256_files([answers_path])
    result = build_result(
        task=task_record(task.metadata, {}, evaluation, data),
        system={"name": system_name, "class": None, "params": {}, "answers": {"checksum": answers_checksum}},
        seed=None,
        evaluation=evaluation,
        timings={},
        fingerprint="sha256:" + hashlib.sha256(json.dumps([data, answers_checksum]).encode()).hexdigest(),
        command=sys.argv,
    )
    write_result(record_dir, result, details)
    return result
