"""Reading forum posts (`posts.jsonl[.gz]`): the input of the darkweb and reddit tasks."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

from core.errors import DataError
from core.files import check_text, find_data_file, read_jsonl, require_field, sha256_files
from core.progress import pbar
from tasks.forum.records import ForumPost, PostIds, non_empty_label, post_created, post_kind

POSTS_STEM = "posts.jsonl"
logger = logging.getLogger("harness")


def find_posts_file(data_dir: Path) -> Path:
    """`<data_dir>/posts.jsonl[.gz]`, or `data_dir` itself when it is that file."""
    data_dir = Path(data_dir)
    if data_dir.is_file():
        return data_dir
    return find_data_file(data_dir, POSTS_STEM)


def read_forum_posts(path: Path) -> tuple[list[ForumPost], str]:
    """All posts of a posts file, in file order, and the file's checksum.

    Every post as a Python object: fine for the 10^5 posts of a test or a small corpus; a corpus of
    10^7 posts is read through tasks.forum.post_table (Arrow, memory-mapped, cached by checksum),
    which validates with the same rules (`iter_forum_posts`).
    """
    path = Path(path)
    posts = list(iter_forum_posts(path))
    return posts, sha256_files([path])


def iter_forum_posts(path: Path) -> Iterator[ForumPost]:
    """The posts of a posts file, in file order, each validated as it is read.

    Each line needs post_id, author, market, subforum, thread_id (strings), created (integer
    Unix seconds) and text (a string, possibly empty: the tasks decide what an empty post means);
    parent_id may be null and kind defaults to "comment". Duplicate post ids are an error, and so are a
    `created` of NaN or Infinity or outside the years 1-9999 and an id or label holding a lone surrogate (see
    `require_field`); the text may hold one, as a PAN problem's text may. The first fault raises a DataError naming
    file, line and field.
    """
    path = Path(path)
    post_ids = PostIds(path)
    for line, obj in pbar(read_jsonl(path), desc="reading posts", unit="posts"):
        post_id = post_ids.add(obj, line)
        created = post_created(obj, path, line)
        parent = obj.get("parent_id")
        if parent is not None and not isinstance(parent, str):
            raise DataError(
                f"expected str or null, got {type(parent).__name__}", path=path, line=line, field="parent_id"
            )
        if parent is not None:
            check_text(parent, path, line, "parent_id")
        kind = post_kind(obj, path, line)
        yield ForumPost(
            post_id=post_id,
            author=non_empty_label(obj, "author", path, line),
            market=non_empty_label(obj, "market", path, line),
            subforum=non_empty_label(obj, "subforum", path, line),
            thread_id=non_empty_label(obj, "thread_id", path, line),
            parent_id=parent,
            kind=kind,
            created=created,
            text=require_field(obj, "text", str, path, line, free_text=True),
        )


def warn_of_empty_texts(path: Path, empty: int, total: int) -> None:
    """One warning line where posts have an empty text: the forum tasks keep them as posts (SYSML keeps its empty
    posts too), so they fill sample and episode slots; a file where many are empty scores differently, said here."""
    if empty:
        logger.warning(
            "%s: %d of %d posts have an empty text; they are kept as posts, and fill episodes and samples",
            path,
            empty,
            total,
        )
