"""PAN's official verification evaluator around the measures: read answers, score them, write TIRA files.

Follows PAN's evaluator (pan-webis-de/pan-code, pan20/pan23_verif_evaluator.py): problems are
aligned by sorted id, a problem without an answer is scored as 0.5 (a non-answer), and the
results go to ``out.json`` and TIRA's ``evaluation.prototext``. Unlike PAN's script, bad input
is an error naming file, line and field instead of a crash or a silently wrong score: a value
outside [0, 1], NaN or inf, a duplicate id, or an answer to a problem that is not in the truth.
"""

from __future__ import annotations

import logging
import math
import numbers
import operator
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from core.errors import DataError
from core.files import atomic_writes, json_text, kind_of, read_jsonl, require_field
from core.records import NO_ANSWER, VerificationTruth
from harness.metrics.verification import PROFILES, evaluate_all

logger = logging.getLogger("harness")

OUT_JSON = "out.json"
PROTOTEXT = "evaluation.prototext"
# the measures PAN's evaluators write to out.json, in their order, by the harness's name (its measure table's) ->
# PAN's name; measures of the harness's own (c_at_1_best_band) stay out of PAN's files
PAN_OUT_NAMES = {"auc": "auc", "c_at_1": "c@1", "f_05_u": "f_05_u", "f1": "F1", "brier": "brier", "overall": "overall"}


def _check_value(value: Any) -> str | None:
    """Why `value` is not a valid answer score, or None if it is one."""
    if type(value) is float or type(value) is int:  # fast path: the ABC check below is slow on 10^4 answers
        return None if 0.0 <= value <= 1.0 else f"expected a number in [0, 1], got {value!r}"
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return f"expected a number in [0, 1], got {kind_of(value)}"
    if not math.isfinite(value):
        return f"expected a number in [0, 1], got {value}"
    if not 0.0 <= value <= 1.0:
        return f"expected a number in [0, 1], got {value!r}"
    return None


def read_answers(path: Path) -> dict[str, float]:
    """Read a PAN answers file (jsonl or jsonl.gz, one ``{"id": str, "value": number}`` per line).

    ``"value": [x]`` (a one-element list, as one PAN 2020 submission wrote it) is accepted as x.
    A missing or empty id, a missing, non-numeric, non-finite or out-of-range value, and a
    duplicate id are DataErrors naming file, line and field.
    """
    path = Path(path)
    answers: dict[str, float] = {}
    first_line: dict[str, int] = {}
    for line_no, obj in read_jsonl(path):
        problem_id = require_field(obj, "id", str, path, line_no)
        if not problem_id:
            raise DataError("is empty", path=path, line=line_no, field="id")
        if "value" not in obj:
            raise DataError("missing", path=path, line=line_no, field="value")
        value = obj["value"]
        if isinstance(value, list):
            if len(value) != 1:
                raise DataError(
                    f"expected a number or a one-element list, got a list of {len(value)}",
                    path=path,
                    line=line_no,
                    field="value",
                )
            value = value[0]
        problem = _check_value(value)
        if problem is not None:
            raise DataError(problem, path=path, line=line_no, field="value")
        if problem_id in answers:
            raise DataError(
                f"duplicate id {problem_id!r} (first answered on line {first_line[problem_id]})",
                path=path,
                line=line_no,
                field="id",
            )
        answers[problem_id] = float(value)
        first_line[problem_id] = line_no
    return answers


def _first_line_of(path: Path | None, ids: set[str]) -> int | None:
    """The line of the first answer in `path` to one of `ids` (read again: only an error needs it)."""
    if path is None:
        return None
    path = Path(path)
    if path.name.lower().endswith(".txt"):  # PAN 2013-2015's answers.txt, as the classic task reads it
        from tasks.pan.folders import classic_answer_lines

        lines = ((line, problem_id) for line, problem_id, _ in classic_answer_lines(path))
    else:
        lines = ((line, obj.get("id")) for line, obj in read_jsonl(path))
    try:
        return next((line for line, problem_id in lines if problem_id in ids), None)
    except DataError:  # answers given in memory, or the file changed since: the error names no line
        return None


