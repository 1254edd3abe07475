"""Leak-free splits of verification problems: texts shared between problems keep them together.

PAN corpora reuse texts: in PAN14 English essays 142 of 625 texts occur in more than one problem,
and a random 50/50 split of PAN15's training problems put a shared text on both sides of 37 of
the 50 test problems. A split, a cross-validation fold or a calibration fold made here never puts
one text (compared after normalisation, by hash) on both sides: problems are grouped by the
connected components of "shares a text with" (and "shares an author with", where authors are
known), and whole groups are assigned.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Iterable, Sequence

import numpy as np

from core.errors import HarnessError
from core.records import VerificationProblem

_SPACE = re.compile(r"\s+")


def normalise_text(text: str) -> str:
    """The form texts are compared in: NFC, no BOM, white space runs folded to one space, stripped."""
    text = unicodedata.normalize("NFC", text).replace("\ufeff", "")
    return _SPACE.sub(" ", text).strip()


def text_key(text: str) -> str:
    """A text's identity for leak checks: a hash of the normalised text, equal for texts that differ only in white
    space, BOM or Unicode form (a feature cache keys raw text instead: `toolkit.feature_store.cache_key`)."""
    return hashlib.sha256(normalise_text(text).encode("utf-8", "surrogatepass")).hexdigest()


class UnionFind:
    """Sets of items 0..n-1 joined by `union`; a set is named by its lowest item, so results never depend on
    the order of the unions."""

    def __init__(self, size: int = 0) -> None:
        self.parent = list(range(size))

    def add(self) -> int:
        """A new item in a set of its own; its index."""
        self.parent.append(len(self.parent))
        return len(self.parent) - 1

    def find(self, item: int) -> int:
        while self.parent[item] != item:
            self.parent[item] = self.parent[self.parent[item]]
            item = self.parent[item]
        return item

    def union(self, a: int, b: int) -> None:
        root_a, root_b = self.find(a), self.find(b)
        if root_a != root_b:
            self.parent[max(root_a, root_b)] = min(root_a, root_b)


def problem_groups(
    problems: Sequence[VerificationProblem], authors: Sequence[Iterable[str] | None] | None = None
) -> np.ndarray:
    """A group number per problem: problems that share a text, or a known author, are in one group.

    `authors[i]` are the authors of problem i where the corpus names them (None where not).
    Groups are numbered 0, 1, ... in order of their first problem.
    """
    if authors is not None and len(authors) != len(problems):
        raise ValueError(f"{len(authors)} author entries for {len(problems)} problems")
    links = UnionFind(len(problems))
    first_with: dict[str, int] = {}
    for index, problem in enumerate(problems):
        keys = [f"text:{text_key(t)}" for t in problem.texts]
        if authors is not None and authors[index] is not None:
            keys += [f"author:{a}" for a in authors[index]]
        for key in keys:
            other = first_with.setdefault(key, index)
            links.union(index, other)
    roots = [links.find(i) for i in range(len(problems))]
    numbers: dict[int, int] = {}
    return np.array([numbers.setdefault(root, len(numbers)) for root in roots], dtype=np.int64)


def grouped_folds(groups: Sequence[int], k: int, *, seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """k (train, held-out) index pairs over whole groups, every problem held out once.

    Groups are shuffled with `seed`, then each goes to the fold that holds the fewest problems so
    far (largest groups first), so folds are about equal in size even when groups are not.
    """
    groups = np.asarray(groups)
    distinct = np.unique(groups)
    if k < 2:
        raise HarnessError(f"cross-validation needs at least 2 folds, got {k}")
    if len(distinct) < k:
        raise HarnessError(f"{len(distinct)} groups of problems that share no text cannot make {k} folds")
    rng = np.random.default_rng(seed)
    order = rng.permutation(distinct)
    sizes = {g: int((groups == g).sum()) for g in order}
    order = sorted(order, key=lambda g: -sizes[g])  # stable: equal sizes keep the shuffled order
    fold_of: dict[int, int] = {}
    load = [0] * k
    for group in order:
        fold = min(range(k), key=lambda f: (load[f], f))
        fold_of[int(group)] = fold
        load[fold] += sizes[group]
    assignment = np.array([fold_of[int(g)] for g in groups])
    indices = np.arange(len(groups))
    return [(indices[assignment != f], indices[assignment == f]) for f in range(k)]


def grouped_split(groups: Sequence[int], test_share: float, *, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(train, test) indices with about `test_share` of the problems in test, whole groups on one side."""
    if not 0.0 < test_share < 1.0:
        raise HarnessError(f"test_share must lie in (0, 1), got {test_share}")
    groups = np.asarray(groups)
    rng = np.random.default_rng(seed)
    target = test_share * len(groups)
    test_groups: set[int] = set()
    held = 0
    for group in rng.permutation(np.unique(groups)):
        size = int((groups == group).sum())
        if held + size / 2 > target:  # add a group while that brings the count closer to the target
            continue
        test_groups.add(int(group))
        held += size
    is_test = np.isin(groups, list(test_groups))
    indices = np.arange(len(groups))
    return indices[~is_test], indices[is_test]


def shared_texts(a: Sequence[VerificationProblem], b: Sequence[VerificationProblem]) -> int:
    """How many distinct (normalised) texts occur in both sets of problems."""
    keys_a = {text_key(t) for p in a for t in p.texts}
    keys_b = {text_key(t) for p in b for t in p.texts}
    return len(keys_a & keys_b)
