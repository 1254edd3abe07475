"""Tracebacks and unclear reports of the reliability issue (items 6 and 7), each through the command line.

Item 6: a JSON line nested 100,000 deep (pairs.jsonl, an answers file, a `pairs --from jsonl` input) was a
RecursionError; `--seed 4294967296` with compressor or pair_features was scikit-learn's traceback; darkweb on
300 posts failed with a ValueError after the fit.
Item 7: a repeated `--param` kept the last value; a one-class training split gave no warning; the missing-answers
warning printed twice, the second with a Python source line; a symlink loop, /dev/null or a folder named
pairs.jsonl read as "missing"; `harness plot` replaced earlier figures without `--overwrite`.
(The `pairs` builder's messages are in tests/tasks/pairs/test_pairs_inputs.py, with one command line here.)

A refusal: exit code 2, one `error:` line on stderr naming file (and line and field where there is one), no
traceback, files left as they were.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from helpers.darkweb_data import synthetic_split
from helpers.paths import REPO, SAMPLE
from helpers.refusals import error_line

from harness import registry
from harness.cli import main
from harness.seeding import legacy_seed
from tasks.darkweb.evaluation import evaluate_embeddings, queries_with_a_match

DEEP = "[" * 100_000 + "]" * 100_000  # json.loads: RecursionError, not JSONDecodeError


def harness(*args: object) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "harness.cli", *map(str, args)], cwd=REPO, capture_output=True, text=True, timeout=300
    )


def snapshot(folder: Path) -> dict[str, bytes | str | None]:
    """Every path under `folder`: a file's bytes, a link's target, None for a folder."""
    return {
        str(p.relative_to(folder)): os.readlink(p) if p.is_symlink() else None if p.is_dir() else p.read_bytes()
        for p in sorted(folder.rglob("*"))
    }


def sample_copy(tmp_path: Path) -> Path:
    return Path(shutil.copytree(SAMPLE, tmp_path / "data"))


def with_line(path: Path, line_no: int, text: str) -> None:
    """Put `text` in as line `line_no` of a jsonl file."""
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    lines.insert(line_no - 1, text + "\n")
    path.write_text("".join(lines), encoding="utf-8")


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The --out folder of one cngdist run on the format sample."""
    out = tmp_path_factory.mktemp("runs")
    done = harness("run", "--system", "cngdist", "--task", "pan23", "--data", SAMPLE, "--out", out)
    assert done.returncode == 0, done.stderr
    return out


# -- item 6: JSON nested too deep ------------------------------------------------------------------------------------


def test_a_deep_json_line_in_pairs_jsonl_names_file_and_line(tmp_path: Path) -> None:
    data = sample_copy(tmp_path)
    with_line(data / "train" / "pairs.jsonl", 3, DEEP)
    out = tmp_path / "out"
    line = error_line(harness("run", "--system", "cngdist", "--task", "pan23", "--data", data, "--out", out))
    assert line == f"error: {data / 'train' / 'pairs.jsonl'}:3: malformed JSON (nested too deep to read)"
    assert not out.exists()


def test_a_deep_json_line_in_an_answers_file_names_file_and_line(tmp_path: Path) -> None:
    answers = tmp_path / "answers.jsonl"
    answers.write_text('{"id": "test-01", "value": 0.5}\n' + DEEP + "\n", encoding="utf-8")
    line = error_line(harness("score", "--task", "pan23", "--truth", SAMPLE / "test", "--answers", answers))
    assert line == f"error: {answers}:2: malformed JSON (nested too deep to read)"


def test_a_deep_json_line_in_a_pairs_input_names_file_and_line(tmp_path: Path) -> None:
    texts = tmp_path / "texts.jsonl"
    texts.write_text(json.dumps({"author": "a", "text": "some words", "discourse_type": "email"}) + "\n" + DEEP + "\n")
    out = tmp_path / "out"
    line = error_line(harness("pairs", "--from", "jsonl", texts, out))
    assert line == f"error: {texts}:2: malformed JSON (nested too deep to read)"
    assert not out.exists()


