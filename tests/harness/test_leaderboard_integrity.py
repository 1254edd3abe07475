"""Leaderboards count each run once and never rank a missing score first (issue 14, items 2 and 3).

The runs are real: `harness run` of length_ratio on pan-classic, on a small corpus written here; a few tests
copy such a run's folder and edit its result.json the way a copy, a crash or a hand edit would.
"""

from __future__ import annotations

import csv
import json
import logging
import math
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers.length_corpus import write_corpus
from helpers.paths import REPO

from harness.cli import main
from harness.leaderboard import build_tables, find_runs, render
from harness.results import RESULT_NAME, RESULT_SCHEMA_VERSION, write_result

MAIN = "auc_x_c_at_1"  # pan-classic's main score, higher is better


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`harness run` of length_ratio on pan-classic with seeds 0 and 1: `<runs>/pan-classic/length_ratio/seed-N`."""
    root = tmp_path_factory.mktemp("integrity")
    write_corpus(root / "data" / "train", 20, seed=1)
    write_corpus(root / "data" / "test", 12, seed=2)
    for seed in (0, 1):
        args = ["run", "--system", "length_ratio", "--task", "pan-classic", "--data", str(root / "data")]
        args += ["--out", str(root / "runs"), "--seed", str(seed)]
        result = CliRunner().invoke(main, args, catch_exceptions=False)
        assert result.exit_code == 0, result.output
    return root / "runs"


def seed_dir(runs: Path, seed: int) -> Path:
    return runs / "pan-classic" / "data" / "length_ratio" / f"seed-{seed}"


def test_predict_takes_the_genre_of_inputs_mounted_without_one(runs: Path, tmp_path: Path) -> None:
    """Audit 8, F2: `predict --genre` (pan-classic) gives inputs whose folder names no genre the run's; a genre that
    contradicts the corpus's own, or --genre on a task that reads types from its data, is refused before any
    work."""
    run_dir = seed_dir(runs, 0)
    shutil.copytree(runs.parent / "data" / "test", tmp_path / "input", ignore=shutil.ignore_patterns("truth.txt"))
    base = ["predict", "--system", "length_ratio", "--checkpoint", str(run_dir / "checkpoint")]
    args = [*base, "--task", "pan-classic", "--input", str(tmp_path / "input"), "--output", str(tmp_path / "out")]
    result = CliRunner().invoke(main, [*args, "--genre", "essay"])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "out" / "answers.jsonl").read_bytes() == (run_dir / "answers.jsonl").read_bytes()
    essays = tmp_path / "essays-corpus"
    shutil.copytree(tmp_path / "input", essays)
    refused = CliRunner().invoke(
        main, [*args[:-4], "--input", str(essays), "--output", str(tmp_path / "o2"), "--genre", "novel"]
    )
    assert refused.exit_code == 2 and "genre 'novel' was given, but the corpus is 'essay'" in refused.output
    pan23 = [*base, "--task", "pan23", "--input", str(tmp_path / "input"), "--output", str(tmp_path / "o3")]
    refused = CliRunner().invoke(main, [*pan23, "--genre", "essay"])
    assert refused.exit_code == 2 and "--genre is for --task pan-classic" in refused.output
    assert not (tmp_path / "o2").exists() and not (tmp_path / "o3").exists()


def leaderboard(*args: str | Path) -> subprocess.CompletedProcess[str]:
    """`harness leaderboard ARGS` in a fresh process, as a user runs it: stdout is the table, stderr the log."""
    command = [sys.executable, "-c", "from harness.cli import main; main()", "leaderboard", *map(str, args)]
    return subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=120)


def table_row(markdown: str, label: str) -> list[str]:
    (line,) = [line for line in markdown.splitlines() if line.startswith(f"| {label} |")]
    return [cell.strip() for cell in line.strip("|").split("|")]


def edited_copy(source: Path, target: Path, edit) -> Path:
    """A copy of a run folder with its result.json changed by `edit(result)`; written with NaN as JSON's `NaN`."""
    shutil.copytree(source, target)
    path = target / RESULT_NAME
    result = json.loads(path.read_text(encoding="utf-8"))
    edit(result)
    path.write_text(json.dumps(result), encoding="utf-8")
    return path


