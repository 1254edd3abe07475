"""Leaderboards from result files: one table per task, systems as rows, the task's measures as columns.

Runs of one system with several seeds are one row (mean, standard deviation, number of runs).
Optional: a bootstrap confidence interval of the main score and a paired approximate
randomization test of each system against the best. Runs of different task versions or data
are never put in one table.

A run is identified by its content (task name, version and parameters, data checksums, system name and
parameters, seed, and the fingerprint the harness recorded from these), never by where its file lies: a
result file given twice, or a copied run folder, is counted once, with a warning and a note. A row whose
main score is NaN or missing is ranked last, with a warning and a note.

Published results (a task's `TaskMetadata.published` table) whose task and corpus match a table's
runs follow its rows as reference rows, marked "published": never ranked, bolded, resampled or tested.

A verification task whose runs scored each discourse-type pair on its own (`<pair>/<measure>` and
`<pair>/problems`, tasks.pan.common.PanVerificationTask.type_pair_scores) gets a second table: the main
score per type pair, columns the pairs (with their problem counts), rows the systems in the main table's
order, mean ± sd over seeds. The main table stays as it is.
"""

from __future__ import annotations

import csv
import fnmatch
import hashlib
import importlib.resources
import io
import json
import logging
import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from harness.errors import DataError, HarnessError
from harness.metrics.table import higher_is_better, is_known
from harness.results import RESULT_NAME, read_details, read_result

FORMATS = ("markdown", "latex", "csv", "json")
SIGNIFICANCE_LEVEL = 0.05
MAX_LISTED = 3  # paths named in one note before "and N more"
PAIR_COUNT = "problems"  # `<pair>/problems`: how many test problems a discourse-type pair holds

logger = logging.getLogger("harness")


@dataclass(frozen=True)
class Run:
    path: Path
    result: dict[str, Any]
    copies: tuple[Path, ...] = ()  # other result files that hold this same run (see `identity`), counted once

    @property
    def seed(self) -> int:
        seed = self.result.get("seeds", {}).get("seed")
        return seed if isinstance(seed, int) else -1

    @property
    def identity(self) -> str:
        """What makes this run this run: its task (name, version, parameters), data checksums, system (name,
        parameters, answers file), seed and recorded fingerprint; never its path, so a copy has the same identity.

        A result without a fingerprint (an older or hand-made file) also counts its scores and creation time,
        so that only exact copies of it are taken for the same run.
        """
        result = self.result
        task, system = _section(result, "task"), _section(result, "system")
        data = task.get("data")
        checksums = (
            {split: part.get("checksum") for split, part in data.items() if isinstance(part, dict)}
            if isinstance(data, dict)
            else None
        )
        answers = system.get("answers")
        key: dict[str, Any] = {
            "task": [task.get("name"), task.get("version"), task.get("params", {})],
            "data": checksums,
            "system": [
                system.get("name"),
                system.get("params", {}),
                answers.get("checksum") if isinstance(answers, dict) else None,
            ],
            "seed": _section(result, "seeds").get("seed"),
            "fingerprint": result.get("fingerprint"),
        }
        if not result.get("fingerprint"):
            key |= {"scores": result.get("scores"), "created": result.get("created")}
        return hashlib.sha256(json.dumps(key, sort_keys=True, default=str).encode("utf-8")).hexdigest()

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
    source: str | None = None  # a published result's citation; None for our runs
    # the main score per discourse-type pair (over seeds), where the table has a type-pair breakdown
    pair_mean: dict[str, float] = field(default_factory=dict)
    pair_std: dict[str, float] = field(default_factory=dict)

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
    published: list[Row] = field(default_factory=list)  # reference rows from the literature, never ranked
    # discourse-type pair -> its test problems, in column order; empty: no breakdown table
    type_pairs: dict[str, int] = field(default_factory=dict)
    pair_notes: list[str] = field(default_factory=list)

    def best(self, measure: str) -> float | None:
        values = [row.mean[measure] for row in self.rows if measure in row.mean and not math.isnan(row.mean[measure])]
        if not values:
            return None
        return min(values) if measure in self.lower_is_better else max(values)

    def best_in_pair(self, pair: str) -> float | None:
        """The best mean main score of a type pair's column; None where every row's is NaN."""
        values = [row.pair_mean[pair] for row in self.rows if not math.isnan(row.pair_mean.get(pair, math.nan))]
        if not values:
            return None
        return min(values) if self.main in self.lower_is_better else max(values)


