"""A style space: TF-IDF -> SVD -> whitened by the within-author covariance (WCCN), shared by the `wccn` systems.

Two texts of one author differ in genre, topic and time more than two authors' texts of one kind differ in style, so
a plain TF-IDF cosine mostly measures what a text is about and what kind it is. Speaker verification met the same
problem (one speaker over different channels) with within-class covariance normalisation (Hatch, Kajarekar &
Stolcke, ICSLP 2006): on training data with known speakers, estimate the covariance of the vectors *within* one
speaker and whiten by it, so that the directions in which one speaker's recordings vary count little in the cosine.
Here the speaker is the author:

1. character 1-4-gram and word TF-IDF (punctuation marks as words), sublinear tf, each block L2-normalised, side by
   side (`fit_basis`: vocabularies of the `char_features`/`word_features` most frequent terms in >= 2 texts);
2. a truncated SVD to `dimensions` (at most one fewer than the texts it is learnt from), centred on the training mean;
3. W = (S_w + shrinkage * tr(S_w) / d * I)^(-1/2), with S_w the within-author covariance of the training texts
   (`within_author_whitening`; authors with one text add nothing);
4. a text's style vector is W (z - mean); compare two by cosine.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
from scipy import sparse

from core.errors import HarnessError
from core.progress import Progress
from core.records import VerificationProblem, VerificationTruth
from harness.seeding import legacy_seed
from toolkit.splits import UnionFind
from toolkit.tfidf import WORD_TOKEN_PATTERN, TfidfModel

CHAR_ANALYZER: dict[str, Any] = {"analyzer": "char", "ngram_range": (1, 4), "lowercase": False}
WORD_ANALYZER: dict[str, Any] = {
    "analyzer": "word",
    "ngram_range": (1, 1),
    "lowercase": True,
    "token_pattern": WORD_TOKEN_PATTERN,
}
MIN_DF = 2  # a term of one training text says nothing about how an author's texts vary
BATCH = 256  # texts counted at a time, so that progress advances per text

logger = logging.getLogger("harness")


class Basis(NamedTuple):
    """Where texts become vectors: the two TF-IDF weightings and the SVD basis (d, vocabulary)."""

    char: TfidfModel
    word: TfidfModel
    components: np.ndarray

    def reduce(self, texts: Sequence[str], *, desc: str | None = None) -> np.ndarray:
        """The texts' SVD coordinates (rows), with progress per text where `desc` names the step."""
        parts = []
        with Progress(len(texts), desc=desc or "", unit="texts", disable=desc is None) as progress:
            for start in range(0, len(texts), BATCH):
                batch = texts[start : start + BATCH]
                parts.append(tfidf_rows(self.char, self.word, batch) @ self.components.T)
                progress.update(len(batch))
        return np.vstack(parts) if parts else np.zeros((0, len(self.components)))


