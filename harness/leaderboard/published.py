"""Published results as reference rows: a task's `TaskMetadata.published` table, matched by task and corpus.

They follow a table's rows, marked "published": never ranked, bolded, resampled or tested.
"""

from __future__ import annotations

import csv
import fnmatch
import importlib.resources
import io
from collections.abc import Sequence

from core.errors import HarnessError
from harness.leaderboard.table import Row


def published_rows(task_name: str, corpus: str | None, measures: Sequence[str]) -> list[Row]:
    """Reference rows for a table: the task's published results whose corpus glob matches `corpus`.

    The task's metadata names its table (`TaskMetadata.published`, "package:file.csv"); a task not in
    the registry, a task without a table, or a run that recorded no corpus gets none.
    """
    if corpus is None:
        return []
    from harness import registry

    try:
        metadata = registry.task_class(task_name).metadata
    except HarnessError:  # a result of a task this harness does not know: no anchors, the table still renders
        return []
    rows = []
    for entry in read_published(metadata.published):
        if entry["task"] != task_name or not fnmatch.fnmatchcase(corpus, entry["corpus"]):
            continue
        mean = {m: float(entry[m]) for m in measures if entry.get(m, "").strip()}
        rows.append(Row(label=entry["system"], runs=[], mean=mean, source=entry["source"]))
    return rows


def read_published(reference: str) -> list[dict[str, str]]:
    """The rows of a published-results table ("package:file.csv"); [] for ""; a HarnessError naming a bad one."""
    if not reference:
        return []
    package, _, name = reference.partition(":")
    try:
        text = importlib.resources.files(package).joinpath(name).read_text(encoding="utf-8")
    except (ModuleNotFoundError, FileNotFoundError, NotADirectoryError) as error:
        raise HarnessError(f"published results {reference!r}: cannot be read ({error})") from error
    rows = list(csv.DictReader(io.StringIO(text)))
    required = {"task", "corpus", "system", "source"}
    for line, row in enumerate(rows, start=2):
        missing = sorted(key for key in required if not (row.get(key) or "").strip())
        if missing:
            raise HarnessError(f"published results {reference}: line {line} has no {', '.join(missing)}")
        for key, value in row.items():
            if key in required or not (value or "").strip():
                continue
            try:
                float(value)
            except ValueError:
                raise HarnessError(
                    f"published results {reference}: line {line}, {key}: not a number: {value!r}"
                ) from None
    return rows
