"""What a result vouches for: its details.jsonl by checksum, and its test data by one identity that runs and
recorded answers files share (the reliability issue, items 4 and 5).

Item 4: an edited details.jsonl was trusted by `leaderboard --ci/--significance`, `plot` and `report` (every value
set to 0 or 1 gave the interval [1.000, 1.000] beside a main score of 0.754). result.json now records the details'
checksum, and a details file that differs is refused in one line naming it.

Item 5: `harness score --record` beside a run on the same test data was refused ("the runs differ in ... test
data"): the record's checksum covered the truth file, a run's the test folder. Both now record the test truth's
checksum (`task.data.test.truth_checksum`), and leaderboards compare by it.

Everything runs through the CLI in a fresh process, on real runs of cngdist on the project's PAN 2023 format
sample (README: "Data layouts").
"""

from __future__ import annotations

import gzip
import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.paths import REPO, SAMPLE

from tasks.pan.pan23 import Pan23Task

SEED_DIR = Path("pan23") / SAMPLE.name / "cngdist" / "seed-0"


def harness(*args: str | Path) -> subprocess.CompletedProcess[str]:
    """`python -m harness.cli ARGS` in a fresh process, as a user runs it."""
    command = [sys.executable, "-m", "harness.cli", *map(str, args)]
    return subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=300)


