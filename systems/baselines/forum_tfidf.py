"""Word TF-IDF of a forum sample's posts, cosine: the TF-IDF baseline of both forum tasks.

A sample (a darkweb episode, a run of a reddit author's posts) is one document: its posts' texts
joined by line breaks. Its embedding is the L2-normalised TF-IDF row (dense, one column per
vocabulary term), so ranking by cosine is TF-IDF cosine similarity. The vocabulary (the
`max_features` most frequent terms in at least `min_df` documents) and idf come from the training
split, read through `tasks.forum.records` only, so one class serves both tasks.

Two registered variants, which differ only in what the vocabulary is fitted on and in their defaults:
- `episode_tfidf` (darkweb, SYSML's TF-IDF baseline): one document per training episode, 10k terms;
- `reddit_tfidf` (reddit, Khan et al. 2021's TF-IDF baseline): one document per training post, 20k terms.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partialmethod
from pathlib import Path
from typing import Any, ClassVar, Literal

import numpy as np

from core.errors import HarnessError
from harness.system import constructor_params
from tasks.forum.records import ForumSample, ForumSplit, sample_texts
from toolkit.checkpoint import CONFIG_NAME, check_tfidf_state, load_checkpoint, save_checkpoint
from toolkit.tfidf import WORD_TOKEN_PATTERN, TfidfModel

# What one training document is: an author sequence's posts joined (a darkweb episode, a reddit
# author's stream), or a single post.
FitOn = Literal["sequences", "posts"]


class ForumTfidf:
    """TF-IDF of word n-grams (1..max_ngram, punctuation included) over a sample's posts; cosine.

    Parameters: max_features (columns kept, by training frequency; None keeps all), max_ngram,
    min_df (training documents a term must occur in), sublinear_tf (1 + log tf), lowercase.
    Untrained apart from the vocabulary and idf: the seed changes nothing. A base: the registered
    variants below set `name`, `fit_on` and their defaults.
    """

    name: ClassVar[str]
    fit_on: ClassVar[FitOn]
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
            raise HarnessError(f"max_ngram and min_df must be positive, got {max_ngram!r} and {min_df!r}")
        self.max_features = None if max_features is None else int(max_features)
        self.max_ngram = int(max_ngram)
        self.min_df = int(min_df)
        self.sublinear_tf = bool(sublinear_tf)
        self.lowercase = bool(lowercase)
        self._tfidf: TfidfModel | None = None

    def params(self) -> dict[str, Any]:
        return constructor_params(self)

    def fit(self, train: ForumSplit, *, seed: int) -> None:
        """Vocabulary and idf of the training documents (nothing random: the seed is unused)."""
        sequences = train.post_texts()
        if self.fit_on == "posts":
            documents = [text for texts in sequences for text in texts]
        else:
            documents = [_join(texts) for texts in sequences]
        try:
            self._tfidf = TfidfModel.fit(
                documents,
                analyzer=self._analyzer(),
                max_features=self.max_features,
                min_df=self._min_df(len(documents)),
                sublinear_tf=self.sublinear_tf,
            )
        except HarnessError as error:
            raise HarnessError(f"{self.name}: {error}") from error

    def embed(self, samples: Sequence[ForumSample]) -> np.ndarray:
        """Dense L2-normalised TF-IDF rows (float32); a sample without known terms is a zero row (cosine 0 to all)."""
        if self._tfidf is None:
            raise HarnessError(f"{self.name}: not fitted; call fit() or load() first")
        return self._tfidf.transform([_join(sample_texts(sample)) for sample in samples])

    def save(self, directory: Path) -> None:
        if self._tfidf is None:
            raise HarnessError(f"{self.name}: not fitted; nothing to save")
        state, arrays = self._tfidf.state()
        save_checkpoint(directory, system=self.name, params=self.params(), state=state, arrays=arrays)

    @classmethod
    def load(cls, directory: Path) -> ForumTfidf:
        params, state, arrays = load_checkpoint(directory, system=cls.name)
        try:
            system = cls(**params)
        except (TypeError, ValueError) as error:
            raise HarnessError(f"{directory}: malformed {cls.name} checkpoint ({error!r})") from error
        analyzer, where = system._analyzer(), Path(directory) / CONFIG_NAME
        tfidf = TfidfModel.from_state(state, arrays, analyzer=analyzer, sublinear_tf=system.sublinear_tf, where=where)
        check_tfidf_state(tfidf.vocabulary, tfidf.idf, analyzer, system.max_features, where=where)
        system._tfidf = tfidf
        return system

    def _min_df(self, documents: int) -> int:
        """`min_df` for this many training documents: never more than there are documents."""
        return min(self.min_df, documents)

    def _analyzer(self) -> dict[str, Any]:
        return {
            "analyzer": "word",
            "token_pattern": WORD_TOKEN_PATTERN,
            "ngram_range": (1, self.max_ngram),
            "lowercase": self.lowercase,
        }


class EpisodeTfidf(ForumTfidf):
    """`episode_tfidf`, the darkweb baseline: vocabulary of the training episodes, 10k terms."""

    name: ClassVar[str] = "episode_tfidf"
    fit_on: ClassVar[FitOn] = "sequences"
    __init__ = partialmethod(ForumTfidf.__init__, max_features=10000)


class RedditTfidf(ForumTfidf):
    """`reddit_tfidf`, the reddit baseline: vocabulary of the single training posts, 20k terms."""

    name: ClassVar[str] = "reddit_tfidf"
    fit_on: ClassVar[FitOn] = "posts"
    __init__ = partialmethod(ForumTfidf.__init__, max_features=20000)

    def _min_df(self, documents: int) -> int:
        """A tiny corpus (fewer than 2 x min_df posts) keeps every term."""
        return self.min_df if documents >= 2 * self.min_df else 1


def _join(texts: Sequence[str]) -> str:
    """A sample's posts as one document."""
    return "\n".join(texts)
