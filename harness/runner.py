"""`harness run`: fit a system on a task's train split, answer the test split, score, record.

A run's folder holds `result.json` (scores and provenance), `answers.jsonl` (PAN format, one
answer per test problem) and `checkpoint/` (the fitted system). A finished run is kept, not
recomputed; a run that crashed after fitting resumes from its checkpoint.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import logging
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, NamedTuple

from harness import registry
from harness.errors import HarnessError
from harness.files import atomic_write, sha256_files, write_json, write_jsonl
from harness.progress import duration
from harness.provenance import environment
from harness.seeding import seed_everything

logger = logging.getLogger("harness")

RESULT_SCHEMA_VERSION = 1
RESULT_NAME = "result.json"
ANSWERS_NAME = "answers.jsonl"
CHECKPOINT_NAME = "checkpoint"
FIT_FINGERPRINT_NAME = "checkpoint.fingerprint"


class RunOutcome(NamedTuple):
    run_dir: Path
    result: dict[str, Any]
    reused: bool  # True when an existing result was kept instead of recomputed


def make_system(system_name: str, params: dict[str, Any]) -> Any:
    """Build a registered system from named constructor parameters, rejecting unknown names."""
    cls = registry.system_class(system_name)
    accepted = inspect.signature(cls).parameters
    unknown = sorted(set(params) - set(accepted))
    if unknown:
        takes = ", ".join(accepted) or "none"
        raise HarnessError(f"system {system_name!r} has no parameter(s) {', '.join(unknown)}; it takes: {takes}")
    return cls(**params)


def run_folder(out_dir: Path, task_name: str, system_name: str, seed: int, params: dict[str, Any]) -> Path:
    """`<out>/<task>/<system>[@<params hash>]/seed-<seed>`: runs with other parameters never collide."""
    label = system_name
    if params:
        label += "@" + _digest(params)[:8]
    return Path(out_dir) / task_name / label / f"seed-{seed}"


def _digest(obj: Any) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode("utf-8")).hexdigest()


def run(
    *,
    system_name: str,
    task_name: str,
    data_dir: Path,
    seed: int = 0,
    out_dir: Path = Path("runs"),
    params: dict[str, Any] | None = None,
    overwrite: bool = False,
) -> RunOutcome:
    """Fit, predict, score and write one run; keep an existing identical run unless `overwrite`."""
    params = dict(params or {})
    started = time.perf_counter()
    timings: dict[str, float] = {}
    task = registry.task_class(task_name)()
    meta = task.metadata
    system = make_system(system_name, params)
    run_dir = run_folder(out_dir, task_name, system_name, seed, params)

    with duration("load", timings):
        train = task.load(Path(data_dir), "train")
        test = task.load(Path(data_dir), "test")

    fit_key = {
        "task": [meta.name, meta.version],
        "train": train.checksum,
        "system": system_name,
        "params": system.params(),
        "seed": seed,
    }
    run_key = {**fit_key, "test": test.checksum}
    fingerprint = "sha256:" + _digest(run_key)

    result_path = run_dir / RESULT_NAME
    if result_path.exists() and not overwrite:
        earlier = _read_result(result_path)
        if earlier.get("fingerprint") == fingerprint:
            logger.info("kept the existing result %s (pass --overwrite to recompute)", result_path)
            return RunOutcome(run_dir, earlier, reused=True)
        raise HarnessError(
            f"{result_path} holds a run on other data or parameters; pass --overwrite to replace it, "
            "or choose another --out"
        )

    seed_everything(seed)
    checkpoint_dir = run_dir / CHECKPOINT_NAME
    fit_fingerprint = "sha256:" + _digest(fit_key)
    fingerprint_path = run_dir / FIT_FINGERPRINT_NAME
    resumable = (
        not overwrite
        and fingerprint_path.is_file()
        and fingerprint_path.read_text(encoding="utf-8").strip() == fit_fingerprint
    )
    if resumable:
        logger.info("resuming from the fitted checkpoint %s", checkpoint_dir)
        system = type(system).load(checkpoint_dir)
        timings["fit"] = 0.0
    else:
        with duration("fit", timings):
            system.fit(train, seed=seed)
        system.save(checkpoint_dir)
        with atomic_write(fingerprint_path) as handle:
            handle.write(fit_fingerprint + "\n")

    with duration("predict", timings):
        answers = system.predict(test.problems)
    _check_answers(answers, test)
    write_jsonl(run_dir / ANSWERS_NAME, ({"id": a.id, "value": a.value} for a in answers))

    with duration("score", timings):
        scores = task.score(answers, test)
    timings["total"] = round(time.perf_counter() - started, 6)

    result = {
        "schema_version": RESULT_SCHEMA_VERSION,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "command": sys.argv,
        "fingerprint": fingerprint,
        "task": {
            "name": meta.name,
            "version": meta.version,
            "kind": meta.kind,
            "main_score": meta.main_score,
            "evaluator": meta.evaluator,
            "data": {
                "dir": str(Path(data_dir).resolve()),
                "train": {"checksum": train.checksum, "problems": len(train.problems)},
                "test": {"checksum": test.checksum, "problems": len(test.problems)},
            },
        },
        "system": {
            "name": system_name,
            "class": f"{type(system).__module__}:{type(system).__qualname__}",
            "params": system.params(),
            "checkpoint": {"path": CHECKPOINT_NAME, "checksum": _checkpoint_checksum(checkpoint_dir)},
        },
        "seeds": {"seed": seed},
        "scores": scores,
        "main_score": {"name": meta.main_score, "value": scores[meta.main_score]},
        "answers": {"path": ANSWERS_NAME, "count": len(answers)},
        "timings_s": timings,
        "environment": environment(),
    }
    write_json(result_path, result)  # written last: its presence marks a finished run
    return RunOutcome(run_dir, result, reused=False)


def _check_answers(answers: list[Any], test: Any) -> None:
    """A system must answer each test problem once, in [0, 1]; anything else is a system bug."""
    expected = [p.id for p in test.problems]
    got = [a.id for a in answers]
    if got != expected:
        raise HarnessError(f"the system returned {len(got)} answers for {len(expected)} problems, or out of order")
    bad = [a for a in answers if not (0.0 <= a.value <= 1.0)]
    if bad:
        raise HarnessError(f"the system returned {len(bad)} answers outside [0, 1], e.g. {bad[0]}")


def _checkpoint_checksum(checkpoint_dir: Path) -> str | None:
    files = [p for p in Path(checkpoint_dir).rglob("*") if p.is_file()]
    return sha256_files(files, root=checkpoint_dir) if files else None


def _read_result(path: Path) -> dict[str, Any]:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise HarnessError(f"{path}: cannot read the earlier result ({exc}); pass --overwrite to replace it") from None
