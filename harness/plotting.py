"""Figures for papers from result files: ROC and DET curves, the main score against task parameters.

Every figure is written as PNG and PDF in one style, with the numbers behind it as CSV.
matplotlib is imported inside the functions (Agg backend: no screen needed).
"""

from __future__ import annotations

import contextlib
import csv
import math
import os
import re
import shutil
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from core.errors import HarnessError, OutputError
from core.files import STAGED_SUFFIX, is_write_error, staging_folder, sweeping
from harness.leaderboard import Run, build_tables, escape
from harness.leaderboard.build import task_text
from harness.leaderboard.cells import SPREAD
from harness.leaderboard.formats import nan_as_empty
from harness.leaderboard.labels import SystemLabels, system_key
from harness.leaderboard.table import Table, sample_sd
from harness.metrics.linking import det_curve
from harness.results import DETAILS_NAME

# what a figure's curves are, in its title (audit 15: curves of one seed carried the label of a mean over seeds)
LOWEST_SEED = "each system's lowest-seed run"

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
    "text.parse_math": False,  # names come from users and data: "$...$" in one is text, not a formula to render
}


def legend_label(name: str) -> str:
    """A name as a legend entry: matplotlib leaves out labels that start with "_", so such a name gets a zero-width
    space in front."""
    return "\u200b" + name if name.startswith("_") else name


