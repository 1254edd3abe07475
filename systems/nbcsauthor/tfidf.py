"""`episode_tfidf`: the TF-IDF baseline of the darkweb task: an episode is the bag of words of its posts.

Vocabulary and idf come from the training episodes; an episode's embedding is its L2-normalised
TF-IDF row (dense, `max_features` wide), so cosine ranking is TF-IDF cosine similarity.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from harness.errors import HarnessError
from harness.system import constructor_params
from tasks.darkweb.records import DarkwebData, Episode
from toolkit.checkpoint import load_checkpoint, save_checkpoint
from toolkit.tfidf import TfidfModel

# words of any length and each punctuation mark: both carry style (as systems.baselines.tfidf)
TOKEN_PATTERN = r"(?u)\w+|[^\w\s]"


class EpisodeTfidf:
    """TF-IDF of word n-grams (1..max_ngram) over an episode's posts; untrained apart from the vocabulary.

    Parameters: max_features (columns kept, by training frequency), max_ngram, min_df (episodes a
    term must occur in), sublinear_tf (1 + log tf), lowercase.
    """

    name = "episode_tfidf"

    def __init__(
        self,
        max_features: int = 10000,
        max_ngram: int = 1,
        min_df: int = 2,
        sublinear_tf: bool = True,
        lowercase: bool = True,
    ) -> None:
        if max_features < 1 or max_ngram < 1 or min_df < 1:
            raise HarnessError("max_features, max_ngram and min_df must be positive")
        self.max_features = int(max_features)
        self.max_ngram = int(max_ngram)
        self.min_df = int(min_df)
        self.sublinear_tf = bool(sublinear_tf)
        self.lowercase = bool(lowercase)
        self._tfidf: TfidfModel | None = None

    def params(self) -> dict[str, Any]:
        return constructor_params(self)

    def fit(self, train: DarkwebData, *, seed: int) -> None:
        """Vocabulary and idf of the training episodes (the seed changes nothing)."""
        self._tfidf = TfidfModel.fit(
            _texts(train.episodes),
            analyzer=self._analyzer(),
            max_features=self.max_features,
            min_df=min(self.min_df, len(train.episodes)),
            sublinear_tf=self.sublinear_tf,
        )

    def embed(self, samples: Sequence[Episode]) -> np.ndarray:
        """L2-normalised TF-IDF rows (n x vocabulary, float32)."""
        if self._tfidf is None:
            raise HarnessError(f"{self.name}: embed() before fit() or load()")
        return self._tfidf.transform(_texts(samples))

    def save(self, directory: Path) -> None:
        if self._tfidf is None:
            raise HarnessError(f"{self.name}: nothing to save before fit()")
        state, arrays = self._tfidf.state()
        save_checkpoint(directory, system=self.name, params=self.params(), state=state, arrays=arrays)

    @classmethod
    def load(cls, directory: Path) -> EpisodeTfidf:
        params, state, arrays = load_checkpoint(directory, system=cls.name)
        system = cls(**params)
        system._tfidf = TfidfModel.from_state(
            state, arrays, analyzer=system._analyzer(), sublinear_tf=system.sublinear_tf, where=directory
        )
        return system

    def _analyzer(self) -> dict[str, Any]:
        return {
            "analyzer": "word",
            "token_pattern": TOKEN_PATTERN,
            "ngram_range": (1, self.max_ngram),
            "lowercase": self.lowercase,
        }


def _texts(episodes: Sequence[Episode]) -> list[str]:
    return ["\n".join(p.text for p in e.posts) for e in episodes]