def _section(result: dict[str, Any], name: str) -> dict[str, Any]:
    section = result.get(name)
    return section if isinstance(section, dict) else {}


def find_runs(paths: Iterable[Path]) -> list[Run]:
    """Every result.json in the given folders (recursively) or given as files, each run once (see `unique_runs`).

    A file reached twice (the same folder given twice, or a folder and a file inside it) is read once.
    """
    paths = list(paths)
    runs = []
    seen: set[Path] = set()
    repeated: list[Path] = []
    for path in paths:
        path = Path(path)
        if path.is_file():
            files = [path]
        elif path.is_dir():
            files = sorted(path.rglob(RESULT_NAME))
        else:
            raise HarnessError(f"{path}: no such file or folder")
        for file in files:
            real = file.resolve()
            if real in seen:
                repeated.append(file)
                continue
            seen.add(real)
            runs.append(Run(file, read_result(file)))
    if not runs:
        raise HarnessError(f"no {RESULT_NAME} found under {', '.join(str(p) for p in paths)}")
    if repeated:
        logger.warning(
            "%d result file(s) were given more than once (%s); each is counted once", len(repeated), _listed(repeated)
        )
    return unique_runs(runs)


def unique_runs(runs: Iterable[Run]) -> list[Run]:
    """The runs with copies of one run (same `Run.identity`) merged into the first found, which lists them as
    `copies`; each copy is logged as a warning, and the tables note it. Running it twice changes nothing."""
    kept: dict[str, Run] = {}
    for run in runs:
        identity = run.identity
        first = kept.get(identity)
        if first is None:
            kept[identity] = run
            continue
        if run.path.resolve() == first.path.resolve():  # the same file again, not a copy
            logger.warning("%s was given more than once; counted once", run.path)
            continue
        differ = _score_differences(first, run)
        logger.warning(
            "%s holds the same run as %s (same task, data, system, params and seed); counted once%s",
            run.path,
            first.path,
            f", though its scores differ ({differ}): the first is used" if differ else "",
        )
        kept[identity] = replace(first, copies=(*first.copies, run.path, *run.copies))
    return list(kept.values())


def _score_differences(first: Run, other: Run) -> str:
    """ "measure a vs b, ..." for the scores in which two copies of one run disagree; "" if none."""
    ours, theirs = _section(first.result, "scores"), _section(other.result, "scores")
    differ = [
        f"{name} {ours.get(name)!r} vs {theirs.get(name)!r}"
        for name in sorted(set(ours) | set(theirs))
        if not _same_number(ours.get(name), theirs.get(name))
    ]
    return ", ".join(differ)


