"""Records of the darkweb task: an episode of L consecutive posts by one author in one market."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from tasks.forum.records import ForumPost


class EpisodePost(NamedTuple):
    """One post of an episode: SYSML's triple (pre-processed text, day of week, sub-forum), and its thread.

    Systems read the triple; the thread is for the evaluator (the thread-disjoint protocol,
    tasks.darkweb.evaluation). It defaults to "" (unknown), so records built with three fields still work.
    """

    text: str
    weekday: int  # 0 = Monday ... 6 = Sunday (UTC)
    subforum: str
    thread_id: str = ""  # the thread within the episode's market; "" where the source has none


class Episode(NamedTuple):
    """L consecutive posts of one author in one market, oldest first.

    `author` is the account (the label within a market); `person` is who is behind it across
    markets (the username in the forum-posts data, a matched identity in SYSML's layout): what
    migrant linking retrieves.
    """

    id: str
    author: str
    market: str
    posts: tuple[EpisodePost, ...]
    person: str
    start: int = 0  # Unix seconds of the first post (0 where unknown): episodes sort by it


class DarkwebData(NamedTuple):
    """One split of the darkweb task, as a system and the evaluator see it.

    `posts` are the split's raw posts of the task's markets (what the user/sub-forum/thread/post
    graph is built from; empty where the source has no thread structure). `cross_persons` are the
    persons that get a CROSS label in multitask training (empty unless the task is multitask and the
    split is train). `cross_accounts` are the (person, market) pairs that CROSS label ties together,
    on both splits of a multitask task (empty otherwise): what the evaluator needs to tell a held-out
    migrant from one that training linked (`migrant_heldout/...`).

    `episodes` and `posts` are read-only sequences: tuples where the source is small (SYSML's layout),
    lazy sequences over a memory-mapped post table where it is a posts file (tasks.darkweb.episodes.EpisodeRows,
    tasks.forum.post_table.PostRows), which make each Episode or ForumPost when it is read. Either
    supports len, iteration, indexing and slicing, and compares equal to a tuple of the same items.
    """

    split: str
    episodes: Sequence[Episode]
    markets: tuple[str, ...]
    posts: Sequence[ForumPost]
    multitask: bool
    cross_persons: frozenset[str]
    source: Path
    checksum: str
    cross_accounts: frozenset[tuple[str, str]] = frozenset()

    def post_texts(self) -> tuple[tuple[str, ...], ...]:
        """The texts of the episodes' posts, one tuple per episode (tasks.forum.records.ForumSplit)."""
        return tuple(tuple(post.text for post in episode.posts) for episode in self.episodes)

    def held_texts(self) -> tuple[str, ...]:
        """The raw text of every post of the split, in an episode or not (tasks.forum.records.ForumSplit)."""
        return tuple(post.text for post in self.posts)

    def sequence_authors(self) -> tuple[str, ...]:
        """The person behind each episode of `post_texts` (tasks.forum.records.ForumSplit)."""
        return tuple(episode.person for episode in self.episodes)
