"""Typed character 3-grams (Sapkota et al., NAACL 2015, "Not all character n-grams are created equal").

Each character 3-gram is labelled by where it sits relative to words, spaces and punctuation, and the label is part
of the term ("prefix:the", "mid-punct:d-f"), so the same three characters at the start of a word and inside one are
two features. The ten types, as the paper defines them for n = 3:

- affix: `prefix` (the first 3 characters of a word of 4 or more), `suffix` (the last 3 of a word of 4 or more),
  `space-prefix` (begins with a space), `space-suffix` (ends with a space);
- word: `whole-word` (a word of exactly 3 characters), `mid-word` (3 characters of a word of 5 or more, neither its
  first nor its last), `multi-word` (a space in the middle);
- punctuation: `beg-punct` (the first character punctuation, the middle one not), `mid-punct` (the middle character
  punctuation), `end-punct` (the last character punctuation, the first and middle ones not).

A word is a maximal run of characters that are neither white space nor punctuation (punctuation: neither
alphanumeric nor white space), so "old-fashioned" is two words joined by punctuation, as in the paper's example. A
3-gram with punctuation is of a punctuation type whatever else it holds; of the rest, a space first makes a
space-prefix, a space last a space-suffix, one in the middle a multi-word. Runs of white space count as one space.
The paper found the affix and punctuation 3-grams the ones that carry across topics; they are the default `types`.

`TypedNgrams` is the cngdist/tfidf verifier (`TfidfCosineSystem`) over these terms.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from core.errors import HarnessError
from systems.baselines.cngdist import TfidfCosineSystem
from toolkit.checkpoint import REFIT

NGRAM_SIZE = 3
AFFIX_TYPES = ("prefix", "suffix", "space-prefix", "space-suffix")
WORD_TYPES = ("whole-word", "mid-word", "multi-word")
PUNCT_TYPES = ("beg-punct", "mid-punct", "end-punct")
NGRAM_TYPES = AFFIX_TYPES + WORD_TYPES + PUNCT_TYPES
_WHITE_SPACE = re.compile(r"\s+")
# (position in the 3-gram, character class, type), in the order the paper's types take precedence
_EDGE_RULES = (
    (1, "p", "mid-punct"),
    (0, "p", "beg-punct"),
    (2, "p", "end-punct"),
    (0, "s", "space-prefix"),
    (2, "s", "space-suffix"),
    (1, "s", "multi-word"),
)


def _word_type(position: int, length: int) -> str:
    """The type of a 3-gram inside one word: at `position` of a word of `length` characters."""
    if length == NGRAM_SIZE:
        return "whole-word"
    if position == 0:
        return "prefix"
    return "suffix" if position + NGRAM_SIZE == length else "mid-word"


def _char_classes(text: str) -> str:
    """One letter per character: "s" white space, "p" punctuation, "w" a word's character."""
    return "".join("s" if ch.isspace() else "w" if ch.isalnum() else "p" for ch in text)


def typed_char_ngrams(text: str, *, types: Collection[str] = NGRAM_TYPES, lowercase: bool = False) -> list[str]:
    """The text's character 3-grams of the given types, each as "type:ngram", in text order.

    White space runs become one space first; `lowercase` lower-cases the text after its characters are typed (case
    never changes a type). A callable analyzer for scikit-learn's vectorisers (bound with functools.partial).
    """
    text = _WHITE_SPACE.sub(" ", text)
    classes = _char_classes(text)
    if lowercase:
        text = text.lower()
    # each character's word: its position in the word and the word's length (words are runs of "w")
    position = [0] * len(text)
    length = [0] * len(text)
    for match in re.finditer("w+", classes):
        start, end = match.span()
        for index in range(start, end):
            position[index], length[index] = index - start, end - start
    terms = []
    for start in range(len(text) - NGRAM_SIZE + 1):
        window = classes[start : start + NGRAM_SIZE]
        # punctuation first (middle, first, last), then a space (first, last, middle), then the place in its word
        kind = next((kind for slot, char_class, kind in _EDGE_RULES if window[slot] == char_class), None)
        if kind is None:
            kind = _word_type(position[start], length[start])
        if kind in types:
            terms.append(f"{kind}:{text[start : start + NGRAM_SIZE]}")
    return terms


class TypedNgrams(TfidfCosineSystem):
    """TF-IDF of typed character 3-grams (Sapkota et al. 2015) of the chosen `types`, cosine, band as cngdist's."""

    name: ClassVar[str] = "typed_ngrams"

    def __init__(
        self,
        *,
        types: tuple[str, ...] = AFFIX_TYPES + PUNCT_TYPES,
        max_features: int | None = 20000,
        lowercase: bool = True,
        sublinear_tf: bool = True,
        grid_step: float = 0.01,
        objective: str = "overall",
        calibration_folds: int = 5,
        calibration_by: str = "texts",
    ) -> None:
        types = tuple(types)  # a checkpoint's JSON gives a list
        unknown = sorted(set(types) - set(NGRAM_TYPES))
        if unknown or not types or len(set(types)) != len(types):
            raise ValueError(f"types must be distinct names among {', '.join(NGRAM_TYPES)}; got {list(types)!r}")
        super().__init__(locals())

    def _analyzer_options(self) -> dict[str, Any]:
        # scikit-learn does not lower-case for a callable analyzer (the analyzer does); "lowercase" is here for
        # toolkit.checkpoint.check_tfidf_state, which then refuses upper-case terms
        analyzer = functools.partial(typed_char_ngrams, types=frozenset(self.types), lowercase=self.lowercase)
        return {"analyzer": analyzer, "lowercase": self.lowercase}

    def _restore(self, state: Mapping[str, Any], arrays: Mapping[str, np.ndarray], *, where: Path) -> None:
        """As the base, and refuse terms that are not "type:3-gram" of one of this system's `types`."""
        super()._restore(state, arrays, where=where)
        assert self._tfidf is not None
        for term in self._tfidf.vocabulary:
            kind, _, ngram = term.partition(":")
            if kind not in self.types or len(ngram) != NGRAM_SIZE:
                raise HarnessError(
                    f"{where}: its state holds the term {term!r}, not a typed 3-gram of types {list(self.types)}: "
                    f"parameters and state do not fit; {REFIT}"
                )
