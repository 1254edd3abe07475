"""Unmasking (Koppel & Schler 2004; Koppel, Schler & Bonchek-Dokow 2007): how fast do the texts stop being told apart?

Koppel, M. and Schler, J. (2004). Authorship verification as a one-class classification problem. ICML.
Koppel, M., Schler, J. and Bonchek-Dokow, E. (2007). Measuring differentiability: unmasking pseudonymous
authors. JMLR 8, 1261-1276.

For one problem the known text(s) and the unknown text are cut into chunks; a linear SVM learns to tell
known chunks from unknown chunks, scored by 10-fold cross-validated accuracy; then the `removed` = 3 most
strongly weighted features on each side (the 3 largest positive and the 3 largest negative weights) are
removed and the SVM is trained again, `rounds` = 10 times. Texts by one author differ in a few words
(topic, a character's name), so their accuracy collapses once those are gone; texts by two authors stay
separable. The curve of accuracies (the "degradation curve") is the problem's feature vector, as in the
2007 paper's meta-learning step: the accuracies, the drops over one and two rounds, and both kinds of
drop sorted from the largest. A classifier over curves is trained on the training problems' curves.

Defaults are the papers': chunks of 500 words, the 250 most frequent words of the two sides as features
(by their mean relative frequency, so the longer side does not choose alone), 10 rounds, 3 + 3 features
removed per round, 10-fold cross-validation, scikit-learn's `LinearSVC` (C = 1).

Where this departs from the papers, and why:
- Short texts. The papers unmask books (tens of chunks). Here both sides are cut into the same number of
  chunks (so a cross-validated accuracy of 0.5 is chance): the shorter side's word count // 500, but at
  least `min_chunks` = 5 chunks (and at most `max_chunks` = 50). Texts shorter than 2,500 words (PAN14
  essays, PAN15) therefore get chunks shorter than 500 words, down to a few dozen words for PAN15,
  where the curve is noisy: the method was made for long texts (PAN14 novels). Known texts are joined
  into one word sequence before chunking. Cross-validation uses min(10, chunks per side) folds.
- Features are each chunk's relative word frequencies, standardised over the problem's chunks, so that
  the SVM's weights compare across words (the papers' own scaling is not reproduced).
- The curve classifier is a logistic regression on standardised curve features (the 2007 paper uses a linear
  SVM), because the answers must be probabilities; its abstain band (`toolkit.calibration`) is fitted on
  out-of-fold probabilities of the training problems (`cross_fitted_scores`: folds over text-disjoint groups,
  or folds that drop shared-text problems where there are too few groups), never on probabilities of problems
  the classifier was fitted on.

Nothing about a problem's curve depends on the other problems, so curves leak nothing between problems;
randomness (cross-validation folds) is seeded by the run seed and the problem's texts, so a problem gets
the same curve in any order and after `load`.
"""

from __future__ import annotations

import hashlib
import re
import warnings
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from core.errors import HarnessError
from core.progress import pbar
from core.records import VerificationData, VerificationProblem
from toolkit.logistic import StandardisedLogistic, fit_standardised_logistic
from toolkit.verifier import CalibratedVerifier, require_both_classes

_WORD = re.compile(r"\w+")


def words(text: str) -> list[str]:
    """The lower-cased word tokens (runs of letters, digits and underscores) of a text."""
    return _WORD.findall(text.lower())


