"""Leaderboards, intervals, significance and plots, on results built from the real PAN 2020 answers."""

from __future__ import annotations

import csv
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from helpers.paths import SHARED_DATA

from core.errors import HarnessError
from harness.cli import main
from harness.item_statistics import bootstrap_interval, columns, item_measure_function, paired_permutation_test
from harness.leaderboard import build_tables, find_runs, render
from harness.results import read_details

PAN20 = SHARED_DATA / "pan20-av-scored"


@pytest.fixture(scope="session")
def pan20_results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One recorded result per real PAN 2020 submission, via `harness score --record`."""
    if not PAN20.is_dir():
        pytest.skip(f"PAN 2020 golden files not found at {PAN20}")
    root = tmp_path_factory.mktemp("pan20-results")
    for answers in sorted((PAN20 / "answers").glob("*.jsonl.gz")):
        team = answers.name.removesuffix(".jsonl.gz")
        args = ["score", "--task", "pan23", "--truth", str(PAN20 / "truth.jsonl.gz"), "--answers", str(answers)]
        args += ["--output", str(root / "eval" / team), "--record", str(root / "runs" / team), "--system-name", team]
        result = CliRunner().invoke(main, args, catch_exceptions=False)
        assert result.exit_code == 0, result.output
    return root / "runs"


def official_table() -> list[dict[str, str]]:
    with open(PAN20 / "scores-current-evaluator.csv", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def test_order_and_values_match_the_official_evaluator(pan20_results: Path):
    (table,) = build_tables(find_runs([pan20_results]))
    official = sorted(official_table(), key=lambda row: -float(row["overall"]))
    assert [row.label for row in table.rows] == [row["system"] for row in official]
    columns_of = {"auc": "auc", "c_at_1": "c@1", "f_05_u": "f_05_u", "f1": "F1", "brier": "brier", "overall": "overall"}
    for row, expected in zip(table.rows, official, strict=True):
        for measure, column in columns_of.items():
            assert row.mean[measure] == pytest.approx(float(expected[column]), abs=1e-9)
    assert table.measures[0] == "overall"  # main score first


def test_formats(pan20_results: Path):
    tables = build_tables(find_runs([pan20_results]))
    markdown = render(tables, "markdown")
    assert "| boenninghoff20-large | 1 | **0.937** |" in markdown
    parsed = json.loads(render(tables, "json"))
    assert parsed[0]["rows"][0]["system"] == "boenninghoff20-large"
    rows = list(csv.DictReader(render(tables, "csv").splitlines()))
    assert len(rows) == 13 * 7  # pan23's six measures and c_at_1_best_band
    latex = render(tables, "latex")
    body = latex[latex.index("\\midrule") : latex.index("\\bottomrule")].strip().splitlines()[1:]
    assert len(body) == 13 and all(line.count(" & ") == 8 for line in body)
    assert body[0].count("\\textbf{") == 7  # the best team is best on every measure
    assert "boenninghoff20-large" in body[0]
    # issue 29: headers as papers write them (was `c\_at\_1`, `f\_05\_u`)
    assert "system & runs & overall & AUC & c@1 & F0.5u & F1 & Brier & c@1 best band" in latex
    assert "c\\_at\\_1" not in latex and "| system | runs | overall | AUC | c@1 | F0.5u |" in markdown


def test_latex_compiles(pan20_results: Path, tmp_path: Path):
    if shutil.which("pdflatex") is None:
        pytest.skip("pdflatex not installed (.ci/run installs it from Debian)")
    table = render(build_tables(find_runs([pan20_results]), ci=True, significance=True, resamples=50), "latex")
    document = "\\documentclass{article}\\usepackage{booktabs}\\begin{document}\n" + table + "\\end{document}\n"
    (tmp_path / "table.tex").write_text(document, encoding="utf-8")
    run = subprocess.run(
        ["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "table.tex"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stdout[-2000:]
    assert (tmp_path / "table.pdf").stat().st_size > 1000


def test_refuses_to_mix_task_versions_or_data(pan20_results: Path, tmp_path: Path):
    copy = tmp_path / "runs"
    shutil.copytree(pan20_results, copy)
    changed = copy / "faber20-small" / "result.json"
    result = json.loads(changed.read_text(encoding="utf-8"))
    result["task"]["version"] = "2"
    changed.write_text(json.dumps(result), encoding="utf-8")
    with pytest.raises(HarnessError, match="differ in task version") as info:
        build_tables(find_runs([copy]))
    assert "faber20-small" in str(info.value) and "version 2" in str(info.value)


def test_seeds_become_mean_and_standard_deviation(pan20_results: Path, tmp_path: Path):
    team = pan20_results / "kipnis20-small"
    for seed, shift in ((0, 0.0), (1, 0.02), (2, -0.01)):
        run_dir = tmp_path / f"seed-{seed}"
        shutil.copytree(team, run_dir)
        result = json.loads((run_dir / "result.json").read_text(encoding="utf-8"))
        result["seeds"]["seed"] = seed
        result["scores"]["overall"] += shift
        (run_dir / "result.json").write_text(json.dumps(result), encoding="utf-8")
    (table,) = build_tables(find_runs([tmp_path]))
    (row,) = table.rows
    base = json.loads((team / "result.json").read_text(encoding="utf-8"))["scores"]["overall"]
    values = [base, base + 0.02, base - 0.01]
    assert len(row.runs) == 3
    assert row.mean["overall"] == pytest.approx(np.mean(values))
    assert row.std["overall"] == pytest.approx(np.std(values, ddof=1))
    assert " ± " in render([table], "markdown")


def test_interval_contains_the_estimate_and_shrinks_with_more_data(pan20_results: Path):
    run = next(r for r in find_runs([pan20_results]) if r.result.system_name == "weerasinghe20-small")
    cols = columns(read_details(run.path))
    compute = item_measure_function("overall", cols, evaluator=run.result.evaluator)
    low, high = bootstrap_interval(compute, cols, resamples=300)
    assert low < run.result.scores["overall"] < high
    assert 0.002 < high - low < 0.05  # 14,311 problems: a narrow but real interval
    small = {name: values[:1500] for name, values in cols.items()}
    small_low, small_high = bootstrap_interval(compute, small, resamples=300)
    assert small_high - small_low > 2 * (high - low)  # ~1/sqrt(n): about 3x wider with 10x fewer problems


def test_significance_known_cases(pan20_results: Path):
    runs = {r.result.system_name: r for r in find_runs([pan20_results])}
    best, worst = runs["boenninghoff20-large"], runs["faber20-small"]
    cols_best, cols_worst = columns(read_details(best.path)), columns(read_details(worst.path))
    compute = item_measure_function("overall", cols_best, evaluator=best.result.evaluator)
    assert paired_permutation_test(compute, cols_best, compute, cols_best, rounds=100) == 1.0
    assert paired_permutation_test(compute, cols_best, compute, cols_worst, rounds=100) == pytest.approx(1 / 101)


def test_cli_leaderboard_is_light_and_report_writes_everything(pan20_results: Path, tmp_path: Path):
    code = (
        "import sys\n"
        "from click.testing import CliRunner\n"
        "from harness.cli import main\n"
        f"out = CliRunner().invoke(main, ['leaderboard', {str(pan20_results)!r}, '--format', 'csv']).output\n"
        "assert 'boenninghoff20-large' in out, out\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in {'torch', 'transformers', 'sklearn'}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"

    report = tmp_path / "report"
    args = ["report", "--results", str(pan20_results), "--out", str(report), "--resamples", "30"]
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    index = (report / "index.md").read_text(encoding="utf-8")
    for name in ("roc-pan23-pan20-av-scored", "det-pan23-pan20-av-scored"):  # the truth's folder names the data
        for suffix in (".png", ".pdf", ".csv"):
            assert (report / "plots" / f"{name}{suffix}").stat().st_size > 0
        assert f"plots/{name}.png" in index
    for suffix in ("md", "tex", "csv", "json"):
        assert (report / "tables" / f"leaderboard.{suffix}").is_file()
    roc = (report / "plots" / "roc-pan23-pan20-av-scored.csv").read_text(encoding="utf-8")
    roc = list(csv.DictReader(roc.splitlines()))
    assert {row["system"] for row in roc} == {r.result.system_name for r in find_runs([pan20_results])}
    again = CliRunner().invoke(main, args)
    assert again.exit_code == 2 and "not empty" in again.output  # an earlier report is never overwritten


def test_parameter_figures_come_from_the_results_task_section(tmp_path: Path):
    from harness.leaderboard import Run
    from harness.plotting import plot_parameter_figures
    from harness.run_result import as_run_result

    def run(task: str, system: str, length: int, mrr: float, declared: list[str] | None) -> Run:
        section = {"name": task, "version": "1", "main_score": "mrr", "params": {"episode_length": length}}
        if declared is not None:
            section["plot_parameters"] = declared
        result = {"task": section, "system": {"name": system}, "scores": {"mrr": mrr}}
        return Run(as_run_result(tmp_path / f"{task}-{system}-{length}" / "result.json", result))

    runs = [run("forum", s, n, 0.1 * n, ["episode_length"]) for s in ("a", "b") for n in (1, 5)]
    runs += [run("undeclared", "a", n, 0.5, None) for n in (1, 5)]  # recorded before the field: no figure
    written = plot_parameter_figures(runs, tmp_path / "plots")
    assert sorted(p.name for p in written) == [f"mrr-by-episode_length-forum.{s}" for s in ("csv", "pdf", "png")]
    rows = list(csv.DictReader((tmp_path / "plots" / "mrr-by-episode_length-forum.csv").read_text().splitlines()))
    assert [(r["system"], r["episode_length"], float(r["mrr_mean"])) for r in rows] == [
        ("a", "1", 0.1), ("a", "5", 0.5), ("b", "1", 0.1), ("b", "5", 0.5)
    ]  # fmt: skip
    # a hand-edited score that is not a number is no point (before: a numpy TypeError on a string's mean)
    runs = [run("forum", "a", 1, 0.1, ["episode_length"]), run("forum", "a", 1, "abc", ["episode_length"])]
    runs += [run("forum", "a", 5, None, ["episode_length"])]
    plot_parameter_figures(runs, tmp_path / "edited")
    rows = list(csv.DictReader((tmp_path / "edited" / "mrr-by-episode_length-forum.csv").read_text().splitlines()))
    assert [(r["episode_length"], float(r["mrr_mean"]), r["runs"]) for r in rows] == [("1", 0.1, "1")]


def write_ranking_run(folder: Path, system: str, ranks: list[int], task: dict) -> Path:
    """A finished run of a ranking task: result.json with the scores its ranks give, and one detail row per query."""
    from harness.metrics.ranking import ranking_scores
    from harness.results import RESULT_SCHEMA_VERSION, write_result

    scores = ranking_scores(ranks, task["measures"])
    result = {
        "schema_version": RESULT_SCHEMA_VERSION,
        "task": task,
        "system": {"name": system, "params": {}},
        "seeds": {"seed": 0},
        "scores": {name: scores[name] for name in task["measures"]},
    }
    details = [{"query": f"q{i}", "rank": rank} for i, rank in enumerate(ranks)]
    write_result(folder / system, result, details)
    return folder / system / "result.json"


def test_direction_comes_from_the_measure_table_not_the_result_file(tmp_path: Path):
    # mean_rank (lower is better) is the main score; the files record no direction at all
    task = {"name": "ranks", "version": "1", "main_score": "mean_rank", "measures": ["mean_rank", "mrr"]}
    write_ranking_run(tmp_path, "close", [1, 1, 2, 5, 1, 3] * 5, task)
    write_ranking_run(tmp_path, "far", [3, 4, 6, 8, 2, 9] * 5, task)
    (table,) = build_tables(find_runs([tmp_path]), ci=True, significance=True, resamples=50)
    assert table.lower_is_better == {"mean_rank"}
    assert [row.label for row in table.rows] == ["close", "far"]  # the lower mean rank first
    assert table.best("mean_rank") == table.rows[0].mean["mean_rank"] == pytest.approx(13 / 6)
    assert "| close | 1 | **2.167** | **0.672** |" in render([table], "markdown")
    # the new measure is resampled through the table like any other: no change in the leaderboard was needed
    low, high = table.rows[0].ci
    assert low <= 13 / 6 <= high and high - low > 0.1
    assert table.rows[1].p_value is not None and table.rows[1].p_value < 0.05
    # the note reads the same in a terminal as rendered (audit 9, C4: it printed "p &lt; 0.05")
    (note,) = [line for line in render([table], "markdown").splitlines() if "approximate randomization" in line]
    assert note.endswith("* marks p below 0.05.") and "&" not in note


def test_old_result_files_keep_their_recorded_direction_for_names_the_table_lacks(tmp_path: Path):
    task = {"name": "old", "version": "1", "main_score": "mrr", "measures": ["mrr"]}
    for system, ranks in (("a", [1, 2]), ("b", [1, 1])):
        path = write_ranking_run(tmp_path, system, ranks, task)
        result = json.loads(path.read_text(encoding="utf-8"))
        # written by an older harness: a measure this table does not know, and its direction recorded
        result["task"] |= {"measures": ["mrr", "legacy_cost", "eer"], "lower_is_better": ["legacy_cost"]}
        result["scores"] |= {"legacy_cost": len(system), "eer": 0.1}
        path.write_text(json.dumps(result), encoding="utf-8")
    (table,) = build_tables(find_runs([tmp_path]))
    assert table.lower_is_better == {"legacy_cost", "eer"}  # eer from the table, though the file omits it
    assert [row.label for row in table.rows] == ["b", "a"]


def test_item_statistics_resample_a_measure_added_to_the_table_only():
    from harness.metrics.ranking import mean_rank_from_ranks

    ranks = np.array([1, 4, 0, 2, 7, 1, 3, 1, 0, 2])
    cols = columns([{"query": str(i), "rank": int(r)} for i, r in enumerate(ranks)])
    compute = item_measure_function("mean_rank", cols)
    assert compute(cols) == mean_rank_from_ranks(ranks) == 21 / 8  # queries without a match left out
    low, high = bootstrap_interval(compute, cols, resamples=200)
    assert low < 21 / 8 < high
    with pytest.raises(HarnessError, match="'mean_rank' cannot be recomputed from verification answers"):
        item_measure_function("mean_rank", columns([{"id": "a", "value": 0.9, "same": True}]))


class TickingClock:
    """A stand-in for time.perf_counter that moves one second each time it is read."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        self.now += 1.0
        return self.now


