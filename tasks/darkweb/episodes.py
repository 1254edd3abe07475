"""The paper's data protocol on forum posts: time split per market, active users, episodes.

- Time split per market: train = the market's posts before its median post time, test = the rest,
  so half of each forum's posts lie before the cut and nothing from the future leaks into training.
- Active users: authors with at least `min_posts` posts in that market's split (the paper: 10, i.e.
  enough for two episodes of 5).
- Episodes: an author's posts of one market and split, oldest first, cut into consecutive runs of
  L posts; a last run shorter than L is dropped. Each post is the triple (pre-processed text, day
  of week, sub-forum), with its thread id for the evaluator's thread-disjoint protocol.

Everything here is deterministic: ties in time keep the file order.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence

import numpy as np

from tasks.darkweb.records import Episode, EpisodePost
from tasks.forum.preprocess import clean_post
from tasks.forum.records import ForumPost

EPISODE_LENGTHS = (1, 3, 5)
_SECONDS_PER_DAY = 86_400
_EPOCH_WEEKDAY = 3  # 1970-01-01 was a Thursday (Monday = 0)


def weekday(created: int) -> int:
    """Day of the week of Unix seconds, in UTC: 0 = Monday ... 6 = Sunday."""
    return int((created // _SECONDS_PER_DAY + _EPOCH_WEEKDAY) % 7)


def split_time(posts: Sequence[ForumPost]) -> float:
    """The median post time: the train/test cut of one market."""
    if not posts:
        raise ValueError("no posts to split")
    return float(np.median(np.fromiter((p.created for p in posts), dtype=np.float64, count=len(posts))))


def time_split(posts: Sequence[ForumPost]) -> dict[str, dict[str, list[ForumPost]]]:
    """{market: {"train": posts before the market's median time, "test": the others}}, in time order."""
    by_market: dict[str, list[ForumPost]] = defaultdict(list)
    for post in posts:
        by_market[post.market].append(post)
    splits: dict[str, dict[str, list[ForumPost]]] = {}
    for market in sorted(by_market):
        ordered = sorted(by_market[market], key=lambda p: p.created)  # stable: ties keep file order
        cut = split_time(ordered)
        splits[market] = {
            "train": [p for p in ordered if p.created < cut],
            "test": [p for p in ordered if p.created >= cut],
        }
    return splits


def build_episodes(
    posts: Sequence[ForumPost],
    *,
    split: str,
    length: int = 5,
    min_posts: int = 10,
    text_of: Callable[[ForumPost], str] | None = None,
) -> list[Episode]:
    """Episodes of the active authors among one market's posts of one split (posts in time order).

    `text_of` gives a post's pre-processed text (default: clean_post of its text). Episodes come out grouped by author
    (authors in order of their first post), each author's oldest first.
    """
    if length < 1:
        raise ValueError(f"episode length must be at least 1, got {length}")
    if min_posts < length:
        raise ValueError(f"min_posts ({min_posts}) must be at least the episode length ({length})")
    text_of = text_of or (lambda post: clean_post(post.text))
    by_author: dict[str, list[ForumPost]] = defaultdict(list)
    for post in posts:
        by_author[post.author].append(post)
    episodes: list[Episode] = []
    for author, own in by_author.items():
        if len(own) < min_posts:
            continue
        markets = {p.market for p in own}
        if len(markets) != 1:
            raise ValueError(f"posts of {author!r} span markets {sorted(markets)}; build episodes per market")
        market = own[0].market
        for number, start in enumerate(range(0, len(own) - length + 1, length)):
            run = own[start : start + length]
            episodes.append(
                Episode(
                    id=f"{market}/{split}/{author}/{number}",
                    author=author,
                    market=market,
                    posts=tuple(EpisodePost(text_of(p), weekday(p.created), p.subforum, p.thread_id) for p in run),
                    person=author,  # on one site, the same username is the same person
                    start=run[0].created,
                )
            )
    return episodes
