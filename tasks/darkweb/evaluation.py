"""Scoring episode embeddings as SYSML and the NBC-Softmax paper do, plus migrant linking.

- Within a market: each query episode ranks every other test episode of its market by similarity
  (the query itself excluded by index, so an identical episode elsewhere still counts); a hit is an
  episode by the same author. MRR and R@1, R@2, R@5, R@10 per market; the headline scores pool the
  queries of all markets (each query weighs the same).
- Migrant linking: for each ordered pair of markets (A, B), each test episode in A by a person who
  also has test episodes in B ranks all of B's test episodes; a hit is an episode of B by the same
  person. Scores per pair, pooled over pairs (`migrant/...`), and pooled over the migrants that
  training did not link (`migrant_heldout/...`, decided by the caller's `heldout`), the migrants a
  model could not have memorised.

Protocols (`protocol`, recorded in the evaluation's settings):
- "thread-disjoint" (the default): a query's same-author candidates (same-person, for migrants) that
  post in a thread the query posts in are removed from that query's candidates, neither ranked nor
  counted as hits; candidates by others stay, same thread or not. Threads are keyed by (market,
  thread id) and an episode posts in the threads of its posts; a post without a thread id ("")
  shares no thread. Without the rule, 12,733 of the 22,131 queries of ../shared/data/forum-posts
  (54-60% per market) have a same-author candidate in one of their threads, which rewards a
  thread's topic rather than the author's style. Threads belong to one market (in that file no
  thread id occurs in two markets), so for migrant linking (query and candidates in different
  markets) the rule removes nothing; it is applied all the same and its count recorded.
- "legacy": SYSML's protocol as this harness ran it before (every other episode is a candidate);
  its scores are those of earlier results, unchanged.

Queries without a match: a query with no candidate by its author (an author with one episode; under
"thread-disjoint", also one whose every other episode shares a thread with it) has no first-match
rank. As everywhere in harness.metrics.ranking, it is left out of the means, not scored as 0: each
score set records `queries` (scored) and `queries_without_match` (left out). Under
"thread-disjoint" it also records `queries_only_same_thread` (of those left out, the queries that
lost their every match to the rule), `queries_with_same_thread_positive` (queries that lost at
least one) and `same_thread_candidates_removed` (query-candidate pairs removed). So the two
protocols score different sets of queries: thread-disjoint keeps the queries whose author has an
episode outside the query's threads.

Exact ranking through toolkit.nearest (chunked; on a GPU for large markets), with the similarity the
system asks for (its `metric`); ties count against the query. The measures are harness.metrics'.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from scipy import sparse

from core.progress import Progress
from harness.metrics.ranking import ranking_scores
from harness.task import Evaluation
from tasks.darkweb.records import Episode
from toolkit.nearest import first_match_ranks

KS = (1, 2, 5, 10)
MEASURES = ("mrr", *(f"recall_at_{k}" for k in KS))  # reported per market, migrant pair and pooled
PROTOCOLS = ("thread-disjoint", "legacy")
DEFAULT_PROTOCOL = "thread-disjoint"


def sample_queries(candidates: np.ndarray, size: int | None, seed: int) -> np.ndarray:
    """A seeded subsample of `size` query indices (all when None or not fewer), in increasing order."""
    if size is None or size >= len(candidates):
        return np.asarray(candidates, dtype=np.int64)
    rng = np.random.default_rng(seed)
    return np.sort(rng.choice(np.asarray(candidates, dtype=np.int64), size=size, replace=False))


def episode_threads(episodes: Sequence[Episode]) -> sparse.csr_matrix:
    """The (episodes x threads) 0/1 matrix of the threads each episode posts in, threads keyed by (market, id)."""
    column: dict[tuple[str, str], int] = {}
    rows, cols = [], []
    for row, episode in enumerate(episodes):
        for thread in sorted({post.thread_id for post in episode.posts if post.thread_id}):
            rows.append(row)
            cols.append(column.setdefault((episode.market, thread), len(column)))
    data = np.ones(len(rows), dtype=np.int32)
    return sparse.csr_matrix((data, (rows, cols)), shape=(len(episodes), max(len(column), 1)))


def evaluate_embeddings(
    embeddings: Any,
    episodes: Sequence[Episode],
    *,
    metric: str = "cosine",
    query_sample: int | None = None,
    query_seed: int = 0,
    protocol: str = DEFAULT_PROTOCOL,
    heldout: Callable[[str, str, str], bool] = lambda person, source, target: True,
) -> Evaluation:
    """Within-market retrieval and migrant linking scores of one embedding row per episode.

    `query_sample` caps the within-market queries (drawn from all markets together) and, separately,
    the queries of each migrant market pair. `heldout(person, source, target)` says whether a migrant
    from market `source` to `target` counts as held out. `protocol` is one of PROTOCOLS (module doc).
    """
    if protocol not in PROTOCOLS:
        raise ValueError(f"protocol must be one of {PROTOCOLS}, not {protocol!r}")
    emb = np.asarray(embeddings, dtype=np.float32)
    if emb.ndim != 2 or emb.shape[0] != len(episodes):
        raise ValueError(f"expected one embedding row per episode ({len(episodes)}), got shape {emb.shape}")
    markets = np.array([e.market for e in episodes])
    authors = np.array([e.author for e in episodes])
    persons = np.array([e.person for e in episodes])
    threads = episode_threads(episodes) if protocol == "thread-disjoint" else None
    scores: dict[str, float] = {}
    details: list[dict[str, Any]] = []

    queries = set(sample_queries(np.arange(len(episodes)), query_sample, query_seed).tolist())
    pooled: list[np.ndarray] = []
    pooled_rule = np.zeros(3, dtype=np.int64)
    within = Progress(len(queries), desc="darkweb: ranking within markets", unit="queries")
    for market in sorted(set(markets.tolist())):
        items = np.flatnonzero(markets == market)
        chosen = np.array([i for i in items if i in queries], dtype=np.int64)
        if chosen.size == 0:
            continue
        if threads is None:
            position = {int(item): k for k, item in enumerate(items)}
            ranks = first_match_ranks(
                emb[chosen],
                authors[chosen],
                emb[items],
                authors[items],
                metric,
                exclude=[position[int(q)] for q in chosen],
            )
            within.update(len(chosen))
        else:
            ranks, rule = _thread_disjoint_ranks(emb, chosen, items, authors, threads, metric=metric, progress=within)
            _add_rule_counts(scores, f"{market}/", rule)
            pooled_rule += rule
        pooled.append(ranks)
        _add_scores(scores, f"{market}/", ranks)
        details += [_row(episodes[q], int(r), "within") for q, r in zip(chosen, ranks, strict=True)]
    within.close()
    if not pooled or not np.any(np.concatenate(pooled) > 0):
        raise ValueError(
            "no query episode has another episode by its author"
            + (" outside its threads" if threads is not None else "")
            + ": nothing to evaluate"
        )
    _add_scores(scores, "", np.concatenate(pooled))
    if threads is not None:
        _add_rule_counts(scores, "", pooled_rule)

    migrant, kept = [], []
    migrant_rule = np.zeros(3, dtype=np.int64)
    linking = Progress(desc="darkweb: migrant linking", unit="queries")  # the pairs' sizes are found on the way
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
            if threads is None:
                ranks = first_match_ranks(emb[chosen], persons[chosen], emb[items], persons[items], metric)
                linking.update(len(chosen))
            else:
                ranks, rule = _thread_disjoint_ranks(
                    emb, chosen, items, persons, threads, metric=metric, progress=linking
                )
                migrant_rule += rule
            _add_scores(scores, f"migrant/{source}->{target}/", ranks)
            scores[f"migrant/{source}->{target}/persons"] = float(len(shared))
            held = np.array([heldout(p, source, target) for p in persons[chosen]], dtype=bool)
            migrant.append(ranks)
            kept.append(ranks[held])
            label = f"migrant {source}->{target}"
            details += [_row(episodes[q], int(r), label) for q, r in zip(chosen, ranks, strict=True)]
    linking.close()
    if migrant:
        _add_scores(scores, "migrant/", np.concatenate(migrant))
        if threads is not None:
            _add_rule_counts(scores, "migrant/", migrant_rule)
        if np.concatenate(kept).size:
            _add_scores(scores, "migrant_heldout/", np.concatenate(kept))
    settings = {"metric": metric, "ks": list(KS), "protocol": protocol}
    return Evaluation(scores=scores, details=details, settings=settings)


def queries_with_a_match(
    episodes: Sequence[Episode],
    *,
    query_sample: int | None = None,
    query_seed: int = 0,
    protocol: str = DEFAULT_PROTOCOL,
) -> int:
    """How many of the within-market queries `evaluate_embeddings` would rank have a candidate by their author
    (under "thread-disjoint", one outside the query's threads). Needs no embeddings, so a split with none, which
    `evaluate_embeddings` refuses, is found before a system is fitted."""
    markets = np.array([e.market for e in episodes])
    authors = np.array([e.author for e in episodes])
    threads = episode_threads(episodes) if protocol == "thread-disjoint" else None
    queries = set(sample_queries(np.arange(len(episodes)), query_sample, query_seed).tolist())
    found = 0
    for market in sorted(set(markets.tolist())):
        items = np.flatnonzero(markets == market)
        chosen = np.array([i for i in items if i in queries], dtype=np.int64)
        if chosen.size == 0:
            continue
        per_author = Counter(authors[items].tolist())
        others = np.array([per_author[author] for author in authors[chosen].tolist()], dtype=np.int64) - 1
        if threads is not None:
            others -= np.asarray(_same_label_thread_pairs(chosen, items, authors, threads).sum(axis=1)).ravel()
        found += int((others > 0).sum())
    return found


def _thread_disjoint_ranks(
    emb: np.ndarray,
    queries: np.ndarray,
    items: np.ndarray,
    labels: np.ndarray,
    threads: sparse.csr_matrix,
    *,
    metric: str,
    progress: Progress | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """First-match ranks of `queries` among `items` (episode indices, increasing), each query without
    itself and without its same-label items that share a thread with it; and the rule's counts:
    (candidates removed, queries that had a match before the rule and none after, queries that lost
    a candidate). The removed pairs are found without scores, so the ranking runs in chunks."""
    position = np.searchsorted(items, queries)
    is_item = position < len(items)
    is_item[is_item] = items[position[is_item]] == queries[is_item]
    itself = sparse.csr_matrix(
        (np.ones(int(is_item.sum()), dtype=bool), (np.flatnonzero(is_item), position[is_item])),
        shape=(len(queries), len(items)),
    )  # by index, as in the legacy protocol
    same_thread = _same_label_thread_pairs(queries, items, labels, threads)
    ranks = first_match_ranks(
        emb[queries],
        labels[queries],
        emb[items],
        labels[items],
        metric,
        exclude=itself + same_thread,
        progress=None if progress is None else progress.update,
    )
    per_label = Counter(labels[items].tolist())
    others = np.array([per_label[label] for label in labels[queries].tolist()], dtype=np.int64) - is_item
    lost = np.asarray(same_thread.sum(axis=1)).ravel()
    counts = np.array([same_thread.nnz, int(((others > 0) & (others == lost)).sum()), int((lost > 0).sum())])
    return ranks, counts


def _same_label_thread_pairs(
    queries: np.ndarray, items: np.ndarray, labels: np.ndarray, threads: sparse.csr_matrix
) -> sparse.csr_matrix:
    """(queries x items) pairs of different episodes with the same label that share a thread.

    Threads are keyed again by (label, thread), so the product meets only same-label pairs: it
    stays sparse where a large thread would make a (query x item) thread product dense.
    """
    found = threads.tocoo()
    codes = np.unique(labels, return_inverse=True)[1].astype(np.int64)
    keys, column = np.unique(codes[found.row] * threads.shape[1] + found.col, return_inverse=True)
    keyed = sparse.csr_matrix(
        (np.ones(len(column), dtype=np.int32), (found.row, column)), shape=(threads.shape[0], max(len(keys), 1))
    )
    shared = (keyed[queries] @ keyed[items].T).tocoo()
    keep = queries[shared.row] != items[shared.col]
    return sparse.csr_matrix(
        (np.ones(int(keep.sum()), dtype=bool), (shared.row[keep], shared.col[keep])), shape=(len(queries), len(items))
    )


def _add_rule_counts(scores: dict[str, float], prefix: str, counts: np.ndarray) -> None:
    scores[prefix + "same_thread_candidates_removed"] = float(counts[0])
    scores[prefix + "queries_only_same_thread"] = float(counts[1])
    scores[prefix + "queries_with_same_thread_positive"] = float(counts[2])


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
