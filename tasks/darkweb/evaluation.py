"""Scoring episode embeddings as SYSML and the NBC-Softmax paper do, plus migrant linking.

- Within a market: each query episode ranks every other test episode of its market by similarity
  (the query itself excluded by index, so an identical episode elsewhere still counts); a hit is an
  episode by the same author. MRR and R@1, R@2, R@5, R@10 per market; the headline scores pool the
  queries of all markets (each query weighs the same).
- Migrant linking: for each ordered pair of markets (A, B), each test episode in A by a person who
  also has test episodes in B ranks all of B's test episodes; a hit is an episode of B by the same
  person. Scores per pair, pooled over pairs (`migrant/...`), and pooled over the persons that had
  no CROSS label in training (`migrant_heldout/...`), the migrants a model could not have memorised.

Exact ranking through toolkit.retrieval, with the similarity the system asks for (its `metric`); ties
count against the query. The measures are harness.metrics'.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from harness.metrics.ranking import ranking_scores
from harness.task import Evaluation
from tasks.darkweb.records import Episode
from toolkit.retrieval import rank_of_first_match

KS = (1, 2, 5, 10)
MEASURES = ("mrr", *(f"recall_at_{k}" for k in KS))  # reported per market, migrant pair and pooled


def sample_queries(candidates: np.ndarray, size: int | None, seed: int) -> np.ndarray:
    """A seeded subsample of `size` query indices (all when None or not fewer), in increasing order."""
    if size is None or size >= len(candidates):
        return np.asarray(candidates, dtype=np.int64)
    rng = np.random.default_rng(seed)
    return np.sort(rng.choice(np.asarray(candidates, dtype=np.int64), size=size, replace=False))


def evaluate_embeddings(
    embeddings: Any,
    episodes: Sequence[Episode],
    *,
    metric: str = "cosine",
    query_sample: int | None = None,
    query_seed: int = 0,
    heldout: Callable[[str], bool] = lambda person: True,
) -> Evaluation:
    """Within-market retrieval and migrant linking scores of one embedding row per episode.

    `query_sample` caps the within-market queries (drawn from all markets together) and, separately,
    the queries of each migrant market pair. `heldout(person)` says whether a migrant counts as held out.
    """
    emb = np.asarray(embeddings, dtype=np.float32)
    if emb.ndim != 2 or emb.shape[0] != len(episodes):
        raise ValueError(f"expected one embedding row per episode ({len(episodes)}), got shape {emb.shape}")
    markets = np.array([e.market for e in episodes])
    authors = np.array([e.author for e in episodes])
    persons = np.array([e.person for e in episodes])
    scores: dict[str, float] = {}
    details: list[dict[str, Any]] = []

    queries = set(sample_queries(np.arange(len(episodes)), query_sample, query_seed).tolist())
    pooled: list[np.ndarray] = []
    for market in sorted(set(markets.tolist())):
        items = np.flatnonzero(markets == market)
        chosen = np.array([i for i in items if i in queries], dtype=np.int64)
        if chosen.size == 0:
            continue
        position = {int(item): k for k, item in enumerate(items)}
        ranks = rank_of_first_match(
            emb[chosen],
            authors[chosen],
            emb[items],
            authors[items],
            metric=metric,
            query_item_index=[position[int(q)] for q in chosen],
        )
        pooled.append(ranks)
        _add_scores(scores, f"{market}/", ranks)
        details += [_row(episodes[q], int(r), "within") for q, r in zip(chosen, ranks, strict=True)]
    if not pooled or not np.any(np.concatenate(pooled) > 0):
        raise ValueError("no query episode has another episode by its author: nothing to evaluate")
    _add_scores(scores, "", np.concatenate(pooled))

    migrant, kept = [], []
    for source in sorted(set(markets.tolist())):
        for target in sorted(set(markets.tolist())):
            if source == target:
                continue
            shared = set(persons[markets == source].tolist()) & set(persons[markets == target].tolist())
            if not shared:
                continue
            candidates = np.flatnonzero((markets == source) & np.isin(persons, sorted(shared)))
            chosen = sample_queries(candidates, query_sample, query_seed)
            items = np.flatnonzero(markets == target)
            ranks = rank_of_first_match(emb[chosen], persons[chosen], emb[items], persons[items], metric=metric)
            _add_scores(scores, f"migrant/{source}->{target}/", ranks)
            scores[f"migrant/{source}->{target}/persons"] = float(len(shared))
            held = np.array([heldout(p) for p in persons[chosen]], dtype=bool)
            migrant.append(ranks)
            kept.append(ranks[held])
            label = f"migrant {source}->{target}"
            details += [_row(episodes[q], int(r), label) for q, r in zip(chosen, ranks, strict=True)]
    if migrant:
        _add_scores(scores, "migrant/", np.concatenate(migrant))
        if np.concatenate(kept).size:
            _add_scores(scores, "migrant_heldout/", np.concatenate(kept))
    return Evaluation(scores=scores, details=details, settings={"metric": metric, "ks": list(KS)})


def _add_scores(scores: dict[str, float], prefix: str, ranks: np.ndarray) -> None:
    """MRR and R@k under `prefix`; only the query counts where no query has a match (e.g. one episode each)."""
    if not np.any(ranks > 0):
        scores[prefix + "queries"] = 0.0
        scores[prefix + "queries_without_match"] = float(ranks.size)
        return
    for name, value in ranking_scores(ranks, MEASURES).items():
        scores[prefix + name] = value


def _row(episode: Episode, rank: int, kind: str) -> dict[str, Any]:
    return {"query": episode.id, "author": episode.author, "market": episode.market, "set": kind, "rank": rank}
