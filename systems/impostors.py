"""General Impostors (GI): is the unknown text closer to the known text than to texts of other authors?

Koppel, M. & Winter, Y. (2014). Determining if two documents are written by the same author. Journal of
the Association for Information Science and Technology 65(1), 178-187. Seidman, S. (2013). Authorship
verification using the impostors method. Notebook for PAN at CLEF 2013 (the PAN 2013 winner).

For a pair (X, Y) and a set of impostor texts, each of `iterations` rounds draws a random share of the
features and a random handful of impostors; the round is a hit when X is more similar to Y than to
every drawn impostor. The score of X against Y is the share of hits; the pair's score averages the two
directions (X against Y's impostors, Y against X's), as Koppel & Winter do. Several known texts, as in
Seidman's PAN variant: each known text is paired with the unknown text and the pair scores averaged.
The score needs no training; it is a share in [0, 1] that goes through the abstain band of
`toolkit.calibration` (the only part fitted on labels).

Defaults follow the papers where we could take them (the papers are not in ../shared/papers: the
numbers are as we read Koppel & Winter 2014 and Seidman 2013, to be checked against them): 100
iterations, half the features per iteration, character 4-grams (Koppel & Winter used space-free
character 4-grams; here all character 4-grams of the text, case kept) weighted by TF-IDF, the min-max
similarity, impostors chosen among the texts most similar to the text they stand in for (`candidates`,
250), `impostors` (25) of those drawn at random each iteration, a hit when the pair beats every drawn
impostor (`rank` 1; `rank` N is the top-N relaxation). Ours, not the papers': the impostor universe is
the OTHER texts of the training corpus (the papers drew impostors from the web or a large external
corpus); the vocabulary is capped at the 10,000 most frequent 4-grams of the training texts (CPU cost).
On PAN14 essays' training problems (cross-fitted, seed 0) min-max gave AUC 0.631 and cosine 0.517.

What is out of fold (calibration): the band is fit on cross-fitted scores (`toolkit.calibration.
cross_fitted_scores`): each training problem is scored with a vocabulary, idf and impostor pool built
from the OTHER folds only. Where the corpus has enough text-connected groups (PAN14 essays, PAN15,
PAN13) folds are whole groups, so neither the problem's texts nor any text of its group is in the pool
or the vocabulary that scores it. Where the corpus is one connected group (PAN14 novels), the folds
drop from the pool every problem that shares a text with the held-out part: the problem's own texts
are still out, but other texts linked to it through a chain of problems (likely the same author) may
be impostors, which makes those scores pessimistic. Nothing else is fitted: GI has no learned weights.
At prediction time the pool is every training text except the problem's own texts and every text of
their training group (falling back to leaving out only the problem's own texts when that would leave
fewer than `impostors`), mirroring the text-disjoint folds.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, NamedTuple

import numpy as np
from scipy import sparse

from core.errors import HarnessError
from core.progress import pbar
from core.records import VerificationData, VerificationProblem
from toolkit.calibration import fit_then_score
from toolkit.checkpoint import check_tfidf_state
from toolkit.splits import problem_groups, text_key
from toolkit.tfidf import TfidfModel
from toolkit.verifier import CalibratedVerifier

SIMILARITIES = ("minmax", "cosine")


def impostor_score(target: np.ndarray, impostors: np.ndarray, *, rank: int = 1) -> float:
    """The share of iterations in which fewer than `rank` impostors are at least as similar as the target.

    `target[k]` is the similarity of the pair in iteration k, `impostors[j, k]` that of impostor j (the
    impostors drawn in iteration k). With `rank` 1 a hit needs the pair strictly more similar than every
    impostor (a tie is a miss); with no impostors every iteration is a hit.
    """
    target = np.asarray(target, dtype=np.float64)
    impostors = np.asarray(impostors, dtype=np.float64).reshape(-1, target.shape[0])
    if target.ndim != 1 or target.size == 0:
        raise ValueError(f"need the target's similarity in at least one iteration, got shape {target.shape}")
    if rank < 1:
        raise ValueError(f"rank must be positive, got {rank!r}")
    at_least_as_close = (impostors >= target[None, :]).sum(axis=0)
    return float(np.mean(at_least_as_close < rank))


def masked_similarities(query: np.ndarray, candidates: np.ndarray, masks: np.ndarray, similarity: str) -> np.ndarray:
    """Similarity of `query` (V,) to each row of `candidates` (n, V) on each feature subset, (n, K).

    `masks` (V, K) holds 1 for the features of subset k. min-max: sum of minima over sum of maxima of the
    kept features (Koppel & Winter's measure); cosine: the cosine of the kept features. 0 where undefined.
    """
    if similarity == "minmax":
        numerator = np.minimum(candidates, query[None, :]) @ masks
        denominator = np.maximum(candidates, query[None, :]) @ masks
    elif similarity == "cosine":
        numerator = (candidates * query[None, :]) @ masks
        denominator = np.sqrt(((candidates * candidates) @ masks) * ((query * query) @ masks)[None, :])
    else:
        raise ValueError(f"unknown similarity {similarity!r}; known: {', '.join(SIMILARITIES)}")
    out = np.zeros_like(numerator)
    np.divide(numerator, denominator, out=out, where=denominator > 0)
    return out


def pool_similarities(query: np.ndarray, pool: sparse.csc_matrix, norms: np.ndarray, similarity: str) -> np.ndarray:
    """Similarity of `query` (V,) to every row of `pool` (n, V) on all features, (n,), in float64.

    The same measures as `masked_similarities` with one all-ones mask, computed from the pool's nonzero
    entries in the query's nonzero features only (vectors are nonnegative, so elsewhere minima and products
    are 0): a forum post has a few hundred of 10,000 features, and a dense pass over the whole pool for
    every problem was the method's cost. `pool` is held by columns (CSC) so those features are cheap to
    take; `norms` is `pool_norms(...)`: each row's sum (min-max: sum of maxima = sum a + sum b - sum of
    minima) or its squared length (cosine).
    """
    support = np.flatnonzero(query)
    kept = query[support].astype(np.float64)
    columns = pool[:, support]
    entries = columns.data.astype(np.float64)
    feature = np.repeat(np.arange(len(support)), np.diff(columns.indptr))  # the kept feature of each entry
    if similarity == "minmax":
        numerator = np.bincount(columns.indices, weights=np.minimum(entries, kept[feature]), minlength=pool.shape[0])
        denominator = norms + kept.sum() - numerator
    elif similarity == "cosine":
        numerator = np.bincount(columns.indices, weights=entries * kept[feature], minlength=pool.shape[0])
        denominator = np.sqrt(norms * (kept @ kept))
    else:
        raise ValueError(f"unknown similarity {similarity!r}; known: {', '.join(SIMILARITIES)}")
    out = np.zeros(pool.shape[0], dtype=np.float64)
    np.divide(numerator, denominator, out=out, where=denominator > 0)
    return out


def pool_norms(pool: np.ndarray, similarity: str) -> np.ndarray:
    """Per pool row what `pool_similarities` needs: the sum (min-max) or the squared length (cosine), float64."""
    if similarity == "minmax":
        return pool.sum(axis=1, dtype=np.float64)
    return np.einsum("ij,ij->i", pool, pool, dtype=np.float64)


class _Pool(NamedTuple):
    """The fitted state: the TF-IDF model and the impostor texts' vectors with their text keys."""

    tfidf: TfidfModel
    vectors: np.ndarray  # (texts, V) float32, one row per distinct training text
    keys: list[str]  # text_key of each row, to keep a problem's own texts out of its impostors
    groups: np.ndarray  # (texts,) int64: the text-connected group (toolkit.splits.problem_groups) of each row


