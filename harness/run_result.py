"""One finished run as a typed record: what the leaderboard, plots and report read from a result.json.

`read_run_result` reads a result file (harness.results.read_result) and checks the fields those readers
rely on: the task's name, version and main score, the system's name and the scores are required; every
other field may be missing (result files written by older harness versions, or by hand) and then takes
an empty default. A field of the wrong type is refused in one line naming the file and the field.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

from core.errors import HarnessError
from harness.data_location import recorded_name
from harness.results import DETAILS_NAME, check_details, read_details, read_result

logger = logging.getLogger("harness")
_UNCHECKED_WARNED: set[Path] = set()  # results whose unchecked details were warned about


@dataclass(frozen=True)
class RunResult:
    """A result file's fields, typed; `raw` is the file as read, for what shows provenance verbatim."""

    path: Path  # the result.json
    task_name: str
    task_version: str
    task_kind: str | None
    task_params: Mapping[str, Any]
    main_score: str
    measures: tuple[str, ...]  # as the task declared them; () in hand-made files: the scores' names stand in
    recorded_lower_is_better: tuple[str, ...]  # the directions older result files recorded
    plot_parameters: tuple[str, ...]  # what `harness plot` draws the main score against
    evaluator: str | None
    measure_settings: Mapping[str, Any]
    data_checksums: Mapping[str, str | None]  # split -> checksum of its files (older results: the data's identity)
    test_truth_checksum: str | None  # the test truth's identity (core.records.truth_checksum); None in older results
    test_truth_only: bool  # recorded from a truth file alone (`harness score --record`): no checksum of the problems
    test_corpus: str | None  # the test split's folder name, which published results name
    dataset: str  # the dataset's display name (harness.data_location): from the recorded folders in older files, ""
    # in hand-made ones
    format_sample: bool  # the project's format sample, not real data
    system_name: str
    system_params: Mapping[str, Any]
    answers_checksum: str | None  # a result recorded from an answers file made elsewhere
    seed: int | None
    scores: Mapping[str, Any]  # as recorded: a hand-edited file may hold null or NaN
    details_count: int | None
    details_checksum: str | None  # of details.jsonl, as written; None in results written before it was recorded
    curves: Mapping[str, Any]
    fingerprint: str | None
    created: str | None
    environment: Mapping[str, Any]  # versions, git commit, device (harness.provenance.environment)
    raw: Mapping[str, Any]

    @property
    def folder(self) -> Path:
        """The run folder: where result.json, details.jsonl and the checkpoint lie."""
        return self.path.parent

    def details(self) -> list[dict[str, Any]]:
        """The run's per-item rows (details.jsonl), checked against the checksum its result recorded.

        A details file that differs from it is refused in one line naming the file (harness.results.read_details).
        Results written before the checksum was recorded (no `details.checksum`) are still read, unchecked, with a
        warning (once per file).
        """
        if self.details_checksum is None and self.path not in _UNCHECKED_WARNED:
            _UNCHECKED_WARNED.add(self.path)
            logger.warning(
                "%s records no checksum of its %s (written before checksums were recorded); read unchecked",
                self.path,
                DETAILS_NAME,
            )
        return read_details(self.path, self.details_checksum)

    def check_details(self) -> None:
        """Refuse (one line naming it) a details.jsonl that differs from the checksum recorded; unread otherwise.

        For commands that write several files from the details: they check every run before writing the first.
        """
        if self.details_checksum is not None:
            check_details(self.path, self.details_checksum)

    def score(self, name: str) -> float:
        """A score as a float; NaN where it is missing, null or not a number (never a crash on a hand-edited file)."""
        value = self.scores.get(name)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        return math.nan


def read_run_result(path: Path) -> RunResult:
    """Read and check one result.json (see the module's docstring)."""
    path = Path(path)
    return as_run_result(path, read_result(path))


