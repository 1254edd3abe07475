"""Leaderboards from result files: one table per task, systems as rows, the task's measures as columns.

`find_runs` reads the runs (each counted once, `collect`), `build_tables` makes the tables (`build`: mean ± sd
over seeds, published reference rows, intervals and tests, the type-pair breakdown) and `render` writes them
as Markdown, LaTeX, CSV or JSON (`formats`); `build_summaries` puts each task's datasets side by side, systems x
datasets on the main score (`summary`, written by `render_summaries`). Runs of different task versions or data
never share a table.
"""

from harness.leaderboard.build import build_tables
from harness.leaderboard.collect import Run, find_runs, unique_runs
from harness.leaderboard.formats import FORMATS, render
from harness.leaderboard.published import read_published
from harness.leaderboard.summary import Summary, build_summaries, parse_dataset_names, render_summaries
from harness.leaderboard.table import Row, Table

__all__ = [
    "FORMATS",
    "Row",
    "Run",
    "Summary",
    "Table",
    "build_summaries",
    "build_tables",
    "find_runs",
    "parse_dataset_names",
    "read_published",
    "render",
    "render_summaries",
    "unique_runs",
]