def _same_number(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return a == b


def _listed(paths: Sequence[Path]) -> str:
    """Up to MAX_LISTED paths, then "and N more"."""
    text = ", ".join(str(path) for path in paths[:MAX_LISTED])
    return text + (f" and {len(paths) - MAX_LISTED} more" if len(paths) > MAX_LISTED else "")


def build_tables(
    runs: Sequence[Run], *, ci: bool = False, significance: bool = False, resamples: int = 1000, seed: int = 0
) -> list[Table]:
    """One table per task and task setting, rows sorted by the main score (best first).

    Runs of one task with other task parameters (e.g. another episode length) get a table of
    their own, named by the parameters that set them apart.
    """
    by_task: dict[tuple[str, str], list[Run]] = defaultdict(list)
    for run in unique_runs(runs):
        task = run.result["task"]
        by_task[(task["name"], json.dumps(task.get("params", {}), sort_keys=True))].append(run)
    tables = []
    for name, params_json in sorted(by_task):
        task_runs = by_task[(name, params_json)]
        siblings = [json.loads(other) for other_name, other in by_task if other_name == name]
        table_name = name + _setting_label(json.loads(params_json), siblings)
        _refuse_mixed(table_name, task_runs)
        table = _table(table_name, task_runs)
        table.published = published_rows(name, _corpus(task_runs[0]), table.measures)
        if table.published:
            table.notes.append("published: results reported in the literature on this corpus, for reference only.")
        # a task whose per-item details cannot give its main score (e.g. EER from per-query rows)
        # still gets its table, with a note instead of intervals or tests
        for wanted, add in ((ci, _add_intervals), (significance, _add_significance)):
            if not wanted:
                continue
            try:
                add(table, rounds=resamples, seed=seed)
            except DataError:  # a broken details file is an error, not a missing feature
                raise
            except HarnessError as exc:
                table.notes.append(f"{add.__name__.removeprefix('_add_')} not available: {exc}")
        tables.append(table)
    return tables


def _corpus(run: Run) -> str | None:
    """The test corpus folder name a run recorded (`task.data.test.corpus`), if it did."""
    corpus = run.result["task"].get("data", {}).get("test", {}).get("corpus")
    return corpus if isinstance(corpus, str) else None


def published_rows(task_name: str, corpus: str | None, measures: Sequence[str]) -> list[Row]:
    """Reference rows for a table: the task's published results whose corpus glob matches `corpus`.

    The task's metadata names its table (`TaskMetadata.published`, "package:file.csv"); a task not in
    the registry, a task without a table, or a run that recorded no corpus gets none.
    """
    if corpus is None:
        return []
    from harness import registry

    try:
        metadata = registry.task_class(task_name).metadata
    except HarnessError:  # a result of a task this harness does not know: no anchors, the table still renders
        return []
    rows = []
    for entry in read_published(metadata.published):
        if entry["task"] != task_name or not fnmatch.fnmatchcase(corpus, entry["corpus"]):
            continue
        mean = {m: float(entry[m]) for m in measures if entry.get(m, "").strip()}
        rows.append(Row(label=entry["system"], runs=[], mean=mean, source=entry["source"]))
    return rows


def read_published(reference: str) -> list[dict[str, str]]:
    """The rows of a published-results table ("package:file.csv"); [] for ""; a HarnessError naming a bad one."""
    if not reference:
        return []
    package, _, name = reference.partition(":")
    try:
        text = importlib.resources.files(package).joinpath(name).read_text(encoding="utf-8")
    except (ModuleNotFoundError, FileNotFoundError, NotADirectoryError) as error:
        raise HarnessError(f"published results {reference!r}: cannot be read ({error})") from error
    rows = list(csv.DictReader(io.StringIO(text)))
    required = {"task", "corpus", "system", "source"}
    for line, row in enumerate(rows, start=2):
        missing = sorted(key for key in required if not (row.get(key) or "").strip())
        if missing:
            raise HarnessError(f"published results {reference}: line {line} has no {', '.join(missing)}")
        for key, value in row.items():
            if key in required or not (value or "").strip():
                continue
            try:
                float(value)
            except ValueError:
                raise HarnessError(
                    f"published results {reference}: line {line}, {key}: not a number: {value!r}"
                ) from None
    return rows


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
    notes = []
    for (name, digest), system_runs in by_system.items():
        label = name if names.count(name) == 1 else f"{name}@{digest}"
        row = Row(label=label, runs=sorted(system_runs, key=lambda run: run.seed))
        for measure in measures:
            if measure == main:  # every run counts: one without a main score makes the row's mean NaN
                values = [_main_score(task_name, run, main) for run in system_runs]
            else:
                values = [
                    _number(run.result["scores"][measure]) for run in system_runs if measure in run.result["scores"]
                ]
            if values:
                row.mean[measure] = float(np.mean(values))
                row.std[measure] = float(np.std(values, ddof=1)) if len(values) > 1 else 0.0
        rows.append(row)
        for run in row.runs:
            if run.copies:
                notes.append(f"counted once: {run.path} (the same run is also in {_listed(run.copies)}).")
    sign = 1.0 if main in lower else -1.0
    rows.sort(
        key=lambda row: (True, 0.0, row.label) if _unranked(row, main) else (False, sign * row.mean[main], row.label)
    )
    unranked = [row.label for row in rows if _unranked(row, main)]
    if unranked:
        notes.append(f"ranked last: {', '.join(unranked)}: no {main} (NaN or missing in a run).")
    table = Table(task_name, task["version"], main, measures, lower, rows, notes=notes)
    _add_type_pairs(table, runs)
    return table


def type_pairs(result: dict[str, Any]) -> dict[str, int]:
    """A verification run's discourse-type pairs with their problem counts (its `<pair>/problems` scores)."""
    if _section(result, "task").get("kind") != "verification":
        return {}
    pairs = {}
    for name, value in _section(result, "scores").items():
        pair, slash, last = name.rpartition("/")
        if slash and pair and last == PAIR_COUNT and isinstance(value, int) and not isinstance(value, bool):
            pairs[pair] = value
    return pairs


def _add_type_pairs(table: Table, runs: Sequence[Run]) -> None:
    """The main score per discourse-type pair of each row (mean and sd over its seeds), if the runs have one.

    One pair holding every problem says nothing the main table does not, and gets no breakdown.
    """
    counts: dict[str, int] = {}
    for run in runs:
        for pair, count in type_pairs(run.result).items():
            counts.setdefault(pair, count)  # one test set per table (`_refuse_mixed`): the same counts
    if not counts:
        return
    total = _section(runs[0].result, "details").get("count")
    if len(counts) == 1 and next(iter(counts.values())) == total:
        return
    table.type_pairs = dict(sorted(counts.items()))
    for row in table.rows:
        for pair in table.type_pairs:
            # a run without the pair's score (another harness version) makes the mean NaN, as a missing main score
            values = [_number(run.result["scores"].get(f"{pair}/{table.main}")) for run in row.runs]
            row.pair_mean[pair] = float(np.mean(values))
            row.pair_std[pair] = float(np.std(values, ddof=1)) if len(values) > 1 else 0.0
    table.pair_notes.append(
        f"{table.main} on the test problems of each discourse-type pair (n: problems); mean and sd over seeds."
    )
    if any(math.isnan(value) for row in table.rows for value in row.pair_mean.values()):
        table.pair_notes.append(
            f"nan: {table.main} is undefined on that pair's problems, all of one class (AUC needs both; "
            "PAN's evaluator would write 0.0)."
        )


def _number(value: Any) -> float:
    """A score as a float; NaN for null or anything not a number (never a crash on a hand-edited file)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return math.nan


def _main_score(task_name: str, run: Run, main: str) -> float:
    """A run's main score; NaN, with a warning, where it is missing, null, not a number or NaN."""
    scores = run.result["scores"]
    value = _number(scores.get(main))
    if math.isnan(value):
        what = "is missing" if main not in scores else f"is {scores[main]!r}" if scores[main] is not None else "is null"
        logger.warning("%s: the main score %s %s; its row in %s is ranked last", run.path, main, what, task_name)
    return value


def _unranked(row: Row, main: str) -> bool:
    """Whether a row has no usable main score (NaN or missing): such rows go last, whatever the direction."""
    return main not in row.mean or math.isnan(row.mean[main])


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

    if _unranked(table.rows[0], table.main):
        raise HarnessError(f"no system has a {table.main}; there is no best one to test against")
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


def header_cells(table: Table) -> list[str]:
    header = ["system", "runs"] + table.measures
    if any(row.ci for row in table.rows):
        header.append(f"{table.main} 95% CI")
    if any(row.p_value is not None for row in table.rows):
        header.append("p vs best")
    return header


def row_cells(table: Table, row: Row, digits: int, *, pm: str, bold: str, dash: str, italic: str = "{}") -> list[str]:
    """One table row as text cells; `bold` is a format string such as "**{}**", `italic` marks published rows."""
    if row.source is not None:  # a published result: marked, never bolded as best, no interval or test
        cells = [italic.format(row.label), "published"]
        cells += [f"{row.mean[m]:.{digits}f}" if m in row.mean else dash for m in table.measures]
        cells += [dash] * (any(r.ci for r in table.rows) + any(r.p_value is not None for r in table.rows))
        return cells
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


def pair_title(table: Table) -> str:
    return f"{table.task}: {table.main} per discourse-type pair"


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
            cells.append(bold.format(text) if mean == table.best_in_pair(pair) else text)
    return cells


def _markdown(tables: Sequence[Table], digits: int) -> str:
    out = []
    for table in tables:
        direction = ", ".join(f"{m} lower is better" for m in table.measures if m in table.lower_is_better)
        facts = [f"version {table.version}", f"main score {table.main}"] + ([direction] if direction else [])
        out.append(f"### {table.task} ({'; '.join(facts)})\n")
        header = header_cells(table)
        out.append("| " + " | ".join(header) + " |")
        out.append("|" + "|".join(["---"] + ["---:"] * (len(header) - 1)) + "|")
        for row in [*table.rows, *table.published]:
            cells = row_cells(table, row, digits, pm="±", bold="**{}**", dash="-", italic="_{}_")
            out.append("| " + " | ".join(cells) + " |")
        out.extend(["", *table.notes, *source_lines(table), ""])
        if table.type_pairs:
            header = pair_header_cells(table)
            out.append(f"#### {pair_title(table)}\n")
            out.append("| " + " | ".join(header) + " |")
            out.append("|" + "|".join(["---"] + ["---:"] * (len(header) - 1)) + "|")
            for row in table.rows:
                cells = pair_row_cells(table, row, digits, pm="±", bold="**{}**", dash="-")
                out.append("| " + " | ".join(cells) + " |")
            out.extend(["", *table.pair_notes, ""])
    return "\n".join(out)


_LATEX_SPECIALS = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
                   "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}"}  # fmt: skip


