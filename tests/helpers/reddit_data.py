"""Small hand-made inputs for tests of the reddit task and its systems (no real data needed)."""

from __future__ import annotations

import json
from pathlib import Path

from tasks.reddit.records import Action, RedditData, Stream

HOUR = 3600
DAY = 24 * HOUR
T0 = 1_600_000_000


def post(i: int, author: str, created: int, text: str, subforum: str = "College") -> dict:
    return {
        "post_id": f"t1_{i}",
        "author": author,
        "market": "campus",
        "subforum": subforum,
        "thread_id": f"x{i}",
        "parent_id": None,
        "kind": "comment",
        "created": created,
        "text": text,
    }


def write_posts(path: Path, rows: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = sorted(rows, key=lambda r: r["created"])
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def synthetic_posts(n_authors: int = 24, per_author: int = 40, *, days: int = 100) -> list[dict]:
    """Authors who each post evenly over `days` days, with words of their own (easy to tell apart)."""
    rows, i = [], 0
    subs = ["College", "ApplyingToCollege", "GradSchool"]
    for a in range(n_authors):
        author = f"user{a:02d}"
        for j in range(per_author):
            created = T0 + int((j + a / n_authors) * days * DAY / per_author) + (a % 24) * HOUR
            words = " ".join(f"w{a}x{(j + k) % 5}" for k in range(6))
            rows.append(post(i, author, created, f"{words} common words here", subs[a % 3]))
            i += 1
    return rows


def synthetic_train_data(n_authors: int = 10, per_author: int = 12, subreddits: int = 3) -> RedditData:
    """A training split built by hand: distinct words, hours and subreddits per author."""
    streams = []
    for a in range(n_authors):
        actions = tuple(
            Action(" ".join(f"a{a}w{(j + k) % 7}" for k in range(5)), (3 * a + j) % 24, a % subreddits)
            for j in range(per_author)
        )
        streams.append(Stream(f"user{a:02d}", actions))
    names = tuple(f"sub{i}" for i in range(subreddits))
    return RedditData("train", tuple(streams), names, Path("synthetic"), "sha256:synthetic")


def threaded_posts(n_authors: int = 36, per_author: int = 42, *, days: int = 120) -> list[dict]:
    """Like `synthetic_posts`, but authors post in bursts and in shared, long-running threads.

    Posts come in threes a few hours apart (so a time gap after a query skips some), every author
    posts three in a row in a thread of their group (so consecutive posts share threads), and every
    fourth post of an author goes to their group's one long thread (which spans the whole period).
    Texts name the author ("w07x3 ..."), the thread's topic and some words all authors use.
    """
    rows, i = [], 0
    subs = ["College", "ApplyingToCollege", "GradSchool"]
    spacing = days * DAY / per_author
    for a in range(n_authors):
        author, group = f"user{a:02d}", a % 4
        for j in range(per_author):
            created = T0 + int((3 * (j // 3) + 3 * a / n_authors) * spacing) + (j % 3) * 2 * HOUR
            thread = f"long{group}" if j % 4 == 0 else f"g{group}-{j // 3}"
            text = f"w{a}x{j % 5} w{a}y topic{thread} common words here"
            row = post(i, author, created, text, subs[a % 3])
            row["thread_id"] = thread
            rows.append(row)
            i += 1
    return rows


def small_task_settings(min_subreddit_queries: int) -> dict:
    """RedditTask settings for small fixtures; per-subreddit linking needs `min_subreddit_queries` queries there."""
    return {
        "ranking_query_size": 4,
        "ranking_target_size": 4,
        "linking_query_size": 8,
        "linking_min_query_posts": 4,
        "linking_target_sizes": [1, 2, 4],
        "linking_target_size": 2,
        "linking_min_subreddit_queries": min_subreddit_queries,
    }


# A tiny varlen_linker configuration for tests, in the dotted keys `harness run --param` gives (the synthetic data's
# few characters fit a 60-subword vocabulary; tests/systems/test_conformance.py widens it for real posts).
TINY_VARLEN = {
    "encoder.vocab_size": 60,
    "encoder.post_length": 8,
    "encoder.token_dim": 8,
    "encoder.filters": 8,
    "encoder.subreddit_dim": 4,
    "encoder.attention_dim": 16,
    "encoder.embedding_dim": 12,
    "training.authors_per_batch": 4,
    "training.samples_per_author": 2,
    "training.epochs": 2,
    "training.steps_per_epoch": 3,
    "device": "cpu",
    "cpu_threads": 1,
}
