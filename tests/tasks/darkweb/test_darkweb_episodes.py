"""The data protocol: time split per market, active users, episodes; on hand-made and real posts."""

from __future__ import annotations

from collections import Counter, defaultdict
from datetime import datetime, timezone
from pathlib import Path

import pytest

from core.errors import HarnessError
from tasks.darkweb import DarkwebTask
from tasks.darkweb.episodes import build_episodes, time_split, weekday
from tasks.forum.records import ForumPost


def post(i: int, author: str, created: int, market: str = "m", text: str | None = None) -> ForumPost:
    return ForumPost(f"p{i}", author, market, "sf", "t1", None, "comment", created, text or f"text {i}")


def test_weekday_in_utc():
    assert weekday(0) == 3  # 1970-01-01: Thursday
    assert weekday(1_699_920_000 - 1) == 0  # 2023-11-13 23:59:59 UTC: Monday
    assert weekday(1_699_920_000) == 1  # one second later: Tuesday
    for seconds in range(1_300_000_000, 1_700_000_000, 7_777_777):
        assert weekday(seconds) == datetime.fromtimestamp(seconds, tz=timezone.utc).weekday()


def test_time_split_is_per_market_at_the_median():
    posts = [post(i, "a", 100 + i) for i in range(10)] + [post(100 + i, "b", 5000 + 10 * i, "n") for i in range(4)]
    split = time_split(posts)
    assert [p.created for p in split["m"]["train"]] == [100, 101, 102, 103, 104]
    assert [p.created for p in split["m"]["test"]] == [105, 106, 107, 108, 109]
    assert [p.created for p in split["n"]["train"]] == [5000, 5010]  # its own median, not m's
    assert time_split(list(reversed(posts))) == split  # ordered by time, whatever the input order


def test_posts_of_the_same_second_are_ordered_by_id_not_by_the_file():
    """A re-export of the same posts in another line order must give the same splits (audit 6, F2)."""
    posts = [post(9, "a", 100), post(3, "b", 100), post(5, "a", 100)] + [post(i, "b", 100 + i) for i in range(1, 5)]
    split = time_split(posts)
    assert [p.post_id for p in split["m"]["train"]] == ["p3", "p5", "p9"]  # all made at 100: by id
    assert time_split(posts[::-1]) == time_split(posts[1:] + posts[:1]) == split


def test_episodes_are_consecutive_runs_of_active_authors():
    posts = [post(i, "a", i) for i in range(12)] + [post(100 + i, "b", 100 + i) for i in range(9)]
    episodes = build_episodes(posts, split="train", length=5, min_posts=10, text_of=lambda p: p.text.upper())
    assert [e.id for e in episodes] == ["m/train/a/0", "m/train/a/1"]  # b has 9 < 10 posts; a's last 2 dropped
    assert [p.text for p in episodes[1].posts] == [f"TEXT {i}" for i in range(5, 10)]
    assert episodes[0].posts[0].weekday == 3 and episodes[0].posts[0].subforum == "sf"
    assert episodes[0].start == 0 and episodes[0].person == "a"
    assert len(build_episodes(posts, split="test", length=1, min_posts=9)) == 12 + 9
    with pytest.raises(ValueError, match="at least the episode length"):
        build_episodes(posts, split="train", length=5, min_posts=3)


def test_default_text_is_the_cleaned_post():
    posts = [post(i, "a", i, text="> quoted\n\nmine") for i in range(2)]
    assert build_episodes(posts, split="test", length=1, min_posts=2)[0].posts[0].text == "[QUOTE]\n\nmine"


def test_bad_parameters_are_refused():
    for params in (
        {"episode_length": 4},
        {"min_posts": 9},
        {"multitask": True, "market": "campus"},
        {"author_share": 0.0},
    ):
        with pytest.raises(HarnessError):
            DarkwebTask(**params)


@pytest.fixture(scope="module")
def real_splits(forum_posts_file: Path):
    task = DarkwebTask()
    return task, task.load(forum_posts_file, "train"), task.load(forum_posts_file, "test")


def test_real_time_split_and_episodes(real_splits):
    task, train, test = real_splits
    assert train.markets == test.markets == ("academia", "admissions", "campus")
    # half of each market's posts before its cut, every train post earlier than every test post
    for market in train.markets:
        before = [p.created for p in train.posts if p.market == market]
        after = [p.created for p in test.posts if p.market == market]
        assert abs(len(before) - len(after)) <= 1 and max(before) < min(after)
    assert not {p.post_id for p in train.posts} & {p.post_id for p in test.posts}
    # sizes measured on ../shared/data/forum-posts (task version 1)
    assert Counter(e.market for e in train.episodes) == {"admissions": 9768, "campus": 6684, "academia": 5171}
    assert Counter(e.market for e in test.episodes) == {"admissions": 10277, "campus": 6770, "academia": 5084}
    assert all(len(e.posts) == 5 for e in train.episodes)
    per_author = Counter((e.market, e.author) for e in test.episodes)
    assert min(per_author.values()) >= 2  # >= 10 posts: every query has another episode by its author
    # an author's episodes follow one another in time
    starts = defaultdict(list)
    for e in train.episodes:
        starts[(e.market, e.author)].append(e.start)
    assert all(s == sorted(s) for s in starts.values())


def test_real_loading_is_deterministic_and_multitask_names_cross_persons(real_splits, forum_posts_file: Path):
    _, train, _ = real_splits
    again = DarkwebTask(multitask=True).load(forum_posts_file, "train")
    assert again.episodes == train.episodes and again.checksum == train.checksum
    markets_of = defaultdict(set)
    for e in train.episodes:
        markets_of[e.person].add(e.market)
    migrants = {p for p, ms in markets_of.items() if len(ms) > 1}
    assert again.cross_persons and again.cross_persons < migrants
    assert train.cross_persons == frozenset()  # single-task: no CROSS labels


def test_market_author_share_and_max_authors_select(forum_posts_file: Path):
    task = DarkwebTask(market="campus", max_authors=25)
    train, test = task.load(forum_posts_file, "train"), task.load(forum_posts_file, "test")
    assert {e.market for e in test.episodes} == {"campus"}
    assert len({e.person for e in train.episodes + test.episodes}) == 25
    assert {p.author for p in train.posts} <= {e.person for e in train.episodes + test.episodes}
    # a share keeps the same persons whatever the markets chosen: single-market pools = multitask pools
    alone = DarkwebTask(market="academia", author_share=0.2).load(forum_posts_file, "test")
    pooled = DarkwebTask(multitask=True, author_share=0.2).load(forum_posts_file, "test")
    assert alone.episodes == tuple(e for e in pooled.episodes if e.market == "academia")
    assert 0.15 < len({e.person for e in pooled.episodes}) / 3851 < 0.25  # of the 3,851 test persons
    with pytest.raises(HarnessError, match="not in"):
        DarkwebTask(market="silkroad").load(forum_posts_file, "train")
