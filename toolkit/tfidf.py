"""A fitted TF-IDF weighting (vocabulary + idf), shared by every TF-IDF system, saved without pickle.

scikit-learn's vectoriser learns the vocabulary and idf; afterwards texts are counted with a
fixed vocabulary, so a model read back from a checkpoint gives exactly the same vectors.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from core.errors import HarnessError

# The word analyzer's terms: words of any length ("I", "a" carry style) and each punctuation mark as a
# term of its own; scikit-learn's default pattern drops both. Every word TF-IDF system uses it.
WORD_TOKEN_PATTERN = r"(?u)\w+|[^\w\s]"


class TfidfModel(NamedTuple):
    vocabulary: list[str]
    idf: np.ndarray
    analyzer: dict[str, Any]  # how a text becomes terms: scikit-learn vectoriser options
    sublinear_tf: bool

    @classmethod
    def fit(
        cls,
        texts: Sequence[str],
        *,
        analyzer: dict[str, Any],
        max_features: int | None,
        sublinear_tf: bool,
        min_df: int = 1,
    ) -> TfidfModel:
        """Learn the vocabulary (the `max_features` most frequent terms in >= `min_df` texts) and idf."""
        from sklearn.feature_extraction.text import TfidfVectorizer

        vectorizer = TfidfVectorizer(**analyzer, max_features=max_features, min_df=min_df, sublinear_tf=sublinear_tf)
        try:
            vectorizer.fit(texts)
        except ValueError as error:  # an empty vocabulary: no training text has a term
            raise HarnessError(f"cannot fit TF-IDF on the training texts ({error})") from error
        vocabulary = sorted(vectorizer.vocabulary_, key=vectorizer.vocabulary_.__getitem__)
        return cls(vocabulary, np.asarray(vectorizer.idf_, dtype=np.float64), analyzer, sublinear_tf)

    def counts(self, texts: Sequence[str]) -> Any:
        """Term counts (sparse, texts x vocabulary)."""
        from sklearn.feature_extraction.text import CountVectorizer

        counter = CountVectorizer(**self.analyzer, vocabulary=self.vocabulary, dtype=np.float64)
        return counter.transform(texts)

    def weigh(self, counts: Any) -> Any:
        """Term counts -> L2-normalised TF-IDF rows, as TfidfVectorizer.transform computes them."""
        from scipy import sparse
        from sklearn.preprocessing import normalize

        weights = sparse.csr_matrix(counts, dtype=np.float64, copy=True)
        if self.sublinear_tf:
            weights.data = np.log(weights.data) + 1.0
        return normalize(weights @ sparse.diags(self.idf), norm="l2")

    def transform(self, texts: Sequence[str]) -> np.ndarray:
        """Dense float32 unit rows; a text without known terms is a zero row (cosine 0 to everything)."""
        return self.weigh(self.counts(texts)).toarray().astype(np.float32)

    def state(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """(JSON state, arrays) for `toolkit.checkpoint.save_checkpoint`."""
        return {"vocabulary": self.vocabulary}, {"idf": self.idf}

    @classmethod
    def from_state(
        cls,
        state: dict[str, Any],
        arrays: dict[str, np.ndarray],
        *,
        analyzer: dict[str, Any],
        sublinear_tf: bool,
        where: Path,
    ) -> TfidfModel:
        """Read back what `state` gave; a malformed checkpoint is a HarnessError naming `where`."""
        try:
            vocabulary = [str(term) for term in state["vocabulary"]]
            idf = np.asarray(arrays["idf"], dtype=np.float64)
        except (KeyError, TypeError, ValueError) as error:
            raise HarnessError(f"{where}: malformed TF-IDF checkpoint ({error!r})") from error
        if idf.shape != (len(vocabulary),):
            raise HarnessError(f"{where}: idf has shape {idf.shape} for a vocabulary of {len(vocabulary)}")
        return cls(vocabulary, idf, analyzer, sublinear_tf)
