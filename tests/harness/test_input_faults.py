"""Outputs that cannot be written and subtly broken inputs are refused first, in one line (issue 14, 10 and 13).

Each refusal goes through the command line: exit code 2, one line on stderr naming the file (and line and field
where there is one), no traceback, nothing written.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers.paths import REPO
from helpers.reddit_data import threaded_posts
from helpers.refusals import refused

from harness import registry
from harness.cli import main

SAMPLE = REPO / "samples" / "pan23-format-sample"
SMALL_REDDIT = [
    *("--task-param", "ranking_query_size=4", "--task-param", "ranking_target_size=4"),
    *("--task-param", "linking_query_size=16", "--task-param", "linking_min_query_posts=8"),
    *("--task-param", "linking_target_sizes=1,2,4,8", "--task-param", "linking_target_size=4"),
]


def snapshot(folder: Path) -> dict[str, bytes | None]:
    """Every path under `folder` with its bytes (None for folders): to show that a refusal wrote nothing."""
    return {str(p.relative_to(folder)): None if p.is_dir() else p.read_bytes() for p in sorted(folder.rglob("*"))}


def classic_corpus(root: Path, *, truth: bytes | None = b"P01 Y\nP02 N\n") -> Path:
    """A PAN 2013-2015 corpus folder of two problems."""
    for problem_id in ("P01", "P02"):
        (root / problem_id).mkdir(parents=True)
        (root / problem_id / "known01.txt").write_text(f"known text of {problem_id}\n", encoding="utf-8")
        (root / problem_id / "unknown.txt").write_text(f"unknown text of {problem_id}\n", encoding="utf-8")
    if truth is not None:
        (root / "truth.txt").write_bytes(truth)
    return root


def write_lines(path: Path, rows: list[dict]) -> Path:
    """One JSON object per line as Python's json writes it: NaN stays NaN, a lone surrogate stays escaped."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


