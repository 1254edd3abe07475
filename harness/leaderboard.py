"""Leaderboards from result files: one table per task, systems as rows, the task's measures as columns.

Runs of one system with several seeds are one row (mean, standard deviation, number of runs).
Optional: a bootstrap confidence interval of the main score and a paired approximate
randomization test of each system against the best. Runs of different task versions or data
are never put in one table.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from harness.errors import HarnessError
from harness.metrics.table import higher_is_better, is_known
from harness.results import RESULT_NAME, read_details, read_result

FORMATS = ("markdown", "latex", "csv", "json")
SIGNIFICANCE_LEVEL = 0.05


@dataclass(frozen=True)
class Run:
    path: Path
    result: dict[str, Any]

    @property
    def seed(self) -> int:
        seed = self.result.get("seeds", {}).get("seed")
        return seed if isinstance(seed, int) else -1

    @property
    def data_key(self) -> tuple[str, str]:
        task = self.result["task"]
        return task["version"], task.get("data", {}).get("test", {}).get("checksum", "?")


@dataclass
class Row:
    label: str
    runs: list[Run]
    mean: dict[str, float] = field(default_factory=dict)
    std: dict[str, float] = field(default_factory=dict)
    ci: tuple[float, float] | None = None
    p_value: float | None = None  # against the best row, on the main score

    @property
    def first_run(self) -> Run:
        """The run with the lowest seed: the one intervals and tests describe."""
        return min(self.runs, key=lambda run: run.seed)


@dataclass
class Table:
    task: str
    version: str
    main: str
    measures: list[str]
    lower_is_better: set[str]
    rows: list[Row]
    notes: list[str] = field(default_factory=list)

    def best(self, measure: str) -> float | None:
        values = [row.mean[measure] for row in self.rows if measure in row.mean]
        if not values:
            return None
        return min(values) if measure in self.lower_is_better else max(values)


def find_runs(paths: Iterable[Path]) -> list[Run]:
    """Every result.json in the given folders (recursively) or given as files."""
    runs = []
    for path in paths:
        path = Path(path)
        if path.is_file():
            files = [path]
        elif path.is_dir():
            files = sorted(path.rglob(RESULT_NAME))
        else:
            raise HarnessError(f"{path}: no such file or folder")
        runs.extend(Run(file, read_result(file)) for file in files)
    if not runs:
        raise HarnessError(f"no {RESULT_NAME} found under {', '.join(str(p) for p in paths)}")
    return runs


def build_tables(
    runs: Sequence[Run], *, ci: bool = False, significance: bool = False, resamples: int = 1000, seed: int = 0
) -> list[Table]:
    """One table per task and task setting, rows sorted by the main score (best first).

    Runs of one task with other task parameters (e.g. another episode length) get a table of
    their own, named by the parameters that set them apart.
    """
    by_task: dict[tuple[str, str], list[Run]] = defaultdict(list)
    for run in runs:
        task = run.result["task"]
        by_task[(task["name"], json.dumps(task.get("params", {}), sort_keys=True))].append(run)
    tables = []
    for name, params_json in sorted(by_task):
        task_runs = by_task[(name, params_json)]
        siblings = [json.loads(other) for other_name, other in by_task if other_name == name]
        table_name = name + _setting_label(json.loads(params_json), siblings)
        _refuse_mixed(table_name, task_runs)
        table = _table(table_name, task_runs)
        # a task whose per-item details cannot give its main score (e.g. EER from per-query rows)
        # still gets its table, with a note instead of intervals or tests
        for wanted, add in ((ci, _add_intervals), (significance, _add_significance)):
            if not wanted:
                continue
            try:
                add(table, rounds=resamples, seed=seed)
            except HarnessError as exc:
                table.notes.append(f"{add.__name__.removeprefix('_add_')} not available: {exc}")
        tables.append(table)
    return tables


def _setting_label(params: dict[str, Any], all_params: list[dict[str, Any]]) -> str:
    """ " [k=v, ...]" for the parameters whose values differ between the tables of one task; "" if none."""
    differing = sorted(k for k in params if any(other.get(k) != params[k] for other in all_params))
    return " [" + ", ".join(f"{k}={params[k]}" for k in differing) + "]" if differing else ""


def _refuse_mixed(task_name: str, runs: Sequence[Run]) -> None:
    groups: dict[tuple[str, str], list[Run]] = defaultdict(list)
    for run in runs:
        groups[run.data_key].append(run)
    if len(groups) > 1:
        lines = [
            f"  version {version}, test data {checksum[:23]}...: "
            + ", ".join(str(run.path) for run in group[:3])
            + (f" and {len(group) - 3} more" if len(group) > 3 else "")
            for (version, checksum), group in groups.items()
        ]
        raise HarnessError(
            f"task {task_name}: the runs differ in task version or test data and cannot share a table:\n"
            + "\n".join(lines)
        )


def _params_digest(params: Any) -> str:
    return hashlib.sha256(json.dumps(params, sort_keys=True, default=str).encode()).hexdigest()[:8]


def _table(task_name: str, runs: Sequence[Run]) -> Table:
    task = runs[0].result["task"]
    main = task["main_score"]
    measures = list(task.get("measures") or runs[0].result["scores"])
    measures = [main] + [m for m in measures if m != main]
    lower = _lower_is_better(measures, task)

    by_system: dict[tuple[str, str], list[Run]] = defaultdict(list)
    for run in runs:
        system = run.result["system"]
        by_system[(system["name"], _params_digest(system.get("params", {})))].append(run)
    names = [name for name, _ in by_system]
    rows = []
    for (name, digest), system_runs in by_system.items():
        label = name if names.count(name) == 1 else f"{name}@{digest}"
        row = Row(label=label, runs=sorted(system_runs, key=lambda run: run.seed))
        for measure in measures:
            values = [run.result["scores"][measure] for run in system_runs if measure in run.result["scores"]]
            if values:
                row.mean[measure] = float(np.mean(values))
                row.std[measure] = float(np.std(values, ddof=1)) if len(values) > 1 else 0.0
        rows.append(row)
    sign = 1.0 if main in lower else -1.0
    rows.sort(key=lambda row: (sign * row.mean.get(main, -sign * np.inf), row.label))
    return Table(task_name, task["version"], main, measures, lower, rows)


def _lower_is_better(measures: Sequence[str], task: dict[str, Any]) -> set[str]:
    """The measures whose lower values are better, by the measure table.

    A name the table does not know (a result written by another harness version) keeps the
    direction its result file recorded, if any (`task.lower_is_better` of older result files).
    """
    recorded = set(task.get("lower_is_better", ()))
    return {m for m in measures if (not higher_is_better(m) if is_known(m) else m in recorded)}


def _columns_of(run: Run) -> tuple[list[str], dict[str, np.ndarray]]:
    from harness.item_statistics import columns, item_ids

    details = read_details(run.path)
    return item_ids(details), columns(details)


def _add_intervals(table: Table, *, rounds: int, seed: int) -> None:
    from harness.item_statistics import bootstrap_interval, measure_function

    for row in table.rows:
        run = row.first_run
        _, cols = _columns_of(run)
        compute = measure_function(run.result, table.main, cols)
        row.ci = bootstrap_interval(compute, cols, resamples=rounds, seed=seed)
    table.notes.append(
        f"CI: 95% percentile bootstrap over items ({rounds} resamples) of the main score, lowest-seed run."
    )


def _add_significance(table: Table, *, rounds: int, seed: int) -> None:
    from harness.item_statistics import measure_function, paired_permutation_test

    best = table.rows[0].first_run
    best_ids, best_cols = _columns_of(best)
    order = {item: i for i, item in enumerate(best_ids)}
    compute = measure_function(best.result, table.main, best_cols)
    for row in table.rows[1:]:
        ids, cols = _columns_of(row.first_run)
        if sorted(ids) != sorted(best_ids):
            raise HarnessError(f"{row.first_run.path}: not scored on the same items as {best.path}; cannot pair them")
        aligned = np.argsort([order[item] for item in ids], kind="stable")
        cols = {name: values[aligned] for name, values in cols.items()}
        row.p_value = paired_permutation_test(compute, best_cols, compute, cols, rounds=rounds, seed=seed)
    table.notes.append(
        f"p: paired approximate randomization test against the best system on the main score ({rounds} rounds, "
        f"lowest-seed runs); * marks p < {SIGNIFICANCE_LEVEL}."
    )


# ---------------------------------------------------------------------------------------------- rendering


def render(tables: Sequence[Table], fmt: str, *, digits: int = 3) -> str:
    if fmt not in FORMATS:
        raise HarnessError(f"format must be one of {', '.join(FORMATS)}, not {fmt!r}")
    return {"markdown": _markdown, "latex": _latex, "csv": _csv, "json": _json}[fmt](tables, digits)


def _header(table: Table) -> list[str]:
    header = ["system", "runs"] + table.measures
    if any(row.ci for row in table.rows):
        header.append(f"{table.main} 95% CI")
    if any(row.p_value is not None for row in table.rows):
        header.append("p vs best")
    return header


def _row_cells(table: Table, row: Row, digits: int, *, pm: str, bold: str, dash: str) -> list[str]:
    """One table row as text cells; `bold` is a format string such as "**{}**"."""
    cells = [row.label, str(len(row.runs))]
    for measure in table.measures:
        if measure not in row.mean:
            cells.append(dash)
            continue
        text = f"{row.mean[measure]:.{digits}f}"
        if len(row.runs) > 1:
            text += f" {pm} {row.std[measure]:.{digits}f}"
        cells.append(bold.format(text) if row.mean[measure] == table.best(measure) else text)
    if any(r.ci for r in table.rows):
        cells.append(f"[{row.ci[0]:.{digits}f}, {row.ci[1]:.{digits}f}]" if row.ci else dash)
    if any(r.p_value is not None for r in table.rows):
        significant = row.p_value is not None and row.p_value < SIGNIFICANCE_LEVEL
        cells.append(dash if row.p_value is None else f"{row.p_value:.3f}" + ("*" if significant else ""))
    return cells


def _markdown(tables: Sequence[Table], digits: int) -> str:
    out = []
    for table in tables:
        direction = ", ".join(f"{m} lower is better" for m in table.measures if m in table.lower_is_better)
        facts = [f"version {table.version}", f"main score {table.main}"] + ([direction] if direction else [])
        out.append(f"### {table.task} ({'; '.join(facts)})\n")
        header = _header(table)
        out.append("| " + " | ".join(header) + " |")
        out.append("|" + "|".join(["---"] + ["---:"] * (len(header) - 1)) + "|")
        for row in table.rows:
            out.append("| " + " | ".join(_row_cells(table, row, digits, pm="±", bold="**{}**", dash="-")) + " |")
        out.extend(["", *table.notes, ""])
    return "\n".join(out)


_LATEX_SPECIALS = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
                   "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}"}  # fmt: skip


def latex_escape(text: str) -> str:
    return "".join(_LATEX_SPECIALS.get(char, char) for char in text)


def _latex(tables: Sequence[Table], digits: int) -> str:
    out = ["% requires \\usepackage{booktabs}"]
    for table in tables:
        header = _header(table)
        out.append("\\begin{table}[t]\n\\centering")
        caption = f"{table.task} (version {table.version}); rows sorted by {table.main}; best value in bold."
        out.append(f"\\caption{{{latex_escape(caption)}}}")
        out.append("\\begin{tabular}{l" + "r" * (len(header) - 1) + "}\n\\toprule")
        out.append(" & ".join(latex_escape(h) for h in header) + " \\\\\n\\midrule")
        for row in table.rows:
            cells = _row_cells(table, row, digits, pm="$\\pm$", bold="\\textbf{{{}}}", dash="--")
            cells[0] = latex_escape(cells[0])
            out.append(" & ".join(cell.replace("*", "$^{*}$") for cell in cells) + " \\\\")
        out.append("\\bottomrule\n\\end{tabular}")
        if table.notes:
            out.append("\\\\[2pt]{\\footnotesize " + latex_escape(" ".join(table.notes)) + "}")
        out.append("\\end{table}\n")
    return "\n".join(out)


def _csv(tables: Sequence[Table], digits: int) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["task", "version", "system", "runs", "measure", "mean", "std", "ci_low", "ci_high", "p_vs_best"])
    for table in tables:
        for row in table.rows:
            for measure in table.measures:
                if measure not in row.mean:
                    continue
                is_main = measure == table.main
                ci = row.ci if (is_main and row.ci) else (None, None)
                p = row.p_value if is_main else None
                writer.writerow([table.task, table.version, row.label, len(row.runs), measure,
                                 repr(row.mean[measure]), repr(row.std[measure]), ci[0], ci[1], p])  # fmt: skip
    return buffer.getvalue()


def _json(tables: Sequence[Table], digits: int) -> str:
    data = [
        {
            "task": table.task,
            "version": table.version,
            "main_score": table.main,
            "measures": table.measures,
            "lower_is_better": sorted(table.lower_is_better),
            "notes": table.notes,
            "rows": [
                {
                    "system": row.label,
                    "runs": [str(run.path) for run in row.runs],
                    "mean": row.mean,
                    "std": row.std,
                    "ci": list(row.ci) if row.ci else None,
                    "p_vs_best": row.p_value,
                }
                for row in table.rows
            ],
        }
        for table in tables
    ]
    return json.dumps(data, indent=2) + "\n"
