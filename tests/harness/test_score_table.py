"""The aligned table a run prints: the task's measures as columns, a row per scope read from the score names."""

from __future__ import annotations

import math
import re

from harness import registry
from harness.score_table import scope_of, score_table

DARKWEB = registry.task_class("darkweb").metadata
REDDIT = registry.task_class("reddit").metadata
PAN23 = registry.task_class("pan23").metadata


def _rows(table: str) -> dict[str, list[str]]:
    """Row label -> its cells, from the printed table (header, rule and main-score line left out)."""
    lines = table.splitlines()
    return {line.split()[0]: line.split()[1:] for line in lines[2:] if not line.startswith("main score")}


def test_score_names_are_read_into_scope_and_measure() -> None:
    measures = DARKWEB.measures
    assert scope_of("mrr", measures) == ("all", "mrr")
    assert scope_of("campus/recall_at_10", measures) == ("campus", "recall_at_10")
    assert scope_of("migrant/academia->campus/mrr", measures) is None  # two levels: result.json only
    assert scope_of("campus/queries", measures) is None  # a count, not a measure
    assert scope_of("eer@College", REDDIT.measures) == ("College", "eer")
    assert scope_of("min_dcf_pooled", REDDIT.measures) == ("pooled", "min_dcf")
    assert scope_of("eer_pooled", DARKWEB.measures) is None  # not this task's measure


def test_darkweb_scores_make_one_row_per_market_and_migrant_set() -> None:
    scores = {"mrr": 0.3, "recall_at_1": 0.2, "queries": 100.0, "campus/mrr": 0.31, "campus/recall_at_1": 0.25}
    scores |= {"migrant/mrr": 0.2, "migrant/academia->campus/mrr": 0.9, "migrant/queries": 7.0}
    table = score_table(scores, DARKWEB.measures, DARKWEB.main_score)
    rows = _rows(table)
    assert list(rows) == ["all", "campus", "migrant"]
    assert rows["all"] == ["0.3000", "0.2000"] and rows["campus"] == ["0.3100", "0.2500"]
    assert rows["migrant"] == ["0.2000"]  # no recall_at_1 for it: an empty cell, not another's value
    assert "0.9000" not in table and "queries" not in table and "100.0" not in table
    assert table.splitlines()[-1] == "main score: mrr = 0.3000 (higher is better)"


def test_columns_line_up_in_every_row() -> None:
    scores = {"mrr": 0.5, "eer": 0.34, "min_dcf": 0.97, "eer_pooled": 0.37, "eer@ApplyingToCollege": 0.381}
    table = score_table(scores, REDDIT.measures, REDDIT.main_score)
    lines = table.splitlines()[:-1]
    header, rule = lines[0], lines[1]
    assert len(header) <= len(rule)
    spans = [(m.start(), m.end()) for m in re.finditer("-+", rule)]
    for line in lines[2:]:
        for start, end in spans[1:]:  # each number fills its column's span up to the right edge, or is absent
            cell = line[start:end]
            assert not cell.strip() or (cell.strip() == cell.lstrip() and re.fullmatch(r"\d\.\d{4}", cell.strip()))
    assert header.split() == ["mrr", "eer", "min_dcf"]  # columns only for measures with a value
    assert _rows(table)["pooled"] == ["0.3700"] and "ApplyingToCollege" in _rows(table)
    assert table.splitlines()[-1] == "main score: eer = 0.3400 (lower is better)"


def test_a_verification_run_is_one_row_and_nan_is_shown_as_nan() -> None:
    scores = {name: 0.5 for name in PAN23.measures} | {"brier": math.nan}
    table = score_table(scores, PAN23.measures, PAN23.main_score)
    rows = _rows(table)
    assert list(rows) == ["all"] and len(rows["all"]) == len(PAN23.measures)
    assert rows["all"][PAN23.measures.index("brier")] == "nan"