def test_a_deep_contents_json_of_a_pan_corpus_names_its_file(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    for problem in ("EN001", "EN002"):
        (corpus / problem).mkdir(parents=True)
        (corpus / problem / "known01.txt").write_text(f"known text of {problem}\n", encoding="utf-8")
        (corpus / problem / "unknown.txt").write_text(f"unknown text of {problem}\n", encoding="utf-8")
    (corpus / "truth.txt").write_text("EN001 Y\nEN002 N\n", encoding="utf-8")
    (corpus / "contents.json").write_text(DEEP, encoding="utf-8")
    line = error_line(harness("convert", corpus, tmp_path / "out"))
    assert line == f"error: {corpus / 'contents.json'}: malformed JSON (nested too deep to read)"
    assert not (tmp_path / "out").exists()


# -- a bad-input audit (2026-11-30): a JSON number longer than Python converts (its int limit) -------------------

LONG_NUMBER = "1" + "0" * 5000


def test_a_json_number_of_5001_digits_in_answers_names_file_and_line(tmp_path: Path) -> None:
    answers = tmp_path / "answers.jsonl"
    answers.write_text('{"id": "test-01", "value": 0.5}\n{"id": "test-02", "value": ' + LONG_NUMBER + "}\n")
    line = error_line(harness("score", "--task", "pan23", "--truth", SAMPLE / "test", "--answers", answers))
    assert line == f"error: {answers}:2: malformed JSON (a number of more than 4300 digits)"


def test_a_json_number_of_5001_digits_in_a_result_file_names_it(tmp_path: Path, finished_run: Path) -> None:
    (result,) = finished_run.rglob("result.json")
    runs = Path(shutil.copytree(result.parent, tmp_path / "runs" / "x"))
    (runs / "result.json").write_text('{"schema_version": ' + LONG_NUMBER + "}", encoding="utf-8")
    line = error_line(harness("leaderboard", tmp_path / "runs"))
    assert "malformed JSON (a number of more than 4300 digits)" in line and str(runs / "result.json") in line


def test_a_result_file_not_in_utf8_is_named_as_such_not_as_a_long_number(tmp_path: Path) -> None:
    """UnicodeDecodeError is a ValueError too: the long-number clause must not take it."""
    from core.errors import HarnessError
    from harness.results import read_result

    path = tmp_path / "result.json"
    path.write_bytes(b'{"schema_version": 1, "scores": {"caf\xe9": 1}}')
    with pytest.raises(HarnessError, match=r"result.json: cannot read this result file \(not UTF-8 at byte 37\)"):
        read_result(path)


def test_a_rerun_onto_a_damaged_result_says_that_overwrite_recomputes_it(tmp_path: Path) -> None:
    """Audit 20: the error named the damage, not the way out (`--overwrite`, which recomputes the run)."""
    out = tmp_path / "runs"
    args = ("run", "--system", "cngdist", "--task", "pan23", "--data", SAMPLE, "--out", out)
    assert harness(*args).returncode == 0
    (result,) = out.rglob("result.json")
    result.write_text(result.read_text(encoding="utf-8")[:200], encoding="utf-8")
    line = error_line(harness(*args))
    assert line.startswith(f"error: {result}: cannot read this result file (malformed JSON")
    assert line.endswith("; --overwrite recomputes the run")
    assert harness(*args, "--overwrite").returncode == 0


# -- item 6: every seed the command line accepts works --------------------------------------------------------------


@pytest.mark.parametrize("system", ["compressor", "pair_features"])
def test_a_seed_past_two_to_the_32_fits_scikit_learn_systems(tmp_path: Path, system: str) -> None:
    seed = 2**32  # the CLI takes seeds up to 2**64 - 1; scikit-learn's random_state stops at 2**32 - 1
    done = harness("run", "--system", system, "--task", "pan23", "--data", SAMPLE, "--seed", seed, "--out", tmp_path)
    assert done.returncode == 0, done.stderr
    result = json.loads((tmp_path / "pan23" / SAMPLE.name / system / f"seed-{seed}" / "result.json").read_text())
    assert result["seeds"]["seed"] == seed


def test_legacy_seeds_keep_small_seeds_and_fold_large_ones() -> None:
    assert [legacy_seed(s) for s in (0, 7, 2**32 - 1, 2**32, 2**32 + 7, 2**64 - 1)] == [
        0, 7, 2**32 - 1, 0, 7, 2**32 - 1
    ]  # fmt: skip


# -- item 6: darkweb data too small to score is refused before the fit ---------------------------------------------


def test_darkweb_on_300_posts_is_refused_before_fitting(forum_posts_file: Path, tmp_path: Path) -> None:
    import gzip

    data = tmp_path / "posts"
    data.mkdir()
    with gzip.open(forum_posts_file, "rt", encoding="utf-8") as posts:
        (data / "posts.jsonl").write_text("".join(next(posts) for _ in range(300)), encoding="utf-8")
    out = tmp_path / "out"
    done = harness("run", "--system", "episode_tfidf", "--task", "darkweb", "--data", data, "--out", out)
    line = error_line(done)  # was: ValueError: no query episode has another episode ... (after the fit)
    assert line.startswith(f"error: {data}: the test split cannot be scored: none of its ")
    assert "fit took" not in done.stderr
    assert not list(out.rglob("checkpoint"))


def test_the_darkweb_check_agrees_with_the_evaluation() -> None:
    """`queries_with_a_match` counts without embeddings what `evaluate_embeddings` refuses when it is 0."""
    for protocol in ("thread-disjoint", "legacy"):
        lonely = synthetic_split("test", episodes_per_author=1).episodes
        assert queries_with_a_match(lonely, protocol=protocol) == 0
        with pytest.raises(ValueError, match="nothing to evaluate"):
            evaluate_embeddings(np.eye(len(lonely)), lonely, protocol=protocol)
        episodes = synthetic_split("test").episodes
        assert queries_with_a_match(episodes, protocol=protocol) == len(episodes)
        assert queries_with_a_match(episodes, protocol=protocol, query_sample=5) == 5


# -- item 7: a repeated --param ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("option", "key"), [("--param", "max_features"), ("--task-param", "max_authors")])
def test_a_repeated_parameter_is_refused(tmp_path: Path, option: str, key: str) -> None:
    args = ["run", "--system", "episode_tfidf", "--task", "darkweb", "--data", SAMPLE, "--out", tmp_path / "out"]
    line = error_line(harness(*args, option, f"{key}=10", option, f"{key}=20"))
    assert line == f"error: {option} {key} is given twice ({key}=10 and {key}=20); give it once"
    assert not (tmp_path / "out").exists()


# -- item 7: a training split of one class ---------------------------------------------------------------------------


def test_a_one_class_training_split_warns_in_one_line(tmp_path: Path) -> None:
    data = sample_copy(tmp_path)
    truth = data / "train" / "truth.jsonl"
    rows = [json.loads(line) for line in truth.read_text(encoding="utf-8").splitlines()]
    same = [{**row, "same": True, "authors": row["authors"][:1] * 2} for row in rows]
    truth.write_text("".join(json.dumps(row) + "\n" for row in same), encoding="utf-8")
    done = harness("run", "--system", "cngdist", "--task", "pan23", "--data", data, "--out", tmp_path / "out")
    assert done.returncode == 0, done.stderr
    warned = [line for line in done.stderr.splitlines() if "only same-author problems" in line]
    assert warned == [
        f"{data / 'train'}: the training split holds only same-author problems (16 of 16): a system learns no line "
        "between the classes from it"
    ]


# -- item 7: the missing-answers warning, once ---------------------------------------------------------------------


def test_missing_answers_are_reported_once_without_a_source_line(tmp_path: Path) -> None:
    answers = tmp_path / "answers.jsonl"
    answers.write_text('{"id": "test-01", "value": 0.7}\n', encoding="utf-8")
    done = harness("score", "--task", "pan23", "--truth", SAMPLE / "test", "--answers", answers)
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == [
        f"7 of 8 problems have no answer and are scored as 0.5 (non-answers) in {answers}"
    ]  # was that line, then "common.py:259: MissingAnswersWarning: ..." and the source line under it


def test_a_python_warning_during_a_command_is_one_log_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    task = registry.task_class("pan23")
    read_answers = task.read_answers

    def warn_then_read(self, path):  # noqa: ANN001, ANN202
        warnings.warn("two\nlines", RuntimeWarning, stacklevel=1)
        return read_answers(self, path)

    monkeypatch.setattr(task, "read_answers", warn_then_read)
    answers = tmp_path / "answers.jsonl"
    answers.write_text('{"id": "test-01", "value": 0.7}\n', encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="harness"), warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("always")
        args = ["score", "--task", "pan23", "--truth", str(SAMPLE / "test"), "--answers", str(answers)]
        result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert "RuntimeWarning: two lines" in caplog.messages
    assert [m for m in caplog.messages if "have no answer" in m] == [m for m in caplog.messages if "7 of 8" in m]
    assert len([m for m in caplog.messages if "have no answer" in m]) == 1
    assert shown == []  # both went to the log, none to `warnings`' own printing


# -- item 7: what is there instead of a file -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("make", "said"),
    [
        (lambda path: path.mkdir(), "is a folder, not a file"),
        (lambda path: path.symlink_to("/dev/null"), "is not a regular file (a device, pipe or socket)"),
        (lambda path: (path.symlink_to("loop"), path.with_name("loop").symlink_to(path.name)), "cannot be read "
         "(symlink loop)"),
        (lambda path: path.symlink_to("nowhere.jsonl"), "is a broken symlink (to nowhere.jsonl)"),
    ],
    ids=["folder", "dev-null", "symlink-loop", "broken-link"],
)  # fmt: skip
def test_a_pairs_file_that_is_no_regular_file_says_what_it_is(tmp_path: Path, make, said: str) -> None:  # noqa: ANN001
    data = sample_copy(tmp_path)
    pairs = data / "train" / "pairs.jsonl"
    pairs.unlink()
    make(pairs)
    before = snapshot(tmp_path)
    line = error_line(harness("run", "--system", "cngdist", "--task", "pan23", "--data", data, "--out", tmp_path / "o"))
    assert line == f"error: {pairs}: {said}; expected the pairs.jsonl file (or pairs.jsonl.gz) here"
    assert snapshot(tmp_path) == before


