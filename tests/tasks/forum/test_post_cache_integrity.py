"""The posts cache (tasks.forum.post_table) is checked when opened, and a cache folder that cannot be written is
bypassed (the reliability issue).

An edited part once gave a run different scores, exit 0, and a truncated one a pyarrow traceback: the marker now
records every file's size and sha256, and a cache that differs is rebuilt with one warning line. A HARNESS_CACHE_DIR
that is a file or read-only once gave a traceback: the posts are now converted for the run only, with one warning.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import pickle
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from helpers.paths import REPO
from test_forum_posts import GOOD, write

import tasks.forum.post_table as post_table
from core.errors import DataError
from tasks.forum.post_table import COMPLETE_NAME, file_digests, open_post_table
from tasks.forum.reader import read_forum_posts

ARROW = "part-00000/data-00000-of-00001.arrow"  # the one part of a small posts file


def small_posts(n: int = 6) -> list[dict]:
    return [{**GOOD, "post_id": f"t1_{i}", "author": f"u{i % 2}", "text": f"post {i} > q"} for i in range(n)]


@pytest.fixture(autouse=True)
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(folder))
    return folder


def cache_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]


def edit_in_place(file: Path) -> None:
    """Change one post's text, keeping the file's size and its mtime."""
    stat = file.stat()
    data = file.read_bytes()
    assert data.count(b"post 2 > q") == 1
    file.write_bytes(data.replace(b"post 2 > q", b"post 7 > q"))
    os.utime(file, ns=(stat.st_atime_ns, stat.st_mtime_ns))


def truncate(file: Path) -> None:
    os.truncate(file, file.stat().st_size // 2)


def remove_state(file: Path) -> None:
    (file.parent / "state.json").unlink()


@pytest.mark.parametrize(
    ("damage", "reason"),
    [
        (edit_in_place, f"{ARROW} changed since it was written"),
        (truncate, f"{ARROW} has \\d+ bytes, \\d+ were written"),
        (remove_state, "part-00000/state.json is missing"),
    ],
    ids=["edited", "truncated", "file-missing"],
)
def test_a_damaged_cache_is_rebuilt_with_one_warning(tmp_path: Path, cache_dir: Path, caplog, damage, reason: str):
    path = write(tmp_path / "posts.jsonl", small_posts())
    expected = read_forum_posts(path)[0]
    folder = open_post_table(path).folder
    damage(folder / ARROW)
    with caplog.at_level(logging.WARNING, logger="harness"):
        table = open_post_table(path)
    (line,) = cache_warnings(caplog)
    assert line.startswith(f"the posts cache at {folder} is damaged (") and line.endswith("): it is rebuilt")
    assert re.search(reason, line)
    assert table.folder == folder and table.posts(range(len(table))) == expected
    assert sorted(p.name for p in (cache_dir / "posts").iterdir() if p.suffix != ".lock") == [folder.name]
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="harness"):
        assert open_post_table(path).posts(range(6)) == expected
    assert cache_warnings(caplog) == []  # the rebuilt cache is sound


def test_a_cache_of_the_layout_without_digests_is_rebuilt(tmp_path: Path):
    path = write(tmp_path / "posts.jsonl", small_posts())
    folder = open_post_table(path).folder
    (folder / COMPLETE_NAME).write_text(json.dumps({"format": 1, "rows": 6, "parts": ["part-00000"]}))
    assert open_post_table(path).posts(range(6)) == read_forum_posts(path)[0]
    marker = json.loads((folder / COMPLETE_NAME).read_text())
    assert marker["format"] == post_table.FORMAT_VERSION and set(marker["files"]) >= {ARROW}


def test_a_table_reopened_from_a_cache_damaged_since_is_a_data_error(tmp_path: Path):
    """A worker reopens the table its parent checked (pickle): a part damaged in between is one line, no traceback."""
    path = write(tmp_path / "posts.jsonl", small_posts())
    table = open_post_table(path)
    truncate(table.folder / ARROW)
    with pytest.raises(DataError, match="cannot read this posts cache") as info:
        pickle.loads(pickle.dumps(table))
    assert info.value.path == str(table.folder) and "\n" not in str(info.value)


def test_a_cache_folder_that_cannot_be_written_is_bypassed(tmp_path: Path, cache_dir: Path, caplog, monkeypatch):
    sound = write(tmp_path / "sound.jsonl", small_posts())
    damaged = write(tmp_path / "damaged.jsonl", small_posts(8))
    new = write(tmp_path / "new.jsonl", small_posts(4))
    sound_folder = open_post_table(sound).folder
    damaged_folder = open_post_table(damaged).folder
    edit_in_place(damaged_folder / ARROW)
    real_staging_folder = post_table.staging_folder

    def read_only(path: Path, suffix: str) -> Path:  # a read-only cache folder (chmod does not stop root)
        if Path(path).is_relative_to(cache_dir):
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(path))
        return real_staging_folder(path, suffix)

    monkeypatch.setattr(post_table, "staging_folder", read_only)
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    monkeypatch.setattr("tempfile.tempdir", str(temporary))
    before = sorted(cache_dir.rglob("*"))
    with caplog.at_level(logging.WARNING, logger="harness"):
        assert open_post_table(sound).folder == sound_folder  # a sound cache is read, not written: used
        assert cache_warnings(caplog) == []
        table = open_post_table(new)
        (line,) = cache_warnings(caplog)
        assert line == (
            f"cannot write the posts cache in {cache_dir} "
            f"([Errno {errno.EROFS}] Read-only file system: '{cache_dir / 'posts' / file_digests(new)[0]}'): "
            "the posts are not cached"
        )
        assert table.folder.is_relative_to(temporary) and table.posts(range(4)) == read_forum_posts(new)[0]
        caplog.clear()
        table = open_post_table(damaged)  # damaged and not writable: converted for this run, as a new file is
        assert [m.split(" (")[0] for m in cache_warnings(caplog)] == [
            f"the posts cache at {damaged_folder} is damaged",
            f"cannot write the posts cache in {cache_dir}",
        ]
        assert table.posts(range(8)) == read_forum_posts(damaged)[0]
    assert sorted(cache_dir.rglob("*")) == before


# -- the reliability issue's commands, end to end ----------------------------------------------------------


def run_darkweb(data: Path, out: Path, cache: Path, tmp: Path) -> tuple[subprocess.CompletedProcess, dict]:
    env = {**os.environ, "HARNESS_CACHE_DIR": str(cache), "TMPDIR": str(tmp)}
    args = ["-m", "harness.cli", "run", "--system", "episode_tfidf", "--task", "darkweb", "--data", data, "--out", out]
    done = subprocess.run([sys.executable, *map(str, args)], cwd=REPO, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    (result,) = out.glob("darkweb/*/episode_tfidf/seed-0/result.json")
    return done, json.loads(result.read_text(encoding="utf-8"))


def cache_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if "posts cache" in line]


@pytest.fixture(scope="module")
def first_run(forum_slice: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    """One darkweb run on the slice, into a cache of its own: (that cache folder, its result)."""
    work = tmp_path_factory.mktemp("first-run")
    (work / "tmp").mkdir()
    done, result = run_darkweb(forum_slice, work / "out", work / "cache", work / "tmp")
    assert cache_lines(done.stderr) == []
    return work / "cache", result


def test_a_darkweb_run_rebuilds_an_edited_or_truncated_posts_cache(forum_slice: Path, first_run, tmp_path: Path):
    cache, first = first_run
    (folder,) = (cache / "posts").glob("[0-9a-f]*")
    arrow = folder / ARROW
    posts = [json.loads(line) for line in (forum_slice / "posts.jsonl").read_text(encoding="utf-8").splitlines()]
    names = [name for name, _ in Counter(p["author"] for p in posts).most_common()]
    other = next(n for n in names[1:] if len(n) == len(names[0]))  # the edit: a name patched, same size
    data = arrow.read_bytes()
    arrow.write_bytes(data.replace(names[0].encode(), other.encode()))
    assert arrow.read_bytes() != data and arrow.stat().st_size == len(data)
    done, result = run_darkweb(forum_slice, tmp_path / "edited", cache, tmp_path)
    assert cache_lines(done.stderr) == [
        f"the posts cache at {folder} is damaged ({ARROW} changed since it was written): it is rebuilt"
    ]
    assert result["scores"] == first["scores"] and result["task"]["data"] == first["task"]["data"]

    truncate(arrow)
    done, result = run_darkweb(forum_slice, tmp_path / "truncated", cache, tmp_path)
    (line,) = cache_lines(done.stderr)
    assert line.startswith(f"the posts cache at {folder} is damaged ({ARROW} has ")
    assert result["scores"] == first["scores"]


def test_a_darkweb_run_with_a_cache_dir_that_is_a_file_runs_uncached(forum_slice: Path, first_run, tmp_path: Path):
    blocker = tmp_path / "cache-file"
    blocker.write_text("not a folder\n", encoding="utf-8")
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    done, result = run_darkweb(forum_slice, tmp_path / "out", blocker, temporary)
    (line,) = cache_lines(done.stderr)
    assert line.startswith(f"cannot write the posts cache in {blocker} ([Errno {errno.ENOTDIR}] ")
    assert line.endswith("): the posts are not cached")
    assert result["scores"] == first_run[1]["scores"]
    assert list(temporary.iterdir()) == []  # the run's temporary copy went with it