def as_run_result(path: Path, raw: Mapping[str, Any]) -> RunResult:
    """The typed record of a result already read as a dict (`raw`), checked as `read_run_result` checks it."""
    fields = _Fields(path, raw)
    task, system = fields.section("task"), fields.section("system")
    data = fields.section("task", "data")
    splits = {split: part for split, part in data.items() if isinstance(part, dict)}
    return RunResult(
        path=Path(path),
        task_name=fields.text(task, "task", "name"),
        task_version=fields.text(task, "task", "version"),
        task_kind=fields.optional(task, "task", "kind", str),
        task_params=fields.section("task", "params"),
        main_score=fields.text(task, "task", "main_score"),
        measures=fields.names(task, "task", "measures"),
        recorded_lower_is_better=fields.names(task, "task", "lower_is_better"),
        plot_parameters=fields.names(task, "task", "plot_parameters"),
        evaluator=fields.optional(task, "task", "evaluator", str),
        measure_settings=fields.section("task", "measure_settings"),
        data_checksums={split: part.get("checksum") for split, part in splits.items()},
        test_truth_checksum=fields.optional(splits.get("test", {}), "task.data.test", "truth_checksum", str),
        test_truth_only=splits.get("test", {}).get("truth_only") is True,
        test_corpus=_text_or_none(splits.get("test", {}).get("corpus")),
        dataset=recorded_name(data) or _text_or_none(splits.get("test", {}).get("corpus")) or "",
        format_sample=data.get("format_sample") is True,
        system_name=fields.text(system, "system", "name"),
        system_params=fields.section("system", "params"),
        answers_checksum=_text_or_none(fields.section("system", "answers").get("checksum")),
        seed=fields.optional(fields.section("seeds"), "seeds", "seed", int),
        scores=fields.section("scores"),
        details_count=fields.optional(fields.section("details"), "details", "count", int),
        details_checksum=fields.optional(fields.section("details"), "details", "checksum", str),
        curves=fields.section("curves"),
        fingerprint=fields.optional(raw, "", "fingerprint", str),
        created=fields.optional(raw, "", "created", str),
        environment=fields.section("environment"),
        raw=raw,
    )


def _text_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None


_KIND_WORDS = {str: "a string", int: "an integer"}


class _Fields:
    """Typed reads of one result's fields, each refused in one line naming the file and the field."""

    def __init__(self, path: Path, raw: Mapping[str, Any]) -> None:
        self.path, self.raw = path, raw

    def section(self, *names: str) -> Mapping[str, Any]:
        """The object at `names` (e.g. "task", "data"); {} where it is missing or null."""
        value: Any = self.raw
        for depth, name in enumerate(names):
            value = value.get(name)
            if value is None:
                return {}
            if not isinstance(value, dict):
                self._refuse(".".join(names[: depth + 1]), "an object", value)
        return value

    def text(self, section: Mapping[str, Any], where: str, name: str) -> str:
        value = section.get(name)
        if not isinstance(value, str) or not value:
            self._refuse(f"{where}.{name}", "a non-empty string", value)
        return value

    def optional(self, section: Mapping[str, Any], where: str, name: str, kind: type) -> Any:
        value = section.get(name)
        if value is not None and (not isinstance(value, kind) or isinstance(value, bool)):
            self._refuse(f"{where}.{name}".lstrip("."), _KIND_WORDS[kind], value)
        return value

    def names(self, section: Mapping[str, Any], where: str, name: str) -> tuple[str, ...]:
        value = section.get(name) or ()
        if not isinstance(value, (list, tuple)) or not all(isinstance(item, str) for item in value):
            self._refuse(f"{where}.{name}", "a list of names", value)
        return tuple(value)

    def _refuse(self, field: str, kind: str, value: Any) -> NoReturn:
        shown = "missing" if value is None else f"{type(value).__name__} {value!r}"[:80]
        raise HarnessError(f"{self.path}: not a harness result file ({field} must be {kind}, not {shown})")
