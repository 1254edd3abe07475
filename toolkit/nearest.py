"""Exact nearest-neighbour search at scale: the top k items of each query, and first-match ranks.

Scores are toolkit.retrieval's similarities (cosine, or the negative Euclidean distance; higher =
nearer), computed in float32. Nothing is approximated; three backends compute the same thing:

- "numpy": BLAS products over blocks of queries and chunks of items, the formulas of
  `toolkit.retrieval.similarity` (bit for bit where the items fit in one chunk).
- "torch": the same products, in fp32 with TF32 off, on a torch device: the GPU path. It also runs
  on the CPU (the tests run it there), but it is chosen automatically only on a GPU.
- "faiss": IndexFlatIP (cosine, on unit rows) or IndexFlatL2 (Euclidean); exact flat indexes, for
  `top_k` only (first-match ranks need every score, which a flat index does not return).

`backend="auto"` takes torch on a CUDA GPU when n_queries x n_items >= GPU_MIN_PAIRS (below that the
GPU start-up costs more than it saves, and the tasks' small evaluations keep numpy's exact floats),
else, for `top_k`, faiss when it is importable and n_items >= FAISS_MIN_ITEMS, else numpy.
`device="cpu"` never picks the GPU; `device="cuda"` (or "cuda:N") runs torch there.

Ties. `top_k` orders by score, then by item index (lowest first), whichever the backend: a tie at
the k-th place keeps the lowest indices. First-match ranks count ties against the query
(harness.metrics.ranking): 1 + the non-relevant, non-excluded items scoring at least the best
relevant one. They are counted in one pass over the items against the best relevant score, first
taken from the relevant items only; a query whose count pass found a different best (the two
products rounded differently) is counted again from two full passes. So ranks are exact for the
scores the backend computes, at any size, without holding the query-by-item matrix.

Floats. The backends sum the same products in different orders (numpy's BLAS, cuBLAS, faiss's own
BLAS and, under 20 queries, its SIMD loops; torch's CPU square root is also a unit off at times), so
a score may differ by a few float32 units across backends: a near-tie (scores within about 1e-6)
may then order differently. Exact ties (duplicate vectors, a zero vector, whose cosine is 0 to
everything) are ties in every backend. The tests check equal indices and ranks on data without
near-ties, scores equal to 1e-5, and the tie order on exact ties.
"""

from __future__ import annotations

import contextlib
import importlib.util
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
from scipy import sparse

from toolkit.retrieval import METRICS, as_matrix, unit_rows

BACKENDS = ("auto", "numpy", "torch", "faiss")
GPU_MIN_PAIRS = 10**8  # n_queries x n_items from which "auto" uses a CUDA GPU
# items from which "auto" top_k uses faiss on the CPU: on 2 cores, faiss was 15-20% faster than numpy at
# 10^6 items and level at 10^5 (benchmarks/retrieval_scale.py); it holds a second copy of the items
FAISS_MIN_ITEMS = 200_000
_FAISS_DATABASE_BLOCK = 65536  # items per faiss product; its default (1024) took 2.3 times as long at 10^6
_QUERY_BLOCK = 1024  # CPU: queries per block
_ITEM_CHUNK = 16384  # CPU: items per chunk; a block x chunk float32 matrix is 64 MiB
_GPU_QUERY_BLOCK = 4096
_GPU_ITEM_CHUNK = 65536  # 1 GiB per block x chunk matrix on the GPU


def top_k(
    queries: Any, items: Any, k: int, metric: str = "cosine", *, device: str = "auto", backend: str = "auto"
) -> tuple[np.ndarray, np.ndarray]:
    """The k best items of each query: (scores float32, indices int64), each n_queries x k, best first.

    Order: score descending, then item index ascending (module doc). k may not exceed the items.
    """
    q, x = _inputs(queries, items, metric)
    if not 1 <= k <= len(x):
        raise ValueError(f"k must lie in [1, {len(x)}] (the number of items), got {k}")
    name, where = _choose(backend, device, len(q), len(x), top_k=True)
    if name == "faiss":
        return _faiss_top_k(q, x, k, metric)
    ops = _ops(name, where, q, x, metric)
    scores = np.empty((len(q), k), dtype=np.float32)
    indices = np.empty((len(q), k), dtype=np.int64)
    with ops.context():
        for rows in _blocks(len(q), ops.query_block):
            scores[rows], indices[rows] = ops.top_k_block(rows, k)
    return scores, indices


