"""The table a finished run prints: its task's measures as columns, one row per scope, aligned.

A task's scores are flat names (result.json keeps them all). The measures the task declares
(`TaskMetadata.measures`) are the columns; the scope a score belongs to is read from its name:

- `mrr`                     -> row `all`
- `campus/mrr`              -> row `campus` (a market, a migrant set: one level of `/`)
- `eer@College`             -> row `College` (a community the measure was computed within)
- `eer_pooled`              -> row `pooled`
- `chat/sms+email/auc`      -> row `chat/sms+email` (a discourse-type pair of a verification run, known by its
                               count `<pair>/problems` among the scores: its discourse types may hold a `/`)

Deeper names (`migrant/a->b/mrr`) and counts stay in result.json only: the table is for reading at a
glance, the same for every task.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence

from harness.metrics.table import direction

ALL = "all"
POOLED_SUFFIX = "_pooled"


_PAIR_COUNT = "problems"  # `<pair>/problems`: a discourse-type pair of a verification run, counted


def scope_of(name: str, measures: Sequence[str], pairs: Collection[str] = ()) -> tuple[str, str] | None:
    """(row, measure) of a score name, or None when it is not one of the task's measures at one scope.

    `pairs` are scopes that may hold a `/` (discourse-type pairs, see `_counted_pairs`); any other deeper name is None.
    """
    scope, slash, measure = name.rpartition("/")
    if slash:
        return (scope, measure) if ("/" not in scope or scope in pairs) and measure in measures else None
    measure, at, community = name.partition("@")
    if at:
        return (community, measure) if measure in measures and community else None
    if name.endswith(POOLED_SUFFIX) and name[: -len(POOLED_SUFFIX)] in measures:
        return ("pooled", name[: -len(POOLED_SUFFIX)])
    return (ALL, name) if name in measures else None


def score_table(scores: Mapping[str, object], measures: Sequence[str], main_score: str) -> str:
    """Aligned text table of `scores`: a row per scope (`all` first), a column per measure that has a value.

    The last line names the main score, its value and which direction is better.
    """
    rows: dict[str, dict[str, float]] = {ALL: {}}
    pairs = _counted_pairs(scores)
    for name, value in scores.items():
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        place = scope_of(name, measures, pairs) if number else None
        if place is not None:
            rows.setdefault(place[0], {})[place[1]] = float(value)
    columns = [m for m in measures if any(m in row for row in rows.values())]
    rows = {scope: row for scope, row in rows.items() if row or scope == ALL}
    header = ["", *columns]
    body = [[scope, *(_cell(row.get(m)) for m in columns)] for scope, row in rows.items()]
    widths = [max(len(line[i]) for line in [header, *body]) for i in range(len(header))]
    lines = [_line(cells, widths) for cells in [header, *body]]
    lines.insert(1, "  ".join("-" * width for width in widths))
    main = scores.get(main_score)
    if isinstance(main, (int, float)):
        lines.append(f"main score: {main_score} = {_cell(float(main))} ({direction(main_score)} is better)")
    return "\n".join(lines)


def _counted_pairs(scores: Mapping[str, object]) -> set[str]:
    """The discourse-type pairs a verification run scored apart: the `<pair>` of each `<pair>/problems` count."""
    return {name.rpartition("/")[0] for name in scores if name.rpartition("/")[2] == _PAIR_COUNT and "/" in name}


def _cell(value: float | None) -> str:
    if value is None:
        return ""
    return "nan" if math.isnan(value) else f"{value:.4f}"


def _line(cells: list[str], widths: list[int]) -> str:
    """The row label left-aligned, numbers right-aligned, two spaces between columns."""
    label, *numbers = (cell.ljust(width) if i == 0 else cell.rjust(width) for i, (cell, width) in
                       enumerate(zip(cells, widths, strict=True)))  # fmt: skip
    return "  ".join([label, *numbers]).rstrip()