def chunk_count(known_words: int, unknown_words: int, *, chunk_size: int, min_chunks: int, max_chunks: int) -> int:
    """How many chunks each side is cut into: the shorter side // chunk_size, within [min_chunks, max_chunks].

    Never more chunks than the shorter side has words (each chunk needs a word); 0 when a side is empty.
    """
    shorter = min(known_words, unknown_words)
    count = min(max(min_chunks, shorter // chunk_size), max_chunks)
    return min(count, shorter)


def split_chunks(tokens: Sequence[str], count: int) -> list[list[str]]:
    """`count` consecutive chunks of about equal length (lengths differ by at most one word)."""
    bounds = np.linspace(0, len(tokens), count + 1).round().astype(int)
    return [list(tokens[bounds[i] : bounds[i + 1]]) for i in range(count)]


def curve_features(accuracies: np.ndarray) -> np.ndarray:
    """The 2007 paper's vector of a degradation curve of r accuracies: 5r - 6 values.

    The accuracies; the drop over one round, acc[i] - acc[i+1]; the drop over two rounds, acc[i] - acc[i+2];
    the one-round drops sorted from the largest; the two-round drops sorted from the largest.
    """
    acc = np.asarray(accuracies, dtype=np.float64)
    one = acc[:-1] - acc[1:]
    two = acc[:-2] - acc[2:]
    return np.concatenate([acc, one, two, np.sort(one)[::-1], np.sort(two)[::-1]])


def _problem_seed(seed: int, problem: VerificationProblem) -> int:
    digest = hashlib.sha256("\x00".join(problem.texts).encode("utf-8", "surrogatepass")).digest()
    return (seed * 1_000_003 + int.from_bytes(digest[:6], "big")) % (2**32)


class Unmasking(CalibratedVerifier):
    """Degradation curves of known-vs-unknown chunk classification, a logistic regression over them, abstain band."""

    name: ClassVar[str] = "unmasking"
    FITTED: ClassVar[tuple[str, ...]] = ("_model", "_band", "_seed")

    def __init__(
        self,
        *,
        chunk_size: int = 500,
        min_chunks: int = 5,
        max_chunks: int = 50,
        features: int = 250,
        rounds: int = 10,
        removed: int = 3,
        folds: int = 10,
        svm_c: float = 1.0,
        calibration_folds: int = 5,
        calibration_by: str = "texts",
        grid_step: float = 0.01,
        objective: str = "task",
    ) -> None:
        if chunk_size < 1 or min_chunks < 2 or max_chunks < min_chunks:
            raise ValueError(
                f"need chunk_size >= 1 and 2 <= min_chunks <= max_chunks, got {chunk_size}, {min_chunks}, {max_chunks}"
            )
        if features < 1 or rounds < 3 or removed < 1 or folds < 2 or svm_c <= 0:
            raise ValueError("need features >= 1, rounds >= 3, removed >= 1, folds >= 2, svm_c > 0")
        super().__init__(locals())
        self._model: StandardisedLogistic | None = None

    # --- the degradation curve ----------------------------------------------------------------------

    def degradation_curve(self, problem: VerificationProblem, *, seed: int) -> np.ndarray:
        """The `rounds` cross-validated accuracies of telling known chunks from unknown chunks, round by round.

        A problem whose shorter side has fewer words than `min_chunks` cannot be chunked: its curve is
        chance (0.5) throughout.
        """
        if len(problem.texts) < 2:
            raise HarnessError(f"problem {problem.id}: needs at least one known text and the unknown text")
        known = [w for text in problem.known for w in words(text)]
        unknown = words(problem.unknown)
        count = chunk_count(
            len(known), len(unknown), chunk_size=self.chunk_size, min_chunks=self.min_chunks, max_chunks=self.max_chunks
        )
        if count < self.min_chunks:
            return np.full(self.rounds, 0.5)
        chunks = split_chunks(known, count) + split_chunks(unknown, count)
        labels = np.array([0] * count + [1] * count)
        vocabulary = self._vocabulary(known, unknown)
        index = {word: i for i, word in enumerate(vocabulary)}
        x = np.zeros((len(chunks), len(vocabulary)), dtype=np.float64)
        for row, chunk in enumerate(chunks):
            for word, n in Counter(w for w in chunk if w in index).items():
                x[row, index[word]] = n / len(chunk)
        scale = x.std(axis=0)
        scale[scale == 0] = 1.0
        x = (x - x.mean(axis=0)) / scale
        return self._unmask(x, labels, np.random.default_rng(seed))

    def _vocabulary(self, known: list[str], unknown: list[str]) -> list[str]:
        # mean of the two sides' relative frequencies, ties broken by the word so the order is fixed
        frequency: Counter[str] = Counter()
        for side in (known, unknown):
            for word, n in Counter(side).items():
                frequency[word] += n / len(side)
        return sorted(frequency, key=lambda w: (-frequency[w], w))[: self.features]

    def _unmask(self, x: np.ndarray, labels: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        from sklearn.exceptions import ConvergenceWarning
        from sklearn.model_selection import StratifiedKFold
        from sklearn.svm import LinearSVC

        per_class = int(np.bincount(labels).min())
        shuffle_seed = int(rng.integers(2**31))
        splitter = StratifiedKFold(n_splits=min(self.folds, per_class), shuffle=True, random_state=shuffle_seed)
        splits = list(splitter.split(x, labels))
        active = np.arange(x.shape[1])
        accuracies = np.full(self.rounds, 0.5)
        with warnings.catch_warnings():
            # tiny, separable problems: the solver's iteration cap is a non-issue for the accuracy
            warnings.simplefilter("ignore", ConvergenceWarning)
            for round_ in range(self.rounds):
                if len(active) == 0:
                    break  # every feature removed: nothing tells the sides apart any more (chance, 0.5)
                features = x[:, active]
                correct = 0
                for train, test in splits:
                    model = LinearSVC(C=self.svm_c, random_state=0).fit(features[train], labels[train])
                    correct += int((model.predict(features[test]) == labels[test]).sum())
                accuracies[round_] = correct / len(labels)
                if round_ == self.rounds - 1:
                    break  # the last round's weights would remove features nobody measures
                weights = LinearSVC(C=self.svm_c, random_state=0).fit(features, labels).coef_[0]
                order = np.argsort(weights, kind="stable")
                k = min(self.removed, len(active) // 2)
                drop = set(order[:k].tolist()) | set(order[len(order) - k :].tolist()) if k else set(range(len(active)))
                active = np.array([f for i, f in enumerate(active) if i not in drop], dtype=np.int64)
        return accuracies

    def curves(self, problems: Sequence[VerificationProblem], *, seed: int) -> np.ndarray:
        """(n, 5 * rounds - 6): the curve features of each problem (see `curve_features`)."""
        rows = [
            curve_features(self.degradation_curve(problem, seed=_problem_seed(seed, problem)))
            for problem in pbar(problems, desc=f"{self.name}: unmasking", unit="problems")
        ]
        return np.array(rows, dtype=np.float64).reshape(len(problems), 5 * self.rounds - 6)

    # --- fitting and answering ----------------------------------------------------------------------

    def _fit(self, train: VerificationData, labels: np.ndarray, *, seed: int) -> None:
        """Curves of the training problems; the band on out-of-fold probabilities, then the classifier on all."""
        require_both_classes(train, labels)
        x = self.curves(train.problems, seed=seed)

        def fit_and_score(fit_on: np.ndarray, score: np.ndarray) -> np.ndarray:
            return fit_standardised_logistic(x[fit_on], labels[fit_on], seed=seed, max_iter=1000).probabilities(
                x[score]
            )

        self.cross_fit_band(train, labels, fit_and_score, seed=seed)
        self._model = fit_standardised_logistic(x, labels, seed=seed, max_iter=1000)

    def raw_scores(self, problems: Sequence[VerificationProblem]) -> np.ndarray:
        """Probability of "same author" from the curve classifier, before the abstain band."""
        self._check_fitted()
        assert self._seed is not None
        assert self._model is not None
        x = self.curves(problems, seed=self._seed)
        return self._model.probabilities(x)

    def _state(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """Band, seed and cross-fitting summary in config.json; standardisation and weights in safetensors."""
        assert self._model is not None
        return self.band_state(), self._model.arrays()

    def _restore(self, state: Mapping[str, Any], arrays: Mapping[str, np.ndarray], *, where: Path) -> None:
        self._seed = int(state["seed"])
        model = StandardisedLogistic.from_arrays(arrays)
        width = 5 * self.rounds - 6
        if not model.mean.shape == model.scale.shape == model.coef.shape == (width,):
            raise HarnessError(f"{where.parent}: weights must each have {width} values (rounds={self.rounds})")
        self._model = model
