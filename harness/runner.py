"""`harness run`: fit a system on a task's train split, answer the test split, score, record.

A run's folder holds `result.json` (scores and provenance), `details.jsonl` (one row per scored
problem or query, what confidence intervals resample), `checkpoint/` (the fitted system) and, for
tasks whose evaluation gives answers (verification), `answers.jsonl` (PAN format, one answer per test
problem). A finished run is kept, not recomputed; a run that crashed after fitting resumes from its checkpoint.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import sys
import time
from pathlib import Path
from typing import Any, NamedTuple

from harness import registry
from harness.errors import HarnessError
from harness.files import atomic_write, sha256_files, write_jsonl
from harness.params import build
from harness.progress import duration
from harness.results import RESULT_NAME, build_result, read_result, task_record, write_result
from harness.system import constructor_params
from toolkit.seeding import seed_everything

logger = logging.getLogger("harness")

ANSWERS_NAME = "answers.jsonl"
CHECKPOINT_NAME = "checkpoint"
FIT_FINGERPRINT_NAME = "checkpoint.fingerprint"


class RunOutcome(NamedTuple):
    run_dir: Path
    result: dict[str, Any]
    reused: bool  # True when an existing result was kept instead of recomputed


def _construct(cls: Any, kind: str, name: str, params: dict[str, Any]) -> Any:
    """Build a registered class from named (or dotted, for parts) constructor parameters; unknown names are refused."""
    return build(cls, params, label=f"{kind} {name!r}")


def make_system(system_name: str, params: dict[str, Any]) -> Any:
    return _construct(registry.system_class(system_name), "system", system_name, params)


def make_task(task_name: str, params: dict[str, Any]) -> Any:
    return _construct(registry.task_class(task_name), "task", task_name, params)


def run_folder(
    out_dir: Path,
    task_name: str,
    system_name: str,
    seed: int,
    params: dict[str, Any],
    task_params: dict[str, Any] | None = None,
) -> Path:
    """`<out>/<task>[@<hash>]/<system>[@<hash>]/seed-<seed>`: runs with other parameters never collide."""
    task_label = task_name + ("@" + _digest(task_params)[:8] if task_params else "")
    system_label = system_name + ("@" + _digest(params)[:8] if params else "")
    return Path(out_dir) / task_label / system_label / f"seed-{seed}"


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
    task_params: dict[str, Any] | None = None,
    overwrite: bool = False,
) -> RunOutcome:
    """Fit, predict, score and write one run; keep an existing identical run unless `overwrite`."""
    params = dict(params or {})
    given_task_params = dict(task_params or {})
    started = time.perf_counter()
    timings: dict[str, float] = {}
    task = make_task(task_name, given_task_params)
    task_params = constructor_params(task)  # with defaults: the record names every setting
    meta = task.metadata
    system = make_system(system_name, params)
    run_dir = run_folder(
        out_dir, task_name, system_name, seed, params, {k: v for k, v in task_params.items() if k in given_task_params}
    )

    with duration("load", timings):
        train = task.load(Path(data_dir), "train")
        test = task.load(Path(data_dir), "test")
    overlap = split_overlap(task, train, test)

    fit_key = {
        "task": [meta.name, meta.version, task_params],
        "train": train.checksum,
        "system": system_name,
        "params": system.params(),
        "seed": seed,
    }
    run_key = {**fit_key, "test": test.checksum}
    fingerprint = "sha256:" + _digest(run_key)

    result_path = run_dir / RESULT_NAME
    if result_path.exists() and not overwrite:
        earlier = read_result(result_path)
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
        if not is_main_process():
            # under torchrun every process trains; only the main one writes and evaluates
            return RunOutcome(run_dir, {}, reused=False)
        system.save(checkpoint_dir)
        with atomic_write(fingerprint_path) as handle:
            handle.write(fit_fingerprint + "\n")

    with duration("evaluate", timings):
        evaluation = task.evaluate(system, test)
    if evaluation.answers:
        write_jsonl(run_dir / ANSWERS_NAME, ({"id": a.id, "value": a.value} for a in evaluation.answers))
    timings["total"] = round(time.perf_counter() - started, 6)

    task_section = task_record(
        meta,
        task_params,
        evaluation,
        {
            "dir": str(Path(data_dir).resolve()),
            "train": {"checksum": train.checksum, "size": _size(train)},
            "test": {"checksum": test.checksum, "size": _size(test), **_corpus(test)},
            **overlap,
        },
    )
    system_section = {
        "name": system_name,
        "class": f"{type(system).__module__}:{type(system).__qualname__}",
        "params": system.params(),
        "checkpoint": {"path": CHECKPOINT_NAME, "checksum": _checkpoint_checksum(checkpoint_dir)},
    }
    result = build_result(
        task=task_section,
        system=system_section,
        seed=seed,
        evaluation=evaluation,
        timings=timings,
        fingerprint=fingerprint,
        command=sys.argv,
    )
    write_result(run_dir, result, evaluation.details)
    return RunOutcome(run_dir, result, reused=False)


def split_overlap(task: Any, train: Any, test: Any) -> dict[str, int]:
    """The task's counts of what train and test share (`harness.task.SplitOverlap`), with a warning if any is not 0.

    Tasks without the optional `overlap` method give {}: nothing is claimed either way.
    """
    count = getattr(task, "overlap", None)
    if count is None:
        return {}
    counts = {name: int(value) for name, value in count(train, test).items()}
    shared = {name: value for name, value in counts.items() if value}
    if shared:
        logger.warning(
            "train and test share data (%s): scores on the shared part measure memory, not the task",
            ", ".join(f"{name} = {value}" for name, value in shared.items()),
        )
    return counts


def is_main_process() -> bool:
    """False in the non-zero ranks of a torchrun launch (read from the environment, no torch import)."""
    return int(os.environ.get("RANK", "0")) == 0


def _corpus(data: Any) -> dict[str, str]:
    """`{"corpus": name}`: the folder a split was read from, links resolved (what published results name)."""
    source = getattr(data, "source", None)
    return {"corpus": Path(source).resolve().name} if isinstance(source, (str, Path)) else {}


def _size(data: Any) -> int:
    """How many problems or samples a split holds, for the record."""
    for attribute in ("problems", "samples", "episodes"):
        if hasattr(data, attribute):
            return len(getattr(data, attribute))
    return len(data)


def _checkpoint_checksum(checkpoint_dir: Path) -> str | None:
    files = [p for p in Path(checkpoint_dir).rglob("*") if p.is_file()]
    return sha256_files(files, root=checkpoint_dir) if files else None
