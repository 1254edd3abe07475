"""Word TF-IDF cosine with the same calibration as PAN's cngdist baseline."""

from __future__ import annotations

from typing import Any, ClassVar

from systems.baselines.cngdist import TfidfCosineSystem
from toolkit.tfidf import WORD_TOKEN_PATTERN


class WordTfidf(TfidfCosineSystem):
    """TF-IDF of word n-grams (1..max_ngram, punctuation included), cosine, band fitted on out-of-fold scores."""

    name: ClassVar[str] = "tfidf"

    def __init__(
        self,
        *,
        max_ngram: int = 1,
        max_features: int | None = 20000,
        lowercase: bool = True,
        sublinear_tf: bool = True,
        grid_step: float = 0.01,
        objective: str = "overall",
        calibration_folds: int = 5,
        calibration_by: str = "texts",
    ) -> None:
        if max_ngram < 1:
            raise ValueError(f"max_ngram must be positive, got {max_ngram!r}")
        super().__init__(locals())

    def _analyzer_options(self) -> dict[str, Any]:
        return {
            "analyzer": "word",
            "ngram_range": (1, self.max_ngram),
            "lowercase": self.lowercase,
            "token_pattern": WORD_TOKEN_PATTERN,
        }
