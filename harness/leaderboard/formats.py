"""Leaderboard tables as text: Markdown, LaTeX (booktabs), CSV and JSON.

Published rows follow a table's rows, marked "published"; a verification table with a type-pair breakdown
gets its second table after the first, in every format. Every name in them goes through `escape` for its format.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Sequence
from typing import Any

from core.errors import HarnessError
from harness.leaderboard import escape
from harness.leaderboard.cells import (
    SPREAD,
    header_cells,
    measure_label,
    pair_header_cells,
    pair_row_cells,
    pair_title,
    row_cells,
    source_lines,
    table_facts,
)
from harness.leaderboard.table import Table

FORMATS = ("markdown", "latex", "csv", "json")


def render(tables: Sequence[Table], fmt: str, *, digits: int = 3) -> str:
    """The tables as one text in format `fmt` (one of FORMATS), numbers to `digits` places."""
    if fmt not in FORMATS:
        raise HarnessError(f"format must be one of {', '.join(FORMATS)}, not {fmt!r}")
    return {"markdown": _markdown, "latex": _latex, "csv": _csv, "json": _json}[fmt](tables, digits)


def _markdown(tables: Sequence[Table], digits: int) -> str:
    out = []
    for table in tables:
        title = f"{table.title} ({'; '.join(table_facts(table))})"
        out.append(f"### {escape.markdown(title)}\n")
        header = [escape.markdown(cell) for cell in header_cells(table)]
        out.append("| " + " | ".join(header) + " |")
        out.append("|" + "|".join(["---"] + ["---:"] * (len(header) - 1)) + "|")
        for row in [*table.rows, *table.published]:
            cells = row_cells(table, row, digits, pm="±", bold="**{}**", dash="-")
            cells[0] = escape.markdown(cells[0]) if row.source is None else f"_{escape.markdown(cells[0])}_"
            out.append("| " + " | ".join(cells) + " |")
        out.extend(["", *map(escape.markdown, [*table.notes, *source_lines(table)]), ""])
        if table.type_pairs:
            header = [escape.markdown(cell) for cell in pair_header_cells(table)]
            out.append(f"#### {escape.markdown(pair_title(table))}\n")
            out.append("| " + " | ".join(header) + " |")
            out.append("|" + "|".join(["---"] + ["---:"] * (len(header) - 1)) + "|")
            for row in table.rows:
                cells = pair_row_cells(table, row, digits, pm="±", bold="**{}**", dash="-")
                out.append("| " + " | ".join([escape.markdown(cells[0]), *cells[1:]]) + " |")
            out.extend(["", *map(escape.markdown, table.pair_notes), ""])
    return "\n".join(out)


def latex_measure_label(name: str) -> str:
    """A measure's display name for LaTeX: escaped, with the product sign typeset ("AUC $\\times$ c@1")."""
    return _times(escape.latex(measure_label(name)))


def _times(latex: str) -> str:
    """The product in a measure's name ("AUC x c@1") typeset as papers write it, in escaped LaTeX."""
    return latex.replace(" x ", " $\\times$ ")


def _latex(tables: Sequence[Table], digits: int) -> str:
    out = ["% requires \\usepackage{booktabs}"]
    for table in tables:
        header = header_cells(table)
        out.append("\\begin{table}[t]\n\\centering")
        spread = escape.latex(SPREAD).replace("±", "$\\pm$")
        caption = (
            f"{escape.latex(table.title)} (version {escape.latex(table.version)}); rows sorted by "
            f"{latex_measure_label(table.main)}; {spread}; best value in bold."
        )
        out.append(f"\\caption{{{caption}}}")
        out.append("\\begin{tabular}{l" + "r" * (len(header) - 1) + "}\n\\toprule")
        out.append(" & ".join(_times(escape.latex(h)) for h in header) + " \\\\\n\\midrule")
        for row in table.rows:
            cells = row_cells(table, row, digits, pm="$\\pm$", bold="\\textbf{{{}}}", dash="--")
            numbers = [cell.replace("*", "$^{*}$") for cell in cells[1:]]  # the p-value's mark; a name keeps its *
            out.append(" & ".join([escape.latex(cells[0]), *numbers]) + " \\\\")
        if table.published:
            out.append("\\midrule")
            for row in table.published:
                cells = row_cells(table, row, digits, pm="$\\pm$", bold="{}", dash="--")
                cells[0] = "\\textit{" + escape.latex(cells[0]) + "}"
                out.append(" & ".join(cells) + " \\\\")
        out.append("\\bottomrule\n\\end{tabular}")
        if table.notes:
            notes = " ".join([*table.notes, *source_lines(table)])
            out.append("\\\\[2pt]{\\footnotesize " + escape.latex(notes) + "}")
        out.append("\\end{table}\n")
        if table.type_pairs:
            out.append(_latex_pairs(table, digits))
    return "\n".join(out)


