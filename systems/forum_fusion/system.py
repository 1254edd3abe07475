"""`episode_fusion` (darkweb) and `reddit_fusion` (reddit): a learned fusion of a sample's views.

A sample's embedding is the concatenation of its views (views.py), each a unit vector scaled by the
square root of its learned weight, so the dot product of two embeddings is sum_v w_v cos_v: a
weighted sum of the word TF-IDF cosine (the baselines' score), a character n-gram TF-IDF cosine,
and the cosines of where (sub-forum, subreddit) and when (day, hour) the author posts. The embeddings
all have the same norm (unless a sample lacks a whole view), so ranking them by cosine ranks by that sum.

The weights are learned on the training split only (weights.py), from training queries built as the
task's leak-free protocol builds its test queries:
- darkweb: a training episode ranks the other training episodes of its market; its author's episodes
  that share a thread with it are left out (the thread-disjoint rule);
- reddit: a training author's first posts (a query) rank every sampled author's last posts (targets),
  query and target disjoint and apart in time.
`training_queries` of them are drawn with the seed; the fit itself is deterministic.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from functools import partialmethod
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
from scipy import sparse

from core.errors import HarnessError
from harness.system import constructor_params
from systems.forum_fusion.views import VIEWS, SampleParts, SampleViews, ViewSettings
from systems.forum_fusion.weights import RankingList, fit_view_weights
from tasks.darkweb.records import DarkwebData, Episode
from tasks.reddit.records import Action, RedditData
from toolkit.checkpoint import load_checkpoint, save_checkpoint

log = logging.getLogger(__name__)


class ForumFusion:
    """Base of the two variants: they differ in how a post is read and how training queries are drawn.

    Parameters: views (which of word, char, community, time; a list or comma-separated), word_features
    and char_features (TF-IDF columns kept, by training frequency), char_max_ngram (character
    1..n-grams), training_queries (training queries the weights are fitted on).
    """

    name: ClassVar[str]
    metric: ClassVar[str] = "cosine"
    time_bins: ClassVar[int]

    def __init__(
        self,
        *,
        views: Sequence[str] | str = VIEWS,
        word_features: int = 20000,
        char_features: int = 20000,
        char_max_ngram: int = 3,
        training_queries: int = 2400,
    ) -> None:
        chosen = tuple(v.strip() for v in views.split(",")) if isinstance(views, str) else tuple(views)
        unknown = [v for v in chosen if v not in VIEWS]
        if not chosen or unknown or len(set(chosen)) != len(chosen):
            raise HarnessError(f"views must be distinct names among {VIEWS}, got {views!r}")
        if min(word_features, char_features, char_max_ngram, training_queries) < 1:
            raise HarnessError("word_features, char_features, char_max_ngram and training_queries must be positive")
        self.views = chosen
        self.word_features = int(word_features)
        self.char_features = int(char_features)
        self.char_max_ngram = int(char_max_ngram)
        self.training_queries = int(training_queries)
        self._views: SampleViews | None = None
        self._weights: np.ndarray | None = None  # one per entry of self.views

    def params(self) -> dict[str, Any]:
        return {**constructor_params(self), "views": list(self.views)}

    @property
    def weights(self) -> dict[str, float]:
        """The learned weight of each view (empty before fitting)."""
        if self._weights is None:
            return {}
        return {view: float(w) for view, w in zip(self.views, self._weights, strict=True)}

    # -- the two things a variant says ----------------------------------------------------------------

    def parts(self, sample: Any) -> SampleParts:
        """Texts, communities and time bins of a sample's posts."""
        raise NotImplementedError

    def training_data(
        self, train: Any, rng: np.random.Generator
    ) -> tuple[list[SampleParts], list[SampleParts], list[tuple[int, np.ndarray, np.ndarray]]]:
        """(view-fitting documents as samples, training samples, lists of (query row, candidate rows,
        positive mask)) over the training samples."""
        raise NotImplementedError

    # -- fitting and embedding ---------------------------------------------------------------------------

    def fit(self, train: Any, *, seed: int) -> None:
        rng = np.random.default_rng(seed)
        documents, samples, lists = self.training_data(train, rng)
        settings = ViewSettings(self.word_features, self.char_features, self.char_max_ngram, self.time_bins)
        try:
            self._views = SampleViews.fit(
                ["\n".join(d.texts) for d in documents], [c for d in documents for c in d.communities], settings
            )
        except HarnessError as error:
            raise HarnessError(f"{self.name}: {error}") from error
        rows = self._view_rows(samples)
        # each query's cosines to every sample, one view at a time (sparse products: the TF-IDF views are wide)
        queries = sorted({query for query, _, _ in lists})
        position = {query: k for k, query in enumerate(queries)}
        cosines = [_dense(rows[v][queries] @ rows[v].T) for v in self.views]
        ranking_lists = [
            RankingList(
                np.stack([c[position[query], candidates] for c in cosines], axis=1).astype(np.float64), positive
            )
            for query, candidates, positive in lists
        ]
        try:
            self._weights = fit_view_weights(ranking_lists, len(self.views))
        except ValueError as error:
            raise HarnessError(f"{self.name}: {error}") from error
        log.info("%s: %d training queries; view weights %s", self.name, len(ranking_lists), self.weights)

    def embed(self, samples: Sequence[Any]) -> np.ndarray:
        """Weighted, concatenated unit views (float32); views of weight 0 are left out."""
        if self._views is None or self._weights is None:
            raise HarnessError(f"{self.name}: not fitted; call fit() or load() first")
        rows = self._view_rows([self.parts(sample) for sample in samples])
        blocks = [
            np.sqrt(w, dtype=np.float32) * _dense(rows[v])
            for v, w in zip(self.views, self._weights, strict=True)
            if w > 0
        ]
        if not blocks:  # every weight 0: nothing tells samples apart
            return np.zeros((len(samples), 1), dtype=np.float32)
        return np.concatenate(blocks, axis=1)

    def _view_rows(self, samples: Sequence[SampleParts]) -> dict[str, Any]:
        assert self._views is not None
        return self._views.transform(samples)

    # -- checkpoints ----------------------------------------------------------------------------------------

    def save(self, directory: Path) -> None:
        if self._views is None or self._weights is None:
            raise HarnessError(f"{self.name}: not fitted; nothing to save")
        state, arrays = self._views.state()
        save_checkpoint(
            directory, system=self.name, params=self.params(), state=state, arrays={**arrays, "weights": self._weights}
        )

    @classmethod
    def load(cls, directory: Path) -> ForumFusion:
        params, state, arrays = load_checkpoint(directory, system=cls.name)
        try:
            system = cls(**params)
            weights = np.asarray(arrays["weights"], dtype=np.float64)
        except (KeyError, TypeError, ValueError) as error:
            raise HarnessError(f"{directory}: malformed {cls.name} checkpoint ({error!r})") from error
        if weights.shape != (len(system.views),) or not np.all(np.isfinite(weights)) or np.any(weights < 0):
            raise HarnessError(
                f"{directory}: {cls.name} needs {len(system.views)} finite weights >= 0, got {weights!r}"
            )
        system._views = SampleViews.from_state(state, arrays, char_max_ngram=system.char_max_ngram, where=directory)
        system._weights = weights
        return system


