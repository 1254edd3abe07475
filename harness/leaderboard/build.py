"""Leaderboard tables from runs: one table per task, task setting and dataset, systems as rows, best first.

Runs of one system with several seeds are one row (mean, standard deviation, number of runs). A row whose
main score is NaN or missing is ranked last, with a warning and a note. Optional: a bootstrap confidence
interval of the main score and a paired approximate randomization test of each system against the best.
"""

from __future__ import annotations

import json
import logging
import math
import string
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import numpy as np

from core.errors import DataError, HarnessError
from harness.leaderboard.collect import Run, listed, refuse_two_versions, test_data_groups, unique_runs
from harness.leaderboard.labels import SystemLabels, row_labels, system_key
from harness.leaderboard.published import published_rows
from harness.leaderboard.statistics import add_intervals, add_significance
from harness.leaderboard.table import Row, Table, sample_sd
from harness.leaderboard.type_pairs import add_type_pairs
from harness.metrics.table import higher_is_better, is_known
from harness.run_result import RunResult

logger = logging.getLogger("harness")


def build_tables(
    runs: Sequence[Run], *, ci: bool = False, significance: bool = False, resamples: int = 1000, seed: int = 0
) -> list[Table]:
    """One table per task, task setting and dataset, rows sorted by the main score (best first).

    Runs of one task with other task parameters (e.g. another episode length) get a table of
    their own, named by the parameters that set them apart; runs on other test data (PAN14 essays and novels)
    one per dataset, named by the dataset (`dataset_names`). Runs of one task in two versions are refused.
    """
    by_task: dict[tuple[str, str], list[Run]] = defaultdict(list)
    runs = unique_runs(runs)
    for run in runs:
        by_task[(run.result.task_name, json.dumps(run.result.task_params, sort_keys=True))].append(run)
    systems = SystemLabels(runs)  # one label per system setting in every table (`harness.leaderboard.labels`)
    tables = []
    for name, params_json in sorted(by_task):
        task_runs = by_task[(name, params_json)]
        siblings = [json.loads(other) for other_name, other in by_task if other_name == name]
        table_name = name + _setting_label(json.loads(params_json), siblings)
        groups = test_data_groups(task_runs)
        refuse_two_versions(table_name, groups)
        older = any(not r.result.test_truth_checksum for r in task_runs) and any(
            r.result.test_truth_only for r in task_runs
        )
        for dataset, group in sorted(zip(dataset_names(groups), groups, strict=True), key=lambda pair: pair[0]):
            table = _table(table_name, group, systems)
            table.dataset = dataset
            if any(run.result.format_sample for run in group):  # one test data: all runs of it, or none
                table.format_sample = True
                table.notes.append("format sample: the project's sample of the data format, not real data; these "
                                   "scores mean nothing.")  # fmt: skip
            if older and len(groups) > 1:
                table.notes.append(
                    "a result written before truth checksums were recorded is compared by its files' checksum, which "
                    "a `harness score --record` result never shares with a run: run or record it again to put them "
                    "in one table."
                )
            table.published = published_rows(name, group[0].result.test_corpus, table.measures)
            if table.published:
                table.notes.append("published: results reported in the literature on this corpus, for reference only.")
            _add_statistics(table, ci=ci, significance=significance, resamples=resamples, seed=seed)
            tables.append(table)
    return tables


def dataset_names(groups: Sequence[Sequence[Run]]) -> list[str]:
    """Each test-data group's name: its runs' dataset name (names joined with " / " where its runs were given
    several; a run's name before a record's, which names only a truth file's folder); where two groups would share
    a name, each is told apart by its test truth's checksum."""
    names = []
    for group in groups:
        named = [run for run in group if not run.result.test_truth_only] or group
        names.append(" / ".join(sorted({run.result.dataset for run in named})))
    shared = {name for name in names if names.count(name) > 1}
    for i, group in enumerate(groups):
        if names[i] in shared:
            result = group[0].result
            # a run's test files tell apart runs on one truth but other texts; a record has only its truth
            checksum = result.test_truth_checksum if result.test_truth_only else result.data_checksums.get("test")
            names[i] = f"{names[i]} (test data {(checksum or '?').removeprefix('sha256:')[:8]})"
    return names


def _add_statistics(table: Table, *, ci: bool, significance: bool, resamples: int, seed: int) -> None:
    """Intervals and tests where asked; a task whose per-item details cannot give its main score (e.g. EER from
    per-query rows) still gets its table, with a note instead."""
    for wanted, add in ((ci, add_intervals), (significance, add_significance)):
        if not wanted:
            continue
        try:
            add(table, rounds=resamples, seed=seed)
        except DataError:  # a broken details file is an error, not a missing feature
            raise
        except HarnessError as exc:
            table.notes.append(f"{add.__name__.removeprefix('add_')} not available: {exc}")


def _setting_label(params: dict[str, Any], all_params: list[dict[str, Any]]) -> str:
    """ " [k=v, ...]" for the parameters whose values differ between the tables of one task; "" if none."""
    differing = sorted(k for k in params if any(other.get(k) != params[k] for other in all_params))
    return " [" + ", ".join(f"{k}={params[k]}" for k in differing) + "]" if differing else ""


