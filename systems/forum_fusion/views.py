"""The views of a forum sample that the fusion weighs, each a unit vector per sample.

- `word`: TF-IDF of words (the TF-IDF baselines' view: what a sample is about, and its word choice);
- `char`: TF-IDF of character 1..`char_max_ngram`-grams, case kept (punctuation, spelling, casing
  habits: the classic stylometric signal, less tied to topic than words);
- `community`: how a sample's posts spread over sub-forums or subreddits (SYSML's and Khan et al.'s
  context input; known communities are the training split's);
- `time`: how they spread over time bins (day of week in darkweb, hour of day in reddit).

A sample without a known term, community or time is a zero row in that view (cosine 0 to all).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from core.errors import HarnessError
from toolkit.tfidf import WORD_TOKEN_PATTERN, TfidfModel

VIEWS = ("word", "char", "community", "time")


class SampleParts(NamedTuple):
    """What the views read of one sample: its posts' texts, communities and time bins, oldest first."""

    texts: tuple[str, ...]
    communities: tuple[str, ...]
    times: tuple[int, ...]  # each in range(time_bins)


class ViewSettings(NamedTuple):
    word_features: int
    char_features: int
    char_max_ngram: int
    time_bins: int


class SampleViews(NamedTuple):
    """The fitted views: two TF-IDF models, the known communities, the number of time bins."""

    word: TfidfModel
    char: TfidfModel
    communities: tuple[str, ...]
    time_bins: int

    @classmethod
    def fit(cls, documents: Sequence[str], communities: Sequence[str], settings: ViewSettings) -> SampleViews:
        """TF-IDF vocabularies and idf of the training `documents`; the communities seen in training."""
        min_df = min(2, len(documents))
        word = TfidfModel.fit(
            documents, analyzer=word_analyzer(), max_features=settings.word_features, sublinear_tf=True, min_df=min_df
        )
        char = TfidfModel.fit(
            documents,
            analyzer=char_analyzer(settings.char_max_ngram),
            max_features=settings.char_features,
            sublinear_tf=True,
            min_df=min_df,
        )
        return cls(word, char, tuple(sorted(set(communities))), settings.time_bins)

    def transform(self, samples: Sequence[SampleParts]) -> dict[str, Any]:
        """Each view's unit rows, one per sample: sparse (CSR) for the TF-IDF views, dense float32 for the others."""
        documents = ["\n".join(sample.texts) for sample in samples]
        column = {name: index for index, name in enumerate(self.communities)}
        community = np.zeros((len(samples), len(self.communities)), dtype=np.float32)
        time = np.zeros((len(samples), self.time_bins), dtype=np.float32)
        for row, sample in enumerate(samples):
            for name in sample.communities:
                if name in column:
                    community[row, column[name]] += 1.0
            for bin_ in sample.times:
                time[row, bin_] += 1.0
        return {
            "word": self.word.weigh(self.word.counts(documents)).astype(np.float32),
            "char": self.char.weigh(self.char.counts(documents)).astype(np.float32),
            "community": _unit_rows(community),
            "time": _unit_rows(time),
        }

    def state(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        word_state, word_arrays = self.word.state()
        char_state, char_arrays = self.char.state()
        state = {
            "word": word_state,
            "char": char_state,
            "communities": list(self.communities),
            "time_bins": self.time_bins,
        }
        return state, {"word_idf": word_arrays["idf"], "char_idf": char_arrays["idf"]}

    @classmethod
    def from_state(
        cls, state: dict[str, Any], arrays: dict[str, np.ndarray], *, char_max_ngram: int, where: Path
    ) -> SampleViews:
        try:
            word = TfidfModel.from_state(
                state["word"], {"idf": arrays["word_idf"]}, analyzer=word_analyzer(), sublinear_tf=True, where=where
            )
            char = TfidfModel.from_state(
                state["char"],
                {"idf": arrays["char_idf"]},
                analyzer=char_analyzer(char_max_ngram),
                sublinear_tf=True,
                where=where,
            )
            communities = tuple(str(name) for name in state["communities"])
            time_bins = int(state["time_bins"])
        except (KeyError, TypeError, ValueError) as error:
            raise HarnessError(f"{where}: malformed fusion checkpoint ({error!r})") from error
        return cls(word, char, communities, time_bins)


def word_analyzer() -> dict[str, Any]:
    return {"analyzer": "word", "token_pattern": WORD_TOKEN_PATTERN, "ngram_range": (1, 1), "lowercase": True}


def char_analyzer(max_ngram: int) -> dict[str, Any]:
    return {"analyzer": "char", "ngram_range": (1, max_ngram), "lowercase": False}


def _unit_rows(matrix: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return np.divide(matrix, norms, out=np.zeros_like(matrix), where=norms > 0)
