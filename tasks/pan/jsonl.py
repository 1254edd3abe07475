"""PAN 2020-2023 verification data: pairs.jsonl + truth.jsonl per split, and the task base that reads them.

Per split folder (plain or .gz):
    pairs.jsonl  {"id": str, "pair": [text1, text2], "discourse_types": [t1, t2] (optional),
                  "known_spans": [[start, end], ...] (optional, not PAN's)}
    truth.jsonl  {"id": str, "same": bool, "authors": [a, b] (optional)}

`known_spans` is what `harness convert` adds to each PAN 2013-2015 problem (1-5 known texts): the
[start, end) character offsets (Python string indices, i.e. Unicode code points) of each known text in
text1. Where it is present the problem is read back as those known texts and the unknown text2, with
text1's discourse type for each known text, so a converted corpus gives systems exactly the problems
`pan-classic` gives them; PAN's own tools ignore the field and read text1 whole.

Bad input is a `DataError` naming the file, the line and the field. Loading never writes anything.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from core.errors import DataError
from core.files import check_text, find_data_file, kind_of, read_jsonl, require_field, sha256_files
from core.records import VerificationData, VerificationProblem, VerificationTruth
from harness.task import TaskMetadata
from tasks.pan.common import PanVerificationTask, check_truth_ids, checked_split_folder

logger = logging.getLogger("harness")


def read_pairs(path: Path, *, allow_empty_texts: bool = False) -> tuple[VerificationProblem, ...]:
    """Read a PAN 2020-2023 pairs file (plain or .gz) into problems, in file order, validating each line.

    An empty text is an error, except with `allow_empty_texts` (TIRA mode, where every problem
    must still get an answer: `harness predict` answers such problems with 0.5).
    """
    path = Path(path)
    problems: list[VerificationProblem] = []
    first_line: dict[str, int] = {}
    for line, obj in read_jsonl(path):
        problem_id = _read_id(obj, path, line, first_line)
        pair = require_field(obj, "pair", list, path, line)
        if len(pair) != 2:
            raise DataError(f"expected 2 texts, got {len(pair)}", path=path, line=line, field="pair")
        texts = []
        for i, text in enumerate(pair):
            if not isinstance(text, str):
                raise DataError(f"expected str, got {type(text).__name__}", path=path, line=line, field=f"pair[{i}]")
            if not text.strip() and not allow_empty_texts:
                raise DataError("text is empty", path=path, line=line, field=f"pair[{i}]")
            texts.append(text)
        types = _read_string_list(obj, "discourse_types", len(texts), path, line, optional=True)
        if obj.get("known_spans") is not None:
            known = _split_known(texts[0], obj["known_spans"], path, line, allow_empty_texts=allow_empty_texts)
            texts = [*known, texts[1]]
            if types is not None:
                types = (types[0],) * len(known) + (types[1],)
        problems.append(VerificationProblem(problem_id, tuple(texts), types))
    return tuple(problems)


def _split_known(joined: str, spans: Any, path: Path, line: int, *, allow_empty_texts: bool) -> list[str]:
    """The known texts that `known_spans` cuts out of pair[0]; bad spans are a DataError naming the field.

    Spans must be in order, not overlap, and leave nothing but white space (the joins) outside them, so a
    wrong span cannot silently drop or repeat part of a text.
    """
    if not isinstance(spans, list) or not spans:
        raise DataError("expected a non-empty list of [start, end]", path=path, line=line, field="known_spans")
    known: list[str] = []
    previous_end = 0
    for i, span in enumerate([*spans, [len(joined), len(joined)]]):  # the sentinel checks the text after the last
        field = f"known_spans[{i}]" if i < len(spans) else "known_spans"
        if not (isinstance(span, list) and len(span) == 2 and all(type(x) is int for x in span)):
            raise DataError(f"expected [start, end] integers, got {span!r}", path=path, line=line, field=field)
        start, end = span
        if not previous_end <= start <= end <= len(joined):
            problem = f"out of order or past the end of pair[0] ({len(joined)} characters)"
            raise DataError(f"span {span} is {problem}", path=path, line=line, field=field)
        if joined[previous_end:start].strip():
            where = f"between characters {previous_end} and {start}"
            raise DataError(f"pair[0] holds text {where} that no span covers", path=path, line=line, field=field)
        if i < len(spans):
            text = joined[start:end]
            if not text.strip() and not allow_empty_texts:
                raise DataError("known text is empty", path=path, line=line, field=field)
            known.append(text)
        previous_end = end
    return known


def read_truth_jsonl(path: Path) -> tuple[dict[str, VerificationTruth], dict[str, int]]:
    """Read a PAN 2020-2023 truth file (plain or .gz): truth by id, and the line each id is on."""
    path = Path(path)
    truth: dict[str, VerificationTruth] = {}
    lines: dict[str, int] = {}
    for line, obj in read_jsonl(path):
        problem_id = _read_id(obj, path, line, lines)
        same = require_field(obj, "same", bool, path, line)
        authors = _read_string_list(obj, "authors", 2, path, line, optional=True)
        if authors is not None and (authors[0] == authors[1]) != same:
            raise DataError(
                f"authors {list(authors)} contradict same={str(same).lower()}", path=path, line=line, field="authors"
            )
        truth[problem_id] = VerificationTruth(problem_id, same, authors)
    return truth, lines


def _read_id(obj: dict[str, Any], path: Path, line: int, first_line: dict[str, int]) -> str:
    """The line's non-empty, not yet seen `id`; records the line it was first seen on."""
    problem_id = require_field(obj, "id", str, path, line)
    if not problem_id.strip():
        raise DataError("empty id", path=path, line=line, field="id")
    if problem_id in first_line:
        raise DataError(
            f"duplicate id {problem_id!r} (first on line {first_line[problem_id]})", path=path, line=line, field="id"
        )
    first_line[problem_id] = line
    return problem_id


