"""Part-of-speech tags of English text, offline: Honnibal's averaged perceptron with its published model.

The tagger is the greedy averaged perceptron of Honnibal (2013, "A good part-of-speech tagger in about 200 lines of
Python"), as NLTK implements it (`nltk.tag.perceptron`), with the model he trained on the Wall Street Journal
(Penn Treebank tags, 45 of them), as the PyPI package textblob-aptagger 0.2.0 ships it
(`trontagger-0.1.0.pickle`, MIT licence). Nothing is downloaded at run time: the model is a file of an installed
package, and its sha256 is checked before it is unpickled (a pickle runs code when loaded, so only that exact file
is read). textblob-aptagger's own Python code no longer imports with today's textblob; only its model is used.

Install: `pip install -c constraints.txt -e ".[pos]"` (nltk and textblob-aptagger).

Tokens follow the Penn Treebank's conventions where they matter to the tagger: clitics are split ("don't" -> "do"
"n't", "it's" -> "it" "'s"), punctuation marks are tokens of their own, a hyphenated word is one token. Sentences
end at a line break or after a run of ".", "!" and "?"; each is tagged on its own, as the model was trained.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import pickle
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from core.errors import HarnessError
from core.records import VerificationData

MODEL_PACKAGE = "textblob_aptagger"
MODEL_FILE = "trontagger-0.1.0.pickle"
MODEL_SHA256 = "1109164b3d28dce58f96b763128bab2fd8754c3921fd3330de2724ac6d1ada7c"
INSTALL = 'pip install -c constraints.txt -e ".[pos]"'

# "do|n't", "it|'s", hyphenated words whole, every other non-space character a token
_TOKEN = re.compile(r"\w+(?=n't\b)|n't\b|'(?:s|re|ve|ll|d|m)\b|\w+(?:-\w+)*|[^\w\s]", re.IGNORECASE)
_SENTENCE_END = frozenset({".", "!", "?"})
_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'"})


def tokens(text: str) -> list[list[str]]:
    """The text's sentences, each a list of Penn-Treebank-like tokens (see the module's docstring)."""
    sentences: list[list[str]] = []
    for line in text.translate(_APOSTROPHES).splitlines():
        current: list[str] = []
        line_tokens = _TOKEN.findall(line)
        for i, token in enumerate(line_tokens):
            current.append(token)
            # "!!" or "?!" ends one sentence, after its last mark
            if token in _SENTENCE_END and (i + 1 == len(line_tokens) or line_tokens[i + 1] not in _SENTENCE_END):
                sentences.append(current)
                current = []
        if current:
            sentences.append(current)
    return sentences


def model_path() -> Path:
    """The model file inside the installed textblob-aptagger package (found without importing the package)."""
    spec = importlib.util.find_spec(MODEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise HarnessError(f"part-of-speech tags need the package textblob-aptagger (its model); install: {INSTALL}")
    return Path(next(iter(spec.submodule_search_locations))) / MODEL_FILE


def load_model(path: Path) -> tuple[dict[str, dict[str, float]], dict[str, str], set[str]]:
    """(weights, tag dictionary, tags) of the pickled model at `path`, refused unless its sha256 is the published
    file's."""
    try:
        data = path.read_bytes()
    except OSError as error:
        raise HarnessError(f"{path}: cannot read the part-of-speech model ({error}); reinstall: {INSTALL}") from None
    digest = hashlib.sha256(data).hexdigest()
    if digest != MODEL_SHA256:
        raise HarnessError(
            f"{path}: sha256 {digest}, not the published model's {MODEL_SHA256}: not loaded (a pickle runs code); "
            f"reinstall: {INSTALL}"
        )
    weights, tag_dictionary, tags = pickle.loads(data)  # noqa: S301 (checked against the pinned digest above)
    return weights, tag_dictionary, tags


@functools.lru_cache(maxsize=1)
def _tagger() -> Any:
    try:
        from nltk.tag.perceptron import PerceptronTagger
    except ModuleNotFoundError:
        raise HarnessError(f"part-of-speech tags need nltk; install: {INSTALL}") from None
    weights, tag_dictionary, tags = load_model(model_path())
    tagger = PerceptronTagger(load=False)
    tagger.model.weights, tagger.tagdict, tagger.classes = weights, tag_dictionary, tags
    tagger.model.classes = tags
    return tagger


# Texts recur across problems and every cross-fitting fold re-reads them: tag each once.
@functools.lru_cache(maxsize=100_000)
def pos_tags(text: str) -> tuple[tuple[str, ...], ...]:
    """The Penn Treebank tag of every token (`tokens`), sentence by sentence."""
    tagger = _tagger()
    return tuple(tuple(tag for _, tag in tagger.tag(sentence)) for sentence in tokens(text))


# English text has about 60% of its words in the tagger's dictionary of frequent unambiguous words (CMCC 0.60, the
# forum posts 0.58); Spanish about 16%, Dutch 5%, Greek 0: below this share the texts are taken as not English
MIN_ENGLISH_SHARE = 0.3


def english_share(texts: Iterable[str]) -> float:
    """The share of the texts' words (tokens starting with a letter) found in the tagger's dictionary."""
    dictionary = _tagger().tagdict
    words = [w for text in texts for sentence in tokens(text) for w in sentence if w[0].isalpha()]
    return sum(w in dictionary or w.lower() in dictionary for w in words) / len(words) if words else 1.0


def require_english(train: VerificationData, *, system: str) -> None:
    """Refuse training texts that are not English (`english_share` below `MIN_ENGLISH_SHARE`): the model tags English
    only."""
    share = english_share(text for problem in train.problems for text in problem.texts)
    if share < MIN_ENGLISH_SHARE:
        raise HarnessError(
            f"{system}: the texts of {train.source} do not look English ({share:.0%} of their words are in the "
            f"tagger's English dictionary, English text has about 60%): the part-of-speech model is trained on "
            f"English only"
        )


def pos_ngrams(text: str, *, low: int = 1, high: int = 3) -> list[str]:
    """The tag n-grams (n = low..high) inside each sentence, tags joined by a space ("DT JJ NN"). A callable analyzer
    for scikit-learn's vectorisers (bound with functools.partial)."""
    terms = []
    for sentence in pos_tags(text):
        for n in range(low, high + 1):
            terms.extend(" ".join(sentence[i : i + n]) for i in range(len(sentence) - n + 1))
    return terms
