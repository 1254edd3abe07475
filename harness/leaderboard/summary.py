"""The summary table: one per task (and task setting), systems as rows, datasets as columns.

Each cell is a system's main score on one dataset, mean ± sd over its seeds, built from the per-dataset tables
(`build_tables`), so the summary shows the numbers those tables show. The best cell of each column is marked;
published results on a dataset's corpus follow as reference rows, never marked. The format sample is left out
unless asked for, and marked where shown.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from core.errors import HarnessError
from harness.leaderboard import escape
from harness.leaderboard.cells import SPREAD, is_best, measure_label
from harness.leaderboard.formats import FORMATS, latex_measure_label
from harness.leaderboard.labels import system_key
from harness.leaderboard.table import Row, Table


@dataclass(frozen=True)
class Cell:
    mean: float
    sd: float | None  # None for a published result and a single run
    n: int  # runs (seeds); 0 for a published result


@dataclass
class SummaryRow:
    label: str
    cells: dict[str, Cell] = field(default_factory=dict)  # dataset label -> cell; a dataset not run on has none
    source: str | None = None  # a published result's citation; None for our runs


@dataclass
class Summary:
    task: str  # the task and its setting, as the per-dataset tables name it
    version: str
    main: str
    lower_is_better: bool
    datasets: list[str]  # column labels, in order (`Table.dataset_label`: a format sample is marked)
    rows: list[SummaryRow]
    published: list[SummaryRow] = field(default_factory=list)
    format_samples: set[str] = field(default_factory=set)  # the columns that are the project's format sample
    legend: list[str] = field(default_factory=list)  # what its rows' digest labels stand for (`Table.legend`)

    def best(self, dataset: str) -> float | None:
        """The best mean main score of a column among our rows (published rows never count); None if none."""
        values = [c.mean for row in self.rows if (c := row.cells.get(dataset)) is not None and not math.isnan(c.mean)]
        if not values:
            return None
        return min(values) if self.lower_is_better else max(values)

    slug: str = ""  # the task as a LaTeX label and an HTML id hold it (`build_summaries`: unique among them)


def build_summaries(
    tables: Sequence[Table], *, datasets: Sequence[str] | None = None, include_format_samples: bool = False
) -> list[Summary]:
    """One summary per task (and setting) of `tables`, columns in the tables' order, or picked and ordered by
    `datasets` (names as `Table.dataset` has them; one that no table has is refused, naming the known ones).

    A format sample's table is left out unless `include_format_samples` or named in `datasets`; a task left
    with no column has no summary.
    """
    if datasets is not None:
        _check_dataset_names(tables, datasets)
    by_task: dict[str, list[Table]] = {}
    for table in tables:
        by_task.setdefault(table.task, []).append(table)
    summaries = []
    for task, task_tables in by_task.items():
        if datasets is None:
            columns = [t for t in task_tables if include_format_samples or not t.format_sample]
        else:
            columns = [t for name in datasets for t in task_tables if t.dataset == name]
        if columns:
            summaries.append(_summary(task, columns))
    slugs: list[str] = []
    for summary in summaries:  # letters, digits and hyphens; "-2" where two tasks' names would give one
        slug = re.sub(r"[^a-z0-9]+", "-", summary.task.lower()).strip("-") or "task"
        summary.slug = slug if slug not in slugs else f"{slug}-{slugs.count(slug) + 1}"
        slugs.append(slug)
    return summaries


def _check_dataset_names(tables: Sequence[Table], datasets: Sequence[str]) -> None:
    known = list(dict.fromkeys(table.dataset for table in tables))
    if not datasets:
        raise HarnessError("no dataset named; name one or more of: " + ", ".join(known))
    for name in datasets:
        if name not in known:
            raise HarnessError(f"unknown dataset {name!r}; the results' datasets are: {', '.join(known)}")
        if list(datasets).count(name) > 1:
            raise HarnessError(f"dataset {name!r} is named twice")


def _summary(task: str, columns: Sequence[Table]) -> Summary:
    first = columns[0]
    summary = Summary(task, first.version, first.main, first.main in first.lower_is_better,
                      [t.dataset_label for t in columns], rows=[],
                      format_samples={t.dataset_label for t in columns if t.format_sample})  # fmt: skip
    # rows in the first column's order (best first), then those not run on it in the next column's, and so on;
    # a system is one row over all columns: its name and parameters, whatever its label in one table
    rows: dict[tuple[str, str, str], SummaryRow] = {}
    published: dict[tuple[str, str], SummaryRow] = {}
    for table in columns:
        for row in table.rows:
            # the tables label a system setting alike in every table (harness.leaderboard.labels)
            summary_row = rows.setdefault((*system_key(row.first_run.result), row.training), SummaryRow(row.label))
            summary_row.cells[table.dataset_label] = _cell(table, row)
        for row in table.published:
            if table.main in row.mean:  # a published row without the main score has nothing to show here
                reference = published.setdefault(
                    (row.label, row.source or ""), SummaryRow(row.label, source=row.source)
                )
                reference.cells[table.dataset_label] = Cell(row.mean[table.main], None, 0)
    summary.rows = list(rows.values())
    summary.legend = list(dict.fromkeys(note for table in columns for note in table.legend))
    summary.published = list(published.values())
    return summary


def _cell(table: Table, row: Row) -> Cell:
    sd = row.std.get(table.main, math.nan)
    return Cell(row.mean.get(table.main, math.nan), None if math.isnan(sd) else sd, len(row.runs))


def _cell_text(summary: Summary, row: SummaryRow, dataset: str, digits: int, *, pm: str, bold: str) -> str:
    """A cell as text ("" where the system was not run on the dataset): the mean, ± sd and n where there are
    several runs, `bold` (a format string such as "**{}**") around the column's best."""
    cell = row.cells.get(dataset)
    if cell is None:
        return ""
    if math.isnan(cell.mean):
        return "nan"
    text = f"{cell.mean:.{digits}f}"
    if cell.n > 1:
        text += f" {pm} {cell.sd:.{digits}f} (n={cell.n})"
    return bold.format(text) if row.source is None and is_best(cell.mean, summary.best(dataset), digits) else text