def warnings_of(caplog: pytest.LogCaptureFixture) -> str:
    return "\n".join(r.getMessage() for r in caplog.records if r.levelno == logging.WARNING)


# ------------------------------------------------------------------------------ item 2: one run, counted once


def test_the_same_folder_given_twice_is_counted_once(runs: Path):
    one = seed_dir(runs, 0)
    done = leaderboard(one, one)
    assert done.returncode == 0, done.stderr
    row = table_row(done.stdout, "length_ratio")
    assert row[1] == "1" and "±" not in "".join(row)  # before: "2" and "1.000 ± 0.000"
    assert "given more than once" in done.stderr and "counted once" in done.stderr


def test_a_file_and_its_folder_are_counted_once(runs: Path, caplog: pytest.LogCaptureFixture):
    caplog.set_level(logging.WARNING, logger="harness")
    one = seed_dir(runs, 0)
    found = find_runs([one, one / RESULT_NAME, runs])
    assert sorted(run.path.parent.name for run in found) == ["seed-0", "seed-1"]
    assert "given more than once" in warnings_of(caplog)


def test_a_copied_run_folder_is_counted_once_with_a_warning_and_a_note(
    runs: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
):
    caplog.set_level(logging.WARNING, logger="harness")
    copy = tmp_path / "backup" / "seed-0"
    shutil.copytree(seed_dir(runs, 0), copy)
    (table,) = build_tables(find_runs([seed_dir(runs, 0), copy]))
    (row,) = table.rows
    assert len(row.runs) == 1 and math.isnan(row.std[MAIN])  # one run has no sd
    assert f"{copy / RESULT_NAME} holds the same run as {seed_dir(runs, 0) / RESULT_NAME}" in warnings_of(caplog)
    assert any("counted once" in note and str(copy / RESULT_NAME) in note for note in table.notes)
    markdown = render([table], "markdown")
    assert table_row(markdown, "length_ratio")[1] == "1" and "counted once" in markdown
    assert json.loads(render([table], "json"))[0]["rows"][0]["runs"] == [str(seed_dir(runs, 0) / RESULT_NAME)]


def test_copies_of_one_run_whose_scores_differ_are_refused_whichever_comes_first(runs: Path, tmp_path: Path):
    """Was (audit 23, F1): counted once with a warning, the first file's scores used, so `leaderboard A B` and
    `leaderboard B A` printed different numbers for the same runs, and both exited 0."""
    one = seed_dir(runs, 0)
    edited = edited_copy(one, tmp_path / "edited" / "seed-0", lambda result: result["scores"].update({MAIN: 0.1}))
    for order in ([one, edited.parent], [edited.parent, one]):
        done = leaderboard(*order)
        assert done.returncode == 2 and "are one run" in done.stderr and f"{MAIN} " in done.stderr, done.stderr
        assert "a rerun on another machine" in done.stderr  # a run, not a record: no advice to record it again
        assert done.stdout == ""


def test_a_copy_with_a_measure_the_other_lacks_is_still_one_run(runs: Path, tmp_path: Path):
    """A later harness version may add a measure: no disagreement, so the copy is counted once as before."""
    one = seed_dir(runs, 0)
    extended = edited_copy(one, tmp_path / "newer" / "seed-0", lambda result: result["scores"].update({"extra": 1.0}))
    done = leaderboard(one, extended.parent)
    assert done.returncode == 0 and "counted once" in done.stderr, done.stderr
    assert table_row(done.stdout, "length_ratio")[1] == "1"
    for order in ([one, extended.parent], [extended.parent, one]):  # the copy with more measures stands, either way
        (table,) = build_tables(find_runs(order))
        assert json.loads(render([table], "json"))[0]["rows"][0]["runs"] == [str(extended)]


