"""Forum posts -> texts for verification pairs: which post is which discourse type, and how posts join up.

The discourse type of a post is its `kind` (a submission opens a thread, a comment answers one) or,
as an option, its community (`subforum` or `market`). A text is one post (`join="post"`), or the
consecutive posts of one author in one thread (`join="thread"`), or of one author, discourse type and
community across threads (`join="type"`), joined by a blank line while the text stays within
`max_chars` characters. A single post longer than `max_chars` is cut at the last white space before it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from core.errors import DataError, HarnessError
from core.files import check_text, read_jsonl
from tasks.forum.reader import find_posts_file, read_forum_posts
from tasks.forum.records import ForumPost, time_order
from tasks.pairs.sources import AUTHORS_AS_NAMED, SourceRead, SourceText

DISCOURSE_FIELDS = ("kind", "subforum", "market")
COMMUNITY_FIELDS = ("subforum", "market", "none")
JOINS = ("post", "thread", "type")
JOINER = "\n\n"


def read_forum_texts(
    path: Path,
    *,
    discourse: str = "kind",
    community: str = "subforum",
    join: str = "post",
    max_chars: int | None = None,
) -> SourceRead:
    """The texts of a forum posts file (or a folder holding posts.jsonl[.gz]); see the module doc."""
    check_forum_options(discourse, community, join, max_chars)
    path = find_posts_file(Path(path))
    posts, checksum = read_forum_posts(path)
    _check_post_texts(posts, path)
    texts = forum_texts(posts, path, discourse=discourse, community=community, join=join, max_chars=max_chars)
    return SourceRead(texts, [{"path": str(path), "sha256": checksum}], AUTHORS_AS_NAMED)


def check_forum_options(discourse: str, community: str, join: str, max_chars: int | None) -> None:
    for name, value, allowed in (
        ("discourse", discourse, DISCOURSE_FIELDS),
        ("community", community, COMMUNITY_FIELDS),
        ("join", join, JOINS),
    ):
        if value not in allowed:
            raise HarnessError(f"{name} must be one of {', '.join(allowed)}, got {value!r}")
    if max_chars is not None and max_chars < 1:
        raise HarnessError(f"max_chars must be at least 1, got {max_chars}")


def forum_texts(
    posts: Sequence[ForumPost],
    path: Path,
    *,
    discourse: str = "kind",
    community: str = "subforum",
    join: str = "post",
    max_chars: int | None = None,
) -> list[SourceText]:
    """Texts from posts, in the order of their first post (oldest first, then by post id)."""
    name = Path(path).name
    # oldest first, post id among equals: the file's order of its lines must not change the set
    order = sorted(range(len(posts)), key=lambda i: time_order(posts[i]))
    if join == "post":
        return [_text(name, [posts[i]], _cut(posts[i].text, max_chars), discourse, community) for i in order]
    runs: dict[tuple, list[ForumPost]] = {}  # the open run of each key
    lengths: dict[tuple, int] = {}
    finished: list[tuple[int, list[ForumPost]]] = []  # (first post's rank, posts)
    first_rank: dict[tuple, int] = {}
    for rank, i in enumerate(order):
        post = posts[i]
        kind = getattr(post, discourse)
        if join == "thread":
            key = (post.author, post.thread_id, kind)
        else:
            key = (post.author, kind, _community(post, community))
        size = len(_cut(post.text, max_chars))
        run = runs.get(key)
        if run is not None and (max_chars is None or lengths[key] + len(JOINER) + size <= max_chars):
            run.append(post)
            lengths[key] += len(JOINER) + size
            continue
        if run is not None:
            finished.append((first_rank[key], run))
        runs[key], lengths[key], first_rank[key] = [post], size, rank
    finished.extend((first_rank[key], run) for key, run in runs.items())
    finished.sort(key=lambda item: item[0])
    return [
        _text(name, run, JOINER.join(_cut(p.text, max_chars) for p in run), discourse, community) for _, run in finished
    ]


def _text(name: str, run: list[ForumPost], text: str, discourse: str, community: str) -> SourceText:
    first = run[0]
    threads = tuple(dict.fromkeys(p.thread_id for p in run))  # in order of first post, no repeats
    ids = ",".join(p.post_id for p in run)
    return SourceText(
        text_id=first.post_id,
        author=first.author,
        text=text,
        discourse_type=getattr(first, discourse),
        topic=None,
        groups=threads,
        community=_community(first, community),
        time=first.created,
        origin=f"{name}#{ids}",
    )


def _community(post: ForumPost, community: str) -> str | None:
    return None if community == "none" else getattr(post, community)


def _cut(text: str, max_chars: int | None) -> str:
    """`text` within `max_chars`, cut at the last white space where there is one (not mid-word)."""
    if max_chars is None or len(text) <= max_chars:
        return text
    head = text[:max_chars]
    space = max(head.rfind(" "), head.rfind("\n"))
    cut = head[:space].rstrip() if space > 0 else ""
    return cut if cut.strip() else head  # no white space but at the start: cut mid-word rather than lose it


def _check_post_texts(posts: Sequence[ForumPost], path: Path) -> None:
    """Every post text is non-empty and writable as UTF-8: the texts go into pairs.jsonl verbatim."""
    for post in posts:
        problem = None
        if not post.text.strip():
            problem = "text is empty"
        else:
            try:
                check_text(post.text, path, None, "text")
            except DataError as exc:
                problem = exc.message
        if problem is not None:
            line = _line_of(path, post.post_id)  # only on the error path: the reader keeps no line numbers
            raise DataError(f"post {post.post_id!r}: {problem}", path=path, line=line, field="text")


def _line_of(path: Path, post_id: str) -> int | None:
    for line, obj in read_jsonl(path):
        if obj.get("post_id") == post_id:
            return line
    return None
