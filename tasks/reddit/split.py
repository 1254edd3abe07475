"""The reddit task's split: by author AND by time, so test data is future to all training data.

1. The cutoff T is a post time: the `cutoff_quantile` quantile of all post times in the file.
2. Each author is a test author when a salted hash of the name falls below `test_author_share`
   (a fixed, seeded coin per name: the same author is always on the same side).
3. Training = the posts of training authors made before T; test = the posts of test authors made
   at or after T. Posts of training authors from T on and posts of test authors before T are used
   nowhere, so no test author is seen in training and every test post is later than every training post.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any, NamedTuple

from tasks.forum.records import ForumPost


class AuthorTimeSplit(NamedTuple):
    cutoff: int  # Unix seconds: train posts are < cutoff <= test posts
    train: list[ForumPost]
    test: list[ForumPost]
    counts: dict[str, Any]


def is_test_author(author: str, share: float, seed: int) -> bool:
    """A seeded, salted coin per author name: True for about `share` of all names."""
    digest = hashlib.sha256(f"reddit-split:{seed}:{author}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2.0**64 < share


def time_cutoff(posts: Sequence[ForumPost], quantile: float) -> int:
    """The post time at the given quantile of all post times (the lower one at a fractional position)."""
    if not 0.0 < quantile < 1.0:
        raise ValueError(f"cutoff_quantile must lie in (0, 1), got {quantile}")
    if not posts:
        raise ValueError("no posts to split")
    times = sorted(post.created for post in posts)
    return times[min(len(times) - 1, int(quantile * len(times)))]


def split_by_author_and_time(
    posts: Sequence[ForumPost], *, cutoff_quantile: float, test_author_share: float, seed: int
) -> AuthorTimeSplit:
    """Split posts into training (training authors, before the cutoff) and test (test authors, from it on)."""
    if not 0.0 < test_author_share < 1.0:
        raise ValueError(f"test_author_share must lie in (0, 1), got {test_author_share}")
    cutoff = time_cutoff(posts, cutoff_quantile)
    test_side = {author: is_test_author(author, test_author_share, seed) for author in {p.author for p in posts}}
    train = [p for p in posts if not test_side[p.author] and p.created < cutoff]
    test = [p for p in posts if test_side[p.author] and p.created >= cutoff]
    dropped_train = sum(1 for p in posts if not test_side[p.author] and p.created >= cutoff)
    dropped_test = sum(1 for p in posts if test_side[p.author] and p.created < cutoff)
    counts = {
        "cutoff": cutoff,
        "cutoff_utc": datetime.fromtimestamp(cutoff, tz=timezone.utc).isoformat(timespec="seconds"),
        "posts_in_file": len(posts),
        "authors_in_file": len(test_side),
        "train_authors": len({p.author for p in train}),
        "train_posts": len(train),
        "test_authors": len({p.author for p in test}),
        "test_posts": len(test),
        "dropped_train_author_posts_from_cutoff": dropped_train,
        "dropped_test_author_posts_before_cutoff": dropped_test,
    }
    return AuthorTimeSplit(cutoff, train, test, counts)


def why_a_side_is_empty(
    posts: Sequence[ForumPost], split: AuthorTimeSplit, *, test_author_share: float, seed: int
) -> str:
    """Why the split left the training or the test side without posts, and the setting that would change it where
    one can (no setting splits a file of one author, or of posts all made at one time)."""
    authors = {post.author for post in posts}
    if len(authors) < 2:
        return f"the file has {len(authors)} author, and the split puts each author on one side only; give two or more"
    if len({post.created for post in posts}) < 2:
        return "every post has the same time, and the split needs posts before and after its cutoff"
    test_authors = sum(is_test_author(author, test_author_share, seed) for author in authors)
    if test_authors in (0, len(authors)):
        side = "test" if test_authors else "training"
        return f"all {len(authors)} authors fall on the {side} side (adjust test_author_share or split_seed)"
    if not split.train:
        return "no training author posted before the cutoff (a higher cutoff_quantile moves it later)"
    return "no test author posted at or after the cutoff (a lower cutoff_quantile moves it earlier)"