def test_copies_are_counted_once_also_when_given_as_runs_not_files(runs: Path):
    """build_tables itself merges copies: a caller that builds Run objects gets the same count."""
    (run,) = find_runs([seed_dir(runs, 0)])
    (table,) = build_tables([run, run])
    assert len(table.rows[0].runs) == 1


def test_copies_of_several_seeds_keep_one_run_per_seed(runs: Path, tmp_path: Path):
    shutil.copytree(runs, tmp_path / "copy")
    done = leaderboard(runs, tmp_path / "copy", "--format", "json")
    assert done.returncode == 0, done.stderr
    (table,) = json.loads(done.stdout)
    (row,) = table["rows"]
    assert len(row["runs"]) == 2  # seeds 0 and 1, not four
    assert done.stderr.count("holds the same run as") == 2


def test_ci_counts_the_deduplicated_runs(runs: Path, tmp_path: Path):
    copy = tmp_path / "elsewhere"
    shutil.copytree(seed_dir(runs, 0), copy)
    done = leaderboard(seed_dir(runs, 0), copy, seed_dir(runs, 0), "--ci", "--resamples", "50", "--format", "csv")
    assert done.returncode == 0, done.stderr
    (main_row,) = [row for row in csv.DictReader(done.stdout.splitlines()) if row["measure"] == MAIN]
    assert main_row["runs"] == "1" and main_row["std"] == ""  # one run has no sd
    assert float(main_row["ci_low"]) <= float(main_row["mean"]) <= float(main_row["ci_high"])
    markdown = leaderboard(seed_dir(runs, 0), copy, "--ci", "--resamples", "50").stdout
    assert table_row(markdown, "length_ratio")[1] == "1" and "counted once" in markdown and "CI:" in markdown


def test_another_seed_is_another_run(runs: Path, tmp_path: Path):
    """Identity is content: a copy whose seed differs (as tests/harness/test_leaderboard.py builds seeds) is kept."""

    def reseed(result: dict) -> None:
        result["seeds"]["seed"] = 7

    edited_copy(seed_dir(runs, 0), tmp_path / "seed-7", reseed)
    (table,) = build_tables(find_runs([seed_dir(runs, 0), tmp_path / "seed-7"]))
    assert len(table.rows[0].runs) == 2


# ------------------------------------------------------------------------- item 3: no main score ranks last


MISSING = object()


def broken_copy(runs: Path, tmp_path: Path, value) -> Path:
    """A copy of seed 0 as system "a-broken" (its folder and name sort first) whose main score is `value`
    (MISSING: the key is removed; None: JSON null, as a writer that stores NaN so would)."""

    def edit(result: dict) -> None:
        result["system"]["name"] = "a-broken"
        if value is MISSING:
            del result["scores"][MAIN]
        else:
            result["scores"][MAIN] = value

    return edited_copy(seed_dir(runs, 0), tmp_path / "a-broken", edit).parent


@pytest.mark.parametrize("value", [math.nan, MISSING, None], ids=["nan", "missing", "null"])
def test_a_run_without_a_main_score_is_ranked_last_with_a_warning(
    runs: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture, value
):
    caplog.set_level(logging.WARNING, logger="harness")
    broken = broken_copy(runs, tmp_path, value)
    (table,) = build_tables(find_runs([broken, seed_dir(runs, 0)]))
    assert [row.label for row in table.rows] == ["length_ratio", "a-broken"]
    assert table.best(MAIN) == table.rows[0].mean[MAIN]
    assert f"{broken / RESULT_NAME}: the main score {MAIN}" in warnings_of(caplog)
    assert any(note.startswith("ranked last: a-broken") for note in table.notes)
    markdown = render([table], "markdown")
    assert f"| length_ratio | 1 | **{table.rows[0].mean[MAIN]:.3f}** |" in markdown
    assert "ranked last: a-broken" in markdown
    strict = json.loads(render([table], "json"), parse_constant=lambda name: pytest.fail(f"{name} in JSON"))
    assert strict[0]["rows"][1]["mean"][MAIN] is None


