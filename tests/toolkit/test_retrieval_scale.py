"""toolkit.nearest against brute force: top k and first-match ranks, every backend installed here.

Brute force is the full similarity matrix of toolkit.retrieval, sorted by (score, index), and
harness.metrics.ranking's first-match ranks over it. The blocks and chunks are made small, so that
every search crosses many of them. torch runs on the CPU: its code path is the GPU's.
"""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest
from scipy import sparse

import toolkit.nearest as nearest
from harness.metrics.ranking import first_relevant_ranks
from tasks.darkweb.evaluation import evaluate_embeddings
from tasks.darkweb.records import Episode, EpisodePost
from toolkit.nearest import first_match_ranks, top_k
from toolkit.retrieval import similarity

BACKENDS = [
    "numpy",
    pytest.param("torch", marks=pytest.mark.skipif(not importlib.util.find_spec("torch"), reason="no torch")),
    pytest.param("faiss", marks=pytest.mark.skipif(not importlib.util.find_spec("faiss"), reason="no faiss")),
]
RANK_BACKENDS = BACKENDS[:2]  # faiss does top k only


@pytest.fixture(autouse=True)
def small_chunks(monkeypatch):
    monkeypatch.setattr(nearest, "_QUERY_BLOCK", 37)
    monkeypatch.setattr(nearest, "_ITEM_CHUNK", 64)


def search(backend: str, *args, **kwargs):
    device = "cpu" if backend == "torch" else "auto"
    return args[0](*args[1:], **kwargs, backend=backend, device=device)


def brute_top_k(queries, items, k, metric):
    scores = similarity(queries, items, metric=metric)
    index = np.broadcast_to(np.arange(scores.shape[1]), scores.shape)
    order = np.lexsort((index, -scores), axis=1)[:, :k]
    return np.take_along_axis(scores, order, 1), order


def float_data(seed: int = 0):
    """Gaussian vectors, with exact ties: items 5, 300 and 650 are one vector, item 40 is zero; query 0
    is item 5 (three items tie at the top), query 1 is zero (every item ties at 0 under cosine)."""
    rng = np.random.default_rng(seed)
    items = rng.normal(size=(700, 16)).astype(np.float32)
    items[[300, 650]] = items[5]
    items[40] = 0.0
    queries = rng.normal(size=(90, 16)).astype(np.float32)
    queries[0] = items[5]
    queries[1] = 0.0
    return queries, items


def integer_data(seed: int = 1):
    """Small integer vectors: every Euclidean distance is exact in float32, in any summation order,
    so every backend computes the same floats, and ties are everywhere."""
    rng = np.random.default_rng(seed)
    return rng.integers(-2, 3, size=(80, 6)).astype(np.float32), rng.integers(-2, 3, size=(500, 6)).astype(np.float32)


def assert_no_near_ties(best: np.ndarray, gap: float = 1e-5) -> None:
    """The precondition of comparing orders across backends: the best scores of each query (sorted) are
    exactly equal or far apart."""
    steps = -np.diff(best, axis=1)
    assert not np.any((steps > 0) & (steps < gap))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("metric", ["cosine", "euclidean"])
@pytest.mark.parametrize("k", [1, 2, 10, 25])
def test_top_k_is_brute_force(backend, metric, k):
    queries, items = float_data()
    expected_scores, expected_index = brute_top_k(queries, items, k, metric)
    assert_no_near_ties(brute_top_k(queries, items, k + 1, metric)[0])
    scores, index = search(backend, top_k, queries, items, k, metric)
    assert scores.dtype == np.float32 and index.dtype == np.int64 and index.shape == (90, k)
    np.testing.assert_array_equal(index, expected_index)
    np.testing.assert_allclose(scores, expected_scores, atol=1e-5)
    assert index[0, : min(k, 3)].tolist() == [5, 300, 650][: min(k, 3)]  # a tie: lowest index first
    if metric == "cosine":  # the zero query ties with every item: the first k items, in order
        assert index[1].tolist() == list(range(k)) and not scores[1].any()


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("k", [1, 7, 64, 65, 500])
def test_top_k_ties_keep_the_lowest_indices_exactly(backend, k):
    queries, items = integer_data()
    expected_scores, expected_index = brute_top_k(queries, items, k, "euclidean")
    scores, index = search(backend, top_k, queries, items, k, "euclidean")
    np.testing.assert_array_equal(index, expected_index)
    # torch's CPU sqrt is not correctly rounded (1 unit off numpy's at times); the distances squared are exact
    np.testing.assert_allclose(scores, expected_scores, rtol=3e-7 if backend == "torch" else 0)
    # the data has ties at the k-th place, else this would test nothing about them
    full = -np.sort(-similarity(queries, items, metric="euclidean"), axis=1)
    assert k == 500 or np.any(full[:, k - 1] == full[:, k])


def brute_ranks(queries, q_labels, items, i_labels, metric, exclude=None):
    relevant = np.asarray(q_labels)[:, None] == np.asarray(i_labels)[None, :]
    return first_relevant_ranks(similarity(queries, items, metric=metric), relevant, exclude=exclude)


