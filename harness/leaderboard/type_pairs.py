"""The type-pair breakdown of a verification table: the main score per discourse-type pair.

A verification task whose runs scored each discourse-type pair on its own (`<pair>/<measure>` and
`<pair>/problems`, tasks.pan.common.PanVerificationTask.type_pair_scores) gets a second table: the main
score per type pair, columns the pairs (with their problem counts), rows the systems in the main table's
order, mean ± sample sd over seeds. The main table stays as it is.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from harness.leaderboard.collect import Run
from harness.leaderboard.table import Table, sample_sd
from harness.run_result import RunResult

PAIR_COUNT = "problems"  # `<pair>/problems`: how many test problems a discourse-type pair holds


def type_pairs(result: RunResult) -> dict[str, int]:
    """A verification run's discourse-type pairs with their problem counts (its `<pair>/problems` scores)."""
    if result.task_kind != "verification":
        return {}
    pairs = {}
    for name, value in result.scores.items():
        pair, slash, last = name.rpartition("/")
        if slash and pair and last == PAIR_COUNT and isinstance(value, int) and not isinstance(value, bool):
            pairs[pair] = value
    return pairs


def add_type_pairs(table: Table, runs: Sequence[Run]) -> None:
    """The main score per discourse-type pair of each row (mean and sd over its seeds), if the runs have one.

    One pair holding every problem says nothing the main table does not, and gets no breakdown.
    """
    counts: dict[str, int] = {}
    for run in runs:
        for pair, count in type_pairs(run.result).items():
            counts.setdefault(pair, count)  # one test set per table (`test_data_groups`): the same counts
    if not counts:
        return
    total = runs[0].result.details_count
    if len(counts) == 1 and next(iter(counts.values())) == total:
        return
    table.type_pairs = dict(sorted(counts.items()))
    unrecorded = []
    for row in table.rows:
        if not all(type_pairs(run.result) for run in row.runs):
            unrecorded.append(row.label)  # no cells, not NaN: NaN says the measure is undefined on the pair
            continue
        for pair in table.type_pairs:
            # a run without the pair's score (another harness version) makes the mean NaN, as a missing main score
            values = [run.result.score(f"{pair}/{table.main}") for run in row.runs]
            row.pair_mean[pair] = float(np.mean(values))
            row.pair_std[pair] = float(sample_sd(values))
    table.pair_notes.append(
        f"{table.main} on the test problems of each discourse-type pair (n: problems); mean and sample sd over seeds."
    )
    if unrecorded:
        table.pair_notes.append(
            f"no scores per type pair recorded for {', '.join(unrecorded)}: a `harness score --record` result knows "
            "only its truth file, which names no discourse types (or a run of an older harness)."
        )
    if any(math.isnan(value) for row in table.rows for value in row.pair_mean.values()):
        table.pair_notes.append(
            f"nan: {table.main} is undefined on that pair's problems, all of one class (AUC needs both; "
            "PAN's evaluator would write 0.0)."
        )
