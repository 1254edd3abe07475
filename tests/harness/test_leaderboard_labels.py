"""What a leaderboard's rows are called and what its cells say (audit 12): one label per system setting in every
table and summary of a command, a record told apart from a run, cells that read alike bold alike, and the notes
saying what a cell holds. Runs of tfidf (default and max_ngram=2) and cngdist on the pan23 format sample and on a
copy of it without its last problem (another test set, so another table)."""

from __future__ import annotations

import csv
import json
import math
import shutil
from pathlib import Path

import pytest
from helpers.cli import invoke
from helpers.paths import SAMPLE

from harness.leaderboard.cells import pair_row_cells, row_cells
from harness.leaderboard.formats import render
from harness.leaderboard.table import Row, Table


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("labels")
    shorter = root / "shorter-sample"
    shutil.copytree(SAMPLE, shorter)
    for name in ("pairs.jsonl", "truth.jsonl"):
        path = shorter / "test" / name
        lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
        path.write_text("".join(lines[:-1]), encoding="utf-8")
    out = root / "runs"
    invoke("run", "--system", "cngdist", "--system", "tfidf", "--task", "pan23", "--data", SAMPLE, "--out", out)
    invoke("run", "--system", "cngdist", "--task", "pan23", "--data", shorter, "--out", out)
    invoke("run", "--system", "tfidf", "--task", "pan23", "--data", shorter, "--param", "max_ngram=2", "--out", out)
    (answers,) = (out / "pan23" / "pan23-format-sample" / "tfidf").glob("seed-*/answers.jsonl")
    alone = root / "truth-only" / "pan23-format-sample"  # the truth without its pairs.jsonl, as PAN gives it
    alone.mkdir(parents=True)
    shutil.copy(SAMPLE / "test" / "truth.jsonl", alone / "truth.jsonl")
    invoke("score", "--task", "pan23", "--truth", alone / "truth.jsonl", "--answers", answers,
           "--record", root / "record", "--system-name", "tfidf")  # fmt: skip
    return root


def tables(root: Path, *args: object) -> list[dict]:
    return json.loads(invoke("leaderboard", root / "runs", root / "record", "--format", "json", *args))


def test_one_setting_has_one_label_in_every_table_and_the_summary(runs: Path):
    """Was: each table labelled its rows alone, so the novels-like table's `tfidf` was max_ngram=2 and the other's
    `tfidf` the default; the summary called them by digests that no folder or table explained."""
    by_dataset = {table["dataset"]: {row["system"] for row in table["rows"]} for table in tables(runs)}
    assert by_dataset == {
        "pan23-format-sample": {"cngdist", "tfidf (max_ngram=1)", "tfidf (record)"},
        "shorter-sample": {"cngdist", "tfidf (max_ngram=2)"},
    }
    summary = invoke("leaderboard", runs / "runs", runs / "record", "--summary", "--include-format-samples")
    rows = [line.split(" | ")[0].strip("| ") for line in summary.splitlines() if line.startswith("| ")][1:]
    assert sorted(rows) == ["cngdist", "tfidf (max_ngram=1)", "tfidf (max_ngram=2)", "tfidf (record)"]


def test_a_long_setting_is_named_by_its_digest_with_a_note(runs: Path, tmp_path: Path):
    out = tmp_path / "runs"
    invoke("run", "--system", "tfidf", "--task", "pan23", "--data", SAMPLE, "--out", out, "--param", "max_ngram=2",
           "--param", "max_features=5000", "--param", "objective=auc", "--param", "calibration_folds=3")  # fmt: skip
    invoke("run", "--system", "tfidf", "--task", "pan23", "--data", SAMPLE, "--out", out)
    (table,) = json.loads(invoke("leaderboard", out, "--format", "json"))
    labels = sorted(row["system"] for row in table["rows"])
    assert labels[0].startswith("tfidf@") and labels[1].startswith("tfidf@")
    assert any(note.startswith(f"{labels[0]}: calibration_folds=") for note in table["notes"])


def test_a_record_has_no_type_pair_cells_where_its_truth_names_no_types(runs: Path):
    """Was `nan` in every cell of the record's row, under a note saying nan means the pair is of one class."""
    markdown = invoke("leaderboard", runs / "runs", runs / "record")
    breakdown = markdown.split("per discourse-type pair")[1]
    record = next(line for line in breakdown.splitlines() if line.startswith("| tfidf (record)"))
    assert set(record.split(" | ")[2:]) == {"-", "- |"} and "nan" not in record
    assert "no scores per type pair recorded for tfidf (record)" in breakdown
    rows = list(csv.DictReader(invoke("leaderboard", runs / "runs", runs / "record", "--format", "csv").splitlines()))
    assert not [row for row in rows if row["system"] == "tfidf (record)" and "/" in row["measure"]]


def _table(means: list[float], runs: int = 1) -> Table:
    rows = [Row(f"s{i}", [object()] * runs, mean={"auc": m}, std={"auc": 0.001}) for i, m in enumerate(means)]  # type: ignore[list-item]
    return Table("pan23", "1", "auc", ["auc"], set(), rows)


def test_cells_that_read_alike_are_bold_alike():
    """Was: 0.6674575 bold, 0.6666667 not, both shown as 0.667."""
    table = _table([0.6674575, 0.6666667, 0.6654])
    cells = [row_cells(table, row, 3, pm="±", bold="**{}**", dash="-")[2] for row in table.rows]
    assert cells == ["**0.667**", "**0.667**", "0.665"]
    table.type_pairs, table.rows[0].pair_mean, table.rows[1].pair_mean = {"a+b": 4}, {"a+b": 0.70049}, {"a+b": 0.7}
    table.rows[0].pair_std = table.rows[1].pair_std = {"a+b": math.nan}
    assert [pair_row_cells(table, row, 2, pm="±", bold="**{}**", dash="-")[2] for row in table.rows[:2]] == [
        "**0.70**",
        "**0.70**",
    ]


def test_a_nan_mean_is_nan_and_the_notes_say_which_sd():
    table = _table([0.6, math.nan], runs=2)
    assert row_cells(table, table.rows[1], 3, pm="±", bold="**{}**", dash="-")[2] == "nan"  # was "nan ± nan"
    markdown, latex = render([table], "markdown"), render([table], "latex")
    assert "mean ± sample sd over seeds" in markdown.splitlines()[0]
    assert "mean $\\pm$ sample sd over seeds" in latex


def test_the_interval_and_test_columns_say_they_describe_the_lowest_seed(runs: Path):
    out = invoke("leaderboard", runs / "runs", "--ci", "--significance", "--resamples", "20")
    assert "| overall 95% CI (lowest seed) | p vs best (lowest seed) |" in out


def test_latex_typesets_the_product_in_headers_and_captions():
    table = _table([0.5])
    table.main, table.measures, table.rows[0].mean = "auc_x_c_at_1", ["auc_x_c_at_1"], {"auc_x_c_at_1": 0.5}
    latex = render([table], "latex")
    assert "sorted by AUC $\\times$ c@1" in latex and "& AUC $\\times$ c@1 \\\\" in latex
    assert "AUC x c@1" not in latex
