"""Sub-forum vectors from metapath2vec over a market's user/sub-forum/thread/post graph (SYSML).

Nodes: users (U), sub-forums (S), threads (T) and posts (P). Edges: a user started a thread
(U-T, the thread's opening post), a user wrote a reply (U-P), a reply is in a thread (P-T), a
thread is in a sub-forum (T-S); each edge goes both ways. SYSML's seven meta-paths, all from user
to user, are walked with torch_geometric's MetaPath2Vec: UPTSTPU, UTSTPU, UPTSTU, UTSTU, UPTPU,
UPTU, UTPU. One skip-gram embedding table is shared by all seven: each meta-path has its own
MetaPath2Vec walker, whose walks are mapped into the shared table's node numbering, and the
shared table's MetaPath2Vec computes the negative-sampling loss.

The system's `graph_init` part is `Metapath2Vec` (SYSML) or `RandomInit` (sub-forum rows left at
their random initialisation: the "- graph context" ablation).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import torch

from tasks.forum.records import ForumPost

logger = logging.getLogger("harness")

USER, SUBFORUM, THREAD, POST = "user", "subforum", "thread", "post"
_EDGES = {
    "UP": (USER, "writes", POST),
    "PU": (POST, "written_by", USER),
    "PT": (POST, "in", THREAD),
    "TP": (THREAD, "has", POST),
    "TS": (THREAD, "in", SUBFORUM),
    "ST": (SUBFORUM, "has", THREAD),
    "UT": (USER, "starts", THREAD),
    "TU": (THREAD, "started_by", USER),
}
META_PATHS = ("UPTSTPU", "UTSTPU", "UPTSTU", "UTSTU", "UPTPU", "UPTU", "UTPU")
WALKS_PER_STEP = 640  # 128 users x 5 walks: the step size of the defaults, kept for larger walk counts


def meta_path_edges(path: str) -> list[tuple[str, str, str]]:
    """A meta-path in letters ("UPTU") as the edge types MetaPath2Vec walks."""
    return [_EDGES[a + b] for a, b in zip(path, path[1:], strict=False)]


def build_graph(
    posts: Sequence[ForumPost],
) -> tuple[dict[tuple[str, str, str], torch.Tensor], dict[str, int], list[str]]:
    """(edge index per edge type, node count per type, sub-forum names in node order) of one market.

    An opening post ("submission") links its author to the thread (U-T); any other post is a reply
    node (U-P, P-T). A thread's sub-forum is the one of its first post seen.
    """
    index: dict[str, dict[str, int]] = {USER: {}, SUBFORUM: {}, THREAD: {}, POST: {}}

    def node(kind: str, key: str) -> int:
        return index[kind].setdefault(key, len(index[kind]))

    edges: dict[str, list[tuple[int, int]]] = {name: [] for name in _EDGES}
    thread_forum: dict[int, int] = {}
    for post in posts:
        user, thread = node(USER, post.author), node(THREAD, post.thread_id)
        if thread not in thread_forum:
            thread_forum[thread] = node(SUBFORUM, post.subforum)
            edges["TS"].append((thread, thread_forum[thread]))
        if post.kind == "submission":
            edges["UT"].append((user, thread))
        else:
            reply = node(POST, post.post_id)
            edges["UP"].append((user, reply))
            edges["PT"].append((reply, thread))
    for forward, backward in (("UP", "PU"), ("PT", "TP"), ("TS", "ST"), ("UT", "TU")):
        edges[backward] = [(b, a) for a, b in edges[forward]]
    edge_index = {
        _EDGES[name]: torch.tensor(pairs, dtype=torch.long).t().reshape(2, -1) for name, pairs in edges.items()
    }
    counts = {kind: max(len(nodes), 1) for kind, nodes in index.items()}  # MetaPath2Vec needs >= 1 node a type
    forums = sorted(index[SUBFORUM], key=index[SUBFORUM].__getitem__)
    return edge_index, counts, forums


def subforum_vectors(
    posts: Sequence[ForumPost],
    *,
    dim: int,
    epochs: int = 1,
    walks_per_node: int = 5,
    walk_length: int | None = None,
    context_size: int = 5,
    negatives: int = 5,
    batch_size: int = 128,
    lr: float = 0.01,
    seed: int = 0,
    device: str = "cpu",
) -> dict[str, np.ndarray]:
    """{sub-forum: vector} learnt by metapath2vec over the seven meta-paths (empty without posts).

    walk_length: steps of each walk (the meta-path repeats); None: twice round the meta-path.
    batch_size: users whose walks make one skip-gram step (fewer above 640 walks a step).
    device: where the skip-gram table trains (the walks are sampled on the CPU).
    """
    from torch_geometric.nn import MetaPath2Vec

    if not posts:
        return {}
    edge_index, counts, forums = build_graph(posts)
    generator_state = torch.random.get_rng_state()
    torch.manual_seed(seed)
    try:

        def walker(path: str) -> MetaPath2Vec:
            edges = meta_path_edges(path)
            length = walk_length or 2 * len(edges)  # default: twice round the meta-path, user to user
            return MetaPath2Vec(
                edge_index,
                embedding_dim=dim,
                metapath=edges,
                walk_length=length,
                context_size=min(context_size, length + 1),
                walks_per_node=walks_per_node,
                num_negative_samples=negatives,
                num_nodes_dict=counts,
                sparse=False,  # dense Adam is far faster here: sparse gradients of 100k+ rows coalesce slowly
            )

        # users per step: `batch_size`, fewer when each has many walks (SYSML's 200 walks of 80 steps
        # would put 25,600 walks, gigabytes of windows, in one step): at most 640 walks a step
        starts = max(1, min(batch_size, WALKS_PER_STEP // walks_per_node))
        shared = walker(META_PATHS[0])  # UPTSTPU visits all four node types: its table numbers every node
        walkers = [(walker(path), path) for path in META_PATHS]
        shared.to(device)
        optimizer = torch.optim.Adam(shared.parameters(), lr=lr)
        for epoch in range(epochs):
            total, steps = 0.0, 0
            for model, _path in walkers:
                remap = _to_shared_numbering(model, shared).to(device)
                for positive, negative in model.loader(batch_size=starts, shuffle=True):
                    optimizer.zero_grad()
                    loss = shared.loss(remap[positive.to(device)], remap[negative.to(device)])
                    loss.backward()
                    optimizer.step()
                    total, steps = total + loss.item(), steps + 1
            logger.debug("metapath2vec epoch %d: loss %.4f", epoch + 1, total / max(steps, 1))
        table = shared(SUBFORUM).detach().cpu().numpy()
    finally:
        torch.random.set_rng_state(generator_state)
    return {forum: table[i].astype(np.float32) for i, forum in enumerate(forums)}


def _to_shared_numbering(model: torch.nn.Module, shared: torch.nn.Module) -> torch.Tensor:
    """Node numbers of one walker's table (its types only, plus a dummy) -> the shared table's."""
    remap = torch.full((model.dummy_idx + 1,), shared.dummy_idx, dtype=torch.long)
    for kind, start in model.start.items():
        size = model.end[kind] - start
        remap[start : start + size] = torch.arange(shared.start[kind], shared.start[kind] + size)
    return remap


@dataclass(frozen=True)
class Metapath2Vec:
    """Initialise sub-forum rows by metapath2vec: `epochs` passes, `walks_per_node` walks per user
    and meta-path of `walk_length` steps (None: twice round the meta-path), skip-gram window
    `context_size` (SYSML's graph_embedding_code README: 200 walks of 80 steps, window 7, 128 dims).

    freeze: keep the graph's sub-forum vectors fixed while the encoder trains. SYSML does: its
    context table is `nn.Embedding.from_pretrained(...)`, frozen by default, when a pretrained
    graph embedding is given (its scripts give one).
    """

    name: ClassVar[str] = "metapath2vec"
    epochs: int = 1
    walks_per_node: int = 3
    walk_length: int | None = None
    context_size: int = 5
    freeze: bool = False

    def __post_init__(self) -> None:
        if self.epochs < 0:
            raise ValueError(f"epochs must be at least 0, got {self.epochs!r}")
        if self.walks_per_node < 1:
            raise ValueError(f"walks_per_node must be at least 1, got {self.walks_per_node!r}")
        if self.walk_length is not None and self.walk_length < 1:
            raise ValueError(f"walk_length must be at least 1 or None, got {self.walk_length!r}")
        if self.context_size < 2:
            raise ValueError(f"context_size must be at least 2, got {self.context_size!r}")

    def vectors(self, posts: Sequence[ForumPost], *, dim: int, seed: int, device: str = "cpu") -> dict[str, np.ndarray]:
        """{sub-forum: vector} of one market's posts (see `subforum_vectors`)."""
        return subforum_vectors(
            posts,
            dim=dim,
            epochs=self.epochs,
            walks_per_node=self.walks_per_node,
            walk_length=self.walk_length,
            context_size=self.context_size,
            seed=seed,
            device=device,
        )


@dataclass(frozen=True)
class RandomInit:
    """Leave sub-forum rows at their random initialisation (no graph)."""

    name: ClassVar[str] = "random"


GraphInit = Metapath2Vec | RandomInit