def first_match_ranks(
    queries: Any,
    query_labels: Sequence[Any],
    items: Any,
    item_labels: Sequence[Any],
    metric: str = "cosine",
    *,
    exclude: Any = None,
    device: str = "auto",
    backend: str = "auto",
    progress: Callable[[int], None] | None = None,
) -> np.ndarray:
    """For each query, the 1-based rank of the first item with the query's label (0 where none).

    Ties count against the query (harness.metrics.ranking). `exclude` removes (query, item) pairs
    from the ranking, neither ranked nor counted as matches: one item index per query (-1 for
    none), or a boolean (n_queries x n_items) matrix, dense or scipy-sparse. `progress(n)` is
    called as each block of n queries is done.
    """
    if backend == "faiss":
        raise ValueError("faiss computes top_k only: first-match ranks need every score (use numpy or torch)")
    q, x = _inputs(queries, items, metric)
    q_codes, i_codes = _label_codes(query_labels, item_labels, len(q), len(x))
    excluded = _exclusion(exclude, len(q), len(x))
    name, where = _choose(backend, device, len(q), len(x), top_k=False)
    ops = _ops(name, where, q, x, metric, i_codes)
    ranks = np.zeros(len(q), dtype=np.int64)
    with ops.context():
        for rows in _blocks(len(q), ops.query_block):
            ranks[rows] = _ranks(ops, np.arange(rows.start, rows.stop), q_codes, i_codes, excluded)
            if progress is not None:
                progress(rows.stop - rows.start)
    return ranks


def _inputs(queries: Any, items: Any, metric: str) -> tuple[np.ndarray, np.ndarray]:
    if metric not in METRICS:
        raise ValueError(f"metric must be one of {METRICS}, not {metric!r}")
    q, x = as_matrix(queries, "queries"), as_matrix(items, "items")
    if q.shape[1] != x.shape[1]:
        raise ValueError(f"queries have dimension {q.shape[1]}, items {x.shape[1]}")
    if metric == "cosine":  # unit rows once, as similarity() does per call: a zero vector stays zero
        return unit_rows(q), unit_rows(x)
    return q, x


def _label_codes(query_labels: Any, item_labels: Any, n_queries: int, n_items: int) -> tuple[np.ndarray, np.ndarray]:
    """Labels as integers (equal labels, equal codes): integer comparisons over chunks are cheap."""
    q_labels, i_labels = np.asarray(query_labels).tolist(), np.asarray(item_labels).tolist()
    if len(q_labels) != n_queries or len(i_labels) != n_items:
        raise ValueError("each embedding needs exactly one label")
    codes: dict[Any, int] = {}
    i_codes = np.array([codes.setdefault(label, len(codes)) for label in i_labels], dtype=np.int64)
    q_codes = np.array([codes.get(label, -1) for label in q_labels], dtype=np.int64)  # -1: no item has it
    return q_codes, i_codes


def _exclusion(exclude: Any, n_queries: int, n_items: int) -> sparse.csr_matrix | None:
    if exclude is None:
        return None
    if sparse.issparse(exclude) or np.asarray(exclude).dtype == np.bool_:
        matrix = sparse.csr_matrix(exclude, dtype=bool)
        if matrix.shape != (n_queries, n_items):
            raise ValueError(f"exclude mask has shape {matrix.shape}, expected {(n_queries, n_items)}")
        return matrix
    index = np.asarray(exclude)
    index = index.astype(np.int64) if index.size == 0 else index
    if index.shape != (n_queries,) or not np.issubdtype(index.dtype, np.integer):
        raise ValueError("exclude must be a boolean mask (query x item) or one integer item index per query")
    if np.any((index < -1) | (index >= n_items)):
        raise ValueError(f"exclude indices must lie in [-1, {n_items})")
    rows = np.flatnonzero(index >= 0)
    data = np.ones(len(rows), dtype=bool)
    return sparse.csr_matrix((data, (rows, index[rows])), shape=(n_queries, n_items))


