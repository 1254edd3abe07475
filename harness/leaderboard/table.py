"""What a leaderboard table holds: systems as rows (mean and sd over seeds), the task's measures as columns."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from harness.leaderboard.collect import Run


def sample_sd(values: object) -> np.ndarray:
    """The sd a table gives over seeds (the first axis): the sample sd (n - 1), NaN for a single run."""
    values = np.asarray(values, dtype=np.float64)
    if len(values) < 2:
        return np.full(values.shape[1:], np.nan)
    return values.std(0, ddof=1)


@dataclass
class Row:
    label: str
    runs: list[Run]
    mean: dict[str, float] = field(default_factory=dict)
    std: dict[str, float] = field(default_factory=dict)
    ci: tuple[float, float] | None = None
    p_value: float | None = None  # against the best row, on the main score
    source: str | None = None  # a published result's citation; None for our runs
    # where one system's runs on this test set were fitted on other training sets: the dataset name of this row's
    # (build._rows_of_runs), shown after its name; "" for a system's only row
    training: str = ""
    # the main score per discourse-type pair (over seeds), where the table has a type-pair breakdown
    pair_mean: dict[str, float] = field(default_factory=dict)
    pair_std: dict[str, float] = field(default_factory=dict)

    @property
    def first_run(self) -> Run:
        """The run with the lowest seed: the one intervals and tests describe."""
        return min(self.runs, key=lambda run: run.seed)

    def unranked(self, main: str) -> bool:
        """Whether the row has no usable main score (NaN or missing): such rows go last, whatever the direction."""
        return main not in self.mean or math.isnan(self.mean[main])


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
    legend: list[str] = field(default_factory=list)  # what its rows' digest labels stand for (also in `notes`)
    dataset: str = ""  # the test data's display name (harness.leaderboard.build.dataset_names)
    format_sample: bool = False  # the project's format sample: scores that mean nothing, marked wherever shown

    @property
    def dataset_label(self) -> str:
        """The dataset's name as tables show it: marked where it is the format sample."""
        return self.dataset + (" (format sample)" if self.format_sample else "")

    @property
    def title(self) -> str:
        """The task (and setting) with the dataset: how headings, captions and figure titles name the table."""
        return f"{self.task} on {self.dataset_label}" if self.dataset else self.task

    @property
    def file_stem(self) -> str:
        """How figure files name the table: task and dataset, so two datasets' figures never overwrite each other."""
        return f"{self.task}-{self.dataset}" if self.dataset else self.task

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
