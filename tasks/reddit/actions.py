"""Posts -> actions: hour of day, subreddit index among the most common N (with an "other" bucket)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

from tasks.forum.records import ForumPost
from tasks.reddit.records import Action

SECONDS_PER_HOUR = 3600


def hour_of_day(created: int) -> int:
    """Hour of day 0-23 (UTC) of a Unix time in seconds."""
    return int(created // SECONDS_PER_HOUR) % 24


def subreddit_vocabulary(posts: Iterable[ForumPost], size: int) -> tuple[str, ...]:
    """The `size` most common subreddits of `posts`, most common first (ties by name, so it is deterministic)."""
    if size < 1:
        raise ValueError(f"the number of subreddits must be positive, got {size}")
    counts = Counter(post.subforum for post in posts)
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return tuple(name for name, _ in ranked[:size])


class ActionEncoder:
    """Turns posts into actions with a fixed subreddit vocabulary; unknown subreddits go to "other"."""

    def __init__(self, subreddits: Sequence[str]) -> None:
        self.subreddits = tuple(subreddits)
        self._index: Mapping[str, int] = {name: i for i, name in enumerate(self.subreddits)}

    @property
    def other(self) -> int:
        return len(self.subreddits)

    def subreddit_index(self, name: str) -> int:
        return self._index.get(name, self.other)

    def action(self, post: ForumPost) -> Action:
        return Action(text=post.text, hour=hour_of_day(post.created), subreddit=self.subreddit_index(post.subforum))

    def actions(self, posts: Iterable[ForumPost]) -> tuple[Action, ...]:
        return tuple(self.action(post) for post in posts)
