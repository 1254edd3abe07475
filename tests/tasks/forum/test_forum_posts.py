"""Reading forum posts: the real file, and bad input named by file, line and field."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from core.errors import DataError
from tasks.forum.reader import find_posts_file, read_forum_posts

GOOD = {
    "post_id": "t1_a",
    "author": "alice",
    "market": "campus",
    "subforum": "College",
    "thread_id": "x1",
    "parent_id": None,
    "kind": "submission",
    "created": 1500000000,
    "text": "hello there",
}


def write(path: Path, rows: list) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows), encoding="utf-8")
    return path


def test_real_posts_file(forum_posts_file: Path):
    posts, checksum = read_forum_posts(forum_posts_file)
    assert len(posts) == 261_497
    assert len({p.author for p in posts}) == 8_469
    assert {p.market for p in posts} == {"admissions", "campus", "academia"}
    assert all(a.created <= b.created for a, b in zip(posts, posts[1:], strict=False))  # ordered by time
    assert checksum.startswith("sha256:")


def test_plain_and_gzipped_read_the_same(tmp_path: Path):
    plain = write(tmp_path / "posts.jsonl", [GOOD, {**GOOD, "post_id": "t1_b"}])
    zipped = tmp_path / "z" / "posts.jsonl.gz"
    zipped.parent.mkdir()
    zipped.write_bytes(gzip.compress(plain.read_bytes()))
    assert read_forum_posts(plain)[0] == read_forum_posts(find_posts_file(zipped.parent))[0]


@pytest.mark.parametrize(
    ("row", "field", "message"),
    [
        ({k: v for k, v in GOOD.items() if k != "author"}, "author", "missing"),
        ({**GOOD, "author": " "}, "author", "empty"),
        ({**GOOD, "created": "yesterday"}, "created", "expected int or float"),
        ({**GOOD, "created": 1.5}, "created", "whole Unix seconds"),
        # past what a date holds: pyarrow's int64 overflowed on 10**30, reddit's dates on milliseconds
        ({**GOOD, "created": 10**30}, "created", "a date in the years 1-9999"),
        ({**GOOD, "created": 1_600_000_000_000}, "created", "milliseconds\\?"),
        ({**GOOD, "text": None}, "text", "expected str"),
        ({**GOOD, "parent_id": 3}, "parent_id", "str or null"),
        # "Comment" beside "comment" made `harness pairs --from forum` pair two comments as two discourse types
        ({**GOOD, "kind": "Comment"}, "kind", "expected one of submission, comment, got 'Comment'"),
        ({**GOOD, "kind": None}, "kind", "expected one of submission, comment, got null"),
    ],
)
def test_bad_fields_name_file_line_and_field(tmp_path: Path, row: dict, field: str, message: str):
    path = write(tmp_path / "posts.jsonl", [{**GOOD, "post_id": "t1_0"}, row])
    with pytest.raises(DataError, match=message) as info:
        read_forum_posts(path)
    assert info.value.path == str(path) and info.value.line == 2 and info.value.field == field


def test_duplicate_ids_and_malformed_lines(tmp_path: Path):
    with pytest.raises(DataError, match="duplicate post id 't1_a' \\(first on line 1\\)"):
        read_forum_posts(write(tmp_path / "dup.jsonl", [GOOD, GOOD]))
    with pytest.raises(DataError, match="malformed JSON") as info:
        read_forum_posts(write(tmp_path / "bad.jsonl", [GOOD, "{not json"]))
    assert info.value.line == 2
    # json names where a control character stands apart from its message ("... at"): the column is given (audit 21)
    with pytest.raises(DataError, match=r"malformed JSON \(Invalid control character at column 16\)$") as info:
        read_forum_posts(write(tmp_path / "tab.jsonl", [GOOD, '{"post_id": "t1\tb"}']))
    assert info.value.line == 2
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(DataError, match="expected posts.jsonl or posts.jsonl.gz") as info:
        find_posts_file(empty)
    assert info.value.path == str(empty)
