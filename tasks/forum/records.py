"""Records of forum data: a post of a forum or subreddit, shared by the forum tasks and their systems."""

from __future__ import annotations

from typing import NamedTuple


class ForumPost(NamedTuple):
    """One post of a forum or subreddit, as in ../shared/data/forum-posts (ordered by time)."""

    post_id: str
    author: str
    market: str  # a community grouping sub-forums (a darkweb market; a group of subreddits)
    subforum: str
    thread_id: str
    parent_id: str | None
    kind: str  # "submission" or "comment"
    created: int  # Unix seconds, UTC
    text: str
