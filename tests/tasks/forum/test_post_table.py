"""Forum posts as a memory-mapped Arrow table (tasks.forum.post_table) and the darkweb task built on it.

The table must hold exactly what tasks.forum.reader reads, be reused from its cache (keyed by the
file's content, never used half-written), keep the reader's one-line errors, and give the darkweb
task the same episodes and posts as the list-based protocol it replaced (written out here as the
reference: read_forum_posts + time_split + build_episodes + the old selection of persons).
"""

from __future__ import annotations

import gzip
import json
import os
import pickle
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
from test_forum_posts import GOOD, write  # one valid post and a JSONL writer, shared with the reader's tests

import tasks.forum.post_table as post_table
from core.errors import DataError
from tasks.darkweb import DarkwebTask
from tasks.darkweb.episodes import EpisodeRows, build_episodes, time_split
from tasks.darkweb.task import _unit_hash
from tasks.forum.post_table import CODED_FIELDS, COMPLETE_NAME, PostRows, file_digests, open_post_table
from tasks.forum.preprocess import clean_post
from tasks.forum.reader import read_forum_posts


def small_posts(n: int = 6) -> list[dict]:
    return [
        {**GOOD, "post_id": f"t1_{i}", "author": f"u{i % 2}", "created": GOOD["created"] + i, "text": f"post {i} > q"}
        for i in range(n)
    ]


@pytest.fixture(autouse=True)
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(folder))
    return folder


def cache_entries(cache_dir: Path) -> list[str]:
    """What the posts cache holds, but the lock files its installers leave."""
    posts = cache_dir / "posts"
    return sorted(p.name for p in posts.iterdir() if p.suffix != ".lock") if posts.is_dir() else []


# -- the table ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def real_posts(forum_posts_file: Path):
    return read_forum_posts(forum_posts_file)


@pytest.fixture(scope="module")
def real_table(forum_posts_file: Path, tmp_path_factory: pytest.TempPathFactory):
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HARNESS_CACHE_DIR", str(tmp_path_factory.mktemp("real-cache")))
        return open_post_table(forum_posts_file)


def test_real_posts_convert_exactly(real_posts, real_table):
    posts, checksum = real_posts
    assert len(real_table) == len(posts) == 261_497
    assert real_table.checksum == checksum
    assert real_table.posts(np.arange(len(real_table))) == posts  # every field of every row
    assert real_table.created.dtype == np.int64 and real_table.created.tolist() == [p.created for p in posts]
    for field in CODED_FIELDS:
        codes, names = real_table.codes(field), real_table.names(field)
        assert codes.dtype == np.int64 and list(names) == sorted(names)
        assert [names[c] for c in codes.tolist()] == [getattr(p, field) for p in posts]
    rows = [0, 17, 130_000, len(posts) - 1]
    assert [real_table.post(r) for r in rows] == [posts[r] for r in rows]
    assert real_table.post(-1) == posts[-1]
    assert real_table.texts(rows[::-1]) == [posts[r].text for r in rows[::-1]]
    assert real_table.cleaned_texts(rows) == [clean_post(posts[r].text) for r in rows]
    with pytest.raises(IndexError):
        real_table.post(len(posts))


def test_post_rows_are_a_lazy_read_only_sequence(real_posts, real_table):
    posts, _ = real_posts
    rows = np.array([5, 3, 200_000, 9])
    seq = PostRows(real_table, rows)
    expected = tuple(posts[r] for r in rows)
    assert len(seq) == 4 and seq[1] == posts[3] and seq[-1] == posts[9]
    assert seq == expected and tuple(seq) == expected and list(seq[1:3]) == list(expected[1:3])
    assert seq != expected[:3] and seq + (posts[0],) == expected + (posts[0],)
    with pytest.raises(ValueError):
        seq.rows[0] = 1  # read-only
    again = pickle.loads(pickle.dumps(real_table))
    assert again.post(3) == posts[3] and again.checksum == real_table.checksum


def test_cleaned_texts_keep_only_the_last_ones(tmp_path: Path, monkeypatch):
    path = write(tmp_path / "posts.jsonl", small_posts(10))
    table = open_post_table(path)
    monkeypatch.setattr(post_table, "CLEANED_KEPT", 3)
    expected = [clean_post(f"post {i} > q") for i in range(10)]
    assert table.cleaned_texts(range(10)) == expected  # more rows than it keeps, in one call
    assert table.cleaned_texts([9, 0, 9]) == [expected[9], expected[0], expected[9]]
    assert len(table._cleaned) == 3