def score_answers(
    answers: Mapping[str, float],
    truth: Mapping[str, VerificationTruth],
    *,
    profile: str = "pan23",
    answers_path: Path | None = None,
) -> dict[str, float]:
    """Score answers against the truth with a PAN profile's measures (see harness.metrics.verification).

    Problems are ordered by sorted id, as PAN's evaluator does. A problem without an answer is
    scored as 0.5, with one warning line on the "harness" logger stating how many. An answer
    to an id not in the truth, or an invalid value, is a DataError naming the id (and the file,
    when `answers_path` is given).
    """
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r}; known: {', '.join(PROFILES)}")
    if not truth:
        raise DataError("the truth holds no problems", path=answers_path)
    unknown = [problem_id for problem_id in answers if problem_id not in truth]
    if unknown:
        shown = ", ".join(repr(problem_id) for problem_id in sorted(unknown)[:5])
        more = f" and {len(unknown) - 5} more" if len(unknown) > 5 else ""
        raise DataError(
            f"{len(unknown)} answer(s) to problems not in the truth: {shown}{more}",
            path=answers_path,
            line=_first_line_of(answers_path, set(unknown)),
            field="id",
        )
    for problem_id, value in answers.items():
        problem = _check_value(value)
        if problem is not None:
            raise DataError(f"answer to {problem_id!r}: {problem}", path=answers_path, field="value")

    ids = sorted(truth)
    n_missing = len(ids) - len(answers)  # every answer's id is in the truth, checked above
    if n_missing:
        message = f"{n_missing} of {len(ids)} problems have no answer and are scored as {NO_ANSWER} (non-answers)"
        if answers_path is not None:
            message += f" in {answers_path}"
        # logged only: warnings.warn printed it again, with a Python source line under it
        logger.warning(message)
    # itemgetter looks all ids up in C: alignment, not the measures, dominates the scoring time
    pick = operator.itemgetter(*ids) if len(ids) > 1 else lambda mapping: (mapping[ids[0]],)
    labels = np.array([problem.same for problem in pick(truth)], dtype=bool)
    values = [answers.get(problem_id, NO_ANSWER) for problem_id in ids] if n_missing else pick(answers)
    scores = np.array(values, dtype=np.float64)
    return evaluate_all(labels, scores, profile=profile)


def _prototext(scores: Mapping[str, float]) -> str:
    blocks = []
    for key, value in scores.items():
        # repr keeps full precision: a leaderboard rounds for display, the record should not
        blocks.append(f'measure {{\n  key: "{key}"\n  value: "{float(value)!r}"\n}}\n')
    return "".join(blocks)


def write_tira_outputs(scores: Mapping[str, float], out_dir: Path) -> None:
    """Write `out.json` (full precision) and TIRA's `evaluation.prototext` into `out_dir`, atomically.

    The files hold what PAN's evaluator writes: its measures, named as it names them (`PAN_OUT_NAMES`: "c@1", "F1").
    Everything is checked before anything is written, and the two go in together (`atomic_writes`): a failure
    or a stop leaves the earlier pair or none, never one file of each.
    """
    out_dir = Path(out_dir)
    scores = {pan: scores[ours] for ours, pan in PAN_OUT_NAMES.items() if ours in scores}
    if not scores:
        raise ValueError("no scores to write")
    for key, value in scores.items():
        if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
            raise ValueError(f"measure {key!r} has no finite numeric value: {value!r}")
    plain = {key: float(value) for key, value in scores.items()}
    with atomic_writes([out_dir / PROTOTEXT, out_dir / OUT_JSON]) as (proto, out):
        proto.write(_prototext(plain))
        out.write(json_text(plain))


def evaluate_answers_file(
    answers_path: Path,
    truth: Mapping[str, VerificationTruth],
    out_dir: Path | None = None,
    *,
    profile: str = "pan23",
) -> dict[str, float]:
    """Read, score and (if `out_dir` is given) write TIRA outputs, as PAN's evaluator script does.

    Any error is raised before a file is written, so a failed evaluation leaves no output.
    """
    answers = read_answers(answers_path)
    results = score_answers(answers, truth, profile=profile, answers_path=answers_path)
    if out_dir is not None:
        write_tira_outputs(results, out_dir)
    return results
