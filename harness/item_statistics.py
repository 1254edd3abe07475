"""A run's measures recomputed from its per-item details, for resampling (bootstrap, permutation).

Each run stores one row per scored item in details.jsonl. The rows' fields say how a measure is
recomputed from any subset of them:

- verification rows `{"id", "value", "same"}`: the measures of `answers` (the task's evaluator profile);
- ranking rows `{"rank"}` (1-based rank of the first match, 0 = no match): the measures of `ranks`;
- trial rows `{"score", "same"}` (a similarity and whether the pair matches): the measures of `trials`.

Which measure reads which rows, and how it is computed, is the measure table's (harness.metrics.table):
a measure added there can be resampled without a change here.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from core.errors import HarnessError
from core.progress import Progress

Columns = dict[str, np.ndarray]
ItemMeasure = Callable[[Columns], float]  # a measure on some items' columns (not harness.metrics.table.Measure)

_COLUMN_SETS = (("value", "same"), ("rank",), ("score", "same"))


def headline_rows(task_name: str, details: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows a run's main score and headline curves are computed from: those its task's `ranking_rows` selects
    (darkweb: the within-market queries, not the migrant queries, whose rows repeat an episode's id; reddit: the
    ranking rows); every row for other tasks, or for a task this harness does not know. Audit 14: the bootstrap
    resampled the migrant rows with the rest, and the permutation test paired rows by an id they share."""
    from harness import registry

    try:
        selected = registry.task_class(task_name).metadata.ranking_rows
    except HarnessError:
        selected = {}
    return [row for row in details if all(row.get(field) == value for field, value in selected.items())]


def item_ids(details: Sequence[dict[str, Any]]) -> list[str]:
    """The items' identities, to pair two runs item by item; an id given to two items is refused (a pairing by it
    would match other items)."""
    for key in ("id", "query", "trial"):
        if details and key in details[0]:
            ids = [str(row[key]) for row in details]
            repeated = [item for item, count in Counter(ids).items() if count > 1]
            if repeated:
                raise HarnessError(f"the items' {key} {repeated[0]!r} names more than one item: they cannot be paired")
            return ids
    return [str(i) for i in range(len(details))]


def columns(details: Sequence[dict[str, Any]]) -> Columns:
    """The fields a measure needs, as arrays (one entry per item)."""
    if not details:
        raise HarnessError("no per-item details to resample")
    for names in _COLUMN_SETS:
        if set(names) <= details[0].keys():
            if any(not set(names) <= row.keys() for row in details):
                raise HarnessError(f"details rows mix kinds (not all have {', '.join(names)}); no resampling rule")
            return {name: np.array([row[name] for row in details]) for name in names}
    raise HarnessError(f"details rows with fields {sorted(details[0])} have no resampling rule")


def subset(cols: Columns, index: np.ndarray) -> Columns:
    return {name: values[index] for name, values in cols.items()}


def item_measure_function(
    measure: str, cols: Columns, *, evaluator: str | None = None, settings: Mapping[str, Any] | None = None
) -> ItemMeasure:
    """A function from columns to `measure`, computed as the run computed it (by the measure table).

    `evaluator` and `settings` are the run's (`RunResult.evaluator`, `RunResult.measure_settings`).
    """
    from harness.metrics import table

    kind = "answers" if "value" in cols else "ranks" if "rank" in cols else "trials"
    if not table.is_known(measure) or table.resolve(measure).measure.inputs != kind:
        raise HarnessError(f"measure {measure!r} cannot be recomputed from {_KIND_WORDS[kind]}")
    # a verification run's measures are its evaluator profile's; other runs record their measures' settings
    settings = {"profile": evaluator or "pan23"} if kind == "answers" else settings or {}
    try:
        compute = table.measure_function(measure, settings)
    except ValueError as exc:
        raise HarnessError(f"measure {measure!r} cannot be recomputed: {exc}") from exc
    if kind == "answers":
        return lambda cols: compute(cols["same"].astype(bool), cols["value"].astype(np.float64))
    if kind == "ranks":
        return lambda cols: _nan_if_undefined(compute, cols["rank"])
    return lambda cols: compute(cols["score"].astype(np.float64), cols["same"].astype(bool))


_KIND_WORDS = {"answers": "verification answers", "ranks": "ranks", "trials": "trials"}


def _nan_if_undefined(compute: Callable[[np.ndarray], float], ranks: np.ndarray) -> float:
    """A ranking measure of a resample; NaN where no query has a match (such queries are left out)."""
    if not np.any(ranks > 0):
        return float("nan")
    return compute(ranks)


def bootstrap_interval(
    compute: ItemMeasure,
    cols: Columns,
    *,
    resamples: int = 1000,
    level: float = 0.95,
    seed: int = 0,
    progress: Progress | None = None,
) -> tuple[float, float]:
    """Percentile bootstrap interval of a measure over items (resampled with replacement); `progress`, if
    given, advances by one per resample."""
    n_items = len(next(iter(cols.values())))
    rng = np.random.default_rng(seed)
    values = np.empty(resamples)
    for i in range(resamples):
        values[i] = _safe(compute, subset(cols, rng.integers(0, n_items, n_items)))
        if progress is not None:
            progress.update()
    values = values[np.isfinite(values)]
    if values.size == 0:
        return float("nan"), float("nan")
    tail = (1.0 - level) / 2.0
    return float(np.quantile(values, tail)), float(np.quantile(values, 1.0 - tail))


def _safe(compute: ItemMeasure, cols: Columns) -> float:
    try:
        return compute(cols)
    except ValueError:  # a resample with one class only: no EER, no AUC ranking
        return float("nan")


def paired_permutation_test(
    compute_a: ItemMeasure,
    cols_a: Columns,
    compute_b: ItemMeasure,
    cols_b: Columns,
    *,
    rounds: int = 1000,
    seed: int = 0,
    progress: Progress | None = None,
) -> float:
    """Approximate randomization (as PAN's overviews use): two-sided p-value of the difference.

    The runs must be aligned item by item. Each round swaps the two systems' outputs on a random
    half of the items and counts differences at least as large as the observed one;
    p = (count + 1) / (rounds + 1). `progress`, if given, advances by one per round.
    """
    observed = abs(compute_a(cols_a) - compute_b(cols_b))
    n_items = len(next(iter(cols_a.values())))
    rng = np.random.default_rng(seed)
    count = 0
    for _ in range(rounds):
        mask = rng.random(n_items) < 0.5
        swapped_a = {k: np.where(mask, cols_b[k], v) for k, v in cols_a.items()}
        swapped_b = {k: np.where(mask, v, cols_b[k]) for k, v in cols_a.items()}
        if abs(compute_a(swapped_a) - compute_b(swapped_b)) >= observed - 1e-12:
            count += 1
        if progress is not None:
            progress.update()
    return (count + 1) / (rounds + 1)
