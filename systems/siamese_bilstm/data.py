"""From a training split to what the Siamese model trains on: unique texts, their authors, their
discourse types, and an open-set validation split (authors disjoint from training).

Authors. Where the truth names authors (PAN 2020-2023, truth.jsonl `authors`), those names are
used. The PAN 2013-2015 corpora name none, so pseudo-authors are derived from the problems: the
known texts of a problem are one author; its unknown text is that author too when the truth says
Y, else another author of its own. The same real author appears under several problem ids there
(PAN 2014 essays: 142 of 625 texts occur in more than one problem), and problem-id authors would
put that author twice in a batch, the false negatives the sampler exists to avoid. So texts are
identified as `toolkit.splits` identifies them, by the hash of the normalised text (`text_key`,
the key of `problem_groups`), and every author label a text carries is merged into one author
(union-find): problems that share a text share that text's author, transitively, and named
authors are merged the same way. After this no text belongs to two authors. A whole text-sharing
group of problems is *not* one author: an N problem's two sides are different people. Pseudo-authors
that share no text stay different although they may be one real person; nothing more can be
known from corpora without author names.

Validation. Problems are taken in a random order and their authors moved to the validation side
until it holds `share` of all authors; the validation problems are those whose authors are all on
that side, and training uses only the texts of the other authors. So the validation problems are
open-set for the trained model, as the paper's 70/15/15 author split.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from core.errors import HarnessError
from core.records import VerificationData, VerificationProblem, VerificationTruth
from systems.siamese_bilstm.routing import normalise_type
from toolkit.splits import text_key


class Corpus(NamedTuple):
    """The unique texts of a split with their authors, and each problem's texts and authors."""

    texts: list[str]
    types: list[str | None]  # normalised discourse type per text, None where not given
    authors: list[int]  # author index per text
    num_authors: int
    problem_texts: list[tuple[int, ...]]  # per problem: text indices, known texts then unknown
    problem_authors: list[frozenset[int]]
    labels: list[bool]  # per problem: same author?
    named: bool  # True where the truth named authors, False for pseudo-authors


def problem_author_labels(problem: VerificationProblem, truth: VerificationTruth) -> list[str]:
    """An author label per text of a problem: from the truth's names, else problem-local pseudo-authors."""
    n = len(problem.texts)
    authors = truth.named_authors  # None for the problem-local placeholders `harness convert` writes: no names
    if authors is not None and len(authors) == n:
        return [f"name:{a}" for a in authors]
    if authors is not None and len(authors) == 2:
        return [f"name:{authors[0]}"] * (n - 1) + [f"name:{authors[1]}"]
    known = f"problem:{problem.id}:known"
    unknown = known if truth.same else f"problem:{problem.id}:unknown"
    return [known] * (n - 1) + [unknown]


class _UnionFind:
    def __init__(self) -> None:
        self.parent: dict[str, str] = {}

    def find(self, x: str) -> str:
        self.parent.setdefault(x, x)
        root = x
        while self.parent[root] != root:
            root = self.parent[root]
        while self.parent[x] != root:  # path compression
            self.parent[x], x = root, self.parent[x]
        return root

    def union(self, a: str, b: str) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[max(ra, rb)] = min(ra, rb)


def collect_corpus(data: VerificationData) -> Corpus:
    """Unique texts (by normalised-text hash), authors (named or pseudo, merged over shared texts) and problems."""
    if data.truth is None:
        raise HarnessError(f"{data.source}: training needs truth, and this split was loaded without it")
    index: dict[str, int] = {}
    texts: list[str] = []
    types: list[str | None] = []
    text_labels: list[str] = []
    problem_texts: list[tuple[int, ...]] = []
    labels: list[bool] = []
    named = True
    uf = _UnionFind()
    for problem in data.problems:
        truth = data.truth.get(problem.id)
        if truth is None:
            raise HarnessError(f"{data.source}: no truth for problem {problem.id!r}")
        author_labels = problem_author_labels(problem, truth)
        named = named and author_labels[0].startswith("name:")
        ids = []
        for position, text in enumerate(problem.texts):
            key = text_key(text)  # a text repeated with other white space is the same text (and author)
            if key not in index:
                index[key] = len(texts)
                texts.append(text)
                dtype = problem.discourse_types[position] if problem.discourse_types else None
                types.append(normalise_type(dtype) if dtype else None)
                text_labels.append(f"text:{len(texts) - 1}")
            i = index[key]
            uf.union(text_labels[i], author_labels[position])
            ids.append(i)
        problem_texts.append(tuple(ids))
        labels.append(bool(truth.same))
    roots: dict[str, int] = {}
    authors = [roots.setdefault(uf.find(label), len(roots)) for label in text_labels]
    problem_authors = [frozenset(authors[i] for i in ids) for ids in problem_texts]
    return Corpus(texts, types, authors, len(roots), problem_texts, problem_authors, labels, named)


class AuthorSplit(NamedTuple):
    """The authors a model trains on, and the problems of the held-out (validation) and of the training authors."""

    train_authors: frozenset[int]
    validation_problems: list[int]  # problem indices whose authors are all held out
    train_problems: list[int]  # problem indices whose authors are all training authors


def split_validation(corpus: Corpus, share: float, *, seed: int) -> AuthorSplit:
    """Hold out about `share` of the authors, whole problems at a time (see the module docstring)."""
    if not 0.0 <= share < 1.0:
        raise ValueError(f"validation share must be in [0, 1), got {share!r}")
    rng = np.random.default_rng(seed)
    held: set[int] = set()
    target = share * corpus.num_authors
    for p in rng.permutation(len(corpus.problem_texts)):
        if len(held) >= target:
            break
        held |= corpus.problem_authors[int(p)]
    validation = [p for p, a in enumerate(corpus.problem_authors) if a <= held]
    train_authors = frozenset(range(corpus.num_authors)) - held
    train_problems = [p for p, a in enumerate(corpus.problem_authors) if a <= train_authors]
    return AuthorSplit(train_authors, validation, train_problems)


def author_pool(
    corpus: Corpus, chunk_rows: Sequence[np.ndarray], authors: frozenset[int], types: Sequence[str] | None
) -> list[list[np.ndarray]]:
    """pool[author][text] = feature rows of the chunks of that author's texts (of `types`, or all).

    `chunk_rows[i]` are the rows of text i's chunks; texts of other authors or types are left out,
    as are authors left with no text.
    """
    wanted = None if types is None else set(types)
    by_author: dict[int, list[np.ndarray]] = {}
    for i, author in enumerate(corpus.authors):
        if author not in authors or (wanted is not None and corpus.types[i] not in wanted):
            continue
        by_author.setdefault(author, []).append(chunk_rows[i])
    return [by_author[a] for a in sorted(by_author)]
