"""The real CMCC corpus as rows (author, genre, text, topic), cross-genre pairs of rows as test problems, and drawn
cross-genre pairs as training data."""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from core.records import VerificationData, VerificationProblem, VerificationTruth

CMCC_NAME = re.compile(r"S(?P<author>\d+)[A-Z]\d(?P<topic>[A-Z])\d\.txt")
# `harness pairs --from folders --pattern`: a CMCC file's genre folder, author and topic, from its relative path
CMCC_PATTERN = r"(?P<discourse_type>[^/]+)/S(?P<author>\d+)[A-Z]\d(?P<topic>[A-Z])\d\.txt"


def cmcc_rows(cmcc: Path, topics: str | None = None) -> list[tuple[str, str, str, str]]:
    """(author, genre, text, topic) of every CMCC file (of `topics` only, letters such as "CGI", where given)."""
    rows = []
    for path in sorted(cmcc.glob("*/*.txt")):
        match = CMCC_NAME.fullmatch(path.name)
        if match and (topics is None or match["topic"] in topics):
            rows.append((match["author"], path.parent.name, path.read_text(encoding="cp1252"), match["topic"]))
    return rows


def cross_genre_pairs(rows: Sequence[tuple[str, ...]]) -> tuple[list[VerificationProblem], list[bool]]:
    """Every pair of rows of two genres as a problem (ids "0", "1", ...), and whether its two authors are one."""
    pairs = [(a, b) for a, b in itertools.combinations(rows, 2) if a[1] != b[1]]
    problems = [VerificationProblem(str(i), (a[2], b[2])) for i, (a, b) in enumerate(pairs)]
    return problems, [a[0] == b[0] for a, b in pairs]


def cross_genre_training_data(rows: Sequence[tuple[str, ...]], count: int, rng: np.random.Generator, folder: Path):
    """`count` drawn cross-genre pairs of `rows` (ids "t0", "t1", ...; even ones same-author) with truth, as
    VerificationData read from `folder`."""
    problems, truth = [], {}
    for n in range(count):
        a = rows[rng.integers(len(rows))]
        pool = [r for r in rows if r[1] != a[1] and (r[0] == a[0]) == (n % 2 == 0)]
        b = pool[rng.integers(len(pool))]
        problems.append(VerificationProblem(f"t{n}", (a[2], b[2]), (a[1], b[1])))
        truth[f"t{n}"] = VerificationTruth(f"t{n}", a[0] == b[0], (a[0], b[0]))
    return VerificationData(tuple(problems), truth, folder, "x")
