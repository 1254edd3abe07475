"""Small synthetic darkweb splits for tests (and the DDP test's worker): no files, no downloads.

Each author writes in a vocabulary of their own, on one weekday, in a few threads of their market's
sub-forums (each episode in one thread, an author's first 4 episodes in different threads, so the
thread-disjoint protocol removes no candidate at the defaults); persons listed in `migrants` have
accounts in two markets and keep their vocabulary.
"""

from __future__ import annotations

import random
from pathlib import Path

from tasks.darkweb.records import DarkwebData, Episode, EpisodePost
from tasks.forum.records import ForumPost

MARKETS = ("alpha", "beta")
FORUMS = {"alpha": ("drugs", "talk"), "beta": ("market", "offtopic")}


def synthetic_split(
    split: str,
    *,
    authors_per_market: int = 6,
    episodes_per_author: int = 3,
    length: int = 3,
    migrants: int = 2,
    multitask: bool = False,
    seed: int = 0,
) -> DarkwebData:
    """A DarkwebData split over two markets; the first `migrants` persons post in both."""
    rng = random.Random(f"{seed}-{split}")
    episodes: list[Episode] = []
    posts: list[ForumPost] = []
    clock = 1_400_000_000 + (0 if split == "train" else 10_000_000)
    for market in MARKETS:
        for a in range(authors_per_market):
            person = f"p{a}" if a < migrants else f"p{a}-{market}"
            words = [f"w{a}x{k}" for k in range(6)] + ["the", "and", "[LINK]"]
            day = a % 7
            for e in range(episodes_per_author):
                run = []
                for j in range(length):
                    forum = FORUMS[market][(a + j) % 2]
                    thread = f"{market}-t{(a + e) % 4}"
                    text = " ".join(rng.choice(words) for _ in range(rng.randint(4, 12)))
                    clock += 3_600
                    post_id = f"{split}-{market}-{a}-{e}-{j}"
                    posts.append(
                        ForumPost(
                            post_id,
                            person,
                            market,
                            forum,
                            thread,
                            None,
                            "submission" if j == 0 else "comment",
                            clock,
                            text,
                        )
                    )
                    run.append(EpisodePost(text, day, forum, thread))
                episodes.append(Episode(f"{market}/{split}/{person}/{e}", person, market, tuple(run), person, clock))
    linked = frozenset(f"p{a}" for a in range(migrants)) if multitask else frozenset()
    cross = linked if split == "train" else frozenset()  # as the task: CROSS labels in training only
    return DarkwebData(
        split=split,
        episodes=tuple(episodes),
        markets=MARKETS,
        posts=tuple(posts),
        multitask=multitask,
        cross_persons=cross,
        source=Path("synthetic"),
        checksum=f"synthetic-{split}-{seed}",
        cross_accounts=frozenset((person, market) for person in linked for market in MARKETS),
    )


# a tiny EpisodeAuthor, as dotted parameters: `harness.params.build(cls, TINY_PARAMS)` or `--param KEY=VALUE`
TINY_PARAMS = {
    "encoder.vocab_size": 300,
    "encoder.max_tokens": 16,
    "encoder.token_dim": 8,
    "encoder.filters": 4,
    "encoder.text_dim": 8,
    "encoder.time_dim": 4,
    "encoder.context_dim": 4,
    "encoder.output_dim": 8,
    "encoder.layers": 1,
    "encoder.heads": 2,
    "encoder.ff_dim": 16,
    "graph_init.walks_per_node": 1,
    "training.epochs": 2,
    "training.batch_size": 8,
    "device": "cpu",
}
