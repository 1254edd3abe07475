"""Shared fixtures: where the real data lives (tests skip only when it is absent)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("HARNESS_SHARED_DATA", REPO.parent / "shared" / "data"))


@pytest.fixture(scope="session")
def forum_posts_file() -> Path:
    """The real forum posts (261k posts by 8.5k users), read-only."""
    path = SHARED_DATA / "forum-posts" / "posts.jsonl.gz"
    if not path.is_file():
        pytest.skip(f"real forum posts not found at {path} (set HARNESS_SHARED_DATA)")
    return path
