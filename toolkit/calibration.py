"""Score calibration shared by the verification systems: an abstain band that maps to exactly 0.5.

This is the rescaling of PAN's 2020 distance baseline (Kestemont et al., `correct_scores` in
pan-webis-de/pan-code, clef20/authorship-verification): a raw similarity `s` in [0, 1] and two
thresholds `p1 <= p2` give

    s <= p1      ->  0.49 * s / p1                         (a "different authors" answer in [0, 0.49])
    p1 < s < p2  ->  0.5 exactly                           (no answer)
    s >= p2      ->  0.51 + 0.49 * (s - p2) / (1 - p2)      (a "same author" answer in [0.51, 1])

Scores outside [0, 1] are clipped into it first, so any monotone similarity that is mostly in
[0, 1] (cosine similarity, a probability) can be calibrated. `fit_abstain_band` grid-searches
`p1` and `p2` on a training split to maximise one of PAN's measures.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, NamedTuple

import numpy as np

from core.errors import HarnessError
from core.records import NO_ANSWER, RankingMeasure, VerificationData, VerificationProblem
from harness.metrics.verification import PROFILES
from toolkit.splits import grouped_folds, problem_groups, text_key

# The calibrated ranges of PAN's baseline: answers avoid (0.49, 0.51) except for the 0.5 itself.
LOW_MAX = 0.49
HIGH_MIN = 0.51


class AbstainBand(NamedTuple):
    """Thresholds of an abstain band: raw scores strictly between `p1` and `p2` answer 0.5.

    `p1 == p2` is a band with no width: a plain decision threshold that never abstains.
    """

    p1: float
    p2: float

    def apply(self, scores: Sequence[float] | np.ndarray) -> np.ndarray:
        """Calibrate raw scores with this band (see `rescale_with_abstain_band`)."""
        return rescale_with_abstain_band(scores, self.p1, self.p2)


def band_from_state(value: Any, *, where: Any) -> AbstainBand:
    """An abstain band read back from a checkpoint's state, `[p1, p2]` with `0 <= p1 <= p2 <= 1`.

    Anything else (inverted, NaN, out of range, not two numbers) is a one-line HarnessError naming
    `where` (the checkpoint's config.json), raised when the checkpoint is loaded, not at predict.
    """
    try:
        p1, p2 = (float(x) for x in value)
        if isinstance(value, str | bytes) or any(isinstance(x, bool) for x in value):
            raise TypeError
    except (TypeError, ValueError):
        raise HarnessError(f"{where}: abstain band {value!r} is not two numbers [p1, p2]; refit it") from None
    if not 0.0 <= p1 <= p2 <= 1.0:  # NaN fails every comparison
        raise HarnessError(f"{where}: abstain band {value!r} needs 0 <= p1 <= p2 <= 1; edited or corrupted; refit it")
    return AbstainBand(p1, p2)


def rescale_with_abstain_band(scores: Sequence[float] | np.ndarray, p1: float, p2: float) -> np.ndarray:
    """Map raw scores in [0, 1] to answers in [0, 1] with an abstain band (p1, p2) answering 0.5.

    Scores are clipped to [0, 1] first (NaN is refused). The map is monotone non-decreasing;
    a score equal to `p1` goes to the low side (0.49), one equal to `p2` to the high side (0.51),
    as in PAN's `correct_scores`. Where a branch has no width (`p1 == 0` or `p2 == 1`), its only
    score goes to the end of the range (0 or 1) rather than through PAN's division by 1e-6.
    """
    if not 0.0 <= p1 <= p2 <= 1.0:
        raise ValueError(f"abstain band needs 0 <= p1 <= p2 <= 1, got p1={p1!r}, p2={p2!r}")
    s = np.asarray(scores, dtype=np.float64)
    if np.isnan(s).any():
        raise ValueError("cannot calibrate NaN scores")
    s = np.clip(s, 0.0, 1.0)
    low = LOW_MAX * s / p1 if p1 > 0 else np.zeros_like(s)
    high = HIGH_MIN + (1.0 - HIGH_MIN) * (s - p2) / (1.0 - p2) if p2 < 1 else np.ones_like(s)
    out = np.where(s <= p1, low, np.where(s >= p2, high, NO_ANSWER))
    # guard the ends against rounding (0.51 + 0.49 * 1.0 may land a hair above 1)
    return np.clip(out, 0.0, 1.0)


MIN_GRID_STEP = 0.002  # 499 thresholds, 124,750 bands: 25 times the default step's 4,950


def band_grid(step: float = 0.01) -> np.ndarray:
    """The thresholds searched: step, 2*step, ... below 1 (0.01 ... 0.99 for the default step).

    The band search tries every pair of thresholds, so its time grows with the square of 1/step: MIN_GRID_STEP
    keeps it within 25 times the default's (a step of 1e-9 asked for 119 GiB).
    """
    if not MIN_GRID_STEP <= step <= 0.5:
        raise ValueError(f"grid step must be in [{MIN_GRID_STEP}, 0.5], got {step!r}")
    count = int(np.floor((1.0 - 1e-9) / step))
    # rounded so that the chosen thresholds read as 0.07, not 0.07000000000000001, in result files
    return np.round(np.arange(1, count + 1) * step, 10)


def fit_abstain_band(
    scores: Sequence[float] | np.ndarray,
    labels: Sequence[bool] | np.ndarray,
    *,
    step: float = 0.01,
    objective: str = "overall",
    profile: str = "pan23",
) -> AbstainBand:
    """Grid-search the band (p1, p2) that maximises a PAN measure of the calibrated scores.

    Every pair `p1 <= p2` from `band_grid(step)` is tried (4,950 pairs for step 0.01): the pairs
    with `p1 < p2` that PAN's baseline searches, plus `p1 == p2`, the bands of no width, so that the
    fitted band is never worse on these data than the best plain threshold. The measure is `objective`
    of the measure table (harness.metrics.table) for `profile`, computed on the calibrated scores.

    Ties (equal measure, compared exactly) go to the narrowest band, then to the lowest `p1`:
    abstaining is kept only where it pays.

    Scores outside [0, 1] are clipped first, as in `rescale_with_abstain_band`. With step 0.01 and
    a few thousand scores the search takes a few seconds.
    """
    s = np.clip(np.asarray(scores, dtype=np.float64), 0.0, 1.0)
    y = np.asarray(labels, dtype=bool)
    if s.ndim != 1 or s.shape != y.shape:
        raise ValueError(f"scores and labels must be 1-D of the same length, got {s.shape} and {y.shape}")
    if s.size == 0:
        raise ValueError("cannot fit an abstain band on no scores")
    if np.isnan(s).any():
        raise ValueError("cannot fit an abstain band on NaN scores")
    measure = objective_function(objective, profile=profile)
    grid = band_grid(step)
    best_key: tuple[float, int, int] | None = None
    best = AbstainBand(float(grid[0]), float(grid[0]))
    for i, p1 in enumerate(grid):
        # rows of calibrated scores for every p2 >= p1 at once; the measure then scores them one by one
        high = HIGH_MIN + (1.0 - HIGH_MIN) * (s[None, :] - grid[i:, None]) / (1.0 - grid[i:, None])
        rows = np.where(s <= p1, LOW_MAX * s / p1, np.where(s[None, :] >= grid[i:, None], high, NO_ANSWER))
        for offset, row in enumerate(np.clip(rows, 0.0, 1.0)):
            # maximise the measure, then prefer the narrowest band, then the lowest p1 (grid indices: exact)
            key = (measure(y, row), -offset, -i)
            if best_key is None or key > best_key:
                best_key, best = key, AbstainBand(float(p1), float(grid[i + offset]))
    return best


def prior_corrected(probabilities: np.ndarray, fitted_share: float, target_share: float) -> np.ndarray:
    """Probabilities of "same author" from a classifier fitted where `fitted_share` of the problems were
    same-author, moved to where `target_share` are (Bayes' rule, as in Saerens et al. 2002; for a well-specified
    logistic model, the intercept it would learn at the new balance): logit(p') = logit(p) - logit(fitted_share) +
    logit(target_share).

    Cross-fitting needs it where a fold's training part has another class balance than the whole split: folds that
    keep authors apart drop more different-author problems (each touches two authors), so on CMCC their training
    parts are 55-65% same-author against the split's 50%, and the fold models' scores sit higher than the answering
    model's, on which the band then misplaces its cut (benchmarks/README.md, "One cause of the shift, and a correction
    for it"). Exact 0 and 1 stay where they are.
    """
    p = np.asarray(probabilities, dtype=np.float64)
    if not (0.0 < fitted_share < 1.0 and 0.0 < target_share < 1.0):
        raise ValueError(f"class shares must lie strictly between 0 and 1, got {fitted_share} and {target_share}")
    shift = np.log(target_share / (1 - target_share)) - np.log(fitted_share / (1 - fitted_share))
    inner = (p > 0.0) & (p < 1.0)
    out = p.copy()
    logit = np.log(p[inner]) - np.log1p(-p[inner])
    out[inner] = 1.0 / (1.0 + np.exp(-(logit + shift)))
    return out


FOLD_PRIORS = ("as_fitted", "corrected")


def check_fold_prior(fold_prior: str) -> None:
    """Refuse a `fold_prior` setting that is not one of `FOLD_PRIORS` (a ValueError naming them)."""
    if fold_prior not in FOLD_PRIORS:
        raise ValueError(f"fold_prior must be one of {', '.join(FOLD_PRIORS)}, got {fold_prior!r}")


def fold_model_scores(
    probabilities: np.ndarray, fold_labels: np.ndarray, labels: np.ndarray, fold_prior: str
) -> np.ndarray:
    """A fold classifier's probabilities as the band should read them: as fitted, or ("corrected") moved from the
    fold's training class balance to the whole training split's, the balance the answering classifier learns."""
    if fold_prior == "corrected":
        return prior_corrected(probabilities, float(np.mean(fold_labels)), float(np.mean(labels)))
    return np.asarray(probabilities, dtype=np.float64)


def class_balanced(scores: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The scores and labels with each problem of the rarer class repeated round(common / rare) times in all.

    A band fitted where most problems are same-author learns that answering "same" pays (PAN's `overall` rewards
    F1 0.667 for "all same" on a balanced set, more on a skewed one), and then answers "same" to every problem of a
    balanced test set. Repeating the rarer class weighs the classes about alike, as a verification split built
    for PAN is; every measure of the band search counts problems, so a repeat is an integer weight. With one
    class missing, or a ratio that rounds to 1, the input comes back unchanged.
    """
    labels = np.asarray(labels, dtype=bool)
    same, different = int(labels.sum()), int((~labels).sum())
    if not same or not different:
        return np.asarray(scores), labels
    repeats = round(max(same, different) / min(same, different))
    if repeats <= 1:
        return np.asarray(scores), labels
    rare = np.flatnonzero(labels if same < different else ~labels)
    index = np.concatenate([np.arange(labels.size), np.tile(rare, repeats - 1)])
    return np.asarray(scores)[index], labels[index]


TASK_OBJECTIVE = "task"
"""A band objective that names no measure: the one the training split's task ranks systems by."""
DEFAULT_RANKING = RankingMeasure("overall", "pan23")  # where the data names no task: PAN 2020-2023's ranking


def check_objective(objective: str) -> None:
    """Refuse an objective that is neither "task" nor a measure of PAN 2023's evaluator (a ValueError naming it)."""
    if objective != TASK_OBJECTIVE:
        objective_function(objective)


def band_objective(objective: str, data: VerificationData) -> dict[str, str]:
    """The `objective` and `profile` arguments of `fit_abstain_band` for a system's `objective` setting.

    "task" follows the training split (`data.ranked_by`): overall on PAN 2020-2023 data, AUC x c@1 on PAN
    2013-2015 corpora, PAN 2023's overall where the data names no task. Why it matters: a band fitted for
    AUC x c@1 on weak scores can answer one class (AUC x c@1 cannot tell "all different", F1 0, from "all
    same", F1 0.667), which PAN 2020-2023's overall punishes. Any other value is a measure of PAN 2023's
    evaluator, whatever the data.
    """
    if objective != TASK_OBJECTIVE:
        return {"objective": objective, "profile": "pan23"}
    ranking = data.ranked_by or DEFAULT_RANKING
    return {"objective": ranking.name, "profile": ranking.profile}


def objective_function(objective: str, *, profile: str = "pan23") -> Callable[[np.ndarray, np.ndarray], float]:
    """The measure `fit_abstain_band` maximises: one the profile defines in the measure table (e.g. `auc_x_c_at_1`)."""
    from harness.metrics.table import answer_measures, measure_function

    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r}; known: {', '.join(PROFILES)}")
    known = answer_measures(profile)
    if objective not in known:
        raise ValueError(f"unknown objective {objective!r} for profile {profile!r}; known: {', '.join(known)}")
    compute = measure_function(objective, {"profile": profile})

    def measure(truth: np.ndarray, answers: np.ndarray) -> float:
        return float(compute(truth, answers))

    return measure


def training_labels(data: VerificationData) -> np.ndarray:
    """The truth of each problem of a training split, in problem order (True = same author)."""
    if data.truth is None:
        raise HarnessError(f"{data.source}: fitting needs a split with truth")
    missing = [problem.id for problem in data.problems if problem.id not in data.truth]
    if missing:
        raise HarnessError(f"{data.source}: no truth for {len(missing)} problem(s), e.g. {missing[0]!r}")
    if not data.problems:
        raise HarnessError(f"{data.source}: no problems to fit on")
    return np.array([bool(data.truth[problem.id].same) for problem in data.problems], dtype=bool)


# --- cross-fitted calibration ------------------------------------------------------------------------
# A band fitted on scores of the problems the scorer was fitted on is fitted on optimistic scores (the
# vocabulary, idf or classifier has seen those very texts) and does not carry to test: issue 12 measured
# cngdist at AUC 0.753 but c@1 0.575 on PAN15. Bands (and any score -> probability map) are therefore fit
# on OUT-OF-FOLD scores: each training problem scored by a scorer fitted without its texts.

FitAndScore = Callable[[np.ndarray, np.ndarray], Sequence[float] | np.ndarray]
"""`fit_and_score(train_indices, held_out_indices)`: fit a scorer on the problems at `train_indices`
only, return the raw scores of the problems at `held_out_indices` (same order)."""


def fit_then_score(
    problems: Sequence[VerificationProblem],
    fit: Callable[[Sequence[VerificationProblem]], Any],
    score: Callable[[Sequence[VerificationProblem], Any], np.ndarray],
) -> FitAndScore:
    """The `fit_and_score` of a scorer made by `fit(problems)` and applied by `score(problems, scorer)`."""

    def fit_and_score(train_indices: np.ndarray, held_out_indices: np.ndarray) -> np.ndarray:
        scorer = fit([problems[i] for i in train_indices])
        return score([problems[i] for i in held_out_indices], scorer)

    return fit_and_score


def cross_fitted_folds(
    problems: Sequence[VerificationProblem],
    *,
    k: int = 5,
    seed: int = 0,
    authors: Sequence[Iterable[str] | None] | None = None,
) -> tuple[list[tuple[np.ndarray, np.ndarray]], dict[str, Any]]:
    """k (train, held-out) index pairs in which no training problem shares a text with its held-out part.

    Two ways to make them; the one whose smallest training part is larger is taken (the first on a tie):
    - whole text-disjoint groups (`toolkit.splits.problem_groups`, also author-disjoint where `authors` are
      given) are assigned to folds (`grouping: "text-disjoint"`), where there are at least `k` groups;
    - the folds are made of problems, and every problem that shares a text (or known author) with a fold's
      held-out part is dropped from that fold's training part (`grouping: "drop-shared"`, `dropped`: the drops
      summed over folds). PAN14 novels needs this: every problem is in one text-connected group.
    Whole groups keep every other problem for training, unless one group holds most problems: on CMCC pairs
    (texts reused across pairs) one text-connected group held 180 of 200 training problems, so its fold's model
    was fitted on 20 problems and scored 90% of the out-of-fold scores a band was fitted on; dropping only the
    problems that share a text with each fold's held-out part kept 89-96 problems in every fold there.
    Raises a one-line HarnessError when a fold is left with no training problem.
    """
    if k < 2:
        raise HarnessError(f"cross-fitting needs at least 2 folds, got {k}")
    if len(problems) < k:
        raise HarnessError(f"cross-fitting needs at least {k} problems for {k} folds, got {len(problems)}")
    groups = problem_groups(problems, authors)
    count = int(len(np.unique(groups)))
    shared, dropped = _drop_shared_folds(problems, k, seed, authors)
    if count >= k:
        grouped = grouped_folds(groups, k, seed=seed)
        if min(len(train) for train, _ in grouped) >= min(len(train) for train, _ in shared):
            return grouped, {"folds": k, "grouping": "text-disjoint", "groups": count, "dropped": 0}
    for fold, (train, _) in enumerate(shared):
        if len(train) == 0:
            raise HarnessError(
                f"cross-fitting fold {fold + 1} of {k}: every training problem shares a text with the held-out part"
            )
    return shared, {"folds": k, "grouping": "drop-shared", "groups": count, "dropped": dropped}


AUTHOR_GROUPS = 8  # at most 28 models for `author_pair_folds`


def truth_authors(data: VerificationData) -> list[tuple[str, ...]] | None:
    """Each problem's authors as the split's truth names them (known texts' first, as in the truth file), or None
    where it names none for some problem (PAN 2013-2015 truth names no authors)."""
    if data.truth is None:
        raise HarnessError(f"{data.source}: fitting needs a split with truth")
    named = [data.truth[problem.id].named_authors for problem in data.problems]  # not convert's placeholders
    if not all(named):
        return None
    return [tuple(authors or ()) for authors in named]


def author_disjoint_folds(
    problems: Sequence[VerificationProblem],
    authors: Sequence[Iterable[str]] | None,
    labels: np.ndarray,
    *,
    k: int,
    seed: int,
) -> tuple[list[tuple[np.ndarray, np.ndarray]], dict[str, Any], bool]:
    """Cross-fitting folds that keep authors apart where `authors` (`truth_authors`) names them, and whether they do.

    A test split's authors are new to the system, so out-of-fold scores made by a model that learnt the held-out
    problems' authors look better than test scores will: on CMCC (seed 0) wccn's out-of-fold AUC was 0.92 with folds
    that keep only texts apart, 0.57 with folds that keep its 7 authors apart, and 0.67 on the test split. In order:
    k author- and text-disjoint folds (`cross_fitted_folds` with `authors`); where few authors write every problem,
    so that k folds leave one with nothing to fit (CMCC), folds that leave two author groups out
    (`author_pair_folds`); where that too leaves a fold nothing, or one class only, to fit, or the truth names no
    authors, folds that keep texts apart only. `info["by"]` says which, and why.
    """
    if authors is None:
        folds, info = cross_fitted_folds(problems, k=k, seed=seed)
        return folds, info | {"by": "texts (the truth names no authors)"}, False
    try:
        folds, info = cross_fitted_folds(problems, k=k, seed=seed, authors=authors)
        return folds, info | {"by": "texts and authors"}, True
    except HarnessError:
        pass
    try:
        folds, info = author_pair_folds(problems, authors, seed=seed)
        if any(labels[train].all() or not labels[train].any() for train, _ in folds):
            raise HarnessError("a fold's training problems are of one class")
        return (
            folds,
            info | {"by": "authors, two groups left out a fold (author-disjoint k folds leave one empty)"},
            True,
        )
    except HarnessError as error:
        folds, info = cross_fitted_folds(problems, k=k, seed=seed)
        return folds, info | {"by": f"texts (author-pair folds cannot be used: {error})"}, False


def author_pair_folds(
    problems: Sequence[VerificationProblem],
    authors: Sequence[Iterable[str]],
    *,
    seed: int = 0,
    groups: int = AUTHOR_GROUPS,
) -> tuple[list[tuple[np.ndarray, np.ndarray]], dict[str, Any]]:
    """(train, held-out) index pairs in which no training problem has an author of its held-out part.

    For corpora with few authors, each in many problems (CMCC: 7 training authors, 200 pairs), where no k-fold split
    keeps authors apart (`cross_fitted_folds` with `authors` finds a fold with no training problem). The authors
    are dealt into `groups` groups (one an author where there are at most `groups`); each pair of groups gives one
    fold, whose model is fitted on the problems with no author in either group and scores the problems whose
    authors are in exactly those two. A problem whose authors lie in one group joins a pair with a second group
    drawn at random, so every model is fitted with two groups left out, whether its problems are same-author or
    not: a fold that held out one group would fit a larger model on exactly the groups' same-author problems, and
    the pooled out-of-fold scores would mix the two kinds with the model size (on CMCC that put compressor's
    out-of-fold AUC at 0.19-0.29). Every problem is held out once; folds with nothing held out are left out.
    Raises a one-line HarnessError where a fold is left with no training problem (fewer than 3 authors).
    """
    names = sorted({author for problem_authors in authors for author in problem_authors})
    count = min(groups, len(names))
    if count < 3:
        raise HarnessError(f"author-disjoint folds need at least 3 authors, got {len(names)}")
    rng = np.random.default_rng(seed)
    group = {names[i]: rank % count for rank, i in enumerate(rng.permutation(len(names)))}
    own = [frozenset(group[a] for a in problem_authors) for problem_authors in authors]
    cells = []
    for cell in own:
        if len(cell) == 1:
            (only,) = cell
            cell = cell | {int(rng.choice([g for g in range(count) if g != only]))}
        cells.append(cell)
    indices = np.arange(len(problems))
    folds = []
    for cell in sorted(set(cells), key=sorted):
        held_out = indices[[c == cell for c in cells]]
        train = indices[[not (g & cell) for g in own]]
        if len(train) == 0:
            raise HarnessError(
                f"author-disjoint folds: no training problem is left without author groups {sorted(cell)}"
            )
        folds.append((train, held_out))
    info = {"folds": len(folds), "grouping": "author pairs", "author_groups": count, "authors": len(names)}
    return folds, info


def _drop_shared_folds(
    problems: Sequence[VerificationProblem], k: int, seed: int, authors: Sequence[Iterable[str] | None] | None
) -> tuple[list[tuple[np.ndarray, np.ndarray]], int]:
    """Folds of problems dealt at random; each fold's training part without the problems that share a text (or
    known author) with its held-out part. Returns the folds and the number of drops summed over them."""
    keys = [_problem_keys(problem, None if authors is None else authors[i]) for i, problem in enumerate(problems)]
    rng = np.random.default_rng(seed)
    assignment = np.empty(len(problems), dtype=np.int64)
    assignment[rng.permutation(len(problems))] = np.arange(len(problems)) % k
    indices = np.arange(len(problems))
    folds, dropped = [], 0
    for fold in range(k):
        held_out = indices[assignment == fold]
        held_keys = set().union(*(keys[i] for i in held_out))
        candidates = indices[assignment != fold]
        train = np.array([i for i in candidates if not keys[i] & held_keys], dtype=np.int64)
        dropped += len(candidates) - len(train)
        folds.append((train, held_out))
    return folds, dropped


def cross_fitted_scores(
    problems: Sequence[VerificationProblem],
    fit_and_score: FitAndScore,
    *,
    k: int = 5,
    seed: int = 0,
    authors: Sequence[Iterable[str] | None] | None = None,
    folds: tuple[list[tuple[np.ndarray, np.ndarray]], dict[str, Any]] | None = None,
) -> tuple[np.ndarray, dict[str, Any]]:
    """Out-of-fold raw scores of the training problems, and how the folds were made.

    `fit_and_score(train_indices, held_out_indices)` fits the scorer (vectoriser, classifier, ...) on the
    problems at `train_indices` only and returns the raw scores of those at `held_out_indices`. Folds come
    from `cross_fitted_folds` (text-disjoint groups, or dropping shared-text problems where that keeps more
    training problems in every fold: too few groups, or one group holding most problems), so no score is made
    by a scorer that saw a text of its problem. Fit the band on the returned scores (`fit_abstain_band`), then
    the final scorer on all training problems.

    The info is e.g. `{"folds": 5, "grouping": "text-disjoint", "groups": 159, "dropped": 0}`. `folds`, where
    given, are (folds, info) made elsewhere (`author_disjoint_folds`), used as they are.
    """
    folds, info = folds if folds is not None else cross_fitted_folds(problems, k=k, seed=seed, authors=authors)
    scores = np.full(len(problems), np.nan, dtype=np.float64)
    for fold, (train, held_out) in enumerate(folds):
        values = np.asarray(fit_and_score(train, held_out), dtype=np.float64)
        if values.shape != (len(held_out),):
            raise HarnessError(
                f"cross-fitting fold {fold + 1}: fit_and_score gave {values.shape} scores for {len(held_out)} problems"
            )
        scores[held_out] = values
    if np.isnan(scores).any():
        raise HarnessError("cross-fitting: fit_and_score returned NaN scores")
    return scores, info


def _problem_keys(problem: VerificationProblem, authors: Iterable[str] | None) -> set[str]:
    keys = {f"text:{text_key(t)}" for t in problem.texts}
    if authors is not None:
        keys |= {f"author:{a}" for a in authors}
    return keys