@pytest.mark.parametrize("backend", RANK_BACKENDS)
@pytest.mark.parametrize("metric", ["cosine", "euclidean"])
def test_first_match_ranks_are_brute_force(backend, metric):
    queries, items = float_data()
    rng = np.random.default_rng(2)
    i_labels = rng.integers(0, 60, size=len(items)).astype(str)
    q_labels = rng.integers(0, 70, size=len(queries)).astype(str)  # some labels no item has: rank 0
    i_labels[[5, 650]] = "other"
    q_labels[0] = i_labels[300]  # its match (item 300) ties with items 5 and 650: they count against it
    for exclude in (None, rng.integers(-1, len(items), size=len(queries)), rng.random((90, 700)) < 0.05):
        expected = brute_ranks(queries, q_labels, items, i_labels, metric, exclude)
        masked = sparse.csr_matrix(exclude) if exclude is not None and exclude.ndim == 2 else exclude
        got = search(backend, first_match_ranks, queries, q_labels, items, i_labels, metric, exclude=masked)
        np.testing.assert_array_equal(got, expected)
        assert (got == 0).any() and (got > 1).any()
        if exclude is None:
            assert got[0] == 3


@pytest.mark.parametrize("backend", RANK_BACKENDS)
def test_first_match_ranks_count_exact_ties_against_the_query(backend):
    queries, items = integer_data()
    rng = np.random.default_rng(3)
    labels = rng.integers(0, 20, size=len(items))
    q_labels = rng.integers(0, 20, size=len(queries))
    expected = brute_ranks(queries, q_labels, items, labels, "euclidean")
    got = search(backend, first_match_ranks, queries, q_labels, items, labels, "euclidean")
    np.testing.assert_array_equal(got, expected)
    # a constant scorer: every item ties, so the rank is 1 + the non-matching items
    constant = np.ones_like(items)
    got = search(backend, first_match_ranks, queries, q_labels, constant, labels, "cosine")
    np.testing.assert_array_equal(got, 1 + (labels[None, :] != q_labels[:, None]).sum(1))


def test_a_best_match_that_the_first_product_rounds_differently_is_counted_again(monkeypatch):
    """The first guess of the best relevant score comes from a separate product; where it differs
    from the counting pass's, the query is redone. Here the separate product is made wrong on purpose."""
    queries, items = float_data()
    labels = np.arange(len(items)) % 50
    q_labels = np.arange(len(queries)) % 50
    expected = brute_ranks(queries, q_labels, items, labels, "cosine")
    scores = nearest._NumpyOps.scores

    def off_when_gathered(self, rows, part):
        out = scores(self, rows, part)
        return out + np.float32(0.25) if isinstance(part, np.ndarray) else out

    monkeypatch.setattr(nearest._NumpyOps, "scores", off_when_gathered)
    got = first_match_ranks(queries, q_labels, items, labels, "cosine", backend="numpy")
    np.testing.assert_array_equal(got, expected)


def test_darkweb_ranks_and_rule_counts_do_not_depend_on_the_chunks(monkeypatch):
    rng = np.random.default_rng(4)
    episodes = []
    for i in range(400):
        threads = tuple(f"t{rng.integers(40)}" for _ in range(rng.integers(1, 3)))
        posts = tuple(EpisodePost("x", 0, "f", thread) for thread in threads)
        author = f"u{rng.integers(60)}"
        episodes.append(Episode(f"e{i}", author, "ab"[i % 2], posts, author if i % 3 else f"p{i % 7}", i))
    emb = np.round(rng.normal(size=(400, 4))).astype(np.float32)  # coarse: many exact ties
    small = evaluate_embeddings(emb, episodes)
    monkeypatch.setattr(nearest, "_QUERY_BLOCK", 1024)
    monkeypatch.setattr(nearest, "_ITEM_CHUNK", 16384)
    whole = evaluate_embeddings(emb, episodes)
    assert small.scores == whole.scores and small.details == whole.details
    assert whole.scores["same_thread_candidates_removed"] > 0 and whole.scores["migrant/queries"] > 0


def test_the_automatic_backend(monkeypatch):
    monkeypatch.setattr(nearest, "_has", lambda module: module != "torch")
    monkeypatch.setattr(nearest, "FAISS_MIN_ITEMS", 1000)
    assert nearest._choose("auto", "auto", 10, 999, top_k=True) == ("numpy", "cpu")
    assert nearest._choose("auto", "auto", 10, 1000, top_k=True) == ("faiss", "cpu")
    assert nearest._choose("auto", "auto", 10, 1000, top_k=False) == ("numpy", "cpu")  # ranks: no faiss
    monkeypatch.setattr(nearest, "_has", lambda module: False)  # neither installed: numpy
    assert nearest._choose("auto", "auto", 10**4, 10**7, top_k=True) == ("numpy", "cpu")
    with pytest.raises(ValueError, match="pip install faiss-cpu"):
        nearest._choose("faiss", "auto", 1, 1, top_k=True)


def test_bad_requests_are_refused():
    queries, items = float_data()
    with pytest.raises(ValueError, match=r"k must lie in \[1, 700\]"):
        top_k(queries, items, 701)
    with pytest.raises(ValueError, match="backend must be one of"):
        top_k(queries, items, 1, backend="annoy")
    with pytest.raises(ValueError, match="metric must be one of"):
        top_k(queries, items, 1, "dot")
    with pytest.raises(ValueError, match="faiss computes top_k only"):
        first_match_ranks(queries, np.zeros(90), items, np.zeros(700), backend="faiss")
    with pytest.raises(ValueError, match="exclude mask has shape"):
        first_match_ranks(queries, np.zeros(90), items, np.zeros(700), exclude=np.zeros((2, 2), dtype=bool))
    with pytest.raises(ValueError, match="one label"):
        first_match_ranks(queries, np.zeros(3), items, np.zeros(700))