@pytest.fixture(autouse=True)
def no_fitting(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every refusal here comes before any system is fitted: a fit would take hours in real use."""

    def fit(self, train, *, seed):  # noqa: ANN001, ANN202
        raise AssertionError("a system was fitted before the refusal")

    for name in ("cngdist", "reddit_tfidf"):
        monkeypatch.setattr(registry.system_class(name), "fit", fit)


# -- item 10: an output that cannot be written is refused before any loading or fitting ----------------------------


def output_cases(tmp: Path, blocker: Path) -> dict[str, list[object]]:
    """Each command writing into `blocker` (or below it), with inputs that would otherwise be read."""
    answers = tmp / "answers.jsonl"
    answers.write_text('{"id": "test-01", "value": 0.5}\n', encoding="utf-8")
    corpus = classic_corpus(tmp / "corpus")
    results = tmp / "results"
    results.mkdir()
    pan23 = ["--task", "pan23"]
    return {
        "run --out": ["run", "--system", "cngdist", *pan23, "--data", SAMPLE, "--out", blocker],
        "predict --output": [
            *("predict", "--system", "cngdist", *pan23, "--input", SAMPLE / "test"),
            *("--checkpoint", tmp / "checkpoint", "--output", blocker),
        ],
        "score --output": ["score", *pan23, "--truth", SAMPLE / "test", "--answers", answers, "--output", blocker],
        "score --record": [
            *("score", *pan23, "--truth", SAMPLE / "test", "--answers", answers),
            *("--output", tmp / "scores", "--record", blocker),
        ],
        "convert DST": ["convert", corpus, blocker],
        "report --out": ["report", "--results", results, "--out", blocker],
        "plot --out": ["plot", results, "--out", blocker],
    }


COMMANDS = ["run --out", "predict --output", "score --output", "score --record", "convert DST", "report --out"]


@pytest.fixture
def guard_loading(monkeypatch: pytest.MonkeyPatch) -> None:
    """Reading the problems or the truth before the output is checked is a failure of its own."""
    task = registry.task_class("pan23")

    def load(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        raise AssertionError("data was loaded before the output was checked")

    for method in ("load", "load_inputs", "read_truth"):
        monkeypatch.setattr(task, method, load)


@pytest.mark.parametrize("command", [*COMMANDS, "plot --out"])
def test_an_output_folder_that_is_a_file_is_refused_first(tmp_path: Path, command: str, guard_loading: None) -> None:
    blocker = tmp_path / "taken"
    blocker.write_text("a file that is not a folder\n", encoding="utf-8")
    args = output_cases(tmp_path, blocker)[command]
    before = snapshot(tmp_path)
    option = command.split()[1]
    assert refused(*args) == f"error: {option} {blocker} is a file; name a folder"
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("command", COMMANDS)
def test_an_output_folder_below_a_file_is_refused_first(tmp_path: Path, command: str, guard_loading: None) -> None:
    blocker = tmp_path / "taken"
    blocker.write_text("a file that is not a folder\n", encoding="utf-8")
    args = output_cases(tmp_path, blocker / "runs" / "here")[command]
    before = snapshot(tmp_path)
    line = refused(*args)
    assert line == f"error: {command.split()[1]} {blocker / 'runs' / 'here'} cannot be made: {blocker} is a file"
    assert snapshot(tmp_path) == before


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root writes into a read-only folder")
@pytest.mark.parametrize("command", COMMANDS)
def test_an_output_folder_that_cannot_be_written_is_refused_first(
    tmp_path: Path, command: str, guard_loading: None
) -> None:
    locked = tmp_path / "locked"
    locked.mkdir()
    args = output_cases(tmp_path, locked / "out")[command]
    before = snapshot(tmp_path)
    locked.chmod(0o500)
    try:
        line = refused(*args)
    finally:
        locked.chmod(0o700)
    assert line == f"error: {command.split()[1]} {locked / 'out'} cannot be made: {locked} is not writable"
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("command", COMMANDS)
def test_a_folder_the_system_says_is_not_writable_is_refused_first(
    tmp_path: Path, command: str, guard_loading: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The chmod test above as root sees it: what access(2) answers for a read-only folder (or file system)."""
    locked = tmp_path / "locked"
    locked.mkdir()
    args = output_cases(tmp_path, locked)[command]
    before = snapshot(tmp_path)
    real_access = os.access

    def access(path: object, mode: int, **kwargs: object) -> bool:  # read-only: r-x, as chmod 0o500 leaves it
        return not (mode & os.W_OK and Path(str(path)) == locked) and real_access(path, mode, **kwargs)

    monkeypatch.setattr(os, "access", access)
    line = refused(*args)
    monkeypatch.undo()
    assert line == f"error: {command.split()[1]} {locked} is not writable"
    assert snapshot(tmp_path) == before


def test_predict_refuses_an_answers_file_that_is_a_folder(tmp_path: Path, guard_loading: None) -> None:
    (tmp_path / "out" / "answers.jsonl").mkdir(parents=True)
    args = output_cases(tmp_path, tmp_path / "out")["predict --output"]
    line = refused(*args)
    assert line == f"error: --output {tmp_path / 'out'}: {tmp_path / 'out' / 'answers.jsonl'} is a folder; " + (
        "predict writes its answers there"
    )


def test_a_leaderboard_output_that_is_a_folder_is_refused(tmp_path: Path) -> None:
    (tmp_path / "results").mkdir()
    assert refused("leaderboard", tmp_path / "results", "--output", tmp_path) == (
        f"error: --output {tmp_path} is a folder; name a file"
    )


# -- item 13: forum posts with NaN or Infinity, lone surrogates ------------------------------------------------------


@pytest.mark.parametrize("created", [float("nan"), float("inf"), float("-inf")])
def test_a_post_created_nan_or_infinity_is_refused_with_file_line_and_field(tmp_path: Path, created: float) -> None:
    rows = threaded_posts()
    rows[5]["created"] = created
    posts = write_lines(tmp_path / "reddit" / "posts.jsonl", rows)
    out = tmp_path / "out"
    line = refused("run", "--system", "reddit_tfidf", "--task", "reddit", "--data", posts.parent, "--out", out)
    assert line == f"error: {posts}:6: field 'created': expected a finite number, got {created!r}"
    assert not out.exists()


@pytest.mark.parametrize("field", ["post_id", "author", "market", "subforum", "thread_id", "parent_id", "kind"])
def test_a_post_id_or_label_holding_a_lone_surrogate_is_refused_when_read(tmp_path: Path, field: str) -> None:
    rows = threaded_posts()
    rows[2][field] = "t1_\ud800x"  # json.dumps writes it as the escape "\ud800", which json.loads reads back
    posts = write_lines(tmp_path / "reddit" / "posts.jsonl", rows)
    assert "\\ud800" in posts.read_text(encoding="utf-8")
    out = tmp_path / "out"
    line = refused("run", "--system", "reddit_tfidf", "--task", "reddit", "--data", posts.parent, "--out", out)
    if field == "kind":  # no value but submission or comment is a kind; the surrogate is shown escaped
        assert line == f"error: {posts}:3: field 'kind': expected one of submission, comment, got 't1_\\ud800x'"
    else:
        assert line == (
            f"error: {posts}:3: field '{field}': holds a lone surrogate \\ud800 at character 3, which UTF-8 cannot "
            "encode"
        )
    assert not out.exists()


def test_a_surrogate_pair_is_text_and_a_post_text_may_hold_a_lone_one(tmp_path: Path) -> None:
    """Texts are read, never written: like a PAN problem's text (tests/test_tira.py), a post's text is kept."""
    from tasks.forum.reader import read_forum_posts

    rows = threaded_posts(n_authors=2, per_author=3)
    rows[0]["text"] = "smile \U0001f600"  # json.dumps writes the pair "\ud83d\ude00"
    rows[1]["text"] = "half \ud83d a smile"
    posts, _ = read_forum_posts(write_lines(tmp_path / "posts.jsonl", rows))
    assert [post.text for post in posts[:2]] == ["smile \U0001f600", "half \ud83d a smile"]


def pan23_copy(tmp_path: Path) -> Path:
    data = tmp_path / "data"
    shutil.copytree(SAMPLE, data)
    return data


@pytest.mark.parametrize("field", ["id", "discourse_types[0]"])
def test_a_pair_holding_a_lone_surrogate_is_refused_when_read(tmp_path: Path, field: str) -> None:
    """An id: before, `harness predict` answered every problem, then failed writing answers.jsonl."""
    data = pan23_copy(tmp_path)
    pairs = data / "test" / "pairs.jsonl"
    rows = [json.loads(line) for line in pairs.read_text(encoding="utf-8").splitlines()]
    name, _, index = field.partition("[")
    if index:
        rows[1][name][int(index[:-1])] = "\udfff"
    else:
        rows[1][name] = "\udfff"
    write_lines(pairs, rows)
    out = tmp_path / "out"
    line = refused("run", "--system", "cngdist", "--task", "pan23", "--data", data, "--out", out)
    assert line.startswith(f"error: {pairs}:2: field '{field}': holds a lone surrogate \\udfff at character 0")
    assert not out.exists()


# -- item 13: bad UTF-8 after a BOM is reported at its own byte offset -----------------------------------------------


def test_bad_utf8_after_a_bom_names_its_line_and_byte_offset(tmp_path: Path) -> None:
    corpus = classic_corpus(tmp_path / "corpus")
    bad = corpus / "P02" / "unknown.txt"
    bad.write_bytes(b"\xef\xbb\xbfline one\nline \xff two\n")
    assert bad.read_bytes().index(b"\xff") == 17  # counted from the file's first byte: the BOM is bytes 0-2
    out = tmp_path / "out"
    assert refused("convert", corpus, out) == f"error: {bad}:2: not valid UTF-8 (byte 0xff at offset 17)"
    assert not out.exists()


def test_bad_utf8_in_truth_txt_after_a_bom_names_its_line_and_byte_offset(tmp_path: Path) -> None:
    corpus = classic_corpus(tmp_path / "corpus", truth=b"\xef\xbb\xbfP01 Y\nP02 \xff\n")
    assert (corpus / "truth.txt").read_bytes().index(b"\xff") == 13
    out = tmp_path / "out"
    line = refused("convert", corpus, out)
    assert line == f"error: {corpus / 'truth.txt'}:2: not valid UTF-8 (byte 0xff at offset 13)"
    assert not out.exists()


def test_text_after_a_bom_is_read_without_it(tmp_path: Path) -> None:
    from tasks.pan.folders import read_text_file

    path = tmp_path / "known01.txt"
    path.write_bytes(b"\xef\xbb\xbfcaf\xc3\xa9\r\n")
    assert read_text_file(path) == "caf\u00e9\n"


def test_a_jsonl_file_after_a_bom_is_read_without_it_and_a_bom_later_is_malformed(tmp_path: Path) -> None:
    from core.errors import DataError
    from core.files import read_jsonl

    path = tmp_path / "answers.jsonl"
    path.write_bytes(b'\xef\xbb\xbf{"id": "a", "value": 0.5}\r\n{"id": "b", "value": 1}\n')  # as Windows tools write
    assert list(read_jsonl(path)) == [(1, {"id": "a", "value": 0.5}), (2, {"id": "b", "value": 1})]
    path.write_bytes(b'{"id": "a", "value": 0.5}\n\xef\xbb\xbf{"id": "b", "value": 1}\n')
    with pytest.raises(DataError, match=r"answers.jsonl:2: malformed JSON"):
        list(read_jsonl(path))


# -- item 13: gzip bytes under a plain name, and a plain file beside its gzipped twin -------------------------------


def test_an_argument_not_in_utf8_is_refused_before_the_fit(tmp_path: Path) -> None:
    """A folder named in another encoding ran the fit, then failed writing result.json (audit 3, finding 2)."""
    data = pan23_copy(tmp_path)
    named = data.rename(tmp_path / os.fsdecode(b"data\xff"))
    out = tmp_path / "out"
    line = refused("run", "--system", "cngdist", "--task", "pan23", "--data", named, "--out", out)
    assert line == "error: the argument " + repr(str(named)) + " is not valid UTF-8; rename what it names"
    assert not out.exists()


def test_gzip_bytes_in_a_plain_jsonl_file_say_so(tmp_path: Path) -> None:
    data = pan23_copy(tmp_path)
    pairs = data / "train" / "pairs.jsonl"
    pairs.write_bytes(gzip.compress(pairs.read_bytes()))
    out = tmp_path / "out"
    line = refused("run", "--system", "cngdist", "--task", "pan23", "--data", data, "--out", out)
    assert line == f"error: {pairs}: this looks gzipped; name it pairs.jsonl.gz"
    assert not out.exists()


def test_gzip_bytes_in_a_plain_posts_file_say_so(tmp_path: Path) -> None:
    posts = write_lines(tmp_path / "reddit" / "posts.jsonl", threaded_posts())
    posts.write_bytes(gzip.compress(posts.read_bytes()))
    out = tmp_path / "out"
    line = refused("run", "--system", "reddit_tfidf", "--task", "reddit", "--data", posts.parent, "--out", out)
    assert line == f"error: {posts}: this looks gzipped; name it posts.jsonl.gz"


def test_a_plain_posts_file_named_gz_is_refused_also_once_its_bytes_are_cached(
    forum_slice: Path, tmp_path: Path
) -> None:
    """darkweb's posts cache is keyed by the file's bytes: a plain file renamed .gz after a run had cached them was
    read (the audit's U1), where a fresh cache refused it."""
    from tasks.forum.post_table import open_post_table

    posts = tmp_path / "forum" / "posts.jsonl"
    posts.parent.mkdir()
    shutil.copyfile(forum_slice / "posts.jsonl", posts)
    assert len(open_post_table(posts)) > 0  # its bytes are now in the cache
    named_gz = posts.rename(posts.with_name("posts.jsonl.gz"))
    out = tmp_path / "out"
    line = refused("run", "--system", "episode_tfidf", "--task", "darkweb", "--data", posts.parent, "--out", out)
    assert line == f"error: {named_gz}: not gzipped, though named .gz; name it posts.jsonl or compress it"
    assert not out.exists()


@pytest.mark.parametrize("split", ["train", "test"])
def test_a_plain_file_beside_its_gzipped_twin_is_ambiguous(tmp_path: Path, split: str) -> None:
    data = pan23_copy(tmp_path)
    pairs = data / split / "pairs.jsonl"
    (data / split / "pairs.jsonl.gz").write_bytes(gzip.compress(pairs.read_bytes()))
    out = tmp_path / "out"
    line = refused("run", "--system", "cngdist", "--task", "pan23", "--data", data, "--out", out)
    assert line == (
        f"error: {data / split}: both pairs.jsonl and pairs.jsonl.gz are here, and which one to read is ambiguous; "
        "remove or rename one"
    )
    assert not out.exists()


def test_score_truth_and_answers_beside_their_twins_are_ambiguous(tmp_path: Path) -> None:
    data = pan23_copy(tmp_path)
    (data / "test" / "truth.jsonl.gz").write_bytes(b"")
    line = refused("score", "--task", "pan23", "--truth", data / "test", "--answers", tmp_path, "--output", tmp_path)
    assert "both truth.jsonl and truth.jsonl.gz are here" in line
    answers = tmp_path / "answers"
    answers.mkdir()
    (answers / "answers.jsonl").write_text('{"id": "test-01", "value": 0.5}\n', encoding="utf-8")
    (answers / "answers.jsonl.gz").write_bytes(gzip.compress(b'{"id": "test-01", "value": 0.9}\n'))
    line = refused("score", "--task", "pan23", "--truth", SAMPLE / "test", "--answers", answers, "--output", tmp_path)
    assert line.startswith(f"error: {answers}: both answers.jsonl and answers.jsonl.gz are here")


# -- item 13: convert says when it writes no truth, and speaks the CLI's words --------------------------------------


def test_convert_without_truth_says_that_no_truth_was_written(tmp_path: Path) -> None:
    corpus = classic_corpus(tmp_path / "corpus", truth=None)
    out = tmp_path / "out"
    done = subprocess.run(
        [sys.executable, "-m", "harness.cli", "convert", str(corpus), str(out)],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert f"{corpus} has no truth.txt: wrote {out / 'pairs.jsonl'} only, no truth.jsonl" in done.stderr
    assert sorted(p.name for p in out.iterdir()) == ["pairs.jsonl"]
    # with truth there is nothing to warn about
    with_truth = subprocess.run(
        [sys.executable, "-m", "harness.cli", "convert", str(classic_corpus(tmp_path / "full")), str(tmp_path / "o2")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert with_truth.returncode == 0 and "no truth" not in with_truth.stderr


def test_convert_onto_existing_outputs_says_pass_overwrite(tmp_path: Path) -> None:
    corpus = classic_corpus(tmp_path / "corpus")
    out = tmp_path / "out"
    assert CliRunner().invoke(main, ["convert", str(corpus), str(out)]).exit_code == 0
    before = snapshot(out)
    line = refused("convert", corpus, out)
    assert line == f"error: {out}: pairs.jsonl, truth.jsonl already exist; pass --overwrite to replace them"
    assert "overwrite=True" not in line
    assert snapshot(out) == before
