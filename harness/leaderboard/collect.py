"""Finding the runs a leaderboard shows: result files under folders, each run counted once.

A run is identified by its content (task name, version and parameters, data checksums, system name and
parameters, seed, and the fingerprint the harness recorded from these), never by where its file lies: a
result file given twice, or a copied run folder, is counted once, with a warning and a note. Runs of
different test data are never put in one table (`test_data_groups`: one table per dataset), and runs of
different task versions never in one leaderboard.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from core.errors import HarnessError
from core.files import paths_under
from harness.results import RESULT_NAME
from harness.run_result import RunResult, read_run_result

MAX_LISTED = 3  # paths named in one note before "and N more"

logger = logging.getLogger("harness")


@dataclass(frozen=True)
class Run:
    result: RunResult
    copies: tuple[Path, ...] = ()  # other result files that hold this same run (see `identity`), counted once

    @property
    def path(self) -> Path:
        return self.result.path

    @property
    def seed(self) -> int:
        return -1 if self.result.seed is None else self.result.seed

    @property
    def identity(self) -> str:
        """What makes this run this run: its task (name, version, parameters), data checksums, system (name,
        parameters, answers file), seed and recorded fingerprint; never its path, so a copy has the same identity.

        A result without a fingerprint (an older or hand-made file) also counts its scores and creation time,
        so that only exact copies of it are taken for the same run.
        """
        result = self.result
        key: dict[str, Any] = {
            "task": [result.task_name, result.task_version, result.task_params],
            "data": result.data_checksums,
            "system": [result.system_name, result.system_params, result.answers_checksum],
            "seed": result.seed,
            "fingerprint": result.fingerprint,
        }
        if not result.fingerprint:
            key |= {"scores": result.scores, "created": result.created}
        return hashlib.sha256(json.dumps(key, sort_keys=True, default=str).encode("utf-8")).hexdigest()


def find_runs(paths: Iterable[Path]) -> list[Run]:
    """Every result.json in the given folders (recursively) or given as files, each run once (see `unique_runs`).

    A file reached twice (the same folder given twice, or a folder and a file inside it) is read once.
    """
    paths = list(paths)
    runs = []
    seen: set[Path] = set()
    repeated: list[Path] = []
    for path in paths:
        path = Path(path)
        if path.is_file():
            files = [path]
        elif path.is_dir():
            files = paths_under(path, RESULT_NAME)  # runs behind a linked folder too
        else:
            raise HarnessError(f"{path}: no such file or folder")
        for file in files:
            real = file.resolve()
            if real in seen:
                repeated.append(file)
                continue
            seen.add(real)
            runs.append(Run(read_run_result(file)))
    if not runs:
        raise HarnessError(f"no {RESULT_NAME} found under {', '.join(str(p) for p in paths)}")
    if repeated:
        logger.warning(
            "%d result file(s) were given more than once (%s); each is counted once", len(repeated), listed(repeated)
        )
    return unique_runs(runs)


def unique_runs(runs: Iterable[Run]) -> list[Run]:
    """The runs with copies of one run (same `Run.identity`) merged into one, which lists the others as `copies`;
    each copy is logged as a warning, and the tables note it. Copies whose recorded scores disagree are refused (which
    file came first would choose the table's number); the copy kept is the one holding more measures (one a later
    version added: per-type-pair scores of a record), else the first. Running it twice changes nothing."""
    kept: dict[str, Run] = {}
    for run in runs:
        identity = run.identity
        first = kept.get(identity)
        if first is None:
            kept[identity] = run
            continue
        if run.path.resolve() == first.path.resolve():  # the same file again, not a copy
            logger.warning("%s was given more than once; counted once", run.path)
            continue
        differ = _score_differences(first, run)
        if differ:  # which file is given first would choose the table's number (audit 23, F1)
            why = (
                "one was edited, or scored by another harness version: record the answers again with `harness score "
                "--record ... --overwrite`"
                if run.result.answers_checksum is not None  # records name their answers file's checksum
                else "a rerun on another machine, device or harness version, or an edited file"
            )
            raise HarnessError(
                f"{first.path} and {run.path} are one run (same task, data, system, parameters and seed) with "
                f"different scores ({differ}): {why}. A row takes one result a seed: leave one out of the folders "
                "given"
            )
        logger.warning(
            "%s holds the same run as %s (same task, data, system, params and seed); counted once",
            run.path,
            first.path,
        )
        kept_run, other = (run, first) if len(run.result.scores) > len(first.result.scores) else (first, run)
        kept[identity] = replace(kept_run, copies=(*kept_run.copies, other.path, *other.copies))
    return list(kept.values())


def test_data_groups(runs: Sequence[Run]) -> list[list[Run]]:
    """The runs in groups that all pairwise share task version and test data (`same_test_data`), in order found.

    A record (`harness score --record`) knows only its truth, which two test sets may share (texts edited, the same
    truth): it joins the group of its own dataset name where there is one (audit 13: it joined whichever came
    first), else the first, with a warning naming the others."""
    groups: list[list[Run]] = []
    records = [run for run in runs if run.result.test_truth_only]
    for run in [run for run in runs if not run.result.test_truth_only] + records:  # runs first, then records
        fits = [g for g in groups if all(same_test_data(run.result, other.result) for other in g)]
        named = [g for g in fits if any(other.result.dataset == run.result.dataset for other in g)]
        if not fits:
            groups.append([run])
            continue
        if len(fits) > 1 and not named:
            logger.warning(
                "%s: its truth is that of %d test sets (%s); it is listed with the first: record it from the truth "
                "in its own test set's folder to place it",
                run.path, len(fits), ", ".join(sorted({g[0].result.dataset for g in fits})),
            )  # fmt: skip
        (named or fits)[0].append(run)
    return groups


def refuse_two_versions(task_name: str, groups: Sequence[Sequence[Run]]) -> None:
    """A HarnessError naming the runs of each group (`test_data_groups`) where the groups hold two task versions: a
    table, or a leaderboard, compares one version of a task."""
    if len({group[0].result.task_version for group in groups}) < 2:
        return
    lines = [
        f"  version {group[0].result.task_version}, {_test_data_label(group[0].result)}: "
        + ", ".join(str(run.path) for run in group[:3])
        + (f" and {len(group) - 3} more" if len(group) > 3 else "")
        for group in groups
    ]
    raise HarnessError(
        f"task {task_name}: the runs differ in task version (a table compares one version of a task) and cannot "
        "share a table:\n" + "\n".join(lines)
    )


def same_test_data(a: RunResult, b: RunResult) -> bool:
    """Whether two results are of one task version and were scored on the same test data.

    The test data's identity is its truth's checksum (`task.data.test.truth_checksum`, core.records.truth_checksum),
    which a run (`harness run`, from the test folder) and a recorded answers file (`harness score --record`, from
    the truth file) both record: so a PAN submission stands beside runs on the same test data. Two runs (neither
    recorded from a truth file alone) must also agree on the checksum of the test files they read, so runs on the
    same truth but other problems (texts changed, say) never share a table. A result written before the truth
    checksum was recorded is compared as then: by the checksum of its test files ("?" where it has none).
    """
    if a.task_version != b.task_version:
        return False
    a_files, b_files = a.data_checksums.get("test") or "?", b.data_checksums.get("test") or "?"
    if a.test_truth_checksum and b.test_truth_checksum:
        if a.test_truth_checksum != b.test_truth_checksum:
            return False
        return a.test_truth_only or b.test_truth_only or a_files == b_files
    return a_files == b_files


def _test_data_label(result: RunResult) -> str:
    """How a refusal names a result's test data: its truth checksum, and the checksum of its files for a run."""
    files = result.data_checksums.get("test") or "?"
    if not result.test_truth_checksum:
        return f"test data {files[:23]}..."
    truth = f"test truth {result.test_truth_checksum[:23]}..."
    return truth + ("" if result.test_truth_only else f", files {files[:23]}...")


def listed(paths: Sequence[Path]) -> str:
    """Up to MAX_LISTED paths, then "and N more"."""
    text = ", ".join(str(path) for path in paths[:MAX_LISTED])
    return text + (f" and {len(paths) - MAX_LISTED} more" if len(paths) > MAX_LISTED else "")


def _score_differences(first: Run, other: Run) -> str:
    """ "measure a vs b, ..." for the scores two copies of one run both hold and disagree in; "" if none. A measure
    only one holds (added by a later harness version) is no disagreement."""
    ours, theirs = first.result.scores, other.result.scores
    differ = [
        f"{name} {ours[name]!r} vs {theirs[name]!r}"
        for name in sorted(set(ours) & set(theirs))
        if not _same_number(ours[name], theirs[name])
    ]
    return ", ".join(differ)


def _same_number(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return a == b
