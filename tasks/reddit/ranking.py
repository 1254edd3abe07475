"""Ranking evaluation (Khan et al. 2021, section 4.2; Andrews & Bishop 2019).

Each eligible test author gives one query and one target: disjoint, contiguous samples of the
author's stream, the query first in time. Every query ranks all targets; MRR and R@k of the one
target by the same author (ties counted pessimistically, see harness.metrics.ranking).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from harness.errors import HarnessError
from harness.metrics.ranking import ranking_scores
from tasks.reddit.embedding import embed_samples
from tasks.reddit.records import RankingSet, Stream
from toolkit.retrieval import rank_of_first_match

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


def evaluate_ranking(system: Any, ranking: RankingSet, *, metric: str) -> tuple[dict[str, float], list[dict]]:
    """MRR, R@4 and R@8, and one detail row per query (its author and first-match rank)."""
    if len(ranking.authors) < 2:
        raise HarnessError(
            f"the ranking evaluation needs at least 2 test authors with enough posts, got {len(ranking.authors)}"
        )
    queries = embed_samples(system, ranking.queries)
    targets = embed_samples(system, ranking.targets)
    ranks = rank_of_first_match(queries, ranking.authors, targets, ranking.authors, metric=metric)
    found = ranking_scores(ranks, RANKING_MEASURES)
    scores = {name: found[name] for name in RANKING_MEASURES}
    details = [
        {"evaluation": "ranking", "author": author, "rank": int(rank), "targets": len(ranking.authors)}
        for author, rank in zip(ranking.authors, ranks, strict=True)
    ]
    return scores, details