def summary_title(summary: Summary) -> str:
    return f"Summary: {summary.task}, {measure_label(summary.main)} per dataset"


def summary_facts(summary: Summary) -> str:
    """What the heading says beside the title: version, direction, what a cell holds."""
    direction = "lower is better" if summary.lower_is_better else "higher is better"
    return f"version {summary.version}; {direction}; {SPREAD} (n runs), best per dataset in bold"


def summary_notes(summary: Summary) -> list[str]:
    by_source: dict[str, list[str]] = {}  # one note per source: PAN's overviews cite several rows each
    for row in summary.published:
        by_source.setdefault(row.source or "", []).append(row.label)
    notes = [*summary.legend, *(f"published: {'; '.join(labels)}: {source}" for source, labels in by_source.items())]
    if summary.format_samples:
        notes.append("format sample: the project's sample of the data format, not real data; its scores mean nothing.")
    return notes


def summary_row_cells(summary: Summary, row: SummaryRow, digits: int, *, pm: str, bold: str) -> list[str]:
    """A row's cells after its label, one per column, as every format writes them."""
    return [_cell_text(summary, row, dataset, digits, pm=pm, bold=bold) for dataset in summary.datasets]


def render_summaries(summaries: Sequence[Summary], fmt: str, *, digits: int = 3) -> str:
    """The summaries as one text in format `fmt` (one of FORMATS), numbers to `digits` places."""
    if fmt not in FORMATS:
        raise HarnessError(f"format must be one of {', '.join(FORMATS)}, not {fmt!r}")
    return {"markdown": _markdown, "latex": _latex, "csv": _csv, "json": _json}[fmt](summaries, digits)


