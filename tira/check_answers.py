#!/usr/bin/env python3
"""Checks for tira/build-and-run-here.sh (standard library only, so any python3 runs it).

    check_answers.py ids PAIRS ANSWERS
        every problem id of PAIRS has exactly one answer in ANSWERS, no answer is for an unknown
        id, and every value is a number in [0, 1].
    check_answers.py same-scores OUT_JSON_A OUT_JSON_B [ANSWERS_A ANSWERS_B]
        the two score files (`harness score` writes out.json) hold the same measures with equal
        values; with answer files, also reports the largest difference between their values.

Exits 1 with a one-line reason on the first failed check.
"""

from __future__ import annotations

import gzip
import json
import math
import sys
from pathlib import Path


def _lines(path: Path):
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if line.strip():
                yield number, json.loads(line)


def _answers(path: Path) -> dict[str, float]:
    values: dict[str, float] = {}
    for number, row in _lines(path):
        problem_id, value = row.get("id"), row.get("value")
        if problem_id in values:
            raise SystemExit(f"FAIL: {path}:{number}: second answer for {problem_id!r}")
        if isinstance(value, list) and len(value) == 1:  # PAN's evaluator takes [x] too
            value = value[0]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value <= 1.0:
            raise SystemExit(f"FAIL: {path}:{number}: value {value!r} for {problem_id!r} is not a number in [0, 1]")
        values[problem_id] = float(value)
    return values


def check_ids(pairs: Path, answers_path: Path) -> None:
    ids = [row["id"] for _, row in _lines(pairs)]
    answers = _answers(answers_path)
    missing = [i for i in ids if i not in answers]
    extra = sorted(set(answers) - set(ids))
    if missing or extra:
        raise SystemExit(
            f"FAIL: {len(missing)} problems without an answer {missing[:5]}, {len(extra)} unknown ids {extra[:5]}"
        )
    abstained = sum(1 for v in answers.values() if v == 0.5)
    print(f"ok: {len(ids)} problems, {len(answers)} answers, every id answered once ({abstained} non-answers)")


def check_same_scores(a: Path, b: Path, answers_a: Path | None, answers_b: Path | None) -> None:
    scores_a = json.loads(a.read_text(encoding="utf-8"))
    scores_b = json.loads(b.read_text(encoding="utf-8"))
    if scores_a.keys() != scores_b.keys():
        raise SystemExit(f"FAIL: measures differ: {sorted(scores_a)} vs {sorted(scores_b)}")
    for name in scores_a:
        x, y = scores_a[name], scores_b[name]
        if x != y and not (isinstance(x, float) and isinstance(y, float) and math.isnan(x) and math.isnan(y)):
            raise SystemExit(f"FAIL: {name}: {x!r} (container) != {y!r} (outside)")
    print("ok: same scores: " + ", ".join(f"{k}={v:.6f}" for k, v in scores_a.items()))
    if answers_a is not None and answers_b is not None:
        values_a, values_b = _answers(answers_a), _answers(answers_b)
        if values_a.keys() != values_b.keys():
            raise SystemExit("FAIL: the two answer files answer different problems")
        diff = max((abs(values_a[k] - values_b[k]) for k in values_a), default=0.0)
        print(f"ok: largest difference between the answers: {diff:.3g}")


def main(argv: list[str]) -> None:
    if len(argv) == 3 and argv[0] == "ids":
        check_ids(Path(argv[1]), Path(argv[2]))
    elif len(argv) in (3, 5) and argv[0] == "same-scores":
        extra = [Path(p) for p in argv[3:]] or [None, None]
        check_same_scores(Path(argv[1]), Path(argv[2]), extra[0], extra[1])
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