class GeneralImpostors(CalibratedVerifier):
    """General Impostors over character 4-gram TF-IDF vectors, impostors from the training texts.

    See the module docstring for the method, its sources and which defaults are the papers'.
    """

    name: ClassVar[str] = "impostors"
    FITTED: ClassVar[tuple[str, ...]] = ("_pool", "_band")
    CALIBRATION_IN_STATE: ClassVar[bool] = False  # it is info["calibration"]

    def __init__(
        self,
        *,
        ngram_size: int = 4,
        max_features: int | None = 10000,
        similarity: str = "minmax",
        iterations: int = 100,
        feature_share: float = 0.5,
        candidates: int = 250,
        impostors: int = 25,
        rank: int = 1,
        calibration_folds: int = 5,
        calibration_by: str = "texts",
        grid_step: float = 0.01,
        objective: str = "overall",
    ) -> None:
        checks = {
            "ngram_size": ngram_size >= 1,
            "max_features": max_features is None or max_features >= 1,
            "similarity": similarity in SIMILARITIES,
            "iterations": iterations >= 1,
            "feature_share": 0.0 < feature_share <= 1.0,
            "candidates": candidates >= 1,
            "impostors": impostors >= 1,
            "rank": rank >= 1,
        }
        bad = [name for name, ok in checks.items() if not ok]
        if bad:
            raise ValueError(f"impostors: bad value for {', '.join(bad)}")
        super().__init__(locals())
        self._pool: _Pool | None = None
        self.info: dict[str, Any] = {}

    def _analyzer_options(self) -> dict[str, Any]:
        return {"analyzer": "char", "ngram_range": (self.ngram_size, self.ngram_size), "lowercase": False}

    # --- fitting ---------------------------------------------------------------------------------------

    def _fit(self, train: VerificationData, labels: np.ndarray, *, seed: int) -> None:
        """Cross-fit the scores of the training problems, fit the band on them, then build the full pool."""
        self.cross_fit_band(train, labels, fit_then_score(train.problems, self._build_pool, self._scores), seed=seed)
        self._pool = self._build_pool(train.problems)
        vocabulary = len(self._pool.tfidf.vocabulary)
        self.info = {"calibration": self._calibration, "pool_texts": len(self._pool.keys), "vocabulary": vocabulary}

    def _build_pool(self, problems: Sequence[VerificationProblem]) -> _Pool:
        """The vocabulary and idf of the problems' distinct texts, and those texts' vectors as impostors."""
        texts: dict[str, str] = {}
        group_of: dict[str, int] = {}
        for problem, group in zip(problems, problem_groups(problems), strict=True):
            for text in problem.texts:
                key = text_key(text)
                texts.setdefault(key, text)
                group_of.setdefault(key, int(group))  # a text is in one group: groups are connected components
        keys = list(texts)
        groups = np.array([group_of[k] for k in keys], dtype=np.int64)
        ordered = [texts[k] for k in keys]
        options = self._analyzer_options()
        tfidf = TfidfModel.fit(ordered, analyzer=options, max_features=self.max_features, sublinear_tf=False)
        return _Pool(tfidf, tfidf.transform(ordered), keys, groups)

    # --- scoring ---------------------------------------------------------------------------------------

    def raw_scores(self, problems: Sequence[VerificationProblem]) -> np.ndarray:
        """GI scores (share of hits, in [0, 1]) before calibration, with the full training pool."""
        self._check_fitted()
        assert self._pool is not None
        return self._scores(problems, self._pool)

    def _scores(self, problems: Sequence[VerificationProblem], pool: _Pool) -> np.ndarray:
        # once per pool, not per problem: the pool by feature columns, and each row's norm
        by_feature = sparse.csc_matrix(pool.vectors)
        norms = pool_norms(pool.vectors, self.similarity)
        scores = np.empty(len(problems), dtype=np.float64)
        for i, problem in enumerate(pbar(problems, desc=f"{self.name}: scoring", unit="problems")):
            scores[i] = self._problem_score(problem, pool, by_feature, norms)
        return scores

    def _problem_score(
        self, problem: VerificationProblem, pool: _Pool, by_feature: sparse.csc_matrix, norms: np.ndarray
    ) -> float:
        if len(problem.texts) < 2:
            raise HarnessError(f"problem {problem.id}: needs at least one known text and the unknown text")
        own = {text_key(text) for text in problem.texts}
        # a pool text equal to one of the problem's is not an impostor, nor any text of its training group
        # (the other texts of the problems it occurs in, most likely by the same author); where that leaves
        # fewer than `impostors` texts (PAN14 novels: the training corpus is one group) only its own are left out
        not_own = np.array([k not in own for k in pool.keys], dtype=bool)
        allowed = ~np.isin(pool.groups, np.unique(pool.groups[~not_own]))
        if allowed.sum() < self.impostors:
            allowed = not_own
        rows = np.flatnonzero(allowed)  # indices into the pool: no copy of the pool per problem
        if len(rows) == 0:
            raise HarnessError(f"problem {problem.id}: no impostors left (every training text is one of its own)")
        vectors = pool.tfidf.transform(problem.texts)
        # randomness from the seed and the problem itself, so an answer does not depend on the batch it is in
        digest = hashlib.sha256(f"{problem.id}\0{text_key(problem.unknown)}".encode()).digest()
        rng = np.random.default_rng([self._seed, int.from_bytes(digest[:8], "little")])
        dims = vectors.shape[1]
        masks = (rng.random((dims, self.iterations)) < self.feature_share).astype(np.float32)
        unknown = vectors[-1]
        pair_scores = []
        for known in vectors[:-1]:
            # Koppel & Winter: X against Y's impostors, and Y against X's; the pair's score is their mean
            pair_scores.append(self._direction(known, unknown, pool.vectors, by_feature, rows, norms, masks, rng))
            pair_scores.append(self._direction(unknown, known, pool.vectors, by_feature, rows, norms, masks, rng))
        return float(np.mean(pair_scores))

    def _direction(
        self,
        query: np.ndarray,
        target: np.ndarray,
        pool: np.ndarray,
        by_feature: sparse.csc_matrix,
        rows: np.ndarray,
        norms: np.ndarray,
        masks: np.ndarray,
        rng: np.random.Generator,
    ) -> float:
        """Share of iterations in which `query` is closer to `target` than to the impostors drawn for `target`.

        `rows` are the pool rows allowed as impostors; `by_feature` is the pool as CSC, `norms` its `pool_norms`.
        """
        full = pool_similarities(target, by_feature, norms, self.similarity)[rows]
        # the candidate impostors are the pool texts most like the text they stand in for (stable order on ties)
        nearest = rows[np.argsort(-full, kind="stable")[: self.candidates]]
        sims = masked_similarities(query, np.vstack([target[None, :], pool[nearest]]), masks, self.similarity)
        drawn = min(self.impostors, len(nearest))
        # per iteration a random `drawn` of the candidates: the first columns of a random permutation
        choice = np.argsort(rng.random((self.iterations, len(nearest))), axis=1)[:, :drawn]
        chosen = sims[1:][choice.T, np.arange(self.iterations)[None, :]]
        return impostor_score(sims[0], chosen, rank=self.rank)

    # --- checkpoint ------------------------------------------------------------------------------------

    def _state(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """Vocabulary, pool text keys, band, seed and fit info in config.json; idf and pool vectors in safetensors."""
        pool = self._pool
        assert pool is not None
        state, arrays = pool.tfidf.state()
        state |= self.band_state() | {"pool_keys": pool.keys, "info": self.info}
        arrays = arrays | {"pool_vectors": pool.vectors, "pool_groups": pool.groups}
        return state, arrays

    def _restore(self, state: Mapping[str, Any], arrays: Mapping[str, np.ndarray], *, where: Path) -> None:
        keys = [str(k) for k in state["pool_keys"]]
        vectors = np.asarray(arrays["pool_vectors"], dtype=np.float32)
        groups = np.asarray(arrays["pool_groups"], dtype=np.int64)
        self._seed = int(state["seed"])
        options = self._analyzer_options()
        tfidf = TfidfModel.from_state(state, arrays, analyzer=options, sublinear_tf=False, where=where.parent)
        check_tfidf_state(tfidf.vocabulary, tfidf.idf, options, self.max_features, where=where)
        if vectors.shape != (len(keys), len(tfidf.vocabulary)) or groups.shape != (len(keys),):
            raise HarnessError(f"{where.parent}: pool_vectors/pool_groups have shapes {vectors.shape}/{groups.shape}")
        self._pool = _Pool(tfidf, vectors, keys, groups)
        self.info = dict(state.get("info", {}))
        self._calibration = self.info.get("calibration")
