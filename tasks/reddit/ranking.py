"""Ranking evaluation (Khan et al. 2021, section 4.2; Andrews & Bishop 2019).

Each eligible test author gives one query and one target sample. Every query ranks all targets;
MRR and R@k of the one target by the same author (ties counted pessimistically, see
harness.metrics.ranking). Two protocols choose the samples from an author's test posts (oldest first):

- leak-free (the default, `build_leak_free_ranking_set`): the query is the author's first
  `query_size` posts. The target is the author's first `target_size` posts that are made more than
  `gap_seconds` after the query's last post AND lie in no thread that a query post is in; posts
  inside the gap or in a query thread are skipped, and later posts are taken instead. An author
  without `target_size` such posts is left out (counted). So every target post is later than every
  query post (by more than the gap), and a query and its target never meet in a thread: a system
  cannot match them by the conversation they share.
- legacy (`build_ranking_set`): query = the first `query_size` posts, target = the next
  `target_size`, contiguous. Consecutive posts often share a thread (about half of the real test
  authors do), so this rewards topic as much as style; kept to reproduce earlier scores.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from core.errors import HarnessError
from core.progress import Progress
from harness.metrics.ranking import ranking_scores
from tasks.forum.records import ForumPost
from tasks.reddit.actions import ActionEncoder
from tasks.reddit.embedding import embed_samples
from tasks.reddit.records import RankingSet, Stream
from toolkit.nearest import first_match_ranks

RANKING_KS = (4, 8)
RANKING_MEASURES = ("mrr", *(f"recall_at_{k}" for k in RANKING_KS))


def build_ranking_set(streams: Sequence[Stream], *, query_size: int, target_size: int) -> tuple[RankingSet, dict]:
    """Query = an author's first `query_size` actions, target = the next `target_size`.

    Authors with fewer than `query_size + target_size` actions are left out (and counted).
    """
    if query_size < 1 or target_size < 1:
        raise ValueError(f"ranking sample sizes must be positive, got {query_size} and {target_size}")
    need = query_size + target_size
    eligible = sorted((s for s in streams if len(s.actions) >= need), key=lambda s: s.author)
    ranking = RankingSet(
        authors=tuple(s.author for s in eligible),
        queries=tuple(s.actions[:query_size] for s in eligible),
        targets=tuple(s.actions[query_size:need] for s in eligible),
    )
    counts = {"authors": len(eligible), "authors_too_few_posts": len(streams) - len(eligible)}
    return ranking, counts


def build_leak_free_ranking_set(
    posts_by_author: Mapping[str, Sequence[ForumPost]],
    encoder: ActionEncoder,
    *,
    query_size: int,
    target_size: int,
    gap_seconds: float,
) -> tuple[RankingSet, dict[str, Any]]:
    """Query = an author's first `query_size` posts; target = the first `target_size` later posts
    past the gap and outside the query's threads (see the module doc). Posts must be oldest first.
    """
    if query_size < 1 or target_size < 1:
        raise ValueError(f"ranking sample sizes must be positive, got {query_size} and {target_size}")
    if gap_seconds < 0:
        raise ValueError(f"the ranking gap must not be negative, got {gap_seconds}")
    authors, queries, targets = [], [], []
    too_few_posts = too_few_clean = skipped_gap = skipped_thread = 0
    for author in sorted(posts_by_author):
        posts = posts_by_author[author]
        if len(posts) < query_size + target_size:
            too_few_posts += 1
            continue
        query = list(posts[:query_size])
        threads = {post.thread_id for post in query}
        start = query[-1].created + gap_seconds
        target: list[ForumPost] = []
        author_gap = author_thread = 0
        for post in posts[query_size:]:
            if len(target) == target_size:
                break
            if post.created <= start:
                author_gap += 1
            elif post.thread_id in threads:
                author_thread += 1
            else:
                target.append(post)
        if len(target) < target_size:
            too_few_clean += 1
            continue
        authors.append(author)
        queries.append(query)
        targets.append(target)
        skipped_gap += author_gap
        skipped_thread += author_thread
    ranking = RankingSet(
        authors=tuple(authors),
        queries=tuple(encoder.actions(q) for q in queries),
        targets=tuple(encoder.actions(t) for t in targets),
        query_post_ids=tuple(tuple(p.post_id for p in q) for q in queries),
        target_post_ids=tuple(tuple(p.post_id for p in t) for t in targets),
    )
    counts = {
        "authors": len(authors),
        "authors_too_few_posts": too_few_posts,
        # enough posts, but too few after the gap and outside the query's threads
        "authors_too_few_clean_target_posts": too_few_clean,
        # over the kept authors: posts passed over before their target was complete
        "target_posts_skipped_in_gap": skipped_gap,
        "target_posts_skipped_same_thread": skipped_thread,
    }
    return ranking, counts


def check_ranking_set(ranking: RankingSet) -> None:
    """A ranking set that cannot be scored: refused right after loading (RedditTask.check_splits), before a fit."""
    if len(ranking.authors) < 2:
        raise HarnessError(
            f"the ranking evaluation needs at least 2 test authors with enough posts, got {len(ranking.authors)}"
        )


def evaluate_ranking(
    system: Any, ranking: RankingSet, *, metric: str, progress: Progress | None = None
) -> tuple[dict[str, float], list[dict]]:
    """MRR, R@4 and R@8, and one detail row per query (its author and first-match rank)."""
    check_ranking_set(ranking)
    queries = embed_samples(system, ranking.queries, progress)
    targets = embed_samples(system, ranking.targets, progress)
    ranks = first_match_ranks(queries, ranking.authors, targets, ranking.authors, metric)  # exact, chunked
    found = ranking_scores(ranks, RANKING_MEASURES)
    scores = {name: found[name] for name in RANKING_MEASURES}
    details = [
        {"evaluation": "ranking", "author": author, "rank": int(rank), "targets": len(ranking.authors)}
        for author, rank in zip(ranking.authors, ranks, strict=True)
    ]
    return scores, details