def test_intervals_and_significance_log_progress_while_they_resample(tmp_path: Path, monkeypatch, caplog):
    import logging

    from core.progress import INTERVAL_VARIABLE

    task = {"name": "ranks", "version": "1", "main_score": "mrr", "measures": ["mrr"]}
    for system, ranks in (("close", [1, 1, 2, 5]), ("middle", [2, 1, 3, 4]), ("far", [3, 4, 6, 8])):
        write_ranking_run(tmp_path, system, ranks * 5, task)
    monkeypatch.setattr("core.progress.time.perf_counter", TickingClock())
    monkeypatch.setattr("core.progress._on_terminal", lambda: False)
    monkeypatch.setenv(INTERVAL_VARIABLE, "30")
    caplog.set_level(logging.INFO, logger="harness")
    build_tables(find_runs([tmp_path]), ci=True, significance=True, resamples=100)
    lines = [r.getMessage() for r in caplog.records if r.name == "harness"]
    intervals = [line for line in lines if line.startswith("bootstrap intervals, ranks: ")]
    tests = [line for line in lines if line.startswith("significance tests, ranks: ")]
    # a line about every 30 resamples (the clock ticks once a resample), not one at the end of the step only
    assert (
        len(intervals) > 5
        and "/300 resamples (" in intervals[0]
        and intervals[-1].startswith("bootstrap intervals, ranks: 300/300 resamples (100%)")
    )
    assert len(tests) > 3 and "/200 rounds (" in tests[0] and ", took " in tests[-1]


def test_a_report_folder_filled_while_the_report_is_written_is_kept(pan20_results: Path, tmp_path: Path, monkeypatch):
    import harness.report

    report, written = tmp_path / "report", harness.report._write

    def write_while_a_user_fills_the_folder(stage: Path, *args) -> None:
        written(stage, *args)
        report.mkdir()
        (report / "mine.txt").write_text("a user's file\n", encoding="utf-8")

    monkeypatch.setattr(harness.report, "_write", write_while_a_user_fills_the_folder)
    with pytest.raises(HarnessError, match="not empty"):
        harness.report.write_report([pan20_results], report, ci=False, significance=False, resamples=30)
    assert sorted(p.name for p in report.iterdir()) == ["mine.txt"]
    assert (report / "mine.txt").read_text(encoding="utf-8") == "a user's file\n"
    assert [p.name for p in tmp_path.iterdir()] == ["report"]  # no staging folder left beside it