def test_a_split_folder_in_a_symlink_loop_says_so(tmp_path: Path) -> None:
    data = sample_copy(tmp_path)
    shutil.rmtree(data / "train")
    (data / "train").symlink_to(data / "train")
    out = tmp_path / "out"
    line = error_line(harness("run", "--system", "cngdist", "--task", "pan23", "--data", data, "--out", out))
    assert line.startswith(f"error: {data / 'train'}: split folder 'train/' cannot be read (symlink loop); ")
    args = ("--train", data / "train", "--test", data / "test", "--out", out)  # was a RuntimeError traceback
    line = error_line(harness("run", "--system", "cngdist", "--task", "pan23", *args))
    assert line == f"error: {data / 'train'}: cannot be read (symlink loop); expected a data folder"
    assert not out.exists()


def test_a_truth_link_loop_and_dev_null_answers_say_what_they_are(tmp_path: Path) -> None:
    loop = tmp_path / "truth.jsonl"
    loop.symlink_to("again")
    (tmp_path / "again").symlink_to("truth.jsonl")
    answers = tmp_path / "answers.jsonl"
    answers.write_text('{"id": "test-01", "value": 0.7}\n', encoding="utf-8")
    line = error_line(harness("score", "--task", "pan23", "--truth", loop, "--answers", answers))
    assert (
        line
        == f"error: Invalid value for '--truth': '{loop}' cannot be read (symlink loop). (see harness score --help)"
    )
    line = error_line(harness("score", "--task", "pan23", "--truth", SAMPLE / "test", "--answers", "/dev/null"))
    assert line == "error: /dev/null: is not a regular file (a device, pipe or socket), and gave no lines"


