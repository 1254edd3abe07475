"""Style vectors with the within-author variation taken out: within-class covariance normalisation (WCCN).

Across discourse types two texts of one author differ in genre and topic more than two authors' texts of one genre
differ in style, so a plain TF-IDF cosine mostly measures genre. Speaker verification met the same problem (one
speaker over different channels) with WCCN (Hatch, Kajarekar & Stolcke, ICSLP 2006): on training data with known
speakers, estimate the covariance of the vectors *within* one speaker and whiten by it, so that the directions in which
one speaker's recordings vary (the channel) count little in the cosine. Here the speaker is the author and the channel
the discourse type and topic:

1. character 1-4-gram and word TF-IDF (punctuation marks as words) of the training texts, sublinear tf, each block
   L2-normalised, side by side;
2. a truncated SVD to `dimensions` (at most one fewer than the training texts), centred on the training mean;
3. W = (S_w + shrinkage * tr(S_w) / d * I)^(-1/2), with S_w the within-author covariance of the training texts. The
   authors are the truth's where it names them, joined with what the problems say: a problem's known texts share an
   author, and a same-author problem's unknown text shares it too (PAN 2013-2015 name no authors);
4. a problem's raw score is the cosine of W z(known) and W z(unknown), z(known) the mean of its known texts' vectors,
   as (1 + cosine) / 2 in [0, 1]. The abstain band is fitted on out-of-fold scores: each fold's whole pipeline (TF-IDF,
   SVD, W and the authors) is fitted on the other folds' problems only.

A `background` corpus (unlabelled texts of other people: forum posts, a folder of .txt files) is where the
vocabulary, idf and SVD basis are learnt instead of the training texts; the within-author covariance and the mean
still come from the training texts. A basis learnt from a few hundred training texts fits those very texts (and
their topics); one learnt from thousands of others describes writing in general, and the whitening then works in
it (CMCC, 7 training authors: see benchmarks/README.md). The basis is learnt once and shared by the cross-fitting
folds, which it cannot leak into: it holds no training text. Posts are
joined, in file order and per author where the file names them, into documents of `background_length` characters
or more, the length of a text to verify; `background_texts` of them, drawn with the seed, are used. The background
must hold no test text: its texts shape the space every test text is scored in.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, NamedTuple

import numpy as np
from scipy import sparse

from core.errors import DataError, HarnessError
from core.files import read_jsonl
from core.progress import Progress
from core.records import VerificationData, VerificationProblem, VerificationTruth
from toolkit.calibration import fit_then_score
from toolkit.splits import UnionFind
from toolkit.tfidf import WORD_TOKEN_PATTERN, TfidfModel
from toolkit.verifier import CalibratedVerifier

CHAR_ANALYZER: dict[str, Any] = {"analyzer": "char", "ngram_range": (1, 4), "lowercase": False}
WORD_ANALYZER: dict[str, Any] = {
    "analyzer": "word",
    "ngram_range": (1, 1),
    "lowercase": True,
    "token_pattern": WORD_TOKEN_PATTERN,
}
logger = logging.getLogger("harness")

MIN_DF = 2  # a term in one training text says nothing about how an author's texts vary
BATCH = 256  # texts counted at a time, so that progress advances per text


class Basis(NamedTuple):
    """Where texts become vectors: the two TF-IDF weightings and the SVD basis (d, vocabulary)."""

    char: TfidfModel
    word: TfidfModel
    components: np.ndarray


class StyleSpace(NamedTuple):
    """A fitted pipeline: texts -> TF-IDF -> SVD -> centred -> whitened by the within-author covariance."""

    char: TfidfModel
    word: TfidfModel
    components: np.ndarray  # (d, vocabulary): the SVD's basis
    mean: np.ndarray  # (d,): the training texts' mean in the SVD space
    whitening: np.ndarray  # (d, d): (S_w + shrinkage)^(-1/2)

    def embed(self, texts: Sequence[str], *, desc: str) -> np.ndarray:
        """One whitened style vector per text (rows)."""
        parts = []
        with Progress(len(texts), desc=desc, unit="texts") as progress:
            for start in range(0, len(texts), BATCH):
                batch = texts[start : start + BATCH]
                parts.append(tfidf_rows(self.char, self.word, batch) @ self.components.T)
                progress.update(len(batch))
        reduced = np.vstack(parts) if parts else np.zeros((0, len(self.mean)))
        return (reduced - self.mean) @ self.whitening


def tfidf_rows(char: TfidfModel, word: TfidfModel, texts: Sequence[str]) -> sparse.csr_matrix:
    return sparse.hstack([char.weigh(char.counts(texts)), word.weigh(word.counts(texts))], format="csr")


def text_authors(
    problems: Sequence[VerificationProblem], truth: Mapping[str, VerificationTruth]
) -> tuple[list[str], np.ndarray]:
    """The distinct texts of `problems` and an author group per text (see the module docstring, step 3)."""
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


def background_documents(path: Path, *, count: int, length: int, seed: int) -> list[str]:
    """`count` documents of at least `length` characters from a posts file (.jsonl or .jsonl.gz, a "text" per line,
    optionally an "author") or a folder of .txt files (one document each, however long), drawn with `seed`."""
    if path.is_dir():
        files = sorted(path.rglob("*.txt"))
        if not files:
            raise HarnessError(f"{path}: the background folder holds no .txt file")
        documents = [file.read_text(encoding="utf-8", errors="replace") for file in files]
    elif path.is_file():
        pending: dict[str, list[str]] = {}
        documents = []
        for line, record in read_jsonl(path):
            text = record.get("text") if isinstance(record, dict) else None
            if not isinstance(text, str):
                raise DataError("must be a string", path=path, line=line, field="text")
            author = str(record.get("author", ""))  # posts of no named author are joined in file order
            parts = pending.setdefault(author, [])
            parts.append(text)
            if sum(map(len, parts)) >= length:
                documents.append("\n\n".join(parts))
                del pending[author]
    else:
        raise HarnessError(f"{path}: background corpus not found (a posts .jsonl[.gz] file or a folder of .txt files)")
    if len(documents) < 2:
        raise HarnessError(f"{path}: the background gives {len(documents)} document(s) of {length}+ characters")
    order = np.random.default_rng(seed).permutation(len(documents))[:count]
    return [documents[i] for i in sorted(order)]


class WccnCosine(CalibratedVerifier):
    """Cosine of TF-IDF style vectors after within-class (author) covariance normalisation; see the module docstring.

    Parameters:
        dimensions: the SVD's size (capped at the training texts less one).
        shrinkage: how much of a scaled identity is added to the within-author covariance before it is inverted
            (0: full whitening; larger: closer to a plain cosine in the SVD space).
        char_features, word_features: the most frequent character 1-4-grams and words kept (in >= 2 texts).
        background: None, or a corpus of other people's texts where the vocabulary and SVD basis are learnt
            instead of the training texts (see the module docstring); background_texts documents of
            background_length characters or more are drawn from it.
    """

    name: ClassVar[str] = "wccn"
    FITTED: ClassVar[tuple[str, ...]] = ("_space", "_band")

    def __init__(
        self,
        *,
        dimensions: int = 200,
        shrinkage: float = 0.1,
        char_features: int = 30000,
        word_features: int = 10000,
        background: str | None = None,
        background_texts: int = 6000,
        background_length: int = 2500,
        grid_step: float = 0.01,
        objective: str = "overall",
        calibration_folds: int = 5,
    ) -> None:
        if dimensions < 1:
            raise ValueError(f"dimensions must be positive, got {dimensions!r}")
        if not shrinkage >= 0:
            raise ValueError(f"shrinkage must be zero or positive, got {shrinkage!r}")
        if char_features < 1 or word_features < 1:
            raise ValueError(
                f"char_features and word_features must be positive, got {char_features!r}, {word_features!r}"
            )
        if background_texts < 2 or background_length < 1:
            raise ValueError(
                f"background_texts must be at least 2 and background_length positive, got {background_texts!r}, "
                f"{background_length!r}"
            )
        super().__init__(locals())
        self._space: StyleSpace | None = None
        self._info: dict[str, Any] = {}

    @property
    def info(self) -> dict[str, Any]:
        """What fit saw: texts, author groups (those with two or more texts estimated S_w), dimensions."""
        return self._info

    def _fit(self, train: VerificationData, labels: np.ndarray, *, seed: int) -> None:
        assert train.truth is not None  # training_labels checked it
        truth = train.truth
        background = self._background(seed)
        # with a background the basis is the background's, one for every fold; without, each fold learns its own
        shared = self._fit_basis(background, seed=seed) if background else None

        def fit(problems: Sequence[VerificationProblem]) -> StyleSpace:
            return self._fit_space(problems, truth, shared, seed=seed)

        self.cross_fit_band(train, labels, fit_then_score(train.problems, fit, self._similarities), seed=seed)
        self._space = self._fit_space(train.problems, truth, shared, seed=seed, record=True)
        self._info["background_documents"] = len(background)

    def _background(self, seed: int) -> list[str]:
        if self.background is None:
            return []
        path = Path(self.background).expanduser()
        return background_documents(path, count=self.background_texts, length=self.background_length, seed=seed)

    def _fit_basis(self, texts: Sequence[str], *, seed: int) -> Basis:
        """Vocabularies, idf and the SVD basis learnt from `texts`."""
        from sklearn.decomposition import TruncatedSVD

        started = time.perf_counter()
        options = {"sublinear_tf": True, "min_df": MIN_DF}
        char = TfidfModel.fit(texts, analyzer=CHAR_ANALYZER, max_features=self.char_features, **options)
        word = TfidfModel.fit(texts, analyzer=WORD_ANALYZER, max_features=self.word_features, **options)
        matrix = sparse.vstack([tfidf_rows(char, word, texts[i : i + BATCH]) for i in range(0, len(texts), BATCH)])
        dimensions = min(self.dimensions, len(texts) - 1, matrix.shape[1] - 1)
        svd = TruncatedSVD(n_components=dimensions, random_state=seed).fit(matrix)
        logger.info(
            "%s: vocabulary and %d-dimensional basis from %d texts, took %.0fs",
            self.name, dimensions, len(texts), time.perf_counter() - started,
        )  # fmt: skip
        return Basis(char, word, svd.components_.astype(np.float64))

    def _fit_space(
        self,
        problems: Sequence[VerificationProblem],
        truth: Mapping[str, VerificationTruth],
        basis: Basis | None,
        *,
        seed: int,
        record: bool = False,
    ) -> StyleSpace:
        """The style space of these training problems: `basis` (or one learnt from their texts), their mean, and
        the whitening by their authors' within-author covariance."""
        texts, authors = text_authors(problems, truth)
        if len(texts) < 3:
            raise HarnessError(f"{self.name}: needs at least 3 distinct training texts, got {len(texts)}")
        if basis is None:
            basis = self._fit_basis(texts, seed=seed)
        char, word, components = basis
        rows = [tfidf_rows(char, word, texts[i : i + BATCH]) @ components.T for i in range(0, len(texts), BATCH)]
        reduced = np.vstack(rows)
        mean = reduced.mean(axis=0)
        whitening, used = within_author_whitening(reduced - mean, authors, self.shrinkage)
        if record:
            self._info = {
                "texts": len(texts),
                "author_groups": int(len(np.unique(authors))),
                "authors_with_two_texts": used,
                "dimensions": len(components),
                "vocabulary": {"char": len(char.vocabulary), "word": len(word.vocabulary)},
            }
        return StyleSpace(char, word, components, mean, whitening)

    def raw_scores(self, problems: Sequence[VerificationProblem]) -> np.ndarray:
        """(1 + cosine) / 2 of each problem's whitened known (mean) and unknown vectors."""
        self._check_fitted()
        assert self._space is not None
        return self._similarities(problems, self._space)

    def _similarities(self, problems: Sequence[VerificationProblem], space: StyleSpace) -> np.ndarray:
        for problem in problems:
            if len(problem.texts) < 2:
                raise HarnessError(f"problem {problem.id}: needs at least one known text and the unknown text")
        texts = list(dict.fromkeys(text for problem in problems for text in problem.texts))
        row = {text: i for i, text in enumerate(texts)}
        vectors = space.embed(texts, desc=f"{self.name}: embedding texts")
        scores = np.empty(len(problems))
        for p, problem in enumerate(problems):
            known = vectors[[row[t] for t in problem.known]].mean(axis=0)
            unknown = vectors[row[problem.unknown]]
            norms = np.linalg.norm(known) * np.linalg.norm(unknown)
            cosine = float(known @ unknown / norms) if norms > 0 else 0.0
            scores[p] = (1.0 + cosine) / 2.0
        return np.clip(scores, 0.0, 1.0)

    def _state(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """Vocabularies, band and seed in config.json; idf, SVD basis, mean and whitening in weights.safetensors."""
        assert self._space is not None
        space = self._space
        state = {"char_vocabulary": space.char.vocabulary, "word_vocabulary": space.word.vocabulary, "info": self._info}
        arrays = {
            "char_idf": space.char.idf,
            "word_idf": space.word.idf,
            "components": space.components,
            "mean": space.mean,
            "whitening": space.whitening,
        }
        return state | self.band_state(), arrays

    def _restore(self, state: Mapping[str, Any], arrays: Mapping[str, np.ndarray], *, where: Path) -> None:
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
        vocabulary = len(char.vocabulary) + len(word.vocabulary)
        dimensions = components.shape[0]
        if (
            components.shape != (dimensions, vocabulary)
            or mean.shape != (dimensions,)
            or whitening.shape
            != (
                dimensions,
                dimensions,
            )
        ):
            raise HarnessError(
                f"{where}: components {components.shape}, mean {mean.shape} and whitening {whitening.shape} "
                f"do not fit a vocabulary of {vocabulary}"
            )
        if char.vocabulary and len(char.vocabulary) > self.char_features or len(word.vocabulary) > self.word_features:
            raise HarnessError(f"{where}: the vocabularies are larger than char_features/word_features allow")
        self._space = StyleSpace(char, word, components, mean, whitening)
        self._info = dict(state.get("info") or {})
