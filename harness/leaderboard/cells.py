"""A leaderboard table's cells as text, shared by every format (Markdown, LaTeX, HTML): the same numbers in each."""

from __future__ import annotations

import math
import re

from harness.leaderboard.statistics import SIGNIFICANCE_LEVEL
from harness.leaderboard.table import Row, Table

# how papers write the measures; result files, CSV and JSON keep the names (`c_at_1`), tables show these
MEASURE_LABELS = {
    "auc": "AUC",
    "c_at_1": "c@1",
    "f1": "F1",
    "f_05_u": "F0.5u",
    "brier": "Brier",
    "overall": "overall",
    "auc_x_c_at_1": "AUC x c@1",
    "c_at_1_best_band": "c@1 best band",
    "mrr": "MRR",
    "mean_rank": "mean rank",
    "eer": "EER",
    "min_dcf": "minDCF",
}


def measure_label(name: str) -> str:
    """A measure's name as a table header shows it: `c_at_1` -> `c@1`, `recall_at_10` -> `R@10`; others as they are."""
    if name in MEASURE_LABELS:
        return MEASURE_LABELS[name]
    recall = re.fullmatch(r"recall_at_(\d+)", name)
    return f"R@{recall.group(1)}" if recall else name


SPREAD = "mean ± sample sd over seeds"  # what a cell of several runs holds (numpy's std with ddof=1)


def table_facts(table: Table) -> list[str]:
    """What a table's heading says beside its title: version, main score, measures where lower is better, what a
    cell holds."""
    lower = [measure_label(m) for m in table.measures if m in table.lower_is_better]
    direction = [", ".join(f"{m} lower is better" for m in lower)] if lower else []
    return [f"version {table.version}", f"main score {measure_label(table.main)}", *direction, SPREAD]


def header_cells(table: Table) -> list[str]:
    """The main table's header; the interval and the test describe a row's lowest-seed run, not its mean."""
    header = ["system", "runs"] + [measure_label(m) for m in table.measures]
    if any(row.ci for row in table.rows):
        header.append(f"{measure_label(table.main)} 95% CI (lowest seed)")
    if any(row.p_value is not None for row in table.rows):
        header.append("p vs best (lowest seed)")
    return header


def is_best(value: float, best: float | None, digits: int) -> bool:
    """Whether `value` is its column's best as the table shows it, to `digits` places: cells that read alike are
    bold alike (audit 12: 0.667 bold beside 0.667 not)."""
    return best is not None and f"{value:.{digits}f}" == f"{best:.{digits}f}"


def row_cells(table: Table, row: Row, digits: int, *, pm: str, bold: str, dash: str) -> list[str]:
    """One table row as text cells; `bold` is a format string such as "**{}**". The first cell, the row's
    label, is the name as it is: each format escapes it (and marks a published row) its own way."""
    if row.source is not None:  # a published result: marked, never bolded as best, no interval or test
        cells = [row.label, "published"]
        cells += [f"{row.mean[m]:.{digits}f}" if m in row.mean else dash for m in table.measures]
        cells += [dash] * (any(r.ci for r in table.rows) + any(r.p_value is not None for r in table.rows))
        return cells
    cells = [row.label, str(len(row.runs))]
    for measure in table.measures:
        if measure not in row.mean:
            cells.append(dash)
            continue
        text = f"{row.mean[measure]:.{digits}f}"
        if len(row.runs) > 1 and not math.isnan(row.mean[measure]):
            text += f" {pm} {row.std[measure]:.{digits}f}"
        cells.append(bold.format(text) if is_best(row.mean[measure], table.best(measure), digits) else text)
    if any(r.ci for r in table.rows):
        cells.append(f"[{row.ci[0]:.{digits}f}, {row.ci[1]:.{digits}f}]" if row.ci else dash)
    if any(r.p_value is not None for r in table.rows):
        significant = row.p_value is not None and row.p_value < SIGNIFICANCE_LEVEL
        cells.append(dash if row.p_value is None else f"{row.p_value:.3f}" + ("*" if significant else ""))
    return cells


def pair_title(table: Table) -> str:
    return f"{table.title}: {table.main} per discourse-type pair"


def pair_header_cells(table: Table) -> list[str]:
    """The breakdown table's header: system, runs, then each type pair with its problem count."""
    return ["system", "runs"] + [f"{pair} (n={count})" for pair, count in table.type_pairs.items()]


def pair_row_cells(table: Table, row: Row, digits: int, *, pm: str, bold: str, dash: str) -> list[str]:
    """One row of the breakdown table as text cells, as `row_cells` writes the main table's."""
    cells = [row.label, str(len(row.runs))]
    for pair in table.type_pairs:
        mean = row.pair_mean.get(pair)
        if mean is None:
            cells.append(dash)
        elif math.isnan(mean):
            cells.append("nan")
        else:
            text = f"{mean:.{digits}f}" + (f" {pm} {row.pair_std[pair]:.{digits}f}" if len(row.runs) > 1 else "")
            cells.append(bold.format(text) if is_best(mean, table.best_in_pair(pair), digits) else text)
    return cells


def source_lines(table: Table) -> list[str]:
    """Notes naming where each published row comes from."""
    return [f"published: {row.label}: {row.source}" for row in table.published]
