"""Figures for papers from result files: ROC and DET curves, measures against a task parameter.

Every figure is written as PNG and PDF in one style, with the numbers behind it as CSV.
matplotlib is imported inside the functions (Agg backend: no screen needed).
"""

from __future__ import annotations

import csv
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from harness.leaderboard import Run, build_tables
from harness.metrics.linking import det_curve
from harness.results import read_details

STYLE = {
    "figure.figsize": (4.6, 3.6),
    "figure.dpi": 150,
    "font.size": 9,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "legend.fontsize": 7,
    "legend.frameon": False,
    "lines.linewidth": 1.4,
}


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_figure(fig: Any, out_dir: Path, stem: str, header: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[Path]:
    """Write `stem`.png, .pdf and .csv (the plotted numbers) into out_dir."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = [out_dir / f"{stem}.png", out_dir / f"{stem}.pdf", out_dir / f"{stem}.csv"]
    fig.tight_layout()
    fig.savefig(paths[0])
    fig.savefig(paths[1])
    _pyplot().close(fig)
    with open(paths[2], "w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(header)
        writer.writerows(rows)
    return paths


def _line_style(index: int) -> dict[str, Any]:
    """Ten colours, then the same colours dashed, then dotted: every system stays distinguishable."""
    return {"color": f"C{index % 10}", "linestyle": ("-", "--", ":")[(index // 10) % 3]}


def _legend(fig: Any, ax: Any, entries: int) -> None:
    """Beside the axes when there are many systems, so no curve is hidden under it."""
    if entries > 4:
        width, height = fig.get_size_inches()
        fig.set_size_inches(width + 1.8, height)
        ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0))
    else:
        ax.legend(loc="best")


def roc_points(scores: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(false positive rate, true positive rate) for every threshold, from (0, 0) to (1, 1)."""
    thresholds, p_fa, p_miss = det_curve(scores, labels)
    return p_fa[::-1], (1.0 - p_miss)[::-1]


def _verification_trials(run: Run) -> tuple[np.ndarray, np.ndarray] | None:
    details = read_details(run.path)
    if not details or not {"value", "same"} <= details[0].keys():
        return None
    return (
        np.array([row["value"] for row in details], dtype=np.float64),
        np.array([row["same"] for row in details], dtype=bool),
    )


def plot_verification_curves(runs: Sequence[Run], out_dir: Path) -> list[Path]:
    """ROC and DET curves of each verification task's systems (lowest-seed run of each)."""
    from scipy.stats import norm

    plt = _pyplot()
    written: list[Path] = []
    for table in build_tables([r for r in runs if r.result["task"]["kind"] == "verification"]):
        curves = []
        for row in table.rows:
            trials = _verification_trials(row.first_run)
            if trials is not None:
                curves.append((row.label, *trials))
        if not curves:
            continue
        with plt.rc_context(STYLE):
            fig_roc, ax_roc = plt.subplots()
            fig_det, ax_det = plt.subplots()
            roc_rows, det_rows = [], []
            for i, (label, scores, labels) in enumerate(curves):
                line = _line_style(i)
                fpr, tpr = roc_points(scores, labels)
                ax_roc.plot(fpr, tpr, label=label, **line)
                roc_rows += [(label, f, t) for f, t in zip(fpr, tpr, strict=True)]
                _, p_fa, p_miss = det_curve(scores, labels)
                # a DET plot's axes are normal deviates: rates of exactly 0 or 1 lie at infinity
                inside = (p_fa > 0) & (p_fa < 1) & (p_miss > 0) & (p_miss < 1)
                marker = "o" if inside.sum() < 5 else None  # near-binary answers give a point, not a curve
                ax_det.plot(norm.ppf(p_fa[inside]), norm.ppf(p_miss[inside]), label=label, marker=marker, **line)
                det_rows += [(label, f, m) for f, m in zip(p_fa, p_miss, strict=True)]
            ax_roc.plot([0, 1], [0, 1], color="0.6", linestyle=":", linewidth=1)
            ax_roc.set(xlabel="false positive rate", ylabel="true positive rate", title=f"ROC: {table.task}")
            ticks = np.array([0.001, 0.01, 0.05, 0.2, 0.5, 0.8, 0.95, 0.99])
            ax_det.set_xticks(norm.ppf(ticks), [f"{t:g}" for t in ticks])
            ax_det.set_yticks(norm.ppf(ticks), [f"{t:g}" for t in ticks])
            ax_det.set_xlim(norm.ppf(0.0005), norm.ppf(0.9995))
            ax_det.set_ylim(norm.ppf(0.0005), norm.ppf(0.9995))
            ax_det.set(xlabel="false alarm probability", ylabel="miss probability", title=f"DET: {table.task}")
            for fig, ax in ((fig_roc, ax_roc), (fig_det, ax_det)):
                _legend(fig, ax, len(curves))
            written += save_figure(fig_roc, out_dir, f"roc-{table.task}", ["system", "fpr", "tpr"], roc_rows)
            written += save_figure(fig_det, out_dir, f"det-{table.task}", ["system", "p_fa", "p_miss"], det_rows)
    return written


def plot_measure_by_parameter(
    runs: Sequence[Run], out_dir: Path, *, task: str, parameter: str, measure: str
) -> list[Path]:
    """A measure against a task parameter (e.g. MRR against episode length), one line per system.

    Points average the runs (seeds) of each system and parameter value; bars show their spread.
    """
    plt = _pyplot()
    points: dict[str, dict[Any, list[float]]] = defaultdict(lambda: defaultdict(list))
    for run in runs:
        task_section = run.result["task"]
        value = task_section.get("params", {}).get(parameter)
        if task_section["name"] != task or value is None or measure not in run.result["scores"]:
            continue
        points[run.result["system"]["name"]][value].append(run.result["scores"][measure])
    if not points:
        return []
    rows = []
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots()
        for system in sorted(points):
            xs = sorted(points[system])
            means = [float(np.mean(points[system][x])) for x in xs]
            spread = [float(np.std(points[system][x])) for x in xs]
            style = _line_style(sorted(points).index(system))
            ax.errorbar(xs, means, yerr=spread, marker="o", markersize=3, capsize=2, label=system, **style)
            rows += [(system, x, m, s, len(points[system][x])) for x, m, s in zip(xs, means, spread, strict=True)]
        ax.set(xlabel=parameter.replace("_", " "), ylabel=measure, title=f"{measure} against {parameter}: {task}")
        _legend(fig, ax, len(points))
        stem = f"{measure}-by-{parameter}-{task}"
        return save_figure(fig, out_dir, stem, ["system", parameter, f"{measure}_mean", "std", "runs"], rows)
