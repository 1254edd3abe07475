"""Published anchors: reference rows from `tasks/pan/published.csv` beside runs on the matching corpus."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers.length_corpus import write_corpus

from core.errors import HarnessError
from harness.cli import main
from harness.leaderboard import build_tables, find_runs, read_published, render
from harness.metrics.table import is_known
from tasks.pan.classic import PanClassicTask

ESSAYS_TEST = "pan14-author-verification-test-corpus2-english-essays-2014-04-22"
PAN13_TEST = "pan13-authorship-verification-test-corpus2-2013-05-29"


def run_on(tmp_path: Path, corpus_name: str) -> Path:
    """`harness run` of length_ratio on pan-classic, the test split a link to a folder named `corpus_name`."""
    data = tmp_path / "data"
    write_corpus(data / "train", 20, seed=1)
    write_corpus(tmp_path / "corpora" / corpus_name, 12, seed=2)
    (data / "test").symlink_to(tmp_path / "corpora" / corpus_name, target_is_directory=True)
    out = tmp_path / "runs"
    args = ["run", "--system", "length_ratio", "--task", "pan-classic", "--data", str(data), "--out", str(out)]
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return out


def test_a_pan14_essays_run_shows_the_published_rows_marked_and_unranked(tmp_path: Path) -> None:
    out = run_on(tmp_path, ESSAYS_TEST)
    (run,) = find_runs([out])
    assert run.result.test_corpus == ESSAYS_TEST  # the link resolved to the corpus folder
    (table,) = build_tables([run], ci=True, significance=True, resamples=20)
    assert [row.label for row in table.rows] == ["length_ratio"]  # published rows are not ranked among runs
    frery = next(row for row in table.published if row.label.startswith("Frery et al. 2014"))
    assert frery.mean == {"auc": 0.723, "c_at_1": 0.71, "auc_x_c_at_1": 0.513}
    assert "PAN 2014" in (frery.source or "")
    assert {row.label for row in table.published} >= {"PAN14 meta-classifier (over all submissions)", "PAN14 baseline"}
    assert all("novels" not in row.label for row in table.published)

    markdown = render([table], "markdown")
    assert "| _Frery et al. 2014 (PAN14 English essays winner)_ | published | 0.513 | 0.723 | 0.710 |" in markdown
    assert "published: Frery et al. 2014" in markdown  # its source, as a note
    # the best of our runs stays the bold one: a published figure is never compared for "best"
    assert table.best("auc_x_c_at_1") == table.rows[0].mean["auc_x_c_at_1"]
    rows = list(csv.DictReader(render([table], "csv").splitlines()))
    published = [r for r in rows if r["published"]]
    assert {r["system"] for r in published} == {row.label for row in table.published}
    assert all(r["runs"] == "0" and r["ci_low"] == "" and r["p_vs_best"] == "" for r in published)
    assert json.loads(render([table], "json"))[0]["published"][0]["source"]
    latex = render([table], "latex")
    assert "\\textit{Frery et al. 2014" in latex


def test_a_run_on_another_corpus_shows_none(tmp_path: Path) -> None:
    (table,) = build_tables(find_runs([run_on(tmp_path, PAN13_TEST)]))
    assert table.published == []
    assert "published" not in render([table], "markdown")


def test_the_report_shows_them_too(tmp_path: Path) -> None:
    out = run_on(tmp_path, ESSAYS_TEST)
    report = tmp_path / "report"
    result = CliRunner().invoke(main, ["report", "--results", str(out), "--out", str(report)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "_Frery et al. 2014 (PAN14 English essays winner)_ | published" in (report / "index.md").read_text()


def test_the_checked_in_table_is_well_formed() -> None:
    rows = read_published(PanClassicTask.metadata.published)
    assert rows and all(row["task"] == "pan-classic" for row in rows)
    for row in rows:
        measures = [key for key in row if key not in {"task", "corpus", "system", "source"}]
        assert all(is_known(m) for m in measures)
        assert row["auc_x_c_at_1"] and all(0.0 < float(row[m]) <= 1.0 for m in measures if row[m])
        if row["auc"] and row["c_at_1"]:  # AUC x c@1 is their product, to the published rounding
            assert float(row["auc"]) * float(row["c_at_1"]) == pytest.approx(float(row["auc_x_c_at_1"]), abs=0.001)


def test_a_missing_or_malformed_table_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert read_published("") == []
    with pytest.raises(HarnessError, match="cannot be read"):
        read_published("tasks.pan:no-such-file.csv")
    package = tmp_path / "anchors_pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "bad.csv").write_text("task,corpus,system,auc,source\npan-classic,x,y,high,z\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(HarnessError, match="line 2, auc: not a number"):
        read_published("anchors_pkg:bad.csv")
