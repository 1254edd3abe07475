"""`reddit_tfidf`: the paper's TF-IDF baseline: TF-IDF of a sample's concatenated text, cosine similarity.

Terms are words (any length) and punctuation marks, as in the harness's word TF-IDF baseline; the
vocabulary (the `max_features` most frequent terms in at least `min_df` posts) and idf are fitted
on the training posts, one post per document.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from harness.errors import HarnessError
from harness.system import constructor_params
from tasks.reddit.records import Action, RedditData
from toolkit.checkpoint import load_checkpoint, save_checkpoint
from toolkit.tfidf import TfidfModel

# words of any length and each punctuation mark (the same terms as systems.baselines.tfidf)
TOKEN_PATTERN = r"(?u)\w+|[^\w\s]"


class RedditTfidf:
    """TF-IDF vectors of concatenated sample texts, compared by cosine (metric "cosine")."""

    name: ClassVar[str] = "reddit_tfidf"
    metric: ClassVar[str] = "cosine"

    def __init__(
        self,
        *,
        max_features: int | None = 20000,
        max_ngram: int = 1,
        min_df: int = 2,
        sublinear_tf: bool = True,
        lowercase: bool = True,
    ) -> None:
        if max_features is not None and max_features < 1:
            raise HarnessError(f"max_features must be positive or None, got {max_features!r}")
        if max_ngram < 1 or min_df < 1:
            raise HarnessError("max_ngram and min_df must be positive")
        self.max_features = max_features
        self.max_ngram = max_ngram
        self.min_df = min_df
        self.sublinear_tf = sublinear_tf
        self.lowercase = lowercase
        self._tfidf: TfidfModel | None = None

    def params(self) -> dict[str, Any]:
        return constructor_params(self)

    def _analyzer(self) -> dict[str, Any]:
        return {"ngram_range": (1, self.max_ngram), "lowercase": self.lowercase, "token_pattern": TOKEN_PATTERN}

    def fit(self, train: RedditData, *, seed: int) -> None:
        """Vocabulary and idf from the training posts (nothing random: the seed is unused)."""
        texts = [a.text for s in train.streams for a in s.actions]
        min_df = self.min_df if len(texts) >= 2 * self.min_df else 1  # a tiny corpus keeps every term
        try:
            self._tfidf = TfidfModel.fit(
                texts, analyzer=self._analyzer(), max_features=self.max_features, min_df=min_df,
                sublinear_tf=self.sublinear_tf,
            )  # fmt: skip
        except HarnessError as error:
            raise HarnessError(f"{self.name}: {error}") from error

    def embed(self, samples: Sequence[Sequence[Action]]) -> np.ndarray:
        """Dense L2-normalised TF-IDF rows; a sample without known terms is a zero row (cosine 0 to all)."""
        if self._tfidf is None:
            raise HarnessError(f"{self.name}: not fitted; call fit() or load() first")
        return self._tfidf.transform(["\n".join(a.text for a in sample) for sample in samples])

    def save(self, directory: Path) -> None:
        if self._tfidf is None:
            raise HarnessError(f"{self.name}: not fitted; nothing to save")
        state, arrays = self._tfidf.state()
        save_checkpoint(directory, system=self.name, params=self.params(), state=state, arrays=arrays)

    @classmethod
    def load(cls, directory: Path) -> RedditTfidf:
        params, state, arrays = load_checkpoint(directory, system=cls.name)
        try:
            system = cls(**params)
        except (TypeError, ValueError) as error:
            raise HarnessError(f"{directory}: malformed {cls.name} checkpoint ({error!r})") from error
        system._tfidf = TfidfModel.from_state(
            state, arrays, analyzer=system._analyzer(), sublinear_tf=system.sublinear_tf, where=directory
        )
        return system
