"""Part-of-speech n-grams: TF-IDF of the texts' tag 1-3-grams, cosine, abstain band as cngdist's.

Syntactic habits (which word classes follow which) are among the style markers least tied to a text's topic, which
is why tag n-grams are a standard ingredient of cross-topic and cross-genre verification (e.g. Stamatatos 2009's
survey; Sapkota et al. 2015 compare them with typed character n-grams). The tags are the Penn Treebank's, from an
offline averaged-perceptron tagger (`toolkit.pos_tags`; the `pos` extra). Each text becomes the n-grams of its tags
inside each sentence (n = `min_n`..`max_n`), and `TfidfCosineSystem` does the rest: vocabulary and idf from the
training texts, cosine of known and unknown, band fitted on out-of-fold similarities of the training problems.
Only English is tagged (the model is trained on the Wall Street Journal): training texts that do not look English
are refused (`toolkit.pos_tags.require_english`).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from core.errors import HarnessError
from core.records import VerificationData
from systems.baselines.cngdist import TfidfCosineSystem
from toolkit.checkpoint import REFIT
from toolkit.pos_tags import pos_ngrams, require_english


class PosNgrams(TfidfCosineSystem):
    """TF-IDF of part-of-speech tag n-grams (n = min_n..max_n, inside sentences), cosine, band as cngdist's."""

    name: ClassVar[str] = "pos_ngrams"

    def __init__(
        self,
        *,
        min_n: int = 1,
        max_n: int = 3,
        max_features: int | None = 20000,
        sublinear_tf: bool = True,
        grid_step: float = 0.01,
        objective: str = "overall",
        calibration_folds: int = 5,
        calibration_by: str = "texts",
    ) -> None:
        if not 1 <= min_n <= max_n:
            raise ValueError(f"need 1 <= min_n <= max_n, got min_n={min_n}, max_n={max_n}")
        super().__init__(locals())

    def _fit(self, train: VerificationData, labels: np.ndarray, *, seed: int) -> None:
        """As the base, after refusing training texts that are not English (the tagger's model is English only)."""
        require_english(train, system=self.name)
        super()._fit(train, labels, seed=seed)

    def _analyzer_options(self) -> dict[str, Any]:
        # tags are upper case: "lowercase" False tells toolkit.checkpoint.check_tfidf_state not to refuse them
        return {"analyzer": functools.partial(pos_ngrams, low=self.min_n, high=self.max_n), "lowercase": False}

    def _restore(self, state: Mapping[str, Any], arrays: Mapping[str, np.ndarray], *, where: Path) -> None:
        """As the base, and refuse terms that are not min_n..max_n tags."""
        super()._restore(state, arrays, where=where)
        assert self._tfidf is not None
        for term in self._tfidf.vocabulary:
            size = term.count(" ") + 1
            if not self.min_n <= size <= self.max_n or term != term.strip():
                raise HarnessError(
                    f"{where}: its state holds the term {term!r}, not {self.min_n}-{self.max_n} tags: "
                    f"parameters and state do not fit; {REFIT}"
                )