class EpisodeFusion(ForumFusion):
    """`episode_fusion` (darkweb): views of an episode; community = sub-forum, time = day of week."""

    name: ClassVar[str] = "episode_fusion"
    time_bins: ClassVar[int] = 7

    __init__ = partialmethod(ForumFusion.__init__, word_features=10000)  # episode_tfidf's vocabulary size

    def parts(self, sample: Episode) -> SampleParts:
        posts = sample.posts
        return SampleParts(
            tuple(p.text for p in posts),
            tuple(f"{sample.market}/{p.subforum}" for p in posts),
            tuple(p.weekday for p in posts),
        )

    def training_data(self, train: DarkwebData, rng: np.random.Generator):  # type: ignore[override]
        episodes = train.episodes
        samples = [self.parts(e) for e in episodes]
        markets = np.array([e.market for e in episodes])
        authors = np.array([e.author for e in episodes])
        threads = [frozenset(p.thread_id for p in e.posts if p.thread_id) for e in episodes]
        lists = []
        per_market = max(1, self.training_queries // max(1, len(set(markets.tolist()))))
        for market in sorted(set(markets.tolist())):
            items = np.flatnonzero(markets == market)
            for query in np.sort(rng.choice(items, size=min(per_market, len(items)), replace=False)):
                same = authors[items] == authors[query]
                # the thread-disjoint rule: the query itself and its author's episodes in its threads are no candidates
                keep = np.array(
                    [not (s and bool(threads[i] & threads[query])) for i, s in zip(items, same, strict=True)]
                )
                keep &= items != query
                lists.append((int(query), items[keep], same[keep]))
        return samples, samples, lists


class RedditFusion(ForumFusion):
    """`reddit_fusion` (reddit): views of a run of posts; community = subreddit, time = hour of day.

    Training queries: each sampled training author with at least `2 x min_sample_posts` posts gives a
    query (its first half, at most `sample_posts`) and a target (its last half, as many); every query
    ranks all targets. The vocabulary is fitted on single training posts, as reddit_tfidf's.
    """

    name: ClassVar[str] = "reddit_fusion"
    time_bins: ClassVar[int] = 24
    sample_posts: ClassVar[int] = 16  # the ranking samples' size
    min_sample_posts: ClassVar[int] = 2

    def parts(self, sample: Sequence[Action]) -> SampleParts:
        return SampleParts(
            tuple(a.text for a in sample), tuple(str(a.subreddit) for a in sample), tuple(a.hour for a in sample)
        )

    def training_data(self, train: RedditData, rng: np.random.Generator):  # type: ignore[override]
        documents = [self.parts((action,)) for stream in train.streams for action in stream.actions]
        eligible = [s for s in train.streams if len(s.actions) >= 2 * self.min_sample_posts]
        chosen = rng.choice(len(eligible), size=min(self.training_queries, len(eligible)), replace=False)
        queries, targets = [], []
        for index in np.sort(chosen):
            actions = eligible[index].actions
            half = min(len(actions) // 2, self.sample_posts)
            queries.append(self.parts(actions[:half]))
            targets.append(self.parts(actions[-half:]))
        samples = queries + targets
        n = len(queries)
        lists = [(q, np.arange(n, 2 * n), np.arange(n) == q) for q in range(n)]
        return documents, samples, lists


def _dense(matrix: Any) -> np.ndarray:
    """A float32 array of a sparse or dense matrix."""
    return np.asarray(matrix.toarray() if sparse.issparse(matrix) else matrix, dtype=np.float32)
