"""A run's measures recomputed from its per-item details, for resampling (bootstrap, permutation).

Each run stores one row per scored item in details.jsonl. The rows' fields say how a measure is
recomputed from any subset of them:

- verification rows `{"id", "value", "same"}`: PAN's measures (the task's evaluator profile);
- ranking rows `{"rank"}` (1-based rank of the first match, 0 = no match): `mrr`, `recall_at_k`;
- trial rows `{"score", "same"}` (a similarity and whether the pair matches): `eer`, `min_dcf`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from harness.errors import HarnessError

Columns = dict[str, np.ndarray]
Measure = Callable[[Columns], float]  # the measure on some items' columns

_COLUMN_SETS = (("value", "same"), ("rank",), ("score", "same"))


def item_ids(details: Sequence[dict[str, Any]]) -> list[str]:
    """The items' identities, to pair two runs item by item."""
    for key in ("id", "query", "trial"):
        if details and key in details[0]:
            return [str(row[key]) for row in details]
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


def measure_function(result: dict[str, Any], measure: str, cols: Columns) -> Measure:
    """A function from columns to `measure`, computed as the run computed it."""
    if "value" in cols:
        return _verification_measure(result, measure)
    if "rank" in cols:
        return _ranking_measure(measure)
    return _trial_measure(result, measure)


def _verification_measure(result: dict[str, Any], measure: str) -> Measure:
    from harness.metrics.verification import PROFILES, evaluate_all

    profile = result["task"].get("evaluator") or "pan23"
    if measure not in (*PROFILES[profile], "overall", "auc_x_c_at_1"):
        raise HarnessError(f"measure {measure!r} cannot be recomputed from verification answers")

    def compute(cols: Columns) -> float:
        scores = evaluate_all(cols["same"].astype(bool), cols["value"].astype(np.float64), profile=profile)
        return scores["auc"] * scores["c_at_1"] if measure == "auc_x_c_at_1" else scores[measure]

    return compute


def _ranking_measure(measure: str) -> Measure:
    match = re.fullmatch(r"recall_at_(\d+)", measure)
    if measure != "mrr" and not match:
        raise HarnessError(f"measure {measure!r} cannot be recomputed from ranks")

    def compute(cols: Columns) -> float:
        ranks = cols["rank"]
        ranks = ranks[ranks > 0]  # queries without a match were left out of the run's scores too
        if ranks.size == 0:
            return float("nan")
        return float(np.mean(1.0 / ranks)) if measure == "mrr" else float(np.mean(ranks <= int(match.group(1))))

    return compute


def _trial_measure(result: dict[str, Any], measure: str) -> Measure:
    from harness.metrics.linking import eer, min_dcf

    settings = result["task"].get("measure_settings", {})
    if measure == "eer":
        variant = settings.get("eer_variant", "interpolated")
        return lambda cols: eer(cols["score"].astype(np.float64), cols["same"].astype(bool), variant=variant)
    if measure == "min_dcf":
        kwargs = {k: settings[k] for k in ("p_target", "c_miss", "c_fa", "normalized") if k in settings}
        return lambda cols: min_dcf(cols["score"].astype(np.float64), cols["same"].astype(bool), **kwargs)
    raise HarnessError(f"measure {measure!r} cannot be recomputed from trials")


def bootstrap_interval(
    compute: Measure, cols: Columns, *, resamples: int = 1000, level: float = 0.95, seed: int = 0
) -> tuple[float, float]:
    """Percentile bootstrap interval of a measure over items (resampled with replacement)."""
    n_items = len(next(iter(cols.values())))
    rng = np.random.default_rng(seed)
    values = np.array([_safe(compute, subset(cols, rng.integers(0, n_items, n_items))) for _ in range(resamples)])
    values = values[np.isfinite(values)]
    if values.size == 0:
        return float("nan"), float("nan")
    tail = (1.0 - level) / 2.0
    return float(np.quantile(values, tail)), float(np.quantile(values, 1.0 - tail))


def _safe(compute: Measure, cols: Columns) -> float:
    try:
        return compute(cols)
    except ValueError:  # a resample with one class only: no EER, no AUC ranking
        return float("nan")


def paired_permutation_test(
    compute_a: Measure, cols_a: Columns, compute_b: Measure, cols_b: Columns, *, rounds: int = 1000, seed: int = 0
) -> float:
    """Approximate randomization (as PAN's overviews use): two-sided p-value of the difference.

    The runs must be aligned item by item. Each round swaps the two systems' outputs on a random
    half of the items and counts differences at least as large as the observed one;
    p = (count + 1) / (rounds + 1).
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
    return (count + 1) / (rounds + 1)