def _latex_pairs(table: Table, digits: int) -> str:
    header = pair_header_cells(table)
    out = ["\\begin{table}[t]\n\\centering", f"\\caption{{{escape.latex(pair_title(table))}.}}"]
    out.append("\\begin{tabular}{l" + "r" * (len(header) - 1) + "}\n\\toprule")
    out.append(" & ".join(escape.latex(h) for h in header) + " \\\\\n\\midrule")
    for row in table.rows:
        cells = pair_row_cells(table, row, digits, pm="$\\pm$", bold="\\textbf{{{}}}", dash="--")
        out.append(" & ".join([escape.latex(cells[0]), *cells[1:]]) + " \\\\")
    out.append("\\bottomrule\n\\end{tabular}")
    out.append("\\\\[2pt]{\\footnotesize " + escape.latex(" ".join(table.pair_notes)) + "}")
    out.append("\\end{table}\n")
    return "\n".join(out)


def _csv(tables: Sequence[Table], digits: int) -> str:
    rows: list[list[Any]] = []
    for table in tables:
        where = [table.task, table.dataset_label, table.version]
        for row in table.rows:
            for measure in table.measures:
                if measure not in row.mean:
                    continue
                is_main = measure == table.main
                ci = row.ci if (is_main and row.ci) else (None, None)
                p = row.p_value if is_main else None
                rows.append([*where, row.label, len(row.runs), measure,
                             row.mean[measure], nan_as_empty(row.std[measure]), ci[0], ci[1], p, None])  # fmt: skip
        for row in table.published:
            for measure in table.measures:
                if measure in row.mean:
                    rows.append([*where, row.label, 0, measure, row.mean[measure],
                                 None, None, None, None, row.source])  # fmt: skip
        for row in table.rows:  # the breakdown: the main score of each type pair, named as result.json names it
            for pair in row.pair_mean:  # none where the runs recorded no scores per type pair
                sd = nan_as_empty(row.pair_std[pair])
                rows.append([*where, row.label, len(row.runs), f"{pair}/{table.main}", row.pair_mean[pair], sd,
                             None, None, None, None])  # fmt: skip
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(
        [
            "task",
            "dataset",
            "version",
            "system",
            "runs",
            "measure",
            "mean",
            "std",
            "ci_low",
            "ci_high",
            "p_vs_best",
            "published",
        ]  # fmt: skip
    )
    # numbers stay floats (csv writes their repr); names, which could start a formula, go through `csv_row`
    writer.writerows(escape.csv_row(row) for row in rows)
    return buffer.getvalue()


def _json(tables: Sequence[Table], digits: int) -> str:
    data = [
        {
            "task": table.task,
            "dataset": table.dataset,
            "format_sample": table.format_sample,
            "version": table.version,
            "main_score": table.main,
            "measures": table.measures,
            "lower_is_better": sorted(table.lower_is_better),
            "notes": table.notes,
            "rows": [
                {
                    "system": row.label,
                    "runs": [str(run.path) for run in row.runs],
                    "mean": _finite(row.mean),
                    "std": _finite(row.std),
                    "ci": list(row.ci) if row.ci else None,
                    "p_vs_best": row.p_value,
                }
                for row in table.rows
            ],
            "published": [{"system": row.label, "mean": row.mean, "source": row.source} for row in table.published],
            **({"type_pairs": _json_pairs(table)} if table.type_pairs else {}),
        }
        for table in tables
    ]
    return json.dumps(data, indent=2) + "\n"


def _json_pairs(table: Table) -> dict[str, Any]:
    """The breakdown table: each pair's problem count, each row's mean and sd of the main score per pair."""
    rows = [{"system": row.label, "mean": _finite(row.pair_mean), "std": _finite(row.pair_std)} for row in table.rows]
    return {"measure": table.main, "problems": table.type_pairs, "rows": rows, "notes": table.pair_notes}


def nan_as_empty(value: float) -> float | None:
    """An sd for CSV: empty where there is none (one run), not "nan"."""
    return None if math.isnan(value) else value


def _finite(values: dict[str, float]) -> dict[str, float | None]:
    """NaN as null: the JSON standard has no NaN, and strict readers refuse Python's `NaN`."""
    return {name: None if math.isnan(value) else value for name, value in values.items()}