def test_the_cache_is_reused_without_reading_the_file(tmp_path: Path, cache_dir: Path, monkeypatch):
    path = write(tmp_path / "posts.jsonl", small_posts())
    first = open_post_table(path)
    assert cache_entries(cache_dir) == [file_digests(path)[0]]

    def fail(path):
        raise AssertionError("the posts file was read again")

    monkeypatch.setattr(post_table, "iter_forum_posts", fail)
    second = open_post_table(path)
    assert second.posts(range(len(second))) == first.posts(range(len(first))) == read_forum_posts(path)[0]


def test_the_cache_is_keyed_by_content(tmp_path: Path, cache_dir: Path):
    path = write(tmp_path / "posts.jsonl", small_posts())
    before = open_post_table(path)
    rows = small_posts()
    rows[2]["text"] = "changed"
    write(path, rows)
    after = open_post_table(path)
    assert after.folder != before.folder and len(cache_entries(cache_dir)) == 2
    assert after.post(2).text == "changed" and before.post(2).text == "post 2 > q"
    # the same bytes under another name share the cache; the task's checksum still names the file
    zipped = tmp_path / "posts.jsonl.gz"
    zipped.write_bytes(gzip.compress(path.read_bytes()))
    assert open_post_table(zipped).checksum == read_forum_posts(zipped)[1] != after.checksum


def test_a_partial_cache_folder_is_rebuilt(tmp_path: Path, cache_dir: Path):
    path = write(tmp_path / "posts.jsonl", small_posts())
    folder = post_table.posts_cache_folder(file_digests(path)[0])
    (folder / "part-00000").mkdir(parents=True)
    (folder / "part-00000" / "data-00000-of-00001.arrow").write_bytes(b"half written")
    table = open_post_table(path)  # no completion marker: converted again, the partial folder replaced
    assert table.posts(range(len(table))) == read_forum_posts(path)[0]
    assert (folder / COMPLETE_NAME).is_file() and cache_entries(cache_dir) == [folder.name]
    # a marker of another format version counts as partial too
    (folder / COMPLETE_NAME).write_text(json.dumps({"format": 0, "rows": 6, "parts": ["part-00000"]}))
    assert open_post_table(path).post(0) == read_forum_posts(path)[0][0]


def test_a_conversion_removes_staging_folders_left_by_a_killed_one(tmp_path: Path, cache_dir: Path):
    path = write(tmp_path / "posts.jsonl", small_posts())
    folder = post_table.posts_cache_folder(file_digests(path)[0])
    old = post_table.staging_folder(folder, post_table.STAGING_SUFFIX)  # as a conversion killed two days ago
    (old / "part-00000").mkdir()
    two_days_ago = time.time() - 2 * 24 * 3600
    os.utime(old, (two_days_ago, two_days_ago))
    running = post_table.staging_folder(folder, post_table.STAGING_SUFFIX)  # as one running now elsewhere
    open_post_table(path)
    assert not old.exists() and running.is_dir()
    assert sorted(cache_entries(cache_dir)) == sorted([folder.name, running.name])


def test_a_second_builder_keeps_the_first_ones_cache(tmp_path: Path, cache_dir: Path):
    path = write(tmp_path / "posts.jsonl", small_posts())
    table = open_post_table(path)
    marker = (table.folder / COMPLETE_NAME).read_text()
    post_table._convert(path, table.folder)  # as a concurrent builder finishing second would
    assert (table.folder / COMPLETE_NAME).read_text() == marker
    assert cache_entries(cache_dir) == [table.folder.name]  # no staging folder left
    assert open_post_table(path).posts(range(6)) == read_forum_posts(path)[0]


def test_concurrent_builders_share_one_cache(tmp_path: Path, cache_dir: Path):
    path = write(tmp_path / "posts.jsonl", small_posts(200))
    with ThreadPoolExecutor(3) as pool:
        tables = list(pool.map(open_post_table, [path] * 3))
    expected = read_forum_posts(path)[0]
    assert all(t.posts(range(200)) == expected for t in tables)
    assert cache_entries(cache_dir) == [file_digests(path)[0]]