def test_the_cli_ranks_a_nan_main_score_last_and_says_so(runs: Path, tmp_path: Path):
    broken = broken_copy(runs, tmp_path, math.nan)
    done = leaderboard(broken, runs, "--ci", "--significance", "--resamples", "30")
    assert done.returncode == 0, done.stderr
    labels = [line.split("|")[1].strip() for line in done.stdout.splitlines() if line.startswith("| ")][1:]
    assert labels == ["length_ratio", "a-broken"]
    assert f"the main score {MAIN} is nan" in done.stderr and "ranked last" in done.stderr


def write_ranking_result(folder: Path, system: str, scores: dict) -> Path:
    """A result of a ranking task whose main score, mean_rank, is lower-is-better (written by write_result)."""
    task = {"name": "ranks", "version": "1", "main_score": "mean_rank", "measures": ["mean_rank", "mrr"]}
    result = {
        "schema_version": RESULT_SCHEMA_VERSION,
        "fingerprint": f"sha256:{system}",
        "task": task,
        "system": {"name": system, "params": {}},
        "seeds": {"seed": 0},
        "scores": scores,
    }
    write_result(folder / system, result, [{"query": "q0", "rank": 1}])
    return folder / system


@pytest.mark.parametrize("broken", [{"mrr": 0.1}, {"mean_rank": math.nan, "mrr": 0.1}], ids=["missing", "nan"])
def test_lower_is_better_also_ranks_a_missing_main_score_last(tmp_path: Path, broken: dict):
    write_ranking_result(tmp_path, "a-broken", broken)
    write_ranking_result(tmp_path, "b-worse", {"mean_rank": 9.0, "mrr": 0.2})
    write_ranking_result(tmp_path, "c-better", {"mean_rank": 2.0, "mrr": 0.5})
    (table,) = build_tables(find_runs([tmp_path]))
    assert [row.label for row in table.rows] == ["c-better", "b-worse", "a-broken"]
    assert table.best("mean_rank") == 2.0


def test_a_record_joins_the_table_of_its_own_test_set_where_two_share_its_truth(tmp_path: Path):
    """Audit 13, F4: a record (truth only) joined whichever of two test sets with its truth came first."""
    from helpers.paths import SAMPLE

    edited = tmp_path / "edited-sample"  # the same truth, one text edited: another test set
    shutil.copytree(SAMPLE, edited)
    pairs = edited / "test" / "pairs.jsonl"
    lines = pairs.read_text(encoding="utf-8").splitlines(keepends=True)
    first = json.loads(lines[0])
    first["pair"][0] += " edited"
    pairs.write_text(json.dumps(first) + "\n" + "".join(lines[1:]), encoding="utf-8")
    out = tmp_path / "runs"
    for data in (edited, SAMPLE):  # the edited set's run first, as the audit found it
        args = ["run", "--system", "length_ratio", "--task", "pan23", "--data", str(data), "--out", str(out)]
        assert CliRunner().invoke(main, args, catch_exceptions=False).exit_code == 0
    (answers,) = (out / "pan23" / "pan23-format-sample").rglob("answers.jsonl")
    args = ["score", "--task", "pan23", "--truth", str(SAMPLE / "test" / "truth.jsonl"), "--answers", str(answers),
            "--record", str(tmp_path / "teamx"), "--system-name", "teamx"]  # fmt: skip
    assert CliRunner().invoke(main, args, catch_exceptions=False).exit_code == 0
    tables = {
        table.dataset: {row.label for row in table.rows} for table in build_tables(find_runs([out, tmp_path / "teamx"]))
    }
    assert tables == {"edited-sample": {"length_ratio"}, "pan23-format-sample": {"length_ratio", "teamx"}}