def _markdown(summaries: Sequence[Summary], digits: int) -> str:
    out = []
    for summary in summaries:
        out.append(f"### {escape.markdown(f'{summary_title(summary)} ({summary_facts(summary)})')}\n")
        out.append("| " + " | ".join(escape.markdown(h) for h in ["system", *summary.datasets]) + " |")
        out.append("|" + "|".join(["---"] + ["---:"] * len(summary.datasets)) + "|")
        for row in summary.rows:
            cells = summary_row_cells(summary, row, digits, pm="±", bold="**{}**")
            out.append("| " + " | ".join([escape.markdown(row.label), *cells]) + " |")
        for row in summary.published:
            cells = summary_row_cells(summary, row, digits, pm="±", bold="{}")
            out.append("| " + " | ".join([f"_{escape.markdown(row.label)}_ (published)", *cells]) + " |")
        out.extend(["", *map(escape.markdown, summary_notes(summary)), ""])
    return "\n".join(out)


def _latex(summaries: Sequence[Summary], digits: int) -> str:
    out = ["% requires \\usepackage{booktabs}"]
    for summary in summaries:
        direction = "lower is better" if summary.lower_is_better else "higher is better"
        caption = (
            f"{escape.latex(summary.task)}: {latex_measure_label(summary.main)} per dataset ({direction}; version "
            f"{escape.latex(summary.version)}); mean $\\pm$ sample sd over seeds, with the number of runs $n$ where "
            "there are several; best per dataset in bold"
            + ("; published results in italics." if summary.published else ".")
        )
        out += ["\\begin{table}[t]\n\\centering", f"\\caption{{{caption}}}", f"\\label{{tab:summary-{summary.slug}}}"]
        out.append("\\begin{tabular}{l" + "r" * len(summary.datasets) + "}\n\\toprule")
        out.append(" & ".join(escape.latex(h) for h in ["system", *summary.datasets]) + " \\\\\n\\midrule")
        for row in summary.rows:
            cells = summary_row_cells(summary, row, digits, pm="$\\pm$", bold="\\textbf{{{}}}")
            out.append(" & ".join([escape.latex(row.label), *cells]) + " \\\\")
        if summary.published:
            out.append("\\midrule")
            for row in summary.published:
                cells = summary_row_cells(summary, row, digits, pm="$\\pm$", bold="{}")
                out.append(" & ".join(["\\textit{" + escape.latex(row.label) + "}", *cells]) + " \\\\")
        out.append("\\bottomrule\n\\end{tabular}")
        notes = summary_notes(summary)
        if notes:
            out.append("\\\\[2pt]{\\footnotesize " + escape.latex(" ".join(notes)) + "}")
        out.append("\\end{table}\n")
    return "\n".join(out)


CSV_COLUMNS = ("task", "system", "dataset", "measure", "mean", "sd", "n", "published")


def _csv(summaries: Sequence[Summary], digits: int) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for summary in summaries:
        for row in [*summary.rows, *summary.published]:
            for dataset in summary.datasets:
                if (cell := row.cells.get(dataset)) is not None:
                    # numbers stay floats (csv writes their repr); names, which could start a formula, are escaped
                    writer.writerow(escape.csv_row([summary.task, row.label, dataset, summary.main, cell.mean,
                                                    cell.sd, cell.n, row.source]))  # fmt: skip
    return buffer.getvalue()


def _json(summaries: Sequence[Summary], digits: int) -> str:
    def cells(row: SummaryRow) -> dict[str, Any]:
        # NaN as null: the JSON standard has no NaN
        return {d: {"mean": None if math.isnan(c.mean) else c.mean, "sd": c.sd, "n": c.n} for d, c in row.cells.items()}

    data = [
        {
            "task": summary.task,
            "version": summary.version,
            "main_score": summary.main,
            "lower_is_better": summary.lower_is_better,
            "datasets": summary.datasets,
            "format_samples": [name for name in summary.datasets if name in summary.format_samples],
            "rows": [{"system": row.label, "cells": cells(row)} for row in summary.rows],
            "published": [
                {"system": row.label, "cells": cells(row), "source": row.source} for row in summary.published
            ],
        }
        for summary in summaries
    ]
    return json.dumps(data, indent=2) + "\n"


def parse_dataset_names(text: str) -> list[str]:
    """`--datasets a,b,c` as a list of names (spaces around a name dropped)."""
    return [name.strip() for name in text.split(",") if name.strip()]