def latex_escape(text: str) -> str:
    return "".join(_LATEX_SPECIALS.get(char, char) for char in text)


def _latex(tables: Sequence[Table], digits: int) -> str:
    out = ["% requires \\usepackage{booktabs}"]
    for table in tables:
        header = header_cells(table)
        out.append("\\begin{table}[t]\n\\centering")
        caption = f"{table.task} (version {table.version}); rows sorted by {table.main}; best value in bold."
        out.append(f"\\caption{{{latex_escape(caption)}}}")
        out.append("\\begin{tabular}{l" + "r" * (len(header) - 1) + "}\n\\toprule")
        out.append(" & ".join(latex_escape(h) for h in header) + " \\\\\n\\midrule")
        for row in table.rows:
            cells = row_cells(table, row, digits, pm="$\\pm$", bold="\\textbf{{{}}}", dash="--")
            cells[0] = latex_escape(cells[0])
            out.append(" & ".join(cell.replace("*", "$^{*}$") for cell in cells) + " \\\\")
        if table.published:
            out.append("\\midrule")
            for row in table.published:
                cells = row_cells(table, row, digits, pm="$\\pm$", bold="{}", dash="--")
                cells[0] = "\\textit{" + latex_escape(cells[0]) + "}"
                out.append(" & ".join(cells) + " \\\\")
        out.append("\\bottomrule\n\\end{tabular}")
        if table.notes:
            notes = " ".join([*table.notes, *source_lines(table)])
            out.append("\\\\[2pt]{\\footnotesize " + latex_escape(notes) + "}")
        out.append("\\end{table}\n")
        if table.type_pairs:
            out.append(_latex_pairs(table, digits))
    return "\n".join(out)


