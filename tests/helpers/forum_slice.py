"""A small real forum corpus for tests: every post of a few real authors, chosen by a hash of the name."""

from __future__ import annotations

import gzip
import hashlib
import json
from collections import Counter
from pathlib import Path

# reddit task parameters that give a slice of 80 authors small ranking and linking sets
SLICE_REDDIT_PARAMS = {
    "ranking_query_size": 8,
    "ranking_target_size": 8,
    "linking_query_size": 16,
    "linking_min_query_posts": 8,
    "linking_target_sizes": (1, 2, 4, 8),
    "linking_target_size": 4,
    "linking_min_subreddit_queries": 5,  # the slice's largest subreddit has 9 distinguished authors
}


def write_author_slice(
    posts_file: Path, folder: Path, *, authors: int, min_posts: int = 40, max_posts: int = 300
) -> Path:
    """Write `folder/posts.jsonl` with all posts of `authors` real authors having min..max posts each."""
    with gzip.open(posts_file, "rt", encoding="utf-8") as handle:
        lines = handle.readlines()
    names = [json.loads(line)["author"] for line in lines]
    counts = Counter(names)
    eligible = sorted(
        (a for a, n in counts.items() if min_posts <= n <= max_posts), key=lambda a: hashlib.sha256(a.encode()).digest()
    )
    chosen = set(eligible[:authors])
    kept = "".join(line for line, name in zip(lines, names, strict=True) if name in chosen)
    (folder / "posts.jsonl").write_text(kept, encoding="utf-8")
    return folder