def _table(task_name: str, runs: Sequence[Run], systems: SystemLabels) -> Table:
    first = runs[0].result
    main = first.main_score
    measures = list(first.measures or first.scores)
    measures = [main] + [m for m in measures if m != main]
    lower = _lower_is_better(measures, first.recorded_lower_is_better)

    by_system = _rows_of_runs(runs)
    labels = row_labels(by_system, systems)
    rows = []
    notes = []
    for key, system_runs in by_system.items():
        name, _, dataset = key
        _refuse_two_runs_of_one_seed(name, system_runs)
        row = Row(label=labels[key], runs=sorted(system_runs, key=lambda run: run.seed), training=dataset)
        for measure in measures:
            if measure == main:  # every run counts: one without a main score makes the row's mean NaN
                values = [_main_score(task_name, run, main) for run in system_runs]
            else:
                values = [run.result.score(measure) for run in system_runs if measure in run.result.scores]
            if values:
                row.mean[measure] = float(np.mean(values))
                row.std[measure] = float(sample_sd(values))
        rows.append(row)
        for run in row.runs:
            if run.copies:
                notes.append(f"counted once: {run.path} (the same run is also in {listed(run.copies)}).")
    sign = 1.0 if main in lower else -1.0
    rows.sort(
        key=lambda row: (True, 0.0, row.label) if row.unranked(main) else (False, sign * row.mean[main], row.label)
    )
    unranked = [row.label for row in rows if row.unranked(main)]
    if unranked:
        notes.append(f"ranked last: {', '.join(unranked)}: no {main} (NaN or missing in a run).")
    note = task_text(rows[0].first_run.result, "table_note") if rows else ""
    notes += [note] if note else []
    legend = systems.legend(systems.label((name, digest)) for name, digest, _ in by_system)
    table = Table(task_name, first.task_version, main, measures, lower, rows, notes=notes + legend, legend=legend)
    add_type_pairs(table, runs)
    return table


def task_text(result: RunResult, field: str) -> str:
    """The task's metadata text `field` (`table_note`, `curve_note`: what its figures count), filled from `result`'s
    scores, task parameters and measure settings; "" for a task without one, or one this harness does not know."""
    from harness import registry

    try:
        text = getattr(registry.task_class(result.task_name).metadata, field)
    except HarnessError:
        return ""
    fields = {**result.scores, **result.task_params, **result.measure_settings}
    return string.Formatter().vformat(text, (), _NoteFields({key: _note_value(value) for key, value in fields.items()}))


class _NoteFields(dict):
    def __missing__(self, key: str) -> str:
        return "?"


def _note_value(value: Any) -> str:
    """A field as a note shows it: whole numbers without ".0", lists joined."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, (list, tuple)):
        return ", ".join(map(str, value))
    return str(value)


def _rows_of_runs(runs: Sequence[Run]) -> dict[tuple[str, str, str], list[Run]]:
    """The runs of each row: one system (name and parameters) and its seeds, keyed (name, parameters' digest, "").

    Where one system was fitted on other training data and scored on the same test set (a cross-genre run beside an
    in-genre one), each training set gets a row of its own, keyed and labelled by the dataset name its runs carry:
    its seeds are not the other's."""
    by_system: dict[tuple[str, str, str], list[Run]] = defaultdict(list)
    for run in runs:
        by_system[(*system_key(run.result), "")].append(run)
    for (name, digest, _), system_runs in list(by_system.items()):
        trained_on = {run.result.data_checksums.get("train") for run in system_runs}
        if len(trained_on) < 2 or len({run.result.dataset for run in system_runs}) < 2:
            continue
        del by_system[(name, digest, "")]
        for run in system_runs:
            by_system[(name, digest, run.result.dataset or str(run.result.data_checksums.get("train")))].append(run)
    return by_system


def _refuse_two_runs_of_one_seed(name: str, runs: Sequence[Run]) -> None:
    """A row is one system's seeds: two different runs with one name, parameters and seed (copies are merged before,
    see `unique_runs`) are two systems, or one trained on other data, and their mean would be no system's score."""
    by_seed: dict[int | None, Run] = {}
    for run in runs:
        other = by_seed.setdefault(run.result.seed, run)
        if other is run:
            continue
        seed = "none" if run.result.seed is None else run.result.seed
        differ = "answers" if other.result.answers_checksum != run.result.answers_checksum else "fingerprints"
        raise HarnessError(
            f"{other.path} and {run.path} are two runs of {name!r} with the same parameters, seed ({seed}) and "
            f"dataset name on one test set, with different {differ}: a row averages one system's seeds, not "
            "different runs. Record them under names of their own (`harness score --record ... --system-name "
            "NAME`), give runs on other data their own `--name`, or leave one out of the folders given"
        )


def _main_score(task_name: str, run: Run, main: str) -> float:
    """A run's main score; NaN, with a warning, where it is missing, null, not a number or NaN."""
    scores = run.result.scores
    value = run.result.score(main)
    if math.isnan(value):
        what = "is missing" if main not in scores else f"is {scores[main]!r}" if scores[main] is not None else "is null"
        logger.warning("%s: the main score %s %s; its row in %s is ranked last", run.path, main, what, task_name)
    return value


def _lower_is_better(measures: Sequence[str], recorded: Sequence[str]) -> set[str]:
    """The measures whose lower values are better, by the measure table.

    A name the table does not know (a result written by another harness version) keeps the
    direction its result file recorded, if any (`task.lower_is_better` of older result files).
    """
    return {m for m in measures if (not higher_is_better(m) if is_known(m) else m in recorded)}