def _read_string_list(
    obj: dict[str, Any], field: str, length: int, path: Path, line: int, *, optional: bool
) -> tuple[str, ...] | None:
    """obj[field] as a tuple of `length` non-empty strings; None where optional and absent (or null)."""
    if optional and obj.get(field) is None:
        return None
    values = require_field(obj, field, list, path, line)
    if len(values) != length:
        raise DataError(f"expected {length} entries, got {len(values)}", path=path, line=line, field=field)
    for i, value in enumerate(values):
        if not isinstance(value, str):
            raise DataError(f"expected str, got {kind_of(value)}", path=path, line=line, field=f"{field}[{i}]")
        check_text(value, path, line, f"{field}[{i}]")
        if not value.strip():
            raise DataError("empty string", path=path, line=line, field=f"{field}[{i}]")
    return tuple(values)


def jsonl_metadata(
    name: str,
    *,
    years: str,
    measures: tuple[str, ...],
    mean_of: str,
    citation: str,
    extra: dict[str, Any] | None = None,
) -> TaskMetadata:
    """The metadata of a pairs.jsonl task scored with PAN's `name` evaluator (`overall` = the mean of `mean_of`)."""
    return TaskMetadata(
        name=name,
        version="1",
        kind="verification",
        description=(
            f"PAN {years} authorship verification: pairs.jsonl + truth.jsonl per split; "
            f"scored with the PAN 20{name[3:]} evaluator (overall = mean of {mean_of})"
        ),
        main_score="overall",
        measures=measures,
        evaluator=name,
        citation=citation,
        extra=extra or {},
    )


def _types(value: Any) -> tuple[str, ...] | None:
    """A pair's discourse types as `read_pairs` keeps them, or None where they are not a list of texts."""
    if isinstance(value, list) and value and all(isinstance(kind, str) for kind in value):
        return tuple(value)
    return None


class JsonlVerificationTask(PanVerificationTask):
    """A PAN verification task on pairs.jsonl + truth.jsonl splits; subclasses declare metadata (and evaluator)."""

    _EXPECTED = "pairs.jsonl[.gz] and truth.jsonl[.gz], the PAN 2020-2023 layout"

    def load_split(self, folder: Path, split: str) -> VerificationData:
        """Read a split folder's `pairs.jsonl[.gz]` and its `truth.jsonl[.gz]`."""
        folder = checked_split_folder(folder, split, self._EXPECTED)
        pairs_path = find_data_file(folder, "pairs.jsonl")
        truth_path = find_data_file(folder, "truth.jsonl")
        problems = read_pairs(pairs_path)
        truth, truth_lines = read_truth_jsonl(truth_path)
        check_truth_ids(problems, truth, truth_lines, truth_path, pairs_path)
        checksum = sha256_files([pairs_path, truth_path], root=folder)
        return VerificationData(problems, truth, folder, checksum, self.ranked_by)

    def load_inputs(self, input_dir: Path) -> VerificationData:
        """TIRA mode: read only `<input_dir>/pairs.jsonl[.gz]`; truth is None and never looked for."""
        input_dir = Path(input_dir)
        pairs_path = find_data_file(input_dir, "pairs.jsonl")
        problems = read_pairs(pairs_path, allow_empty_texts=True)
        return VerificationData(problems, None, input_dir, sha256_files([pairs_path], root=input_dir), self.ranked_by)

    def problems_beside_truth(
        self, truth_path: Path, truth: Mapping[str, VerificationTruth]
    ) -> tuple[VerificationProblem, ...] | None:
        """The ids and discourse types of the pairs.jsonl[.gz] in the truth's split folder (the folder given, or the
        truth file's), texts left out: scoring reads no text, and a PAN 2020 test set's texts are hundreds of MB.
        None where there is none, where no pair has types (PAN 2020-2021), or, with a warning, where the file cannot
        be read or its ids are not the truth's: the scores as a whole are what `score` owes."""
        folder = Path(truth_path) if Path(truth_path).is_dir() else Path(truth_path).parent
        if not any(os.path.lexists(folder / name) for name in ("pairs.jsonl", "pairs.jsonl.gz")):
            return None
        try:
            pairs_path = find_data_file(folder, "pairs.jsonl")
            problems = tuple(
                VerificationProblem(str(obj.get("id")), (), _types(obj.get("discourse_types")))
                for _, obj in read_jsonl(pairs_path)
            )
        except DataError as error:
            logger.warning("%s; so no discourse-type pair is scored apart", error)
            return None
        if not any(problem.discourse_types for problem in problems):
            return None
        if {problem.id for problem in problems} != set(truth):
            logger.warning(
                "%s: its problems are not the truth's, so no discourse-type pair is scored apart", pairs_path
            )
            return None
        return problems

    def read_truth(self, path: Path) -> dict[str, VerificationTruth]:
        """Read a truth file, or the truth.jsonl[.gz] of a folder, into truth by problem id."""
        path = Path(path)
        if path.is_dir():
            path = find_data_file(path, "truth.jsonl")
        elif not path.exists():
            raise DataError("truth file not found", path=path)
        return read_truth_jsonl(path)[0]
