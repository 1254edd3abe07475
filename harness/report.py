"""`harness report`: the summary table, every leaderboard table and plot of a results folder, with a Markdown index."""

from __future__ import annotations

import logging
from pathlib import Path

from core.files import atomic_write, refuse_used_folder, staged_folder
from harness.leaderboard import FORMATS, build_summaries, build_tables, escape, find_runs, render, render_summaries
from harness.plotting import plot_all
from harness.report_html import render_html
from harness.results import DETAILS_NAME

logger = logging.getLogger("harness")

_SUFFIX = {"markdown": "md", "latex": "tex", "csv": "csv", "json": "json"}


def write_report(
    results: list[Path],
    out_dir: Path,
    *,
    ci: bool,
    significance: bool,
    resamples: int,
    datasets: list[str] | None = None,
    include_format_samples: bool = False,
) -> Path:
    """Write tables/, plots/, index.md and index.html (the same, self-contained, with each run's provenance)
    into out_dir (which must be new or empty, also when the report moves in); return index.md. The summary table
    (systems x datasets, see `build_summaries`: `datasets` picks and orders its columns) comes first, in
    tables/summary.* and both indexes.

    The report is written into a staging folder beside out_dir and moved into place whole: a failure or a kill
    leaves no half report (and what a killed report left there is removed by the next). A run without its
    details.jsonl has no curves: it is left out of the figures, with a note saying so.
    """
    out_dir = Path(out_dir)
    refuse_used_folder(out_dir)  # before the work; staged_folder(new=True) checks again when the report moves in
    runs = find_runs(results)
    for run in runs:  # an edited details file is refused before the first file is written
        run.result.check_details()
    tables = build_tables(runs, ci=ci, significance=significance, resamples=resamples)
    # before the first file is written: an unknown --datasets name is refused with nothing left behind
    summaries = build_summaries(tables, datasets=datasets, include_format_samples=include_format_samples)
    # a run without details (deleted, or copied without them) has no curves: a report without its figures, saying
    # why, serves a user better than none (`harness plot`, asked for figures alone, refuses it)
    plotted = [run for run in runs if (run.path.parent / DETAILS_NAME).is_file()]
    left_out = [run for run in runs if not (run.path.parent / DETAILS_NAME).is_file()]
    for run in left_out:
        logger.warning("%s: missing; %s is left out of the report's figures", run.path.parent / DETAILS_NAME, run.path)
    with staged_folder(out_dir, new=True) as stage:  # which first removes what a killed report left
        _write(stage, results, runs, plotted, left_out, tables, summaries)
    return out_dir / "index.md"


def _write(
    stage: Path, results: list[Path], runs: list, plotted: list, left_out: list, tables: list, summaries: list
) -> None:
    """The report's files, into the staging folder that becomes the report (see write_report)."""
    what = f"is left out of the figures: its {DETAILS_NAME} (the per-problem answers its curves need) is missing"
    table_files, summary_files = [], []
    (stage / "tables").mkdir(parents=True, exist_ok=True)
    for fmt in FORMATS:
        path = stage / "tables" / f"leaderboard.{_SUFFIX[fmt]}"
        with atomic_write(path) as handle:
            handle.write(render(tables, fmt))
        table_files.append(path)
        if summaries:  # none where every dataset is a format sample
            path = stage / "tables" / f"summary.{_SUFFIX[fmt]}"
            with atomic_write(path) as handle:
                handle.write(render_summaries(summaries, fmt))
            summary_files.append(path)
    plots = plot_all(plotted, stage / "plots")

    lines = ["# Results report", "", f"{len(runs)} runs from: " + ", ".join(map(escape.markdown_code, results)), ""]
    lines += ["One page with the figures inside and each run's provenance: [index.html](index.html)", ""]
    if summaries:
        lines += ["## Summary", "", render_summaries(summaries, "markdown"), "Summary as files: "]
        lines += [", ".join(f"[{p.name}]({p.relative_to(stage)})" for p in summary_files), ""]
    lines += ["## Leaderboards", "", render(tables, "markdown"), "Tables as files: "]
    lines += [", ".join(f"[{p.name}]({p.relative_to(stage)})" for p in table_files), ""]
    pngs = [p for p in plots if p.suffix == ".png"]
    if pngs or left_out:
        lines += ["## Figures", ""]
        lines += [f"Note: {escape.markdown(run.result.system_name)} ({escape.markdown_code(run.path)}) {what}\n"
                  for run in left_out]  # fmt: skip
        for png in pngs:
            rel, stem = png.relative_to(stage), escape.markdown(png.stem)  # the stem holds a task name
            lines += [f"### {stem}", "", f"![{stem}]({rel})", "", f"PDF: `{rel.with_suffix('.pdf')}`, "
                      f"numbers: `{rel.with_suffix('.csv')}`", ""]  # fmt: skip
    with atomic_write(stage / "index.html") as handle:
        notes = [f"{run.result.system_name} ({run.path}) {what}" for run in left_out]
        handle.write(render_html(tables, pngs, sources=results, figure_notes=notes, summaries=summaries))
    with atomic_write(stage / "index.md") as handle:
        handle.write("\n".join(lines))
