"""The figures a verification or retrieval paper shows beside ROC and DET (issue 29), one set per task and dataset:

- score distributions: each system's answers to same-author and to different-author problems, abstentions apart;
- reliability diagrams: the share of same-author problems among the answers of each bin, against the diagonal;
- the main score per discourse-type pair (the leaderboard's type-pair breakdown) as a heatmap;
- R@k curves of ranking tasks, from the first-match ranks in each run's details.

Each is drawn from the lowest-seed run of a system (as ROC and DET are), except the heatmap, which shows the
leaderboard's mean over seeds. `harness.plotting.plot_all` calls `plot_paper_figures`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from harness.leaderboard import Run, build_tables
from harness.leaderboard.table import Table
from harness.metrics.ranking import recall_at_k_from_ranks
from harness.plotting import (
    LOWEST_SEED,
    STYLE,
    legend_label,
    line_style,
    place_legend,
    pyplot,
    save_figure,
    verification_trials,
)

NO_ANSWER = 0.5  # PAN's "no answer": counted apart from every bin
HISTOGRAM_BINS = 20
RELIABILITY_BINS = 10
MAX_K = 20  # R@k curves run k = 1..MAX_K (the recorded R@k go up to 10)

Trials = tuple[str, np.ndarray, np.ndarray]  # (system label, answers, same-author)


def plot_paper_figures(runs: Sequence[Run], out_dir: Path) -> list[Path]:
    """Score distributions, reliability diagrams and type-pair heatmaps of verification tasks; R@k of ranking tasks."""
    written: list[Path] = []
    for table in build_tables([r for r in runs if r.result.task_kind == "verification"]):
        systems = [(row.label, *trials) for row in table.rows if (trials := verification_trials(row.first_run))]
        if systems:
            written += plot_score_distributions(table, systems, out_dir)
            written += plot_reliability(table, systems, out_dir)
        written += plot_type_pair_heatmap(table, out_dir)
    for table in build_tables([r for r in runs if r.result.task_kind in ("retrieval", "linking")]):
        written += plot_recall_at_k(table, out_dir)
    return written


def plot_score_distributions(table: Table, systems: Sequence[Trials], out_dir: Path) -> list[Path]:
    """One panel per system: step histograms of its answers to same- and different-author problems, with the
    abstentions (answers of exactly 0.5) as hatched bars of their own at 0.5."""
    plt = pyplot()
    edges = np.linspace(0.0, 1.0, HISTOGRAM_BINS + 1)
    rows = []
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(len(systems), 1, sharex=True, squeeze=False, figsize=(4.6, 0.8 + 1.6 * len(systems)))
        for ax, (label, values, same) in zip(axes[:, 0], systems, strict=True):
            for name, members, colour, offset in (("same", same, "C0", -0.012), ("different", ~same, "C3", 0.012)):
                answered = values[members & (values != NO_ANSWER)]
                abstained = int(np.sum(members & (values == NO_ANSWER)))
                counts, _ = np.histogram(answered, bins=edges)
                ax.stairs(counts, edges, color=colour, label=f"{name} author ({int(members.sum())})")
                ax.bar(NO_ANSWER + offset, abstained, width=0.024, color=colour, alpha=0.4, hatch="//")
                bounds = zip(edges[:-1], edges[1:], counts, strict=True)
                rows += [(label, name, i, lo, hi, int(n)) for i, (lo, hi, n) in enumerate(bounds)]
                rows.append((label, name, "abstain", NO_ANSWER, NO_ANSWER, abstained))
            abstentions = int(np.sum(values == NO_ANSWER))
            ax.set_title(legend_label(f"{label}: {abstentions} answers of 0.5 (hatched)"), fontsize=8)
            ax.set_ylabel("problems")
            ax.legend(loc="upper left")
        axes[-1, 0].set_xlabel("answer")
        fig.suptitle(f"Answers by class: {table.title} ({LOWEST_SEED})", fontsize=9)
        header = ["system", "class", "bin", "low", "high", "count"]
        return save_figure(fig, out_dir, f"score-distribution-{table.file_stem}", header, rows)


def plot_reliability(table: Table, systems: Sequence[Trials], out_dir: Path) -> list[Path]:
    """Reliability diagram: per bin of answers, the mean answer against the share of same-author problems. Answers
    of exactly 0.5 are no bin's: they are the shaded band, each system's share of them in its legend entry, and the
    share of same-author problems among them a hollow marker on the band."""
    plt = pyplot()
    rows = []
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots()
        ax.axvspan(0.49, 0.51, color="0.85", label="abstain band (answers = 0.5)")
        ax.plot([0, 1], [0, 1], color="0.6", linestyle=":", linewidth=1)
        for i, (label, values, same) in enumerate(systems):
            answered = values != NO_ANSWER
            bins = np.minimum((values * RELIABILITY_BINS).astype(int), RELIABILITY_BINS - 1)  # 1.0 in the last bin
            points = []
            for b in range(RELIABILITY_BINS):
                inside = answered & (bins == b)
                if inside.any():
                    mean, share = float(values[inside].mean()), float(same[inside].mean())
                    points.append((mean, share))
                    rows.append((label, b, b / RELIABILITY_BINS, (b + 1) / RELIABILITY_BINS, int(inside.sum()), mean,
                                 share))  # fmt: skip
            abstained = ~answered
            style = line_style(i)
            shown = legend_label(f"{label} (abstained {abstained.mean():.0%})")
            if points:
                ax.plot(*np.array(points).T, marker="o", markersize=3, label=shown, **style)
            if abstained.any():
                share = float(same[abstained].mean())
                ax.plot([NO_ANSWER], [share], marker="o", markerfacecolor="none", color=style["color"])
                rows.append((label, "abstain", NO_ANSWER, NO_ANSWER, int(abstained.sum()), NO_ANSWER, share))
        if any(np.any(values == NO_ANSWER) for _, values, _ in systems):
            hollow = {"marker": "o", "markerfacecolor": "none", "linestyle": "none", "color": "0.4"}
            ax.plot([], [], label="its share among the answers of 0.5", **hollow)
        ax.set(xlim=(0, 1), ylim=(0, 1), xlabel="answer (mean of its bin)", ylabel="share of same-author problems")
        ax.set_title(f"Reliability: {table.title} ({LOWEST_SEED})", fontsize=8)
        place_legend(fig, ax, len(systems) + 2)
        header = ["system", "bin", "low", "high", "problems", "mean_answer", "same_share"]
        return save_figure(fig, out_dir, f"reliability-{table.file_stem}", header, rows)


def plot_type_pair_heatmap(table: Table, out_dir: Path) -> list[Path]:
    """The leaderboard's type-pair breakdown (harness.leaderboard.type_pairs) as a heatmap: systems by discourse-type
    pairs, each cell the main score's mean over seeds; "n/a" where it is undefined (the pair's problems are of one
    class) or was not recorded (a submission scored from its truth alone knows no types)."""
    if not table.type_pairs or not table.rows:
        return []
    plt = pyplot()
    pairs = list(table.type_pairs)
    cells = np.array([[row.pair_mean.get(pair, math.nan) for pair in pairs] for row in table.rows], dtype=np.float64)
    finite = cells[np.isfinite(cells)]
    in_unit = finite.size and finite.min() >= 0.0 and finite.max() <= 1.0
    with plt.rc_context(STYLE):
        # room for the rotated pair names below and the system names beside, however few cells there are
        size = (max(4.6, 2.4 + 0.55 * len(pairs)), 2.6 + 0.35 * len(table.rows))
        fig, ax = plt.subplots(figsize=size)
        image = ax.imshow(np.ma.masked_invalid(cells), cmap="viridis", aspect="auto",
                          vmin=0.0 if in_unit else None, vmax=1.0 if in_unit else None)  # fmt: skip
        for (r, c), value in np.ndenumerate(cells):
            if math.isnan(value):
                ax.text(c, r, "n/a", ha="center", va="center", fontsize=6, color="0.4")
            else:  # dark text on viridis' light upper half, light text on its dark lower half
                colour = "k" if image.norm(value) > 0.5 else "w"
                ax.text(c, r, f"{value:.2f}", ha="center", va="center", fontsize=6, color=colour)
        ax.set_xticks(range(len(pairs)), [f"{p} ({table.type_pairs[p]})" for p in pairs], rotation=45, ha="right")
        ax.set_yticks(range(len(table.rows)), [row.label for row in table.rows])
        ax.grid(False)
        fig.colorbar(image, ax=ax, label=table.main)
        ax.set_title(f"{table.main} per type pair: {table.title} (mean over seeds)", fontsize=8)
        rows = [(row.label, pair, table.type_pairs[pair], table.main, row.pair_mean[pair], row.pair_std[pair],
                 len(row.runs)) for row in table.rows for pair in pairs if pair in row.pair_mean]  # fmt: skip
        header = ["system", "pair", "problems", "measure", "mean", "std", "runs"]
        return save_figure(fig, out_dir, f"type-pairs-{table.file_stem}", header, rows)


def plot_recall_at_k(table: Table, out_dir: Path) -> list[Path]:
    """R@k for k = 1..MAX_K, one line per system, from the first-match ranks of its lowest-seed run's details (the
    rows its task's `ranking_rows` names; queries without a match left out, as the recorded R@k leaves them)."""
    curves = []
    for row in table.rows:
        ranks = _headline_ranks(row.first_run)
        if ranks is not None:
            curves.append((row.label, [recall_at_k_from_ranks(ranks, k) for k in range(1, MAX_K + 1)], ranks))
    if not curves:
        return []
    plt = pyplot()
    ks = list(range(1, MAX_K + 1))
    rows: list[tuple[Any, ...]] = []
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots()
        for i, (label, recalls, ranks) in enumerate(curves):
            ax.plot(ks, recalls, marker="o", markersize=2, label=legend_label(label), **line_style(i))
            queries = int(np.sum(ranks > 0))
            rows += [(label, k, recall, queries) for k, recall in zip(ks, recalls, strict=True)]
        ax.set(xlim=(1, MAX_K), ylim=(0, 1), xlabel="k", ylabel="recall at k")
        ax.set_title(f"R@k: {table.title} ({LOWEST_SEED}; the queries the table's R@k count)", fontsize=8)
        ax.set_xticks([1, 5, 10, 15, 20])
        place_legend(fig, ax, len(curves))
        return save_figure(fig, out_dir, f"recall-at-k-{table.file_stem}", ["system", "k", "recall", "queries"], rows)


def _headline_ranks(run: Run) -> np.ndarray | None:
    """The first-match ranks of the run's headline ranking (None where its details hold no rank or no match)."""
    from harness.item_statistics import headline_rows

    details = run.result.details()  # checked against the checksum its result recorded
    ranks = [row["rank"] for row in headline_rows(run.result.task_name, details) if "rank" in row]
    if not ranks or not any(rank > 0 for rank in ranks):
        return None
    return np.array(ranks, dtype=np.int64)
