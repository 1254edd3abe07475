"""Linking evaluation (Khan et al. 2021, section 4.3), adapted to a split's test period.

The test period is cut again at a time T2 (a quantile of the test posts' times):

- distinguished authors: test authors with at least `min_query_posts` posts before T2 (their
  history) and at least max(target_sizes) posts from T2 on; the query is the most recent
  `query_size` posts of the history (all of it when shorter);
- target accounts: the distinguished authors and every other test author with at least
  max(target_sizes) posts from T2 on; a target of size k is the account's k most recent posts.

Every query is scored against every target of a size (a trial; same author = target trial).
EER and minDCF at each size give the EER-against-target-size curve. With `subreddit` set, only that
subreddit's posts count, for history and targets alike (the paper's topic control).

With `exclude_query_threads` (the leak-free protocol), a distinguished author's posts from T2 on
that lie in a thread one of their query posts is in are dropped before the rule above is applied:
their own target never shares a thread with their query (an author left without enough posts is
no longer distinguished, and is counted).

Per subreddit, as the paper reports (section 4.3: "the average over the five subreddits"):
`build_subreddit_linking_sets` builds one set per subreddit of a list (the task passes the most
common training subreddits), each restricted to that subreddit's posts as above; a subreddit with
fewer than `min_queries` distinguished authors is left out (counted, with the reason).
`evaluate_linking_by_subreddit` scores each set on its own and reports the unweighted mean of the
per-subreddit EERs and minDCFs (and of their curves), and each subreddit's figures.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

import numpy as np

from core.errors import HarnessError
from core.progress import Progress
from harness.metrics.linking import det_curve, eer, min_dcf
from harness.metrics.ranking import first_relevant_ranks
from tasks.forum.records import ForumPost, time_order
from tasks.reddit.actions import ActionEncoder
from tasks.reddit.embedding import embed_samples
from tasks.reddit.records import LinkingSet
from tasks.reddit.split import time_cutoff
from toolkit.retrieval import similarity

EER_VARIANT = "interpolated"


def build_linking_set(
    test_posts: Sequence[ForumPost],
    encoder: ActionEncoder,
    *,
    split_quantile: float,
    query_size: int,
    min_query_posts: int,
    target_sizes: Sequence[int],
    subreddit: str | None = None,
    max_queries: int | None = None,
    max_targets: int | None = None,
    seed: int = 0,
    exclude_query_threads: bool = False,
) -> tuple[LinkingSet, dict[str, Any]]:
    """Distinguished authors' histories (queries) and target accounts' newer posts; see the module doc."""
    sizes = sorted(set(target_sizes))
    if not sizes or sizes[0] < 1:
        raise ValueError(f"target sizes must be positive, got {list(target_sizes)}")
    if query_size < 1 or not 1 <= min_query_posts <= query_size:
        raise ValueError(f"need 1 <= min_query_posts <= query_size, got {min_query_posts} and {query_size}")
    split_time = time_cutoff(test_posts, split_quantile)  # over all test posts: the same T2 for every subreddit
    if subreddit is not None:
        known = sorted({p.subforum for p in test_posts})
        if subreddit not in known:
            raise HarnessError(f"linking_subreddit {subreddit!r} has no test posts; subreddits there: {known}")
        test_posts = [p for p in test_posts if p.subforum == subreddit]
    history: dict[str, list[ForumPost]] = defaultdict(list)
    future: dict[str, list[ForumPost]] = defaultdict(list)
    for post in sorted(test_posts, key=time_order):  # one second's posts by id, not by the file's order
        (history if post.created < split_time else future)[post.author].append(post)

    need = sizes[-1]
    rng = np.random.default_rng(seed)
    with_history = sorted(a for a in history if len(history[a]) >= min_query_posts)
    # a distinguished author's own later posts: all of them, or those outside their query's threads
    own_future = {
        a: _outside_threads(future[a], history[a][-query_size:]) if exclude_query_threads else future[a]
        for a in with_history
    }
    distinguished = [a for a in with_history if len(own_future[a]) >= need]
    distinguished = _at_most(distinguished, max_queries, rng)
    chosen = set(distinguished)
    others = sorted(a for a in future if a not in chosen and len(future[a]) >= need)
    if max_targets is not None:
        others = _at_most(others, max(0, max_targets - len(distinguished)), rng)
    accounts = distinguished + others
    queries = [history[a][-query_size:] for a in distinguished]
    targets = {k: [(own_future[a] if a in chosen else future[a])[-k:] for a in accounts] for k in sizes}
    linking = LinkingSet(
        query_authors=tuple(distinguished),
        queries=tuple(encoder.actions(q) for q in queries),
        target_authors=tuple(accounts),
        targets={k: tuple(encoder.actions(t) for t in targets[k]) for k in sizes},
        subreddit=subreddit,
        query_post_ids=tuple(tuple(p.post_id for p in q) for q in queries),
        target_post_ids={k: tuple(tuple(p.post_id for p in t) for t in targets[k]) for k in sizes},
    )
    counts = {
        "split_time": split_time,
        "split_time_utc": datetime.fromtimestamp(split_time, tz=timezone.utc).isoformat(timespec="seconds"),
        "subreddit": subreddit,
        "queries": len(distinguished),
        "target_accounts": len(accounts),
        "trials_per_size": len(distinguished) * len(accounts),
        "authors_with_history_but_too_few_later_posts": sum(
            1 for a in history if len(history[a]) >= min_query_posts and len(future[a]) < need
        ),
        "authors_with_too_few_later_posts": sum(1 for a in future if len(future[a]) < need),
    }
    if exclude_query_threads:
        counts["authors_with_too_few_later_posts_outside_query_threads"] = sum(
            1 for a in with_history if len(future[a]) >= need > len(own_future[a])
        )
    return linking, counts


def _outside_threads(posts: list[ForumPost], query: list[ForumPost]) -> list[ForumPost]:
    """`posts` without those in a thread that a post of `query` is in."""
    threads = {post.thread_id for post in query}
    return [post for post in posts if post.thread_id not in threads]


def build_subreddit_linking_sets(
    test_posts: Sequence[ForumPost],
    encoder: ActionEncoder,
    *,
    subreddits: Sequence[str],
    min_queries: int,
    **settings: Any,
) -> tuple[dict[str, LinkingSet], dict[str, Any]]:
    """One linking set per subreddit with at least `min_queries` distinguished authors (see the module doc).

    `settings` are `build_linking_set`'s keywords other than `subreddit`. Counts: each subreddit's
    set counts, and the subreddits left out with the reason.
    """
    if min_queries < 1:
        raise ValueError(f"min_queries must be positive, got {min_queries}")
    present = {post.subforum for post in test_posts}
    sets: dict[str, LinkingSet] = {}
    counts: dict[str, Any] = {"subreddits": {}, "left_out": {}}
    for name in subreddits:
        if name not in present:
            counts["left_out"][name] = "no test posts"
            continue
        linking, set_counts = build_linking_set(test_posts, encoder, subreddit=name, **settings)
        counts["subreddits"][name] = set_counts
        if len(linking.query_authors) < min_queries or len(linking.target_authors) < 2:
            counts["left_out"][name] = (
                f"{len(linking.query_authors)} distinguished authors (fewer than {min_queries}) and "
                f"{len(linking.target_authors)} target accounts"
            )
            continue
        sets[name] = linking
    counts["averaged"] = list(sets)
    return sets, counts


def _at_most(authors: list[str], cap: int | None, rng: np.random.Generator) -> list[str]:
    """A seeded random subset of at most `cap` names, kept in name order."""
    if cap is None or len(authors) <= cap:
        return authors
    keep = rng.choice(len(authors), size=cap, replace=False)
    return [authors[i] for i in sorted(keep)]


def staircase(p_fa: np.ndarray, p_miss: np.ndarray) -> tuple[list[float], list[float]]:
    """The corners of a DET/ROC curve: the ends of each run of equal p_miss (the curve is exact from them)."""
    n = len(p_miss)
    keep = np.zeros(n, dtype=bool)
    keep[0] = keep[-1] = True
    changes = np.flatnonzero(p_miss[1:] != p_miss[:-1])
    keep[changes] = True
    keep[changes + 1] = True
    return p_fa[keep].tolist(), p_miss[keep].tolist()


def check_linking_set(linking: LinkingSet, main_target_size: int) -> None:
    """A linking set that cannot be scored: refused right after loading (RedditTask.check_splits), before a fit."""
    if main_target_size not in linking.targets:
        raise HarnessError(f"target size {main_target_size} is not among {sorted(linking.targets)}")
    if not linking.query_authors or len(linking.target_authors) < 2:
        raise HarnessError(
            f"the linking evaluation needs distinguished authors and at least 2 target accounts, got "
            f"{len(linking.query_authors)} and {len(linking.target_authors)}; lower linking_min_query_posts "
            "or the target sizes"
        )


def evaluate_linking(
    system: Any,
    linking: LinkingSet,
    *,
    metric: str,
    main_target_size: int,
    p_target: float,
    c_miss: float,
    c_fa: float,
    normalized: bool,
    progress: Progress | None = None,
) -> tuple[dict[str, float], list[dict], dict[str, Any]]:
    """EER and minDCF at the main target size, the curve over all sizes, DET points, one row per (query, size)."""
    check_linking_set(linking, main_target_size)
    queries = embed_samples(system, linking.queries, progress)
    query_authors = np.asarray(linking.query_authors)
    target_authors = np.asarray(linking.target_authors)
    labels = query_authors[:, None] == target_authors[None, :]
    sizes = sorted(linking.targets)
    eers, dcfs, det = [], [], {}
    details: list[dict] = []
    for size in sizes:
        targets = embed_samples(system, linking.targets[size], progress)
        scores = similarity(queries, targets, metric=metric).astype(np.float64)
        eers.append(eer(scores.ravel(), labels.ravel(), variant=EER_VARIANT))
        dcfs.append(
            min_dcf(scores.ravel(), labels.ravel(), p_target=p_target, c_miss=c_miss, c_fa=c_fa, normalized=normalized)
        )
        _, p_fa, p_miss = det_curve(scores.ravel(), labels.ravel())
        fa, miss = staircase(p_fa, p_miss)
        det[str(size)] = {"p_fa": fa, "p_miss": miss}
        ranks = first_relevant_ranks(scores, labels)  # every query's own account is among the targets
        for i, author in enumerate(linking.query_authors):
            details.append(
                {
                    "evaluation": "linking",
                    "query": author,
                    "target_size": size,
                    "true_score": float(scores[i][labels[i]].max()),
                    "true_rank": int(ranks[i]),
                    "targets": len(linking.target_authors),
                }
            )
    main = sizes.index(main_target_size)
    scores_out = {"eer": eers[main], "min_dcf": dcfs[main]}
    curves = {
        "main_target_size": main_target_size,
        "eer_vs_target_size": {"target_sizes": sizes, "eer": eers, "min_dcf": dcfs},
        "det": det,
    }
    return scores_out, details, curves


def evaluate_linking_by_subreddit(
    system: Any, sets: Mapping[str, LinkingSet], *, progress: Progress | None = None, **settings: Any
) -> tuple[dict[str, float], list[dict], dict[str, Any]]:
    """Each subreddit's set scored on its own (`evaluate_linking`, with `settings`), and the mean over subreddits.

    Scores: `eer` and `min_dcf` = the unweighted mean of the per-subreddit figures (the paper's
    reported numbers), and `eer@<subreddit>`, `min_dcf@<subreddit>` for each subreddit. Curves: the
    mean EER and minDCF at each target size, and each subreddit's own curve. Detail rows name their
    subreddit under `linking_set`.
    """
    if not sets:
        raise HarnessError("no subreddit has a linking set to average over")
    per_scores: dict[str, dict[str, float]] = {}
    per_curves: dict[str, dict[str, Any]] = {}
    details: list[dict] = []
    for name, linking in sets.items():
        scores, rows, curves = evaluate_linking(system, linking, progress=progress, **settings)
        per_scores[name] = scores
        per_curves[name] = curves["eer_vs_target_size"]
        details.extend({**row, "linking_set": name} for row in rows)
    out = {
        "eer": float(np.mean([s["eer"] for s in per_scores.values()])),
        "min_dcf": float(np.mean([s["min_dcf"] for s in per_scores.values()])),
    }
    for name, scores in per_scores.items():
        out[f"eer@{name}"] = scores["eer"]
        out[f"min_dcf@{name}"] = scores["min_dcf"]
    sizes = next(iter(per_curves.values()))["target_sizes"]
    curves = {
        "main_target_size": settings["main_target_size"],
        "eer_vs_target_size": {
            "target_sizes": sizes,
            "eer": np.mean([c["eer"] for c in per_curves.values()], axis=0).tolist(),
            "min_dcf": np.mean([c["min_dcf"] for c in per_curves.values()], axis=0).tolist(),
        },
        "by_subreddit": per_curves,
    }
    return out, details, curves
