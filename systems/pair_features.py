"""Similarity features of a problem's known and unknown texts, fed to a classification tree (after Frery et al. 2014).

Frery, J., Largeron, C. and Juganaru-Mathieu, M. (2014). UJM at CLEF in author verification based on
optimized classification trees. Notebook for PAN at CLEF 2014 (winner on PAN14 English essays).

Frery et al. describe each problem by how similar its unknown text is to its known texts under several
text representations and measures, and let a CART decision tree, optimised on the training problems,
decide "same author" from those similarities. This module does the same with these `FEATURES` (the known
texts pooled: counts summed, lengths averaged); its answer is the share of same-author training problems
in the problem's leaf:

- character n-grams, n = 1..4: cosine and min-max (Ruzicka) similarity of the relative-frequency profiles;
- words (lower-cased), and a fixed list of English function words: cosine and min-max similarity;
- punctuation: cosine similarity of the punctuation-mark profiles, and the L1 distance of their rates
  per character;
- sentence length in words, mean and standard deviation: |log ratio| of known and unknown;
- word length: |difference| of the means and the L1 distance of the length distributions (1..15, 16+);
- vocabulary richness: |difference| of the type/token ratios over the first min(1000, shorter) words;
- length: shorter / longer of the unknown text and the known texts' mean, in characters;
- text distortion (Stamatatos 2017, DV-MA): every letter of a word that is not a function word masked as
  `*`, every digit as `#`, so that what is left is function words, word lengths, punctuation and layout;
  cosine and min-max similarity of the character 3- and 4-gram profiles of the distorted texts;
- typographic habits (`HABITS`: space before punctuation, lower-case "i", double spaces, sentence starts in
  lower case, quotes, brackets, dashes, capitals, ...): the L1 distance of the log rates per character.

Stamatatos, E. (2017). Authorship attribution using text distortion. EACL 2017, 1138-1149.

The last two groups were added after the first benchmarks, and chosen on training data only: a
text-disjoint 5-fold cross-validation over the training problems (3 fold seeds, `trees=200`), AUC of the
pooled held-out scores, PAN14 English essays 0.625 -> 0.672, PAN15 English 0.769 -> 0.785. They answer
PAN14 essays' difficulty: there, different-author pairs are on average more similar in content than
same-author pairs (cngdist and tfidf rank below chance), and both groups ignore content words.

Defaults follow the paper's model: one CART tree (scikit-learn's `DecisionTreeClassifier`), its criterion
(gini or entropy) and depth (2..6) chosen by cross-validation on the training problems (AUC x c@1, the
PAN14 ranking score, of the out-of-fold leaf probabilities), at least `min_samples_leaf` = 5 problems a leaf.

Where this departs from the paper: the paper's text was not at hand when this was written, so its exact
features, measures and tree settings are not reproduced; the feature list, the search grid and the leaf
size are ours, in the paper's spirit. Ours for certain:
- Cross-validation folds are text-disjoint (`toolkit.calibration.cross_fitted_folds`; with `calibration_by="authors"`
  author-disjoint too, `CalibratedVerifier.cross_fitting_folds`), since PAN corpora
  reuse texts across problems.
- An abstain band (`toolkit.calibration`) is fitted on the chosen tree's out-of-fold probabilities. The
  same out-of-fold probabilities choose the tree's settings and fit the band, which flatters the band a
  little (10 candidates).
- `fold_prior="corrected"` moves each fold tree's probabilities from its training part's share of same-author
  problems to the whole split's (`toolkit.calibration.prior_corrected`), so the band reads them on the answering
  tree's scale; the default, "as_fitted", keeps them as they come.

A forest variant, `trees` > 1 (e.g. `--param trees=200`): a random forest (Breiman 2001) of that many CART
trees, gini, grown to `min_samples_leaf`, no search; not the paper's model. It was chosen on training data
only (with the first 20 features): out-of-fold AUC over `cross_fitted_folds` of the training problems
(5 folds, seed 0; text-disjoint, for PAN14 novels "drop-shared"), single tree at depth 4 vs 200 trees:
PAN14 essays 0.578 vs 0.683, PAN14 novels 0.750 vs 0.889, PAN15 0.686 vs 0.776.

Part-of-speech tags (`pos_tags=True`, the `pos` extra): two more features, the cosine and min-max similarity of
the texts' tag 1-3-gram profiles (`toolkit.pos_tags`). Off by default: on the training splits of CMCC, PAN14 and
PAN15 they did not raise the out-of-fold AUC consistently (benchmarks/pair_features_pos.py, benchmarks/README.md).

Features depend on the problem alone (no vocabulary is fitted on the corpus), so the tree is the only
fitted part. The checkpoint stores the tree as arrays (children, feature, threshold, leaf probability):
no pickle; answers are computed from those arrays, before and after `load`.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from itertools import product
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from core.errors import HarnessError
from core.progress import pbar
from core.records import VerificationData, VerificationProblem
from harness.seeding import legacy_seed
from toolkit.calibration import check_fold_prior, fold_model_scores, objective_function
from toolkit.verifier import CalibratedVerifier, require_both_classes

FEATURES = (
    *(f"char{n}_{measure}" for n in (1, 2, 3, 4) for measure in ("cosine", "minmax")),
    "word_cosine",
    "word_minmax",
    "function_word_cosine",
    "function_word_minmax",
    "punctuation_cosine",
    "punctuation_rate_l1",
    "sentence_length_mean_log_ratio",
    "sentence_length_sd_log_ratio",
    "word_length_mean_diff",
    "word_length_l1",
    "type_token_ratio_diff",
    "length_ratio",
    *(f"distorted_char{n}_{measure}" for n in (3, 4) for measure in ("cosine", "minmax")),
    "habit_rate_log_ratio_l1",
)
# With `pos_tags`: cosine and min-max similarity of the part-of-speech tag 1-3-gram profiles (toolkit.pos_tags; the
# `pos` extra), after the other features.
POS_FEATURES = ("pos_ngram_cosine", "pos_ngram_minmax")

# Function words of English (articles, pronouns, auxiliaries, prepositions, conjunctions, common adverbs).
_FUNCTION_WORDS_TEXT = (
    "a about above after again against all am an and any are as at be because been before being below between "
    "both but by can could did do does doing down during each few for from further had has have having he her "
    "here hers herself him himself his how i if in into is it its itself just me might more most must my myself "
    "no nor not now of off on once only or other ought our ours ourselves out over own same shall she should so "
    "some such than that the their theirs them themselves then there these they this those through to too under "
    "until up upon very was we were what when where which while who whom whose why will with would yet you your "
    "yours yourself yourselves"
)
FUNCTION_WORDS = frozenset(_FUNCTION_WORDS_TEXT.split())

_WORD = re.compile(r"\w+")
_SENTENCE_END = re.compile(r"[.!?]+")
_PUNCTUATION = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~“”‘’—–…")
_MAX_WORD_LENGTH = 16  # word lengths 16 and over share one bin
_LETTERS = re.compile(r"[^\W\d_]+")
_DIGIT = re.compile(r"\d")

# Typographic habits, counted per character of text: writers keep these across topics.
HABITS = (
    r" [,.;:!?]",  # a space before punctuation
    r"\bi\b",  # "i" for "I"
    r"  ",  # double spaces
    r"(?:^|[.!?] )[a-z]",  # a sentence that starts in lower case
    r"[,;:]",
    r"'",
    r"\"",
    r"\(",
    r"-",
    r"[A-Z]",
    r"\.\.",
    r"!",
    r"\?",
    r"\n",
)
_HABITS = tuple(re.compile(h) for h in HABITS)
_HABIT_FLOOR = 1e-4  # a rate floor, so that a habit absent from one side gives a finite log ratio

CRITERIA = ("gini", "entropy")
DEPTHS = (2, 3, 4, 5, 6)


def cosine(a: Counter[str], b: Counter[str]) -> float:
    """Cosine similarity of two count profiles (0 when either is empty)."""
    norm = math.sqrt(sum(v * v for v in a.values())) * math.sqrt(sum(v * v for v in b.values()))
    if norm == 0:
        return 0.0
    small, large = (a, b) if len(a) <= len(b) else (b, a)
    return sum(v * large[k] for k, v in small.items() if k in large) / norm


def minmax(a: Counter[str], b: Counter[str]) -> float:
    """Min-max (Ruzicka) similarity of two profiles as relative frequencies: sum of minima / sum of maxima."""
    total_a, total_b = sum(a.values()), sum(b.values())
    if total_a == 0 or total_b == 0:
        return 0.0
    low = high = 0.0
    for key in a.keys() | b.keys():
        x, y = a.get(key, 0) / total_a, b.get(key, 0) / total_b
        low += min(x, y)
        high += max(x, y)
    return low / high


def _char_ngrams(text: str, n: int) -> Counter[str]:
    return Counter(text[i : i + n] for i in range(len(text) - n + 1))


def _sentence_lengths(text: str) -> list[int]:
    lengths = [len(_WORD.findall(part)) for part in _SENTENCE_END.split(text)]
    return [n for n in lengths if n > 0]


def _log_ratio(a: float, b: float) -> float:
    return abs(math.log((a + 1.0) / (b + 1.0)))


def distort(text: str) -> str:
    """Text distortion DV-MA (Stamatatos 2017): letters of non-function words -> `*`, digits -> `#`."""

    def mask(match: re.Match[str]) -> str:
        word = match.group(0)
        return word if word.lower() in FUNCTION_WORDS else "*" * len(word)

    return _DIGIT.sub("#", _LETTERS.sub(mask, text))


def habit_rates(texts: Sequence[str]) -> np.ndarray:
    """The rate of each of `HABITS` per character of `texts` (together)."""
    characters = sum(len(t) for t in texts) or 1
    return np.array([sum(len(h.findall(t)) for t in texts) / characters for h in _HABITS], dtype=np.float64)


def _profile_similarities(known_texts: Sequence[str], unknown: str, n: int) -> list[float]:
    known_grams: Counter[str] = Counter()
    for text in known_texts:
        known_grams.update(_char_ngrams(text, n))
    unknown_grams = _char_ngrams(unknown, n)
    return [cosine(known_grams, unknown_grams), minmax(known_grams, unknown_grams)]


def _word_length_histogram(tokens: Sequence[str]) -> np.ndarray:
    counts = np.bincount([min(len(t), _MAX_WORD_LENGTH) for t in tokens], minlength=_MAX_WORD_LENGTH + 1)[1:]
    return counts / max(1, len(tokens))


def _type_token_ratio(tokens: Sequence[str], window: int) -> float:
    return len(set(tokens[:window])) / window if window > 0 else 0.0


def pos_similarities(problem: VerificationProblem) -> list[float]:
    """The `POS_FEATURES` of one problem: its known texts' tag 1-3-grams pooled against the unknown text's."""
    from toolkit.pos_tags import pos_ngrams

    known = Counter(term for text in problem.known for term in pos_ngrams(text))
    unknown = Counter(pos_ngrams(problem.unknown))
    return [cosine(known, unknown), minmax(known, unknown)]


def pair_features(problem: VerificationProblem) -> np.ndarray:
    """The `FEATURES` of one problem (known texts pooled against the unknown text)."""
    if len(problem.texts) < 2:
        raise HarnessError(f"problem {problem.id}: needs at least one known text and the unknown text")
    known_texts, unknown = problem.known, problem.unknown
    row: list[float] = []
    for n in (1, 2, 3, 4):
        row += _profile_similarities(known_texts, unknown, n)
    known_tokens = [w for text in known_texts for w in _WORD.findall(text.lower())]
    unknown_tokens = _WORD.findall(unknown.lower())
    known_words, unknown_words = Counter(known_tokens), Counter(unknown_tokens)
    row += [cosine(known_words, unknown_words), minmax(known_words, unknown_words)]
    known_function = Counter({w: c for w, c in known_words.items() if w in FUNCTION_WORDS})
    unknown_function = Counter({w: c for w, c in unknown_words.items() if w in FUNCTION_WORDS})
    row += [cosine(known_function, unknown_function), minmax(known_function, unknown_function)]
    known_chars = sum(len(text) for text in known_texts)
    known_punct = Counter(c for text in known_texts for c in text if c in _PUNCTUATION)
    unknown_punct = Counter(c for c in unknown if c in _PUNCTUATION)
    rates = sum(
        abs(known_punct.get(c, 0) / max(1, known_chars) - unknown_punct.get(c, 0) / max(1, len(unknown)))
        for c in known_punct.keys() | unknown_punct.keys()
    )
    row += [cosine(known_punct, unknown_punct), rates]
    known_sentences = [n for text in known_texts for n in _sentence_lengths(text)] or [0]
    unknown_sentences = _sentence_lengths(unknown) or [0]
    row += [
        _log_ratio(float(np.mean(known_sentences)), float(np.mean(unknown_sentences))),
        _log_ratio(float(np.std(known_sentences)), float(np.std(unknown_sentences))),
    ]
    known_lengths = [len(t) for t in known_tokens] or [0]
    unknown_lengths = [len(t) for t in unknown_tokens] or [0]
    row += [
        abs(float(np.mean(known_lengths)) - float(np.mean(unknown_lengths))),
        float(np.abs(_word_length_histogram(known_tokens) - _word_length_histogram(unknown_tokens)).sum()),
    ]
    window = min(1000, len(known_tokens), len(unknown_tokens))
    row.append(abs(_type_token_ratio(known_tokens, window) - _type_token_ratio(unknown_tokens, window)))
    mean_known = known_chars / len(known_texts)
    longer = max(mean_known, len(unknown))
    row.append(min(mean_known, len(unknown)) / longer if longer > 0 else 1.0)
    distorted_known, distorted_unknown = [distort(t) for t in known_texts], distort(unknown)
    for n in (3, 4):
        row += _profile_similarities(distorted_known, distorted_unknown, n)
    known_habits, unknown_habits = habit_rates(known_texts), habit_rates([unknown])
    row.append(float(np.abs(np.log((known_habits + _HABIT_FLOOR) / (unknown_habits + _HABIT_FLOOR))).sum()))
    return np.array(row, dtype=np.float64)


class TreeArrays:
    """Fitted binary classification trees (one, or a forest) as plain arrays, with their own predict.

    The trees' nodes are concatenated in scikit-learn's `tree_` layout: `left`/`right` are child node
    indices into the whole array (-1 at a leaf), `feature`/`threshold` the split (x[feature] <= threshold
    goes left), `same` each node's share of same-author training problems; `roots` the first node of each
    tree. A prediction is the mean over the trees of the leaf's share, as scikit-learn's forests average.
    """

    KEYS = ("left", "right", "feature", "threshold", "same", "roots")

    def __init__(
        self,
        left: np.ndarray,
        right: np.ndarray,
        feature: np.ndarray,
        threshold: np.ndarray,
        same: np.ndarray,
        roots: np.ndarray | None = None,
    ) -> None:
        self.left = np.asarray(left, dtype=np.int64).reshape(-1)
        self.right = np.asarray(right, dtype=np.int64).reshape(-1)
        self.feature = np.asarray(feature, dtype=np.int64).reshape(-1)
        self.threshold = np.asarray(threshold, dtype=np.float64).reshape(-1)
        self.same = np.asarray(same, dtype=np.float64).reshape(-1)
        self.roots = np.zeros(1, dtype=np.int64) if roots is None else np.asarray(roots, dtype=np.int64).reshape(-1)
        size = len(self.left)
        if size == 0 or any(len(a) != size for a in (self.right, self.feature, self.threshold, self.same)):
            raise ValueError("tree arrays must be non-empty and of one length")
        inner = np.flatnonzero(self.left >= 0)
        children = np.concatenate([self.left[inner], self.right[inner]])
        # children come after their parent (scikit-learn's depth-first order), so every walk ends at a leaf
        if (children >= size).any() or (children <= np.concatenate([inner, inner])).any():
            raise ValueError("tree children out of range (each child must come after its parent)")
        if len(self.roots) == 0 or (self.roots < 0).any() or (self.roots >= size).any():
            raise ValueError("tree roots out of range")

    @classmethod
    def from_sklearn(cls, model: Any) -> TreeArrays:
        """Read a fitted `DecisionTreeClassifier`, or a forest of them (`estimators_`), on labels {False, True}."""
        column = list(model.classes_).index(True)
        trees = [e.tree_ for e in getattr(model, "estimators_", [model])]
        parts: dict[str, list[np.ndarray]] = {key: [] for key in cls.KEYS}
        offset = 0
        for tree in trees:
            values = np.asarray(tree.value[:, 0, :], dtype=np.float64)
            inner = tree.children_left >= 0
            parts["left"].append(np.where(inner, tree.children_left + offset, -1))
            parts["right"].append(np.where(inner, tree.children_right + offset, -1))
            parts["feature"].append(tree.feature)
            parts["threshold"].append(tree.threshold)
            parts["same"].append(values[:, column] / values.sum(axis=1))
            parts["roots"].append(np.array([offset]))
            offset += tree.node_count
        return cls(*(np.concatenate(parts[key]) for key in cls.KEYS))

    def predict(self, x: np.ndarray) -> np.ndarray:
        """Mean over the trees of the leaf share of same-author problems, for each row of x."""
        # scikit-learn compares float32 features with its float64 thresholds; do the same to land in the same leaf
        x32 = np.asarray(x, dtype=np.float32).astype(np.float64)
        nodes = np.tile(self.roots, (len(x32), 1))  # (rows, trees)
        rows = np.repeat(np.arange(len(x32))[:, None], len(self.roots), axis=1)
        while True:
            inner = self.left[nodes] >= 0
            if not inner.any():
                break
            at = nodes[inner]
            go_left = x32[rows[inner], self.feature[at]] <= self.threshold[at]
            nodes[inner] = np.where(go_left, self.left[at], self.right[at])
        leaves = self.same[nodes]
        total = np.zeros(len(x32))
        for column in range(leaves.shape[1]):  # summed tree by tree, in order, as scikit-learn's forests do
            total += leaves[:, column]
        return total / len(self.roots)

    def arrays(self) -> dict[str, np.ndarray]:
        """The arrays to store, by name."""
        return {key: getattr(self, key) for key in self.KEYS}


class PairFeatures(CalibratedVerifier):
    """Pair similarity features -> CART tree (settings chosen by text-disjoint CV) -> leaf probability -> band."""

    name: ClassVar[str] = "pair_features"
    FITTED: ClassVar[tuple[str, ...]] = ("_tree", "_band")
    CALIBRATION_IN_STATE: ClassVar[bool] = False  # the folds are in "chosen", with the settings they chose

    def __init__(
        self,
        *,
        min_samples_leaf: int = 5,
        trees: int = 1,
        calibration_folds: int = 5,
        calibration_by: str = "texts",
        grid_step: float = 0.01,
        objective: str = "task",
        pos_tags: bool = False,
        fold_prior: str = "as_fitted",
    ) -> None:
        if min_samples_leaf < 1 or trees < 1:
            raise ValueError(f"need min_samples_leaf >= 1 and trees >= 1, got {min_samples_leaf}, {trees}")
        check_fold_prior(fold_prior)
        super().__init__(locals())
        self._tree: TreeArrays | None = None
        self._chosen: dict[str, Any] | None = None

    @property
    def feature_names(self) -> tuple[str, ...]:
        """`FEATURES`, and `POS_FEATURES` after them with `pos_tags`."""
        return FEATURES + POS_FEATURES if self.pos_tags else FEATURES

    def features(self, problems: Sequence[VerificationProblem]) -> np.ndarray:
        """(n, len(feature_names)): the pair features of each problem."""
        rows = []
        for problem in pbar(problems, desc=f"{self.name}: features", unit="problems"):
            row = pair_features(problem)
            rows.append(np.concatenate([row, pos_similarities(problem)]) if self.pos_tags else row)
        return np.array(rows, dtype=np.float64).reshape(len(problems), len(self.feature_names))

    def _fit(self, train: VerificationData, labels: np.ndarray, *, seed: int) -> None:
        """Choose criterion and depth on out-of-fold probabilities, fit the band on them, then the tree on all.

        With `trees` > 1 a random forest of that many CART trees (gini, grown to `min_samples_leaf`) is
        fitted instead, with no search: its out-of-fold probabilities fit the band.
        """
        require_both_classes(train, labels)
        if self.pos_tags:
            from toolkit.pos_tags import require_english

            require_english(train, system=self.name)
        x = self.features(train.problems)
        folds, info = self.cross_fitting_folds(train, labels, seed=seed)
        select = objective_function("auc_x_c_at_1")
        best: tuple[float, int, int] | None = None
        best_oof = np.zeros(0)
        candidates = list(product(CRITERIA, DEPTHS)) if self.trees == 1 else [("gini", None)]
        for c, (criterion, depth) in enumerate(candidates):
            oof = np.zeros(len(labels))
            for fit_on, held_out in folds:
                tree = self._fit_tree(x[fit_on], labels[fit_on], criterion, depth, seed)
                oof[held_out] = fold_model_scores(tree.predict(x[held_out]), labels[fit_on], labels, self.fold_prior)
            key = (select(labels, oof), -(depth or 0), -c)  # best score, then the shallower tree, then the first
            if best is None or key > best:
                best, best_oof, chosen = key, oof, {"criterion": criterion, "max_depth": depth}
        assert best is not None
        self._band = self.fit_band(train, best_oof, labels)
        self._tree = self._fit_tree(x, labels, chosen["criterion"], chosen["max_depth"], seed)
        self._chosen = chosen | {"cv_auc_x_c_at_1": best[0]} | info

    def _fit_tree(self, x: np.ndarray, labels: np.ndarray, criterion: str, depth: int | None, seed: int) -> TreeArrays:
        from sklearn.ensemble import RandomForestClassifier
        from sklearn.tree import DecisionTreeClassifier

        if labels.all() or not labels.any():  # a fold with one class: a single leaf at that class
            return TreeArrays(np.array([-1]), np.array([-1]), np.array([-2]), np.array([-2.0]), [float(labels[0])])
        options = {"criterion": criterion, "max_depth": depth, "min_samples_leaf": self.min_samples_leaf}
        if self.trees == 1:
            model: Any = DecisionTreeClassifier(**options, random_state=legacy_seed(seed))
        else:
            model = RandomForestClassifier(n_estimators=self.trees, **options, random_state=legacy_seed(seed), n_jobs=1)
        return TreeArrays.from_sklearn(model.fit(x, labels))

    def raw_scores(self, problems: Sequence[VerificationProblem]) -> np.ndarray:
        """The leaf probability of "same author" of each problem, before the abstain band."""
        self._check_fitted()
        assert self._tree is not None
        return self._tree.predict(self.features(problems))

    def _state(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """Band, seed and the chosen settings in config.json; the tree's arrays in weights.safetensors."""
        assert self._tree is not None
        state = {"features": list(self.feature_names)} | self.band_state() | {"chosen": self._chosen}
        return state, self._tree.arrays()

    def _restore(self, state: Mapping[str, Any], arrays: Mapping[str, np.ndarray], *, where: Path) -> None:
        names = self.feature_names
        if list(state["features"]) != list(names):
            raise ValueError(f"written with another feature list ({len(state['features'])} features); refit it")
        tree = TreeArrays(*(arrays[key] for key in TreeArrays.KEYS))
        inner = tree.left >= 0
        if ((tree.feature[inner] < 0) | (tree.feature[inner] >= len(names))).any():
            raise HarnessError(f"{where.parent}: tree splits on a feature index outside 0..{len(names) - 1}")
        self._tree = tree
        self._chosen = state.get("chosen")