def _latex_pairs(table: Table, digits: int) -> str:
    header = pair_header_cells(table)
    out = ["\\begin{table}[t]\n\\centering", f"\\caption{{{latex_escape(pair_title(table))}.}}"]
    out.append("\\begin{tabular}{l" + "r" * (len(header) - 1) + "}\n\\toprule")
    out.append(" & ".join(latex_escape(h) for h in header) + " \\\\\n\\midrule")
    for row in table.rows:
        cells = pair_row_cells(table, row, digits, pm="$\\pm$", bold="\\textbf{{{}}}", dash="--")
        out.append(" & ".join([latex_escape(cells[0]), *cells[1:]]) + " \\\\")
    out.append("\\bottomrule\n\\end{tabular}")
    out.append("\\\\[2pt]{\\footnotesize " + latex_escape(" ".join(table.pair_notes)) + "}")
    out.append("\\end{table}\n")
    return "\n".join(out)


def _csv(tables: Sequence[Table], digits: int) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(
        ["task", "version", "system", "runs", "measure", "mean", "std", "ci_low", "ci_high", "p_vs_best", "published"]
    )
    for table in tables:
        for row in table.rows:
            for measure in table.measures:
                if measure not in row.mean:
                    continue
                is_main = measure == table.main
                ci = row.ci if (is_main and row.ci) else (None, None)
                p = row.p_value if is_main else None
                writer.writerow([table.task, table.version, row.label, len(row.runs), measure,
                                 repr(row.mean[measure]), repr(row.std[measure]), ci[0], ci[1], p, None])  # fmt: skip
        for row in table.published:
            for measure in table.measures:
                if measure in row.mean:
                    writer.writerow([table.task, table.version, row.label, 0, measure, repr(row.mean[measure]),
                                     None, None, None, None, row.source])  # fmt: skip
        for row in table.rows:  # the breakdown: the main score of each type pair, named as result.json names it
            for pair in table.type_pairs:
                mean, std = repr(row.pair_mean[pair]), repr(row.pair_std[pair])
                writer.writerow([table.task, table.version, row.label, len(row.runs), f"{pair}/{table.main}",
                                 mean, std, None, None, None, None])  # fmt: skip
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


def _finite(values: dict[str, float]) -> dict[str, float | None]:
    """NaN as null: the JSON standard has no NaN, and strict readers refuse Python's `NaN`."""
    return {name: None if math.isnan(value) else value for name, value in values.items()}


def source_lines(table: Table) -> list[str]:
    """Notes naming where each published row comes from."""
    return [f"published: {row.label}: {row.source}" for row in table.published]
