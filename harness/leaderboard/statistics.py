"""A table's statistics over items: a bootstrap interval of each row's main score, and a paired approximate
randomization test of each row against the best; both on the lowest-seed run of a row (its per-item details)."""

from __future__ import annotations

import numpy as np

from core.errors import HarnessError
from core.progress import Progress
from harness.item_statistics import (
    Columns,
    ItemMeasure,
    bootstrap_interval,
    columns,
    headline_rows,
    item_ids,
    item_measure_function,
    paired_permutation_test,
)
from harness.leaderboard.collect import Run
from harness.leaderboard.table import Table

SIGNIFICANCE_LEVEL = 0.05


def add_intervals(table: Table, *, rounds: int, seed: int) -> None:
    """Each row's 95% percentile bootstrap interval of the main score (`Row.ci`), and a note saying so."""
    # tens of seconds for a few systems: progress per resample, so a plain log shows the step is alive
    with Progress(len(table.rows) * rounds, desc=f"bootstrap intervals, {table.title}", unit="resamples") as progress:
        for row in table.rows:
            run = row.first_run
            _, cols = _columns_of(run)
            compute = _main_measure(run, table, cols)
            row.ci = bootstrap_interval(compute, cols, resamples=rounds, seed=seed, progress=progress)
    table.notes.append(
        f"CI: 95% percentile bootstrap over items ({rounds} resamples) of the main score, lowest-seed run."
    )


def add_significance(table: Table, *, rounds: int, seed: int) -> None:
    """Each row's p-value against the best row (`Row.p_value`), item by item, and a note saying so."""
    if table.rows[0].unranked(table.main):
        raise HarnessError(f"no system has a {table.main}; there is no best one to test against")
    best = table.rows[0].first_run
    best_ids, best_cols = _columns_of(best)
    order = {item: i for i, item in enumerate(best_ids)}
    compute = _main_measure(best, table, best_cols)
    others = table.rows[1:]
    with Progress(len(others) * rounds, desc=f"significance tests, {table.title}", unit="rounds") as progress:
        for row in others:
            ids, cols = _columns_of(row.first_run)
            if sorted(ids) != sorted(best_ids):
                raise HarnessError(
                    f"{row.first_run.path}: not scored on the same items as {best.path}; cannot pair them"
                )
            aligned = np.argsort([order[item] for item in ids], kind="stable")
            cols = {name: values[aligned] for name, values in cols.items()}
            row.p_value = paired_permutation_test(
                compute, best_cols, compute, cols, rounds=rounds, seed=seed, progress=progress
            )
    table.notes.append(
        f"p: paired approximate randomization test against the best system on the main score ({rounds} rounds, "
        f"lowest-seed runs); * marks p below {SIGNIFICANCE_LEVEL}."
    )


def _columns_of(run: Run) -> tuple[list[str], Columns]:
    """The item ids and columns of the rows the run's main score is computed from (`headline_rows`)."""
    details = headline_rows(run.result.task_name, run.result.details())  # checked against its recorded checksum
    return item_ids(details), columns(details)


def _main_measure(run: Run, table: Table, cols: Columns) -> ItemMeasure:
    """The table's main score on some items' columns, computed as `run` computed it."""
    result = run.result
    return item_measure_function(table.main, cols, evaluator=result.evaluator, settings=result.measure_settings)