def _choose(backend: str, device: str, n_queries: int, n_items: int, *, top_k: bool) -> tuple[str, str]:
    """(backend, device) for a search of this size (module doc)."""
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, not {backend!r}")
    if device != "auto" and device != "cpu" and not device.startswith("cuda"):
        raise ValueError(f"device must be auto, cpu or cuda[:N], not {device!r}")
    if backend == "faiss" and not _has("faiss"):
        raise ValueError("backend 'faiss' asked for, but faiss is not installed (pip install faiss-cpu)")
    if backend in ("numpy", "faiss"):
        if device.startswith("cuda"):
            raise ValueError(f"backend {backend!r} runs on the CPU, not on {device!r}")
        return backend, "cpu"
    if backend == "torch" or device.startswith("cuda"):
        return "torch", _torch_device(device)
    if device == "auto" and n_queries * n_items >= GPU_MIN_PAIRS and _has("torch"):
        import torch

        if torch.cuda.is_available():
            from harness.provenance import note_device

            note_device("cuda")  # the search ran on the GPU: the result says so (`device_description`)
            return "torch", "cuda"
    if top_k and n_items >= FAISS_MIN_ITEMS and _has("faiss"):
        return "faiss", "cpu"
    return "numpy", "cpu"


def _has(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def _torch_device(device: str) -> str:
    if not _has("torch"):
        raise ValueError("backend 'torch' asked for, but torch is not installed")
    from toolkit.devices import resolve_device

    return resolve_device(device)


def _blocks(n: int, size: int) -> Iterator[slice]:
    for start in range(0, n, size):
        yield slice(start, min(start + size, n))


def _ops(name: str, device: str, q: np.ndarray, x: np.ndarray, metric: str, codes: np.ndarray | None = None) -> Any:
    return _TorchOps(q, x, metric, codes, device) if name == "torch" else _NumpyOps(q, x, metric, codes)


def _ranks(
    ops: Any,
    rows: np.ndarray,
    q_codes: np.ndarray,
    i_codes: np.ndarray,
    excluded: sparse.csr_matrix | None,
    *,
    gather: bool = True,
) -> np.ndarray:
    """First-match ranks of query `rows`: the best relevant score, then one counting pass (module doc).

    With `gather`, the best comes from a product over the block's relevant items alone; a row whose
    count pass finds another best is redone without it, from two passes over the same chunks
    (identical products, so the same floats).
    """
    codes = q_codes[rows]
    pairs = excluded[rows].tocoo() if excluded is not None else None
    n_items = len(i_codes)
    if gather:
        cols = np.flatnonzero(np.isin(i_codes, codes[codes >= 0]))
        gather = len(cols) <= n_items // 2  # else a full pass costs the same and agrees bit for bit
    chunks = list(_blocks(n_items, ops.item_chunk))
    best = np.full(len(rows), -np.inf, dtype=np.float32)
    for part in [cols[c] for c in _blocks(len(cols), ops.item_chunk)] if gather else chunks:
        scores, relevant = ops.chunk(rows, codes, part, pairs)
        best = np.maximum(best, ops.best(scores, relevant))
    found = np.full(len(rows), -np.inf, dtype=np.float32)
    ahead = np.zeros(len(rows), dtype=np.int64)
    for part in chunks:
        scores, relevant = ops.chunk(rows, codes, part, pairs)
        found = np.maximum(found, ops.best(scores, relevant))
        ahead += ops.ahead(scores, relevant, best)
    ranks = np.where(found > -np.inf, 1 + ahead, 0)
    redo = np.flatnonzero(found != best) if gather else np.empty(0, dtype=np.int64)
    if redo.size:
        ranks[redo] = _ranks(ops, rows[redo], q_codes, i_codes, excluded, gather=False)
    return ranks


class _NumpyOps:
    """Block x chunk scores and the reductions over them, in numpy (retrieval.similarity's formulas)."""

    def __init__(self, q: np.ndarray, x: np.ndarray, metric: str, codes: np.ndarray | None) -> None:
        self.q, self.x, self.metric, self.codes = q, x, metric, codes
        self.query_block, self.item_chunk = _QUERY_BLOCK, _ITEM_CHUNK
        if metric == "euclidean":
            self.q_sq, self.x_sq = (q**2).sum(1), (x**2).sum(1)

    def context(self) -> contextlib.AbstractContextManager[Any]:
        return contextlib.nullcontext()

    def scores(self, rows: Any, part: slice | np.ndarray) -> np.ndarray:
        product = self.q[rows] @ self.x[part].T
        if self.metric == "cosine":
            return product
        squared = self.q_sq[rows][:, None] + self.x_sq[part][None, :] - 2.0 * product
        return -np.sqrt(np.maximum(squared, 0.0))

    def chunk(self, rows: np.ndarray, codes: np.ndarray, part: slice | np.ndarray, pairs: Any) -> tuple[Any, Any]:
        """Scores of `rows` against the items `part` (excluded pairs at -inf) and the relevant entries."""
        scores = self.scores(rows, part)
        if pairs is not None and pairs.nnz:
            scores[_pairs_in(pairs, part)] = -np.inf
        # relevant entries are few: kept as (row, score) lists, not a mask to sweep again
        flat = np.flatnonzero(codes[:, None] == self.codes[part][None, :])
        return scores, (flat // scores.shape[1], scores.ravel()[flat])

    @staticmethod
    def best(scores: np.ndarray, relevant: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
        found = np.full(len(scores), -np.inf, dtype=np.float32)
        np.maximum.at(found, *relevant)
        return found

    @staticmethod
    def ahead(scores: np.ndarray, relevant: tuple[np.ndarray, np.ndarray], best: np.ndarray) -> np.ndarray:
        rows, values = relevant
        above = np.count_nonzero(scores >= best[:, None], axis=1)
        return above - np.bincount(rows[values >= best[rows]], minlength=len(best))

    def top_k_block(self, rows: slice, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Running top k over the chunks; a chunk's candidates are its scores at least the k-th so far."""
        size = rows.stop - rows.start
        scores = np.full((size, k), -np.inf, dtype=np.float32)
        indices = np.full((size, k), len(self.x), dtype=np.int64)  # padding sorts after every item
        for part in _blocks(len(self.x), self.item_chunk):
            block = self.scores(rows, part)
            floor = scores[:, -1]
            width = part.stop - part.start
            candidates = block >= floor[:, None]
            if width > k and np.count_nonzero(candidates) > 2 * k * size:  # e.g. the first chunk
                floor = np.maximum(floor, np.partition(block, width - k, axis=1)[:, width - k])
                candidates = block >= floor[:, None]
            r, c = np.divmod(np.flatnonzero(candidates), width)  # faster than a 2-D nonzero
            all_r = np.concatenate([r, np.repeat(np.arange(size), k)])
            all_s = np.concatenate([block[r, c], scores.ravel()])
            all_i = np.concatenate([c + part.start, indices.ravel()])
            order = np.lexsort((all_i, -all_s, all_r))
            all_r, all_s, all_i = all_r[order], all_s[order], all_i[order]
            starts = np.searchsorted(all_r, np.arange(size))
            place = np.arange(len(all_r)) - starts[all_r]
            keep = place < k
            scores[all_r[keep], place[keep]] = all_s[keep]
            indices[all_r[keep], place[keep]] = all_i[keep]
        return scores, indices


def _pairs_in(pairs: sparse.coo_matrix, part: slice | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The excluded (row, position in `part`) of a block's pairs whose item is in `part` (sorted items)."""
    if isinstance(part, slice):
        inside = (pairs.col >= part.start) & (pairs.col < part.stop)
        return pairs.row[inside], pairs.col[inside] - part.start
    cols = part
    at = np.searchsorted(cols, pairs.col)
    inside = at < len(cols)
    inside[inside] = cols[at[inside]] == pairs.col[inside]
    return pairs.row[inside], at[inside]


class _TorchOps:
    """The same on a torch device; results come back as numpy arrays."""

    def __init__(self, q: np.ndarray, x: np.ndarray, metric: str, codes: np.ndarray | None, device: str) -> None:
        import torch

        self.torch, self.device, self.metric = torch, device, metric
        gpu = device.startswith("cuda")
        self.query_block = _GPU_QUERY_BLOCK if gpu else _QUERY_BLOCK
        self.item_chunk = _GPU_ITEM_CHUNK if gpu else _ITEM_CHUNK
        self.q = torch.from_numpy(q).to(device)
        self.x = torch.from_numpy(x).to(device)
        self.codes = None if codes is None else torch.from_numpy(codes).to(device)
        if metric == "euclidean":  # numpy's squared norms, so that only the product differs
            self.q_sq = torch.from_numpy((q**2).sum(1)).to(device)
            self.x_sq = torch.from_numpy((x**2).sum(1)).to(device)

    @contextlib.contextmanager
    def context(self) -> Iterator[None]:
        """fp32 products (no TF32), no autograd."""
        before = self.torch.get_float32_matmul_precision()
        self.torch.set_float32_matmul_precision("highest")
        try:
            with self.torch.inference_mode():
                yield
        finally:
            self.torch.set_float32_matmul_precision(before)

    def _index(self, part: slice | np.ndarray) -> Any:
        return part if isinstance(part, slice) else self.torch.from_numpy(part).to(self.device)

    def scores(self, rows: Any, part: slice | np.ndarray) -> Any:
        rows = self._index(rows)
        cols = self._index(part)
        product = self.q[rows] @ self.x[cols].T
        if self.metric == "cosine":
            return product
        squared = self.q_sq[rows][:, None] + self.x_sq[cols][None, :] - 2.0 * product
        return -self.torch.sqrt(self.torch.clamp(squared, min=0.0))

    def chunk(self, rows: np.ndarray, codes: np.ndarray, part: slice | np.ndarray, pairs: Any) -> tuple[Any, Any]:
        scores = self.scores(rows, part)
        if pairs is not None and pairs.nnz:
            r, c = _pairs_in(pairs, part)
            scores[self._index(r), self._index(c)] = -float("inf")
        return scores, self._index(codes)[:, None] == self.codes[self._index(part)][None, :]

    def best(self, scores: Any, relevant: Any) -> np.ndarray:
        masked = self.torch.where(relevant, scores, self.torch.full_like(scores, -float("inf")))
        return masked.amax(dim=1).cpu().numpy()

    def ahead(self, scores: Any, relevant: Any, best: np.ndarray) -> np.ndarray:
        floor = self.torch.from_numpy(best).to(self.device)
        return (~relevant & (scores >= floor[:, None])).sum(dim=1).cpu().numpy()

    def top_k_block(self, rows: slice, k: int) -> tuple[np.ndarray, np.ndarray]:
        """torch.topk per chunk with ties at the k-th place settled by index, merged into a running top k."""
        torch = self.torch
        size = rows.stop - rows.start
        scores = torch.full((size, 0), -float("inf"), device=self.device)
        indices = torch.zeros((size, 0), dtype=torch.int64, device=self.device)
        for part in _blocks(len(self.x), self.item_chunk):
            block = self.scores(rows, part)
            kk = min(k, part.stop - part.start)
            top, at = torch.topk(block, kk, dim=1)
            floor = top[:, -1:]
            tied = torch.nonzero((block >= floor).sum(dim=1) > kk).flatten()
            if tied.numel():  # more than kk items reach the k-th score: keep the lowest indices of those tied
                sub, sub_floor = block[tied], floor[tied]
                above = sub > sub_floor
                level = sub == sub_floor
                room = kk - above.sum(dim=1, keepdim=True)
                keep = above | (level & (torch.cumsum(level, dim=1) <= room))
                cols = torch.nonzero(keep)[:, 1].reshape(len(tied), kk)  # row-major: ascending per row
                at[tied] = cols
                top[tied] = torch.gather(sub, 1, cols)
            merged_s = torch.cat([scores, top], dim=1)
            merged_i = torch.cat([indices, at + part.start], dim=1)
            by_index = torch.sort(merged_i, dim=1, stable=True).indices
            merged_s, merged_i = torch.gather(merged_s, 1, by_index), torch.gather(merged_i, 1, by_index)
            by_score = torch.sort(merged_s, dim=1, descending=True, stable=True).indices[:, :k]
            scores, indices = torch.gather(merged_s, 1, by_score), torch.gather(merged_i, 1, by_score)
        return scores.cpu().numpy(), indices.cpu().numpy()


def _faiss_top_k(q: np.ndarray, x: np.ndarray, k: int, metric: str) -> tuple[np.ndarray, np.ndarray]:
    """faiss's exact flat search for k + 1, ordered by (score, index); a query whose k-th and (k+1)-th
    scores tie may have had other tied items left out by faiss, and is searched again with numpy."""
    import faiss

    index = faiss.IndexFlatIP(x.shape[1]) if metric == "cosine" else faiss.IndexFlatL2(x.shape[1])
    index.add(x)
    wanted = min(k + 1, len(x))
    before = faiss.cvar.distance_compute_blas_database_bs
    faiss.cvar.distance_compute_blas_database_bs = _FAISS_DATABASE_BLOCK
    try:
        found, at = index.search(q, wanted)
    finally:
        faiss.cvar.distance_compute_blas_database_bs = before
    scores = found if metric == "cosine" else -np.sqrt(np.maximum(found, 0.0))
    scores = scores.astype(np.float32)
    order = np.lexsort((at[:, :k], -scores[:, :k]), axis=1)
    top_s, top_i = np.take_along_axis(scores[:, :k], order, 1), np.take_along_axis(at[:, :k], order, 1)
    if wanted > k:
        tied = np.flatnonzero(scores[:, k] == scores[:, k - 1])
        if tied.size:
            ops = _NumpyOps(q[tied], x, metric, None)
            for rows in _blocks(len(tied), ops.query_block):
                top_s[tied[rows]], top_i[tied[rows]] = ops.top_k_block(rows, k)
    return top_s, top_i.astype(np.int64)