class StyleSpace(NamedTuple):
    """A fitted pipeline: texts -> TF-IDF -> SVD -> centred -> whitened by the within-author covariance."""

    basis: Basis
    mean: np.ndarray  # (d,): the training texts' mean in the SVD space
    whitening: np.ndarray  # (d, d): (S_w + shrinkage)^(-1/2)

    def embed(self, texts: Sequence[str], *, desc: str) -> np.ndarray:
        """One whitened style vector per text (rows)."""
        return (self.basis.reduce(texts, desc=desc) - self.mean) @ self.whitening

    def state(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """(JSON state, arrays) for a checkpoint: vocabularies in the state, the rest as arrays."""
        char, word, components = self.basis
        state = {"char_vocabulary": char.vocabulary, "word_vocabulary": word.vocabulary}
        arrays = {"char_idf": char.idf, "word_idf": word.idf, "components": components}
        return state, arrays | {"mean": self.mean, "whitening": self.whitening}

    @classmethod
    def from_state(
        cls,
        state: Mapping[str, Any],
        arrays: Mapping[str, np.ndarray],
        *,
        char_features: int,
        word_features: int,
        where: Path,
    ) -> StyleSpace:
        """Read back what `state` gave; shapes that do not fit together are a HarnessError naming `where`."""
        char = TfidfModel.from_state(
            {"vocabulary": state["char_vocabulary"]}, {"idf": arrays["char_idf"]},
            analyzer=CHAR_ANALYZER, sublinear_tf=True, where=where,
        )  # fmt: skip
        word = TfidfModel.from_state(
            {"vocabulary": state["word_vocabulary"]}, {"idf": arrays["word_idf"]},
            analyzer=WORD_ANALYZER, sublinear_tf=True, where=where,
        )  # fmt: skip
        components = np.asarray(arrays["components"], dtype=np.float64)
        mean = np.asarray(arrays["mean"], dtype=np.float64)
        whitening = np.asarray(arrays["whitening"], dtype=np.float64)
        vocabulary, dimensions = len(char.vocabulary) + len(word.vocabulary), components.shape[0]
        expected = ((dimensions, vocabulary), (dimensions,), (dimensions, dimensions))
        if (components.shape, mean.shape, whitening.shape) != expected:
            raise HarnessError(
                f"{where}: components {components.shape}, mean {mean.shape} and whitening {whitening.shape} "
                f"do not fit a vocabulary of {vocabulary}"
            )
        if len(char.vocabulary) > char_features or len(word.vocabulary) > word_features:
            raise HarnessError(f"{where}: the vocabularies are larger than char_features/word_features allow")
        return cls(Basis(char, word, components), mean, whitening)


def text_types(problems: Sequence[VerificationProblem]) -> dict[str, str]:
    """Each text's discourse type, as the first problem that gives one says; texts whose problems give none are
    absent (callers read them as "")."""
    types: dict[str, str] = {}
    for problem in problems:
        for text, kind in zip(problem.texts, problem.discourse_types or (), strict=False):
            types.setdefault(text, kind)
    return types


def text_authors(
    problems: Sequence[VerificationProblem], truth: Mapping[str, VerificationTruth]
) -> tuple[list[str], np.ndarray]:
    """The distinct texts of `problems` and an author group per text: the truth's author names where it gives them,
    joined with what the problems say (a problem's known texts share an author; a same-author problem's unknown text
    shares it too), so PAN 2013-2015 data, which names no authors, has author groups as well."""
    texts: dict[str, int] = {}
    names: dict[str, int] = {}
    groups = UnionFind()

    def node(key: str, table: dict[str, int]) -> int:
        if key not in table:
            table[key] = groups.add()
        return table[key]

    for problem in problems:
        ids = [node(text, texts) for text in problem.texts]
        for other in ids[1:-1]:
            groups.union(ids[0], other)
        record = truth[problem.id]
        if record.same:
            groups.union(ids[0], ids[-1])
        if record.authors is not None and len(record.authors) == len(ids):
            for text_id, author in zip(ids, record.authors, strict=True):
                groups.union(text_id, node(str(author), names))
    return list(texts), np.array([groups.find(i) for i in texts.values()], dtype=np.int64)


def distinct_texts(problems: Sequence[VerificationProblem]) -> list[str]:
    """The problems' distinct texts in order; a problem without a known and an unknown text is a HarnessError."""
    for problem in problems:
        if len(problem.texts) < 2:
            raise HarnessError(f"problem {problem.id}: needs at least one known text and the unknown text")
    return list(dict.fromkeys(text for problem in problems for text in problem.texts))


def cosine_scores(problems: Sequence[VerificationProblem], texts: Sequence[str], vectors: np.ndarray) -> np.ndarray:
    """(1 + cosine) / 2 of each problem's known texts' mean style vector and its unknown text's, in [0, 1];
    `vectors` holds one style vector (row) per text of `texts` (`distinct_texts`)."""
    row = {text: i for i, text in enumerate(texts)}
    scores = np.empty(len(problems))
    for p, problem in enumerate(problems):
        known = vectors[[row[t] for t in problem.known]].mean(axis=0)
        unknown = vectors[row[problem.unknown]]
        norms = np.linalg.norm(known) * np.linalg.norm(unknown)
        cosine = float(known @ unknown / norms) if norms > 0 else 0.0
        scores[p] = (1.0 + cosine) / 2.0
    return np.clip(scores, 0.0, 1.0)


def tfidf_rows(char: TfidfModel, word: TfidfModel, texts: Sequence[str]) -> sparse.csr_matrix:
    return sparse.hstack([char.weigh(char.counts(texts)), word.weigh(word.counts(texts))], format="csr")


def fit_basis(
    texts: Sequence[str], *, dimensions: int, char_features: int, word_features: int, seed: int, label: str
) -> Basis:
    """Vocabularies, idf and the SVD basis learnt from `texts` (`label` names the system in the log line)."""
    from sklearn.decomposition import TruncatedSVD

    started = time.perf_counter()
    options = {"sublinear_tf": True, "min_df": MIN_DF}
    char = TfidfModel.fit(texts, analyzer=CHAR_ANALYZER, max_features=char_features, **options)
    word = TfidfModel.fit(texts, analyzer=WORD_ANALYZER, max_features=word_features, **options)
    matrix = sparse.vstack([tfidf_rows(char, word, texts[i : i + BATCH]) for i in range(0, len(texts), BATCH)])
    dimensions = min(dimensions, len(texts) - 1, matrix.shape[1] - 1)
    svd = TruncatedSVD(n_components=dimensions, random_state=legacy_seed(seed)).fit(matrix)
    logger.info(
        "%s: vocabulary and %d-dimensional basis from %d texts, took %.0fs",
        label, dimensions, len(texts), time.perf_counter() - started,
    )  # fmt: skip
    return Basis(char, word, svd.components_.astype(np.float64))


def fit_space(basis: Basis, texts: Sequence[str], authors: np.ndarray, *, shrinkage: float) -> tuple[StyleSpace, int]:
    """The style space of these training texts in `basis`: their mean and the whitening by their authors'
    within-author covariance; and how many authors (with two or more texts) estimated it."""
    reduced = basis.reduce(texts)
    mean = reduced.mean(axis=0)
    whitening, used = within_author_whitening(reduced - mean, authors, shrinkage)
    return StyleSpace(basis, mean, whitening), used


def within_author_whitening(vectors: np.ndarray, authors: np.ndarray, shrinkage: float) -> tuple[np.ndarray, int]:
    """(S_w + shrinkage * tr(S_w)/d * I)^(-1/2), and how many authors with two or more texts estimated S_w."""
    dimensions = vectors.shape[1]
    scatter = np.zeros((dimensions, dimensions))
    counted, used = 0, 0
    for author in np.unique(authors):
        mine = vectors[authors == author]
        if len(mine) < 2:
            continue
        centred = mine - mine.mean(axis=0)
        scatter += centred.T @ centred
        counted += len(mine)
        used += 1
    if used == 0:
        raise HarnessError("no training author has two texts: the within-author covariance cannot be estimated")
    scatter /= counted
    scatter += shrinkage * np.trace(scatter) / dimensions * np.eye(dimensions)
    values, vectors_ = np.linalg.eigh(scatter)
    values = np.maximum(values, 1e-12 * values.max())
    return (vectors_ * values**-0.5) @ vectors_.T, used


def check_space_params(dimensions: int, shrinkage: float, char_features: int, word_features: int) -> None:
    """Refuse settings no style space can have (a ValueError naming the parameter)."""
    if dimensions < 1:
        raise ValueError(f"dimensions must be positive, got {dimensions!r}")
    if not shrinkage >= 0:
        raise ValueError(f"shrinkage must be zero or positive, got {shrinkage!r}")
    if char_features < 1 or word_features < 1:
        raise ValueError(f"char_features and word_features must be positive, got {char_features!r}, {word_features!r}")