def ok(done: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    return done


def refused(done: subprocess.CompletedProcess[str], *named: str | Path) -> str:
    """The one line a refusal printed on stderr (exit 2, no traceback), which names each of `named`."""
    assert done.returncode == 2, (done.stdout[-2000:], done.stderr[-2000:])
    assert "Traceback" not in done.stderr
    (line,) = done.stderr.strip().splitlines()
    for name in named:
        assert str(name) in line
    return line


def run_cngdist(data: Path, out: Path) -> Path:
    """`harness run --system cngdist --task pan23 --data DATA --out OUT`; the run folder."""
    ok(harness("run", "--system", "cngdist", "--task", "pan23", "--data", data, "--out", out))
    return out / "pan23" / data.name / "cngdist" / "seed-0"


def record(truth: Path, answers: Path, folder: Path, name: str | None = "submission", *extra: str) -> Path:
    """`harness score --task pan23 --truth TRUTH --answers ANSWERS --record FOLDER [--system-name NAME] [EXTRA]`."""
    named = ("--system-name", name) if name is not None else ()
    ok(harness("score", "--task", "pan23", "--truth", truth, "--answers", answers, "--record", folder, *named, *extra))
    return folder


@pytest.fixture(scope="module")
def sample_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real cngdist run on the format sample: `<runs>/pan23/pan23-format-sample/cngdist/seed-0`."""
    runs = tmp_path_factory.mktemp("identity") / "runs"
    run_dir = run_cngdist(SAMPLE, runs)
    assert run_dir == runs / SEED_DIR and (run_dir / "answers.jsonl").is_file()
    return run_dir


def copied_runs(sample_run: Path, target: Path) -> Path:
    """A copy of the runs folder holding `sample_run`; returns the copy's runs folder."""
    shutil.copytree(sample_run.parents[3], target)
    return target


def edit_json(path: Path, edit) -> None:
    result = json.loads(path.read_text(encoding="utf-8"))
    edit(result)
    path.write_text(json.dumps(result), encoding="utf-8")


def table_labels(markdown: str) -> list[str]:
    """The system labels of the first table's rows."""
    lines = markdown.split("\n\n")[1].splitlines()[2:]
    return [line.strip("|").split("|")[0].strip() for line in lines]


# ------------------------------------------------------------------------------ item 4: details by checksum


def test_result_records_the_details_files_sha256(sample_run: Path, tmp_path: Path):
    recorded = record(SAMPLE / "test", sample_run / "answers.jsonl", tmp_path / "rec")
    for folder in (sample_run, recorded):
        result = json.loads((folder / "result.json").read_text(encoding="utf-8"))
        expected = "sha256:" + hashlib.sha256((folder / "details.jsonl").read_bytes()).hexdigest()
        assert result["details"]["checksum"] == expected  # what `sha256sum details.jsonl` prints, after "sha256:"


def flatten_details(details: Path) -> None:
    """Every answer set to 1 where the pair is same-author and 0 otherwise: a perfect score, by hand."""
    rows = [json.loads(line) for line in details.read_text(encoding="utf-8").splitlines()]
    details.write_text("".join(json.dumps({**row, "value": 1 if row["same"] else 0}) + "\n" for row in rows))


def test_an_edited_details_file_is_refused_by_ci_and_significance(sample_run: Path, tmp_path: Path):
    runs = copied_runs(sample_run, tmp_path / "runs")
    ok(harness("leaderboard", runs, "--ci", "--significance", "--resamples", "50"))
    details = runs / SEED_DIR / "details.jsonl"
    flatten_details(details)
    for flags in (["--ci"], ["--significance"], ["--ci", "--significance"]):
        # before: exit 0, the interval [1.000, 1.000] beside the main score 0.754 that result.json holds
        line = refused(harness("leaderboard", runs, *flags, "--resamples", "50"), details)
        assert "sha256 differs" in line and "result.json" in line
    ok(harness("leaderboard", runs))  # the table itself reads no details


def test_an_edited_details_file_is_refused_by_plot_and_report_before_anything_is_written(
    sample_run: Path, tmp_path: Path
):
    runs = copied_runs(sample_run, tmp_path / "runs")
    details = runs / SEED_DIR / "details.jsonl"
    flatten_details(details)
    refused(harness("plot", runs, "--out", tmp_path / "plots"), details)
    assert not any((tmp_path / "plots").glob("*"))  # no figure drawn from the edited details
    refused(harness("report", "--results", runs, "--out", tmp_path / "report", "--no-ci", "--no-significance"), details)
    assert not any((tmp_path / "report").rglob("*"))


def test_a_result_written_before_details_checksums_is_read_with_a_warning(sample_run: Path, tmp_path: Path):
    runs = copied_runs(sample_run, tmp_path / "runs")
    edit_json(runs / SEED_DIR / "result.json", lambda result: result["details"].pop("checksum"))
    done = ok(harness("leaderboard", runs, "--ci", "--significance", "--resamples", "50"))
    assert "overall 95% CI" in done.stdout
    warned = [line for line in done.stderr.splitlines() if "records no checksum of its details.jsonl" in line]
    assert len(warned) == 1 and str(runs / SEED_DIR / "result.json") in warned[0]  # once, though read twice


@pytest.mark.parametrize(("field", "value"), [("value", "abc"), ("same", 1), ("value", None)])
def test_an_unchecked_details_row_of_the_wrong_kind_is_refused_by_file_line_and_field(
    sample_run: Path, tmp_path: Path, field: str, value: object
):
    """An older result (no checksum) whose details were edited by hand: one line naming the row, not a TypeError
    half way through the bootstrap."""
    runs = copied_runs(sample_run, tmp_path / "runs")
    edit_json(runs / SEED_DIR / "result.json", lambda result: result["details"].pop("checksum"))
    details = runs / SEED_DIR / "details.jsonl"
    rows = [json.loads(line) for line in details.read_text(encoding="utf-8").splitlines()]
    rows[2][field] = value
    details.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    done = harness("leaderboard", runs, "--ci", "--resamples", "20")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert f"{details}:3: field '{field}': must be " in done.stderr.strip().splitlines()[-1]
    report = tmp_path / "report"
    assert harness("report", "--results", runs, "--out", report, "--resamples", "20").returncode == 2
    assert not report.exists()


# ------------------------------------------------------------------------------ item 5: one identity of test data


@pytest.mark.parametrize("truth", ["folder", "file", "gzipped file"])
def test_a_recorded_submission_stands_beside_a_run_on_the_same_test_data(sample_run: Path, tmp_path: Path, truth: str):
    given = {
        "folder": SAMPLE / "test",
        "file": SAMPLE / "test" / "truth.jsonl",
        "gzipped file": tmp_path / "truth.jsonl.gz",
    }[truth]
    if truth == "gzipped file":  # the same truth, its lines in another order, compressed
        lines = (SAMPLE / "test" / "truth.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
        given.write_bytes(gzip.compress("".join(reversed(lines)).encode("utf-8")))
    recorded = record(given, sample_run / "answers.jsonl", tmp_path / "rec")
    done = ok(harness("leaderboard", sample_run.parents[3], recorded))  # before: exit 2, "differ in ... test data"
    assert sorted(table_labels(done.stdout)) == ["cngdist", "submission"]
    run, rec = (json.loads((folder / "result.json").read_text()) for folder in (sample_run, recorded))
    assert run["task"]["data"]["test"]["truth_checksum"] == rec["task"]["data"]["test"]["truth_checksum"]
    assert run["task"]["data"]["test"]["truth_checksum"].startswith("sha256:")


def test_a_record_against_other_truth_gets_a_table_of_its_own(sample_run: Path, tmp_path: Path):
    """Issue 29: runs of one task on other test data were refused ("cannot share a table"); each dataset now gets
    its table, named by its data: the record by its truth's folder."""
    other = tmp_path / "other-data" / "truth.jsonl"
    other.parent.mkdir()
    rows = [json.loads(line) for line in (SAMPLE / "test" / "truth.jsonl").read_text(encoding="utf-8").splitlines()]
    rows[0] = {"id": rows[0]["id"], "same": not rows[0]["same"]}  # one label flipped (authors dropped with it)
    other.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    recorded = record(other, sample_run / "answers.jsonl", tmp_path / "rec")
    done = ok(harness("leaderboard", sample_run.parents[3], recorded))
    headings = [line for line in done.stdout.splitlines() if line.startswith("### ")]
    assert [h.split(" (")[0] for h in headings] == ["### pan23 on other-data", "### pan23 on pan23-format-sample"]
    assert table_labels(done.stdout) == ["submission"]  # the first table: the record alone
    assert "| cngdist |" in done.stdout.split("### pan23 on pan23-format-sample")[1]


def test_runs_on_the_same_truth_but_other_problems_get_tables_of_their_own(sample_run: Path, tmp_path: Path):
    """The truth is the identity a record shares; two runs must also have read the same test files. Folders of one
    name with other texts: two tables, told apart by their test files' checksums."""
    changed = tmp_path / SAMPLE.name
    shutil.copytree(SAMPLE, changed)
    pairs = changed / "test" / "pairs.jsonl"
    rows = [json.loads(line) for line in pairs.read_text(encoding="utf-8").splitlines()]
    rows[0]["pair"] = [text.upper() for text in rows[0]["pair"]]  # the same problem ids and truth, other texts
    pairs.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    other_run = run_cngdist(changed, tmp_path / "runs")
    done = ok(harness("leaderboard", sample_run.parents[3], other_run))
    headings = [line.split(" (version")[0] for line in done.stdout.splitlines() if line.startswith("### ")]
    assert len(headings) == 2 and all(h.startswith("### pan23 on pan23-format-sample (test data ") for h in headings)
    assert headings[0] != headings[1]


def test_results_written_before_truth_checksums_compare_as_before(sample_run: Path, tmp_path: Path):
    """Older results (no truth_checksum) compare by the checksum of their test files: runs as they did, and a
    record beside an older run gets a table of its own, with a note to record or run it again."""
    runs = copied_runs(sample_run, tmp_path / "runs")
    older = runs / SEED_DIR.parent / "seed-1"
    shutil.copytree(runs / SEED_DIR, older)

    def as_older(result: dict, seed: int | None = None) -> None:
        result["task"]["data"]["test"].pop("truth_checksum")
        if seed is not None:
            result["seeds"]["seed"], result["fingerprint"] = seed, result["fingerprint"] + f"-{seed}"

    edit_json(older / "result.json", lambda result: as_older(result, 1))
    done = ok(harness("leaderboard", runs))  # an older run and a new one on the same files: one table
    assert "| cngdist | 2 |" in done.stdout
    edit_json(runs / SEED_DIR / "result.json", as_older)
    ok(harness("leaderboard", runs))  # two older runs on the same files
    recorded = record(SAMPLE / "test", sample_run / "answers.jsonl", tmp_path / "rec")
    done = ok(harness("leaderboard", runs, recorded))
    assert len([line for line in done.stdout.splitlines() if line.startswith("### ")]) == 2
    assert "written before truth checksums" in done.stdout


def test_the_truth_checksum_is_of_the_truth_content_not_its_file():
    from core.records import truth_checksum

    task = Pan23Task()
    from_folder = task.read_truth(SAMPLE / "test")
    from_file = task.read_truth(SAMPLE / "test" / "truth.jsonl")
    assert truth_checksum(from_folder) == truth_checksum(from_file) == task.load(SAMPLE, "test").truth_checksum
    assert truth_checksum(dict(reversed(from_file.items()))) == truth_checksum(from_file)
    first = next(iter(from_file))
    flipped = {**from_file, first: from_file[first]._replace(same=not from_file[first].same, authors=None)}
    assert truth_checksum(flipped) != truth_checksum(from_file)


# ------------------------------------------------------------------------------ audit 8: records of one name


def two_submissions(sample_run: Path, tmp_path: Path) -> tuple[Path, Path]:
    """Two teams' answers as PAN, TIRA and `harness predict` lay them out, `<team>/answers.jsonl`: the run's own
    answers and the same answers with every value flipped (another submission, other scores)."""
    first, second = tmp_path / "sub" / "team-a" / "answers.jsonl", tmp_path / "sub" / "team-b" / "answers.jsonl"
    for path in (first, second):
        path.parent.mkdir(parents=True)
    shutil.copy(sample_run / "answers.jsonl", first)
    rows = [json.loads(line) for line in first.read_text(encoding="utf-8").splitlines()]
    second.write_text("".join(json.dumps({**row, "value": 1 - row["value"]}) + "\n" for row in rows), "utf-8")
    return first, second


def test_a_submission_recorded_without_a_name_is_named_after_its_folder(sample_run: Path, tmp_path: Path):
    """Audit 8, F1: every `answers.jsonl` was recorded as system "answers", so two teams' records became one row, the
    mean of their scores shown as two seeds of one system."""
    for answers in two_submissions(sample_run, tmp_path):
        record(SAMPLE / "test", answers, tmp_path / "rec" / answers.parent.name, None)
    done = ok(harness("leaderboard", tmp_path / "rec"))
    assert sorted(table_labels(done.stdout)) == ["team-a", "team-b"]


def test_two_different_runs_of_one_name_and_seed_are_refused_not_averaged(sample_run: Path, tmp_path: Path):
    """Audit 8, F1: two records given one --system-name (or two runs of one system on other training data) were
    averaged as seeds of one system; a leaderboard now refuses them in one line naming both."""
    recorded = [
        record(SAMPLE / "test", answers, tmp_path / "rec" / answers.parent.name, name="same")
        for answers in two_submissions(sample_run, tmp_path)
    ]
    done = harness("leaderboard", tmp_path / "rec")
    line = refused(done, recorded[0] / "result.json", recorded[1] / "result.json")
    assert "different answers" in line and "--system-name" in line


def test_a_record_never_replaces_a_runs_result(sample_run: Path, tmp_path: Path):
    """Audit 8, F7: `score --record RUN --overwrite` replaced a run's result.json and details.jsonl and left its
    answers and checkpoint beside them, a folder whose files describe two things. A record's own folder is still
    replaced in place."""
    runs = copied_runs(sample_run, tmp_path / "runs")
    run_dir = runs / SEED_DIR
    before = {name: (run_dir / name).read_bytes() for name in ("result.json", "details.jsonl")}
    answers, _ = two_submissions(sample_run, tmp_path)
    for folder in (run_dir, run_dir / "rescored"):
        args = ("score", "--task", "pan23", "--truth", SAMPLE / "test", "--answers", answers, "--overwrite")
        refused(harness(*args, "--record", folder), run_dir)
        assert not (run_dir / "rescored").exists()
    assert {name: (run_dir / name).read_bytes() for name in before} == before
    record(SAMPLE / "test", answers, tmp_path / "rec")
    record(SAMPLE / "test", answers, tmp_path / "rec", "submission", "--overwrite")
    # a submission recorded into its own folder, beside its answers.jsonl, is re-recorded there too
    record(SAMPLE / "test", answers, answers.parent)
    record(SAMPLE / "test", answers, answers.parent, "submission", "--overwrite")


def test_one_system_fitted_on_two_training_sets_gets_a_row_for_each(sample_run: Path, tmp_path: Path):
    """Audit 9, F8: a cross-genre run (other training data, the same test set) beside the in-genre one made every
    table command refuse everything; each training set now has a row, labelled by its dataset's name, in the
    leaderboard and in the summary. Under another seed (1 here; the sample run's is 0) there was no error at all:
    the two were averaged as one system's seeds."""
    other = tmp_path / "other-train" / "train"
    shutil.copytree(SAMPLE / "train", other)
    pairs = other / "pairs.jsonl"
    rows = [json.loads(line) for line in pairs.read_text(encoding="utf-8").splitlines()]
    for row in rows[::2]:  # other training texts, the same problems and truth
        row["pair"] = [text.upper() for text in row["pair"]]
    pairs.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    runs = copied_runs(sample_run, tmp_path / "runs")
    ok(
        harness(
            "run",
            "--system",
            "cngdist",
            "--task",
            "pan23",
            "--train",
            other,
            "--test",
            SAMPLE / "test",
            "--out",
            runs,
            "--seed",
            "1",
        )
    )
    done = ok(harness("leaderboard", runs))
    labels = table_labels(done.stdout)
    assert sorted(labels) == ["cngdist (other+pan23-format-sample)", "cngdist (pan23-format-sample)"], labels
    summary = ok(harness("leaderboard", runs, "--summary", "--include-format-samples"))
    assert "cngdist (other+pan23-format-sample)" in summary.stdout and "cngdist (pan23-format-sample)" in summary.stdout
