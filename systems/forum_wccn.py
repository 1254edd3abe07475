"""Forum samples (darkweb episodes, reddit post runs) ranked by the cosine of WCCN style vectors.

A TF-IDF cosine ranks candidates by what they are about as much as by who wrote them: one user writes about other
things in other threads and months. `toolkit.style_space` whitens TF-IDF/SVD vectors by the covariance of one
author's samples, so the directions in which one author's writing varies count little in the cosine.

The within-author covariance needs two samples of one author. The split says who wrote each training sequence (a
darkweb episode, a reddit author's stream; `tasks.forum.records.ForumSplit`): an author with several sequences gives
them whole; an author with one (every reddit author) has it cut into `parts` runs of consecutive posts, oldest first,
each a sample of its author: what differs between them is what differs within one author over time and threads. The
vocabulary and SVD basis are learnt on whole sequences, at most `max_sequences` of them (drawn with the seed), the
unit a sample is embedded as.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from core.errors import HarnessError
from harness.system import constructor_params
from tasks.forum.records import ForumSample, ForumSplit, sample_texts
from toolkit.checkpoint import CONFIG_NAME, load_checkpoint, save_checkpoint
from toolkit.style_space import StyleSpace, check_space_params, fit_basis, fit_space


def _join(texts: Sequence[str]) -> str:
    return "\n".join(texts)


def author_samples(
    sequences: Sequence[Sequence[str]], authors: Sequence[str], parts: int
) -> tuple[list[str], np.ndarray]:
    """The training samples of the within-author covariance and an author number each: an author's sequences whole
    where there are several, else the one sequence (of at least `parts` posts) cut into `parts` runs of consecutive
    posts, as near equal in posts as can be."""
    numbers = {author: n for n, author in enumerate(dict.fromkeys(authors))}
    count = Counter(authors)
    documents, labels = [], []
    for posts, author in zip(sequences, authors, strict=True):
        if count[author] > 1:
            documents.append(_join(posts))
            labels.append(numbers[author])
        elif len(posts) >= parts:
            bounds = np.linspace(0, len(posts), parts + 1).round().astype(int)
            for start, end in zip(bounds[:-1], bounds[1:], strict=True):
                documents.append(_join(posts[start:end]))
                labels.append(numbers[author])
    return documents, np.array(labels, dtype=np.int64)


class ForumWccn:
    """WCCN style vectors of a sample's posts (joined), compared by cosine; see the module docstring.

    Parameters: dimensions (the SVD's size), shrinkage (added to the within-author covariance, as a share of its
    mean variance), char_features / word_features (vocabulary sizes), parts (runs the one sequence of an author
    is cut into), max_sequences (training sequences the basis is learnt from; all are used for the covariance).
    """

    name: ClassVar[str] = "forum_wccn"
    metric: ClassVar[str] = "cosine"

    def __init__(
        self,
        *,
        dimensions: int = 300,
        shrinkage: float = 0.1,
        char_features: int = 30000,
        word_features: int = 20000,
        parts: int = 2,
        max_sequences: int = 8000,
    ) -> None:
        try:
            check_space_params(dimensions, shrinkage, char_features, word_features)
        except ValueError as error:
            raise HarnessError(str(error)) from None
        if parts < 2 or max_sequences < 2:
            raise HarnessError(f"parts and max_sequences must be at least 2, got {parts!r} and {max_sequences!r}")
        self.dimensions = int(dimensions)
        self.shrinkage = float(shrinkage)
        self.char_features = int(char_features)
        self.word_features = int(word_features)
        self.parts = int(parts)
        self.max_sequences = int(max_sequences)
        self._space: StyleSpace | None = None
        self._info: dict[str, Any] = {}

    def params(self) -> dict[str, Any]:
        return constructor_params(self)

    @property
    def info(self) -> dict[str, Any]:
        """What fit saw: sequences, those the basis was learnt on, authors of the covariance, dimensions."""
        return self._info

    def fit(self, train: ForumSplit, *, seed: int) -> None:
        pairs = [(posts, author) for posts, author in zip(train.post_texts(), train.sequence_authors(), strict=True)]
        sequences = [posts for posts, _ in pairs if posts]
        authors = [author for posts, author in pairs if posts]
        if len(sequences) < 3:
            raise HarnessError(f"{self.name}: needs at least 3 training sequences, got {len(sequences)}")
        rng = np.random.default_rng(seed)
        drawn = sorted(rng.permutation(len(sequences))[: self.max_sequences])
        basis = fit_basis(
            [_join(sequences[i]) for i in drawn], dimensions=self.dimensions, char_features=self.char_features,
            word_features=self.word_features, seed=seed, label=self.name,
        )  # fmt: skip
        documents, labels = author_samples(sequences, authors, self.parts)
        if not documents:
            raise HarnessError(f"{self.name}: no training author has two sequences or one of {self.parts} posts")
        self._space, used = fit_space(basis, documents, labels, shrinkage=self.shrinkage)
        self._info = {
            "sequences": len(sequences),
            "basis_sequences": len(drawn),
            "authors_with_two_samples": used,
            "dimensions": len(self._space.mean),
        }

    def embed(self, samples: Sequence[ForumSample]) -> np.ndarray:
        """Unit-length whitened style vectors (float32)."""
        if self._space is None:
            raise HarnessError(f"{self.name}: not fitted; call fit() or load() first")
        texts = [_join(sample_texts(sample)) for sample in samples]
        vectors = self._space.embed(texts, desc=f"{self.name}: embedding samples")
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0).astype(np.float32)

    def save(self, directory: Path) -> None:
        if self._space is None:
            raise HarnessError(f"{self.name}: not fitted; nothing to save")
        state, arrays = self._space.state()
        save_checkpoint(directory, system=self.name, params=self.params(), state=state | {"info": self._info},
                        arrays=arrays)  # fmt: skip

    @classmethod
    def load(cls, directory: Path) -> ForumWccn:
        params, state, arrays = load_checkpoint(directory, system=cls.name)
        where = Path(directory) / CONFIG_NAME
        try:
            system = cls(**params)
            system._space = StyleSpace.from_state(
                state, arrays, char_features=system.char_features, word_features=system.word_features, where=where
            )
            system._info = dict(state.get("info") or {})
        except (KeyError, TypeError, ValueError) as error:
            raise HarnessError(f"{directory}: malformed {cls.name} checkpoint ({error!r})") from error
        return system