@pytest.mark.parametrize(
    ("row", "field", "message"),
    [
        ({k: v for k, v in GOOD.items() if k != "author"}, "author", "missing"),
        ({**GOOD, "thread_id": " "}, "thread_id", "empty"),
        ({**GOOD, "created": 1.5}, "created", "whole Unix seconds"),
        ({**GOOD, "text": None}, "text", "expected str"),
        ({**GOOD, "parent_id": 3}, "parent_id", "str or null"),
        ({**GOOD, "post_id": "t1_0"}, "post_id", "duplicate post id 't1_0' \\(first on line 1\\)"),
        ("{not json", None, "malformed JSON"),
    ],
)
def test_bad_input_gives_the_readers_error_and_no_cache(tmp_path: Path, cache_dir: Path, row, field, message):
    path = write(tmp_path / "posts.jsonl", [{**GOOD, "post_id": "t1_0"}, row, {**GOOD, "post_id": "t1_9"}])
    with pytest.raises(DataError, match=message) as info:
        open_post_table(path)
    assert info.value.path == str(path) and info.value.line == 2 and info.value.field == field
    with pytest.raises(DataError) as listed:
        read_forum_posts(path)
    assert str(info.value) == str(listed.value)  # one line, word for word the reader's
    assert cache_entries(cache_dir) == []  # neither a cache folder nor a staging folder is left


def test_a_missing_file_is_a_data_error(tmp_path: Path):
    with pytest.raises(DataError, match="file not found"):
        open_post_table(tmp_path / "posts.jsonl")


# -- the darkweb task on the table equals the list-based protocol -----------------------------------------


def reference_splits(
    posts,
    checksum: str,
    *,
    market=None,
    episode_length=5,
    min_posts=10,
    multitask=False,
    cross_share=0.5,
    author_share=1.0,
    max_authors=None,
):
    """The darkweb task's splits of a posts file as the task built them before the post table, on lists."""
    cleaned = {p.post_id: clean_post(p.text) for p in posts}
    by_market = time_split(posts)
    markets = tuple(sorted(by_market)) if market is None else (market,)
    episodes = {
        split: [
            e
            for m in markets
            for e in build_episodes(
                by_market[m][split],
                split=split,
                length=episode_length,
                min_posts=min_posts,
                text_of=lambda p: cleaned[p.post_id],
            )
        ]
        for split in ("train", "test")
    }
    split_posts = {split: [p for m in markets for p in by_market[m][split]] for split in ("train", "test")}
    keep = None
    if max_authors is not None or author_share < 1.0:
        every = episodes["train"] + episodes["test"]
        persons = sorted({e.person for e in every if _unit_hash(e.person) < author_share})
        persons.sort(key=lambda p: (_unit_hash(p), p))
        keep = set(persons[:max_authors])
    kept = {s: [e for e in episodes[s] if keep is None or e.person in keep] for s in episodes}
    cross_persons: frozenset[str] = frozenset()
    if multitask:
        markets_of = defaultdict(set)
        for e in kept["train"]:
            markets_of[e.person].add(e.market)
        cross_persons = frozenset(
            p for p, ms in markets_of.items() if len(ms) > 1 and _unit_hash("cross:" + p) < cross_share
        )
    cross_accounts = frozenset((e.person, e.market) for e in kept["train"] if e.person in cross_persons)
    return {
        split: {
            "episodes": tuple(kept[split]),
            "posts": tuple(p for p in split_posts[split] if keep is None or p.author in keep),
            "markets": tuple(sorted({e.market for e in kept[split]})),
            "cross_persons": cross_persons if split == "train" else frozenset(),
            "cross_accounts": cross_accounts,
            "checksum": checksum,
        }
        for split in ("train", "test")
    }


PARAMETERS = [
    {},
    {"market": "campus", "episode_length": 3, "min_posts": 7, "max_authors": 25},
    {"multitask": True, "cross_share": 0.7, "author_share": 0.2, "episode_length": 1, "min_posts": 2},
    {"market": "academia", "episode_length": 1, "min_posts": 12, "author_share": 0.5, "max_authors": 300},
]