def pyplot() -> Any:
    """matplotlib's pyplot on the Agg backend (no screen), imported on first use, not at CLI start-up."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_figure(fig: Any, out_dir: Path, stem: str, header: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[Path]:
    """Write `stem`.png, .pdf and .csv (the plotted numbers) into out_dir."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = re.sub(r"[^A-Za-z0-9_.=-]+", "_", stem).strip("_")  # table names may hold spaces and brackets
    paths = [out_dir / f"{stem}.png", out_dir / f"{stem}.pdf", out_dir / f"{stem}.csv"]
    fig.tight_layout()
    fig.savefig(paths[0])
    fig.savefig(paths[1], metadata={"CreationDate": None})  # no timestamp: the same figures give the same bytes
    pyplot().close(fig)
    with open(paths[2], "w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(header)
        writer.writerows(escape.csv_row(row) for row in rows)  # a system name must not be a spreadsheet formula
    return paths


def line_style(index: int) -> dict[str, Any]:
    """Ten colours, then the same colours dashed, then dotted: every system stays distinguishable."""
    return {"color": f"C{index % 10}", "linestyle": ("-", "--", ":")[(index // 10) % 3]}


def place_legend(fig: Any, ax: Any, entries: int) -> None:
    """Beside the axes when there are many systems, so no curve is hidden under it."""
    if entries > 4:
        width, height = fig.get_size_inches()
        fig.set_size_inches(width + 1.8, height)
        ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0))
    else:
        ax.legend(loc="best")


def verification_trials(run: Run) -> tuple[np.ndarray, np.ndarray] | None:
    """(answers, same-author) of a verification run's details; None where its rows hold no answers."""
    details = run.result.details()  # checked against the checksum its result recorded
    if not details or not {"value", "same"} <= details[0].keys():
        return None
    if any(not {"value", "same"} <= row.keys() for row in details):  # a hand-edited file: one line, not a KeyError
        raise HarnessError(f"{run.result.folder / DETAILS_NAME}: some rows lack 'value' or 'same'; not a run's answers")
    return (
        np.array([row["value"] for row in details], dtype=np.float64),
        np.array([row["same"] for row in details], dtype=bool),
    )


def plot_verification_curves(runs: Sequence[Run], out_dir: Path) -> list[Path]:
    """ROC and DET curves of each verification task's systems (lowest-seed run of each)."""
    written: list[Path] = []
    for table in build_tables([r for r in runs if r.result.task_kind == "verification"]):
        curves = []
        for row in table.rows:
            trials = verification_trials(row.first_run)
            if trials is not None:
                _, p_fa, p_miss = det_curve(*trials)
                curves.append((row.label, p_fa, p_miss))
        written += _roc_and_det(table, curves, out_dir, LOWEST_SEED)
    return written


def plot_linking_curves(runs: Sequence[Run], out_dir: Path) -> list[Path]:
    """For each linking task: ROC and DET at the main target size (lowest-seed run of each system)
    and EER against the target sample size (mean and standard deviation over seeds)."""
    plt = pyplot()
    written: list[Path] = []
    for table in build_tables([r for r in runs if r.result.task_kind == "linking"]):
        curves, rows = [], []
        with plt.rc_context(STYLE):
            fig, ax = plt.subplots()
            for i, row in enumerate(table.rows):
                first = row.first_run.result.curves
                det = first.get("det", {}).get(str(first.get("main_target_size")))
                if det:
                    curves.append((row.label, np.asarray(det["p_fa"]), np.asarray(det["p_miss"])))
                per_seed = [run.result.curves["eer_vs_target_size"] for run in row.runs]
                sizes = per_seed[0]["target_sizes"]
                eers = np.array([curve["eer"] for curve in per_seed])
                mean, spread = eers.mean(0), sample_sd(eers)
                style = line_style(i)
                label = legend_label(row.label)
                ax.errorbar(sizes, mean, yerr=spread, marker="o", markersize=3, capsize=2, label=label, **style)
                rows += [
                    (row.label, k, m, nan_as_empty(sd), len(per_seed))
                    for k, m, sd in zip(sizes, mean, spread, strict=True)
                ]
            ax.set_xscale("log", base=2)
            ax.set_xticks(sizes, [str(k) for k in sizes])
            ax.set(xlabel="target sample size (posts)", ylabel="EER (lower is better)")
            ax.set_title(f"EER: {table.title} ({SPREAD})", fontsize=8)
            place_legend(fig, ax, len(table.rows))
            header = ["system", "target_size", "eer_mean", "eer_std", "runs"]
            written += save_figure(fig, out_dir, f"eer-by-target-size-{table.file_stem}", header, rows)
        note = task_text(table.rows[0].first_run.result, "curve_note") if table.rows else ""
        written += _roc_and_det(table, curves, out_dir, f"{note}; {LOWEST_SEED}" if note else LOWEST_SEED)
    return written


def _roc_and_det(
    table: Table, curves: Sequence[tuple[str, np.ndarray, np.ndarray]], out_dir: Path, what: str
) -> list[Path]:
    """ROC and DET figures from (label, p_fa, p_miss) points, one line per system, its ROC area in the legend;
    `what` says in the titles which trials the curves are."""
    from scipy.stats import norm

    if not curves:
        return []
    plt = pyplot()
    with plt.rc_context(STYLE):
        fig_roc, ax_roc = plt.subplots()
        fig_det, ax_det = plt.subplots()
        roc_rows, det_rows = [], []
        for i, (label, p_fa, p_miss) in enumerate(curves):
            line = line_style(i)
            # by false positive rate, then true positive rate: points of one FPR run up, never down (a sawtooth)
            order = np.lexsort((1.0 - p_miss, p_fa))
            fpr, tpr = p_fa[order], 1.0 - p_miss[order]
            area = float(np.sum(np.diff(fpr) * (tpr[1:] + tpr[:-1]) / 2.0))  # trapezoids: ties count half, as AUC
            ax_roc.plot(fpr, tpr, label=legend_label(f"{label} (AUC {area:.3f})"), **line)
            roc_rows += [(label, f, t) for f, t in zip(fpr, tpr, strict=True)]
            # a DET plot's axes are normal deviates: rates of exactly 0 or 1 lie at infinity
            inside = (p_fa > 0) & (p_fa < 1) & (p_miss > 0) & (p_miss < 1)
            marker = "o" if inside.sum() < 5 else None  # near-binary answers give a point, not a curve
            shown = legend_label(label)
            ax_det.plot(norm.ppf(p_fa[inside]), norm.ppf(p_miss[inside]), label=shown, marker=marker, **line)
            det_rows += [(label, f, m) for f, m in zip(p_fa, p_miss, strict=True)]
        ax_roc.plot([0, 1], [0, 1], color="0.6", linestyle=":", linewidth=1)
        ax_roc.set(xlabel="false positive rate", ylabel="true positive rate")
        ax_roc.set_title(f"ROC: {table.title} ({what})", fontsize=8)
        ticks = np.array([0.001, 0.01, 0.05, 0.2, 0.5, 0.8, 0.95, 0.99])
        ax_det.set_xticks(norm.ppf(ticks), [f"{t:g}" for t in ticks])
        ax_det.set_yticks(norm.ppf(ticks), [f"{t:g}" for t in ticks])
        ax_det.set_xlim(norm.ppf(0.0005), norm.ppf(0.9995))
        ax_det.set_ylim(norm.ppf(0.0005), norm.ppf(0.9995))
        ax_det.set(xlabel="false alarm probability", ylabel="miss probability")
        ax_det.set_title(f"DET: {table.title} ({what})", fontsize=8)
        for fig, ax in ((fig_roc, ax_roc), (fig_det, ax_det)):
            place_legend(fig, ax, len(curves))
        written = save_figure(fig_roc, out_dir, f"roc-{table.file_stem}", ["system", "fpr", "tpr"], roc_rows)
        written += save_figure(fig_det, out_dir, f"det-{table.file_stem}", ["system", "p_fa", "p_miss"], det_rows)
    return written


def plot_measure_by_parameter(
    runs: Sequence[Run], out_dir: Path, *, task: str, parameter: str, measure: str, dataset: str | None = None
) -> list[Path]:
    """A measure against a task parameter (e.g. MRR against episode length), one line per system.

    Points average the runs (seeds) of each system and parameter value; bars show their spread. With `dataset`,
    only the runs on that dataset (`RunResult.dataset`), named in the title and the file name.
    """
    plt = pyplot()
    points: dict[str, dict[Any, list[float]]] = defaultdict(lambda: defaultdict(list))
    labels = SystemLabels(runs)  # one line per system setting, named as the tables name it (not per system name)
    for run in runs:
        result = run.result
        value = result.task_params.get(parameter)
        if result.task_name != task or value is None or measure not in result.scores:
            continue
        if dataset is not None and result.dataset != dataset:
            continue
        score = result.score(measure)  # NaN where a hand-edited file holds null or a string: not a point
        if not math.isnan(score):
            points[labels.label(system_key(result))][value].append(score)
    if not points:
        return []
    rows = []
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots()
        for system in sorted(points):
            xs = sorted(points[system])
            means = [float(np.mean(points[system][x])) for x in xs]
            spread = [float(sample_sd(np.array(points[system][x]))) for x in xs]
            style = line_style(sorted(points).index(system))
            label = legend_label(system)
            ax.errorbar(xs, means, yerr=spread, marker="o", markersize=3, capsize=2, label=label, **style)
            rows += [
                (system, x, m, nan_as_empty(s), len(points[system][x]))
                for x, m, s in zip(xs, means, spread, strict=True)
            ]
        where = f"{task} on {dataset}" if dataset else task
        ax.set(xlabel=parameter.replace("_", " "), ylabel=measure)
        ax.set_title(f"{measure} against {parameter}: {where} ({SPREAD})", fontsize=8)
        place_legend(fig, ax, len(points))
        stem = f"{measure}-by-{parameter}-{task}" + (f"-{dataset}" if dataset else "")
        return save_figure(fig, out_dir, stem, ["system", parameter, f"{measure}_mean", "std", "runs"], rows)


def plot_parameter_figures(runs: Sequence[Run], out_dir: Path) -> list[Path]:
    """The main score against each parameter a task declares in `plot_parameters` (read from the results).

    A task names the parameters in its metadata; result files carry them, so this draws the figures
    of any task without knowing it. Runs recorded before the field existed declare none.
    """
    declared: dict[tuple[str, str], dict[str, str]] = defaultdict(dict)  # (task, dataset) -> parameter -> measure
    for run in runs:
        for parameter in run.result.plot_parameters:
            declared[(run.result.task_name, run.result.dataset)][parameter] = run.result.main_score
    written: list[Path] = []
    for task, dataset in sorted(declared):
        for parameter, measure in declared[(task, dataset)].items():
            written += plot_measure_by_parameter(
                runs, out_dir, task=task, parameter=parameter, measure=measure, dataset=dataset
            )
    return written


def plot_all(runs: Sequence[Run], out_dir: Path, *, overwrite: bool = False) -> list[Path]:
    """Every figure the runs allow: ROC/DET of verification tasks, parameter figures, linking curves, and
    harness.figures' score distributions, reliability diagrams, type-pair heatmaps and R@k curves.

    The figures are drawn into a staging folder inside `out_dir`, then moved into place: unless `overwrite`, a file
    of the same name already in `out_dir` (an earlier plot's figure) is refused, in one line naming it, before any
    file there is replaced (as `harness report`, `score` and `predict` refuse). A full disk is an OutputError, and
    leaves `out_dir` as it was.
    """
    for run in runs:  # an edited details file is refused before the first figure is written
        run.result.check_details()
    out_dir = Path(out_dir)
    made = [folder for folder in (out_dir, *out_dir.parents) if not os.path.lexists(folder)]  # removed if unused
    targets: list[Path] = []
    # a killed plot's `.figures.XXXXXXXX.new` in the user's folder is removed first, where no live plot holds it
    with sweeping(out_dir / "figures", [("figures", STAGED_SUFFIX)]):
        try:
            staging = staging_folder(out_dir / "figures", STAGED_SUFFIX)
        except OSError as error:
            raise OutputError(out_dir, error) from None
        try:
            drawn = plot_verification_curves(runs, staging)
            drawn += plot_parameter_figures(runs, staging)
            drawn += plot_linking_curves(runs, staging)
            from harness.figures import plot_paper_figures  # here: harness.figures imports this module

            drawn += plot_paper_figures(runs, staging)
            targets = [out_dir / path.name for path in drawn]
            existing = [target for target in targets if os.path.lexists(target)]
            for target in existing:  # checked before the first is moved: a refusal half way would leave half a plot
                if not target.is_file():
                    raise HarnessError(f"{target} is not a file, and a figure of that name goes there; move it")
            if existing and not overwrite:
                more = f" (and {len(existing) - 1} more of these figures' files)" if len(existing) > 1 else ""
                raise HarnessError(f"{existing[0]} exists{more}; pass --overwrite to replace it")
            for path, target in zip(drawn, targets, strict=True):
                os.replace(path, target)
        except OSError as error:
            if not is_write_error(error, staging, out_dir):
                raise
            raise OutputError(out_dir, error) from None
        finally:
            shutil.rmtree(staging, ignore_errors=True)
            for folder in made:  # nothing drawn, or refused: the folders made for the staging go again
                with contextlib.suppress(OSError):
                    folder.rmdir()
    return targets