# -- item 7: the pairs builder names the field at fault --------------------------------------------------------------


def test_pairs_of_too_short_texts_name_the_authors_and_min_chars(tmp_path: Path) -> None:
    texts = tmp_path / "texts.jsonl"
    rows = [
        {"author": f"a{a}", "text": f"{kind} {i} by a{a}" + (", a text long enough to keep" if a < 3 else ""),
         "discourse_type": kind}
        for a in range(8) for kind in ("email", "essay") for i in range(3)
    ]  # fmt: skip
    texts.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    line = error_line(harness("pairs", "--from", "jsonl", texts, tmp_path / "out", "--pairs", 8))
    assert line.startswith(f"error: {texts}: field 'author': only 3 authors can give same-author pairs")
    assert "a lower min_chars keeps the shorter texts" in line
    assert "test_share" not in line and "cross_share" not in line  # was: field 'test_share', "a lower cross_share"
    assert not (tmp_path / "out").exists()


# -- item 7: plot keeps earlier figures unless --overwrite ------------------------------------------------------------


def test_plot_refuses_to_replace_figures_without_overwrite(finished_run: Path, tmp_path: Path) -> None:
    figures = tmp_path / "figures"
    first = harness("plot", finished_run, "--out", figures)
    assert first.returncode == 0, first.stderr
    drawn = snapshot(figures)
    assert "roc-pan23-pan23-format-sample.png" in drawn and "det-pan23-pan23-format-sample.csv" in drawn
    line = error_line(harness("plot", finished_run, "--out", figures))  # 5 figures (ROC, DET, score distribution,
    # reliability, type pairs) of 3 files each
    assert line.startswith(f"error: {figures}/") and line.endswith("exists (and 14 more of these figures' files); "
                                                                    "pass --overwrite to replace it")  # fmt: skip
    assert snapshot(figures) == drawn  # and no staging folder left
    again = harness("plot", finished_run, "--out", figures, "--overwrite")
    assert again.returncode == 0, again.stderr
    assert set(snapshot(figures)) == set(drawn)


def test_plot_overwrite_refuses_a_folder_where_a_figure_goes_before_moving_any(
    finished_run: Path, tmp_path: Path
) -> None:
    figures = tmp_path / "figures"
    assert harness("plot", finished_run, "--out", figures).returncode == 0
    roc = figures / "roc-pan23-pan23-format-sample.png"
    roc.unlink()
    roc.mkdir()
    drawn = snapshot(figures)
    line = error_line(harness("plot", finished_run, "--out", figures, "--overwrite"))
    assert line == f"error: {roc} is not a file, and a figure of that name goes there; move it"
    assert snapshot(figures) == drawn  # not one figure replaced
