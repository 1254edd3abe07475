"""`harness report`: every leaderboard table and plot of a results folder, with a Markdown index."""

from __future__ import annotations

from pathlib import Path

from core.errors import HarnessError
from core.files import atomic_write
from harness.leaderboard import FORMATS, build_tables, escape, find_runs, render
from harness.plotting import plot_all
from harness.report_html import render_html

_SUFFIX = {"markdown": "md", "latex": "tex", "csv": "csv", "json": "json"}


def write_report(results: list[Path], out_dir: Path, *, ci: bool, significance: bool, resamples: int) -> Path:
    """Write tables/, plots/, index.md and index.html (the same, self-contained, with each run's provenance)
    into out_dir (which must be new or empty); return index.md."""
    out_dir = Path(out_dir)
    if out_dir.exists() and any(out_dir.iterdir()):
        raise HarnessError(f"{out_dir} is not empty; choose a new folder for the report")
    runs = find_runs(results)
    for run in runs:  # an edited details file is refused before the first file is written
        run.result.check_details()
    tables = build_tables(runs, ci=ci, significance=significance, resamples=resamples)
    table_files = []
    for fmt in FORMATS:
        path = out_dir / "tables" / f"leaderboard.{_SUFFIX[fmt]}"
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_write(path) as handle:
            handle.write(render(tables, fmt))
        table_files.append(path)
    plots = plot_all(runs, out_dir / "plots")

    lines = ["# Results report", "", f"{len(runs)} runs from: " + ", ".join(map(escape.markdown_code, results)), ""]
    lines += ["One page with the figures inside and each run's provenance: [index.html](index.html)", ""]
    lines += ["## Leaderboards", "", render(tables, "markdown"), "Tables as files: "]
    lines += [", ".join(f"[{p.name}]({p.relative_to(out_dir)})" for p in table_files), ""]
    pngs = [p for p in plots if p.suffix == ".png"]
    if pngs:
        lines += ["## Figures", ""]
        for png in pngs:
            rel, stem = png.relative_to(out_dir), escape.markdown(png.stem)  # the stem holds a task name
            lines += [f"### {stem}", "", f"![{stem}]({rel})", "", f"PDF: `{rel.with_suffix('.pdf')}`, "
                      f"numbers: `{rel.with_suffix('.csv')}`", ""]  # fmt: skip
    with atomic_write(out_dir / "index.html") as handle:
        handle.write(render_html(tables, pngs, sources=results))
    index = out_dir / "index.md"
    with atomic_write(index) as handle:
        handle.write("\n".join(lines))
    return index
