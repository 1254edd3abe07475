"""The real CMCC corpus as rows (author, genre, text, topic), and cross-genre pairs of rows as test problems."""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from pathlib import Path

from core.records import VerificationProblem

CMCC_NAME = re.compile(r"S(?P<author>\d+)[A-Z]\d(?P<topic>[A-Z])\d\.txt")


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