@pytest.mark.parametrize("params", PARAMETERS, ids=lambda p: ",".join(f"{k}={v}" for k, v in p.items()) or "defaults")
def test_darkweb_splits_equal_the_list_based_protocol(params: dict, real_posts, forum_posts_file: Path):
    posts, checksum = real_posts
    reference = reference_splits(posts, checksum, **params)
    task = DarkwebTask(**params)
    for split in ("train", "test"):
        data = task.load(forum_posts_file, split)
        expected = reference[split]
        assert isinstance(data.episodes, EpisodeRows) and isinstance(data.posts, PostRows)  # lazy, not tuples
        assert len(data.episodes) == len(expected["episodes"]) > 0
        assert tuple(data.episodes) == expected["episodes"]  # ids, order, authors, markets, posts, texts, start
        assert tuple(data.posts) == expected["posts"]
        assert data.markets == expected["markets"] and data.checksum == expected["checksum"]
        assert data.cross_persons == expected["cross_persons"] and data.cross_accounts == expected["cross_accounts"]
        assert data.post_texts() == tuple(tuple(p.text for p in e.posts) for e in expected["episodes"])
    if params.get("multitask"):
        assert reference["train"]["cross_persons"]  # the case checks some CROSS labels


def test_darkweb_splits_do_not_follow_the_files_order_of_same_second_posts(tmp_path: Path):
    """nbcsauthor numbers its graph's nodes in the order of the training posts: posts made in the same second
    must come in one order (by id) whatever the file's line order, or a re-exported file changes its answers."""
    rows = [
        {
            **GOOD,
            "post_id": f"t1_{i}",
            "author": f"u{i % 3}",
            "thread_id": f"x{i % 4}",
            "created": GOOD["created"] + i // 3,
        }
        for i in range(24)
    ]  # every second holds three posts, of three authors
    rows += [{**rows[0], "post_id": "t1_0b"}, {**rows[-1], "post_id": "t1_23b"}]  # one author twice in a second
    task = DarkwebTask(episode_length=1, min_posts=2)
    forward = write(tmp_path / "forward.jsonl", rows)
    backward = write(tmp_path / "backward.jsonl", rows[::-1])
    for split in ("train", "test"):
        ours, theirs = task.load(forward, split), task.load(backward, split)
        assert [p.post_id for p in ours.posts] == [p.post_id for p in theirs.posts]
        assert tuple(ours.episodes) == tuple(theirs.episodes)
    first_second = [p.post_id for p in task.load(backward, "train").posts][:4]
    assert first_second == ["t1_0", "t1_0b", "t1_1", "t1_2"]


def test_episode_rows_index_slice_and_compare(forum_posts_file: Path):
    data = DarkwebTask(market="campus").load(forum_posts_file, "test")
    every = tuple(data.episodes)
    assert (
        data.episodes[0] == every[0]
        and data.episodes[-1] == every[-1]
        and data.episodes[len(every) // 2] == every[len(every) // 2]
    )
    assert tuple(data.episodes[10:20:3]) == every[10:20:3] and data.episodes[10:20:3] == every[10:20:3]
    assert data.episodes == every and data.episodes != every[:-1] and data.episodes + () == every
    with pytest.raises(IndexError):
        data.episodes[len(every)]


def test_posts_with_an_empty_text_are_said_on_every_open(tmp_path: Path, caplog: pytest.LogCaptureFixture):
    """The forum tasks keep empty posts (as SYSML does), so they fill episodes; a file where half are empty scored
    differently without a word (audit 3, finding 6). The count is kept in the cache's marker, so a cached open says
    it too."""
    rows = [{**GOOD, "post_id": f"t1_{i}", "text": "" if i % 2 else "some words"} for i in range(6)]
    path = write(tmp_path / "posts.jsonl", rows)
    for _ in ("converted", "cached"):
        caplog.clear()
        with caplog.at_level("WARNING", logger="harness"):
            assert len(open_post_table(path)) == 6
        assert f"{path}: 3 of 6 posts have an empty text" in caplog.text
    caplog.clear()
    with caplog.at_level("WARNING", logger="harness"):
        open_post_table(write(tmp_path / "full.jsonl", [{**GOOD, "post_id": f"t1_{i}"} for i in range(3)]))
    assert "empty text" not in caplog.text
