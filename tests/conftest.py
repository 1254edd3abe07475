"""Shared fixtures: where the real data lives (tests skip only when it is absent)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from helpers.paths import SHARED_DATA


@pytest.fixture(scope="session", autouse=True)
def _session_cache_dir(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Caches (forum posts as Arrow, encoder features) go to a temporary folder, not the user's ~/.cache,
    unless HARNESS_CACHE_DIR is set; tests that need their own cache set it themselves."""
    if not os.environ.get("HARNESS_CACHE_DIR"):
        os.environ["HARNESS_CACHE_DIR"] = str(tmp_path_factory.mktemp("harness-cache"))


@pytest.fixture(scope="session")
def forum_posts_file() -> Path:
    """The real forum posts (261k posts by 8.5k users), read-only."""
    path = SHARED_DATA / "forum-posts" / "posts.jsonl.gz"
    if not path.is_file():
        pytest.skip(f"real forum posts not found at {path} (set HARNESS_SHARED_DATA)")
    return path


@pytest.fixture(scope="session")
def cmcc(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The real CMCC corpus (14 authors x 6 genres x 6 topics), extracted once: its `cmcc/` folder."""
    import tarfile

    archive = SHARED_DATA / "cmcc-cross-genre.tar.gz"
    if not archive.is_file():
        pytest.skip(f"{archive} not found (set HARNESS_SHARED_DATA)")
    folder = tmp_path_factory.mktemp("cmcc")
    with tarfile.open(archive) as tar:
        tar.extractall(folder, filter="data")
    return folder / "cmcc"


@pytest.fixture(scope="session")
def forum_slice(forum_posts_file: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """All posts of 80 real authors with 40-300 posts each (chosen by a hash of the name): data for both forum tasks."""
    from helpers.forum_slice import write_author_slice

    return write_author_slice(forum_posts_file, tmp_path_factory.mktemp("forum-slice"), authors=80)


@pytest.fixture(scope="session")
def darkweb_slice(forum_slice: Path) -> tuple:
    """(task, train, test) of the darkweb task on `forum_slice`, with the task's defaults."""
    from tasks.darkweb import DarkwebTask

    task = DarkwebTask()
    return task, task.load(forum_slice, "train"), task.load(forum_slice, "test")


@pytest.fixture(scope="session")
def reddit_slice(forum_slice: Path) -> tuple:
    """(task, train, test) of the reddit task on `forum_slice`, with small ranking and linking sets."""
    from helpers.forum_slice import SLICE_REDDIT_PARAMS

    from tasks.reddit import RedditTask

    task = RedditTask(**SLICE_REDDIT_PARAMS)
    return task, task.load(forum_slice, "train"), task.load(forum_slice, "test")
