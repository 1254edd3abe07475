"""Records of the reddit task: actions, per-author streams, ranking and linking sets, loaded splits."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple


class Action(NamedTuple):
    """One post as the systems see it (Khan et al. 2021, section 2.1).

    `subreddit` indexes the split's subreddit list (`RedditData.subreddits`); the index
    `len(subreddits)` is the "other" bucket, for a subreddit outside the most common N.
    """

    text: str
    hour: int  # hour of day 0-23 (UTC) of the post's Unix time
    subreddit: int


Sample = Sequence[Action]  # a contiguous run of one author's actions, oldest first


class Stream(NamedTuple):
    """All actions of one author in a split, oldest first."""

    author: str
    actions: tuple[Action, ...]


class RankingSet(NamedTuple):
    """Ranking evaluation: one query and one target sample per author, disjoint, query first in time.

    `query_post_ids` and `target_post_ids` name the posts of each sample (the file's post_id), so
    the protocol's rules can be checked against the posts file; the legacy protocol leaves them empty.
    """

    authors: tuple[str, ...]
    queries: tuple[tuple[Action, ...], ...]
    targets: tuple[tuple[Action, ...], ...]
    query_post_ids: tuple[tuple[str, ...], ...] = ()
    target_post_ids: tuple[tuple[str, ...], ...] = ()


class LinkingSet(NamedTuple):
    """Linking evaluation: distinguished authors' histories against target accounts' newer posts.

    `targets[size][j]` is the sample of the `size` most recent posts of account `target_authors[j]`
    in the target period; every query is scored against every target of a size. A trial is a
    target (same-author) trial when the two author names are equal.
    """

    query_authors: tuple[str, ...]
    queries: tuple[tuple[Action, ...], ...]
    target_authors: tuple[str, ...]
    targets: dict[int, tuple[tuple[Action, ...], ...]]
    subreddit: str | None  # the single subreddit the set is restricted to, or None for all
    # the posts of each query and target (the file's post_id), as the samples above; None where not kept
    query_post_ids: tuple[tuple[str, ...], ...] | None = None
    target_post_ids: dict[int, tuple[tuple[str, ...], ...]] | None = None


@dataclass(frozen=True)
class RedditData:
    """A loaded split of the reddit task.

    `streams` are the split's authors (train: training authors before the cutoff; test: test
    authors from the cutoff on). The test split also holds the ranking and linking sets.
    `counts` records how the split was built (authors, posts, authors left out and why).
    `linking_by_subreddit` holds the per-subreddit linking sets whose scores are averaged (the
    leak-free protocol; empty under the legacy protocol), by subreddit name.
    """

    split: str
    streams: tuple[Stream, ...]
    subreddits: tuple[str, ...]  # the most common N training subreddits; index N is "other"
    source: Path
    checksum: str
    counts: dict[str, Any] = field(default_factory=dict)
    ranking: RankingSet | None = None
    linking: LinkingSet | None = None
    linking_by_subreddit: dict[str, LinkingSet] = field(default_factory=dict)

    def __len__(self) -> int:
        """Number of posts (actions) in the split."""
        return sum(len(stream.actions) for stream in self.streams)

    @property
    def other_subreddit(self) -> int:
        """Index of the "other" bucket."""
        return len(self.subreddits)

    def post_texts(self) -> tuple[tuple[str, ...], ...]:
        """The texts of the split's posts, one tuple per author stream (tasks.forum.records.ForumSplit)."""
        return tuple(tuple(action.text for action in stream.actions) for stream in self.streams)

    def held_texts(self) -> tuple[str, ...]:
        """The text of every post of the split: its streams hold them all (tasks.forum.records.ForumSplit)."""
        return tuple(text for texts in self.post_texts() for text in texts)

    def sequence_authors(self) -> tuple[str, ...]:
        """The author of each stream of `post_texts` (tasks.forum.records.ForumSplit)."""
        return tuple(stream.author for stream in self.streams)
