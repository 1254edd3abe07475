"""Records of forum data: a post of a forum or subreddit, shared by the forum tasks and their systems.

Also the one shape a text-only system reads from either forum task (darkweb, reddit) without knowing
which: the texts of a sample's posts (`sample_texts`) and of a training split's posts (`ForumSplit`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple, Protocol, runtime_checkable

from core.errors import DataError
from core.files import kind_of, require_field

# The tokens SYSML's pre-processing (tasks.forum.preprocess) puts in a cleaned post's text, part of what a system
# reads: quoted text, PGP blocks, links and images.
QUOTE = "[QUOTE]"
PGP_PUBKEY = "[PGP PUBKEY]"
PGP_SIGNATURE = "[PGP SIGNATURE]"
PGP_ENCMSG = "[PGP ENCMSG]"
LINK = "[LINK]"
IMAGE = "[IMAGE]"
SPECIAL_TOKENS = (QUOTE, PGP_PUBKEY, PGP_SIGNATURE, PGP_ENCMSG, LINK, IMAGE)
POST_KINDS = ("submission", "comment")  # a post's `kind`; a typo ("Comment") would pass for a discourse type


# the Unix seconds of 0001-01-01 and 9999-12-31 23:59:59 UTC, the dates Python's datetime can hold
FIRST_SECOND, LAST_SECOND = -62_135_596_800, 253_402_300_799


def post_created(obj: dict, path: Path, line: int) -> int:
    """A post's `created`: whole Unix seconds of a date in the years 1-9999 (a DataError naming file, line, field)."""
    created = require_field(obj, "created", (int, float), path, line)
    if created != int(created):
        raise DataError(f"expected whole Unix seconds, got {created!r}", path=path, line=line, field="created")
    if not FIRST_SECOND <= created <= LAST_SECOND:  # the tasks date posts; milliseconds are past year 9999
        raise DataError(
            f"expected Unix seconds of a date in the years 1-9999, got {created!r} (milliseconds?)",
            path=path,
            line=line,
            field="created",
        )
    return int(created)


def post_kind(obj: dict, path: Path, line: int) -> str:
    """A post's `kind`: "comment" where missing, else one of POST_KINDS (a DataError naming file, line and field)."""
    kind = obj.get("kind", "comment")
    if kind not in POST_KINDS:  # "Comment" beside "comment" made a cross-discourse pair of two comments
        shown = repr(kind) if isinstance(kind, str) else kind_of(kind)
        raise DataError(f"expected one of {', '.join(POST_KINDS)}, got {shown}", path=path, line=line, field="kind")
    return kind


def non_empty_label(obj: dict, name: str, path: Path, line: int) -> str:
    """A post's author, thread or community: a string with more than blanks (a DataError naming the field)."""
    value = require_field(obj, name, str, path, line)
    if not value.strip():  # a blank author would pool every unnamed post under one person
        raise DataError("empty string", path=path, line=line, field=name)
    return value


class PostIds:
    """The post ids of one file read so far, each with its line: a post twice is an error (it would give its
    author a same-text pair, and two answers to one id)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._first_line: dict[str, int] = {}

    def add(self, obj: dict, line: int) -> str:
        """The post's `post_id`, checked to be new in the file."""
        post_id = require_field(obj, "post_id", str, self.path, line)
        if post_id in self._first_line:
            where = f"first on line {self._first_line[post_id]}"
            raise DataError(f"duplicate post id {post_id!r} ({where})", path=self.path, line=line, field="post_id")
        self._first_line[post_id] = line
        return post_id


class ForumPost(NamedTuple):
    """One post of a forum or subreddit, as in ../shared/data/forum-posts (ordered by time)."""

    post_id: str
    author: str
    market: str  # a community grouping sub-forums (a darkweb market; a group of subreddits)
    subforum: str
    thread_id: str
    parent_id: str | None
    kind: str  # one of POST_KINDS
    created: int  # Unix seconds, UTC
    text: str


def time_order(post: ForumPost) -> tuple[int, str]:
    """The key that puts posts in time order: oldest first, posts of one second by id, so that the file's order of
    its lines never decides (PostTable.id_ranks gives the same order on columns)."""
    return post.created, post.post_id


class TextPost(Protocol):
    """What a text-only system reads of a post: ForumPost, a darkweb EpisodePost, a reddit Action."""

    @property
    def text(self) -> str: ...


@runtime_checkable
class PostsSample(Protocol):
    """A sample that holds its posts under `posts` (a darkweb Episode)."""

    @property
    def posts(self) -> Sequence[TextPost]: ...


# A sample of a forum task, oldest post first: an object with `posts` (darkweb), or the posts themselves (reddit).
ForumSample = PostsSample | Sequence[TextPost]


class ForumSplit(Protocol):
    """A loaded split of a forum task (DarkwebData, RedditData), as a text-only system reads it: the posts file it was
    read from (`source`: the file or its folder) and the task's checksum of the split."""

    source: Path
    checksum: str

    def post_texts(self) -> tuple[tuple[str, ...], ...]:
        """The texts of the split's posts, one tuple per author sequence (a darkweb episode, a reddit
        author's stream), oldest first."""
        ...

    def held_texts(self) -> tuple[str, ...]:
        """The text of every post the split holds, in a sequence or not (a darkweb split keeps posts outside its
        episodes), as the posts file has it (before a task's pre-processing): what a model made for the split
        (`harness pretrain-style --train-split-of`) may have read."""
        ...

    def sequence_authors(self) -> tuple[str, ...]:
        """Who wrote each sequence of `post_texts` (a darkweb episode's person, a reddit stream's author): a
        training label, for systems that learn what varies within one author."""
        ...


def sample_texts(sample: ForumSample) -> tuple[str, ...]:
    """The texts of a sample's posts, oldest first, whichever forum task the sample comes from."""
    posts = sample.posts if isinstance(sample, PostsSample) else sample
    return tuple(post.text for post in posts)


def split_posts_file(split: ForumSplit) -> Path | None:
    """The posts file a split was read from; None where it came from another layout (SYSML's CSV files)."""
    from tasks.forum.reader import find_posts_file

    try:
        return find_posts_file(Path(split.source))
    except DataError:
        return None
