"""Exact retrieval at scale (toolkit.nearest): time and peak memory of top-k and first-match ranks.

1,000 queries against 10^4, 10^5 and 10^6 candidates (random unit vectors, dimension 256, cosine),
the top 10 and the first-match rank (each query has 4 matching candidates), with every backend
installed: numpy, faiss (top k only), torch (on the GPU where there is one, else on the CPU, where
`auto` never picks it). Each measurement runs in a fresh process, after a small warm-up search
(library loading, CUDA start-up), and reports its wall time and peak resident memory
(VmHWM), and that peak less the process's peak before the search (the data loaded).
Every result is checked against brute force computed here: the full similarity rows of
toolkit.retrieval, sorted by (score, index), and harness.metrics.ranking's first-match ranks. A
backend whose floats differ from numpy's (faiss, torch) may order a near-tie differently: those are
counted, with the largest score gap involved, and anything else is an error.

    python benchmarks/retrieval_scale.py [--sizes 10000,100000,1000000] [--queries 1000] [--dim 256]
        [--backends numpy,faiss,torch] [--check-queries N]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

K = 10
MATCHES = 4  # candidates per label
NEAR_TIE = 1e-5  # score gap below which two backends' floats may order items differently


def peak_mib() -> float:
    """This process's peak resident memory: VmHWM on Linux (getrusage's maxrss there keeps the peak of the
    parent that forked it, across exec), else maxrss."""
    status = Path("/proc/self/status")
    if status.exists():
        for line in status.read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    scale = 1024 * 1024 if sys.platform == "darwin" else 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / scale


def child(folder: Path, operation: str, backend: str) -> None:
    """One measurement, in its own process: prints a JSON line, leaves the result in `folder`."""
    from toolkit.nearest import first_match_ranks, top_k

    queries, items = np.load(folder / "queries.npy"), np.load(folder / "items.npy")
    q_labels, i_labels = np.load(folder / "query_labels.npy"), np.load(folder / "item_labels.npy")
    device = "auto"
    if backend == "torch":
        import torch

        device = "cuda" if torch.cuda.is_available() else "cpu"
    warm = queries[:8], items[:1000]
    if operation == "top_k":
        top_k(*warm, K, "cosine", backend=backend, device=device)
    else:
        first_match_ranks(warm[0], q_labels[:8], warm[1], i_labels[:1000], "cosine", backend=backend, device=device)
    before = peak_mib()
    start = time.perf_counter()
    if operation == "top_k":
        scores, index = top_k(queries, items, K, "cosine", backend=backend, device=device)
        np.save(folder / "scores.npy", scores)
        np.save(folder / "index.npy", index)
    else:
        ranks = first_match_ranks(queries, q_labels, items, i_labels, "cosine", backend=backend, device=device)
        np.save(folder / "ranks.npy", ranks)
    seconds = time.perf_counter() - start
    where = device if backend == "torch" else "cpu"
    print(json.dumps({"seconds": seconds, "peak": peak_mib(), "before": before, "device": where}))


def brute_force(queries: np.ndarray, items: np.ndarray, q_labels: np.ndarray, i_labels: np.ndarray) -> dict:
    """Full similarity rows, a few queries at a time: top K by (score, index) and first-match ranks."""
    from harness.metrics.ranking import first_relevant_ranks
    from toolkit.retrieval import similarity

    rows = max(1, 2**26 // len(items))
    scores = np.empty((len(queries), K), dtype=np.float32)
    index = np.empty((len(queries), K), dtype=np.int64)
    ranks = np.empty(len(queries), dtype=np.int64)
    for start in range(0, len(queries), rows):
        block = similarity(queries[start : start + rows], items)
        for r, row in enumerate(block):
            floor = np.partition(row, len(row) - K)[len(row) - K]
            candidates = np.flatnonzero(row >= floor)  # every item that can be in the top K, ties included
            order = candidates[np.lexsort((candidates, -row[candidates]))[:K]]
            scores[start + r], index[start + r] = row[order], order
        relevant = q_labels[start : start + rows, None] == i_labels[None, :]
        ranks[start : start + rows] = first_relevant_ranks(block, relevant)
    return {"scores": scores, "index": index, "ranks": ranks}


def compare(folder: Path, operation: str, reference: dict, queries: np.ndarray, items: np.ndarray) -> str:
    """'identical', or how many near-ties were ordered differently; SystemExit on anything else."""
    from toolkit.retrieval import similarity

    n = len(reference["ranks"])
    if operation == "top_k":
        scores, index = np.load(folder / "scores.npy")[:n], np.load(folder / "index.npy")[:n]
        gap = float(np.abs(scores - reference["scores"]).max())
        if gap > NEAR_TIE:
            raise SystemExit(f"top_k scores differ from brute force by {gap:.2e}")
        differ = np.flatnonzero((index != reference["index"]).any(axis=1))
        for q in differ:  # the items swapped must score within NEAR_TIE of the k-th best
            swapped = np.setxor1d(index[q], reference["index"][q])
            exact = similarity(queries[[q]], items[swapped])[0]
            if swapped.size and np.abs(exact - reference["scores"][q, -1]).max() > NEAR_TIE:
                raise SystemExit(f"top_k of query {q} differs from brute force beyond a near-tie")
            if not swapped.size and not np.allclose(np.sort(scores[q]), np.sort(reference["scores"][q])):
                raise SystemExit(f"top_k order of query {q} differs from brute force")
        return "identical" if not differ.size else f"{differ.size} near-tie orders differ"
    ranks = np.load(folder / "ranks.npy")[:n]
    differ = np.flatnonzero(ranks != reference["ranks"])
    for q in differ:  # a rank may move only by the candidates scoring within NEAR_TIE of the best match
        row = similarity(queries[[q]], items)[0]
        best = row[reference["labels"][1] == reference["labels"][0][q]].max()
        near = int(np.count_nonzero(np.abs(row - best) <= NEAR_TIE))
        if abs(int(ranks[q]) - int(reference["ranks"][q])) > near:
            raise SystemExit(f"rank of query {q} is {ranks[q]}, brute force {reference['ranks'][q]}")
    return "identical" if not differ.size else f"{differ.size} ranks differ by near-ties"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--dim", type=int, default=256)
    parser.add_argument("--backends", default="numpy,faiss,torch")
    parser.add_argument("--check-queries", type=int, default=None, help="check only the first N queries")
    parser.add_argument("--child", nargs=3, metavar=("FOLDER", "OPERATION", "BACKEND"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(Path(args.child[0]), args.child[1], args.child[2])
        return
    backends = [b for b in args.backends.split(",") if importlib.util.find_spec(b)]
    rng = np.random.default_rng(0)
    queries = unit(rng.standard_normal((args.queries, args.dim), dtype=np.float32))
    lines = [
        f"{args.queries} queries, dimension {args.dim}, cosine; top {K} and first-match rank ({MATCHES} matches each)",
        "",
        "| candidates | search | backend | device | time (s) | peak RSS (MiB) | above data (MiB) | vs brute force |",
        "|---:|---|---|---|---:|---:|---:|---|",
    ]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for size in [int(s) for s in args.sizes.split(",")]:
            items = unit(rng.standard_normal((size, args.dim), dtype=np.float32))
            i_labels = np.arange(size) % (size // MATCHES)
            q_labels = rng.integers(0, size // MATCHES, size=args.queries)
            for name, array in (("queries", queries), ("items", items)):
                np.save(folder / f"{name}.npy", array)
            np.save(folder / "query_labels.npy", q_labels)
            np.save(folder / "item_labels.npy", i_labels)
            checked = slice(0, args.check_queries)
            reference = brute_force(queries[checked], items, q_labels[checked], i_labels)
            reference["labels"] = (q_labels[checked], i_labels)
            for operation in ("top_k", "first_match"):
                for backend in backends:
                    if backend == "faiss" and operation == "first_match":
                        continue
                    run = subprocess.run(
                        [sys.executable, __file__, "--child", str(folder), operation, backend],
                        check=True,
                        capture_output=True,
                        text=True,
                    )
                    found = json.loads(run.stdout.strip().splitlines()[-1])
                    verdict = compare(folder, operation, reference, queries, items)
                    search = f"top {K}" if operation == "top_k" else "first-match rank"
                    lines.append(
                        f"| {size:,} | {search} | {backend} | {found['device']} | {found['seconds']:.2f} "
                        f"| {found['peak']:,.0f} | {found['peak'] - found['before']:,.0f} | {verdict} |"
                    )
                    print(lines[-1], file=sys.stderr, flush=True)
    print("\n".join(lines))


def unit(matrix: np.ndarray) -> np.ndarray:
    return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)


if __name__ == "__main__":
    main()
