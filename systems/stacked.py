"""A stacked ensemble (`stacked`): a logistic-regression meta-model over other systems' out-of-fold answers.

Stamatatos, E., Daelemans, W., Verhoeven, B., Potthast, M., Stein, B., Juola, P., Sanchez-Perez, M. A. and
Barron-Cedeno, A. (2014). Overview of the Author Identification Task at PAN 2014. CLEF 2014 Working Notes.

PAN 2014 combined the answers of its 13 submitted verifiers into a meta-model, which on the English essays
scored above the best single submission (AUC x c@1 0.531 against Frery et al.'s 0.513). This system does the
same over this harness's verifiers (its `members`). The overview's exact combination rule was not at hand when
this was written, so the rule and the settings below are ours, not the paper's.

Fitting, so that nothing is fitted on scores of problems the scorer saw:
1. Meta-features. The training problems are cut into `folds` folds (`toolkit.calibration.author_disjoint_folds`:
   text-disjoint, and author-disjoint where the truth names authors and that leaves every fold training
   problems; `info["by"]` says which). For each fold every member is built fresh (with its `member_params`),
   fitted on the other folds and scores the fold's problems. A member's meta-feature is its score before its
   own band (`member_values="scores"`, standardised over the training problems) or its answer ("answers").
   Where few authors write many problems (CMCC's 7 training authors), no k folds keep authors apart; each fold
   then leaves two authors (or author groups) out (`author_pair_folds`), so that a member that learns the
   training authors (wccn) is judged on authors it has not seen; with text-only folds wccn's out-of-fold AUC on
   CMCC was 0.92 against 0.62 on the test split. Only where that cannot train (fewer than 3 authors, or a fold
   left with one class) do folds keep just texts apart, and a warning says so; the same warning is given where
   the truth names no authors (PAN 2013-2015: on the PAN15 folds wccn's out-of-fold AUC reaches 0.98).
2. Selection (`select="cv"`): forward selection (Caruana et al. 2004) adds the member that most raises the
   meta-model's cross-validated AUC and stops when none does; `info["chosen"]`, `info["selection"]`. Where no
   member beats chance out of fold, every member stays. `select="all"` keeps every member (PAN 2014's rule).
3. Meta-model: logistic regression (scikit-learn's L2 objective, C = `meta_c`) on the chosen members'
   out-of-fold values, with non-negative member weights (`non_negative`, as in Breiman 1996, "Stacked
   regressions"): every member scores higher for "same author", so a negative weight only fits noise.
4. Band: `toolkit.calibration.fit_abstain_band` on the scores this meta-model (the one that answers) gives the
   out-of-fold values, maximising the task's main measure (`objective="task"`).
5. Stepping aside (`step_aside`, with `select="cv"`): the ensemble and each member alone are judged by that
   measure on out-of-fold answers, each with a band fitted on its out-of-fold scores; the ensemble's are nested
   (selection and meta-model refitted inside each fold, `inner_folds`), as the members' are. Where the
   ensemble does not beat the best member by more than `step_aside_margin` ("none": strictly; "one_se": by more
   than one paired-bootstrap standard error of its lead, the one-standard-error rule), that member, refitted on
   all training problems, answers alone with its own calibration (`info["stepped_aside_to"]`; every figure
   compared in `info["out_of_fold_main"]`, with the lead's standard error whichever margin is used). "none" stays
   the default: on 80-200 training problems the lead cannot tell a real gain from noise, and "one_se" trades the
   PAN15 folds' losses for PAN14 essays' gain (benchmarks/README.md, "stacked steps aside by a margin").
6. Who answers (`answerers`): "folds" (the default) keeps each fold's chosen members, the models whose scores
   the meta-model and band were fitted on, and averages their values over folds; "refit" refits the chosen
   members on all training problems (faster to answer, but their scores leave the scale the band was fitted on);
   where one member is chosen, it then answers with its own band.

Why each step is as it is, with the runs that decided it, is in benchmarks/README.md: "stacked choosing its
members by cross-validation", "stacked answering with its fold members", "Folds that do not starve a fold",
"stacked steps aside" and "Why stacked stays below its best member".

Defaults: `members` = cngdist, compressor, pair_features (with 200 trees, `DEFAULT_MEMBER_PARAMS`), tfidf and
wccn; stacking fits each member once a fold. wccn (about 2 minutes a fit on PAN14 essays here, the others under
one) is a candidate since the folds leave two authors out where few authors write every problem (step 1): it is
the best member on PAN14 novels, PAN15 and the forum set, and the selection takes it there (benchmarks/README.md,
"wccn a default candidate of stacked"). impostors (2-3 minutes a fit) is left out and can be added:
`--param members=cngdist,compressor,pair_features,tfidf,wccn,impostors`. `member_params` maps a member's name to its
parameters (`--param member_params.compressor.grid_step=0.02`); given, it replaces the default whole
(`--param member_params={}`: every member with its own defaults).

The checkpoint holds the meta-model's coefficients (weights.safetensors) and band (config.json), and each
answering member's own checkpoint: `members/fold-<i>/<name>/` for fold i's members, `members/<name>/` for a
refitted one. No pickle.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from core.errors import HarnessError
from core.records import VerificationData, VerificationProblem
from harness.seeding import legacy_seed
from toolkit.calibration import author_disjoint_folds, band_objective, objective_function, truth_authors
from toolkit.read_texts import TextsRead
from toolkit.verifier import CalibratedVerifier, check_folds, require_both_classes

DEFAULT_MEMBERS: tuple[str, ...] = ("cngdist", "compressor", "pair_features", "tfidf", "wccn")
SELECTIONS = ("cv", "all")
MEMBER_VALUES = ("scores", "answers")
ANSWERERS = ("refit", "folds")
# how much the ensemble must beat its best lone member by out of fold to be kept (step 5): "none" (any margin), or
# "one_se", one bootstrap standard error of the difference (the one-standard-error rule: Breiman et al. 1984,
# Hastie et al. 2009 section 7.10)
STEP_ASIDE_MARGINS = ("none", "one_se")
MARGIN_RESAMPLES = 200
# pair_features as its forest: chosen over the single tree on out-of-fold AUC of training problems only
DEFAULT_MEMBER_PARAMS: dict[str, dict[str, Any]] = {"pair_features": {"trees": 200}}
logger = logging.getLogger("harness")
MEMBERS_FOLDER = "members"
FOLD_FOLDER = "fold-{}"  # members/fold-<i>/<name>/: fold i's members, where the fold members answer


def _member_class(name: str) -> Any:
    # looked up when used, so that the registry (and tests) decide what a name means
    from harness.registry import system_class

    return system_class(name)


def _exempt(member: Any, train: VerificationData) -> None:
    """A member fitted on part of the training split counts the whole split as training data
    (`CalibratedVerifier.exempt_texts`), for what its pre-trained encoder read."""
    exempt = getattr(member, "exempt_texts", None)
    if exempt is not None:
        exempt(train)


def _subset(data: VerificationData, indices: np.ndarray) -> VerificationData:
    """The problems of `data` at `indices`, with their truth only."""
    problems = tuple(data.problems[i] for i in indices)
    assert data.truth is not None
    truth = {p.id: data.truth[p.id] for p in problems}
    return data._replace(problems=problems, truth=truth)


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-z))


def _non_negative_logistic(x: np.ndarray, y: np.ndarray, c: float) -> tuple[np.ndarray, float]:
    """L2 logistic regression (scikit-learn's objective: 0.5 |w|^2 + C * log-loss summed) with w >= 0.

    The intercept is free and not penalised, as in scikit-learn. Solved by L-BFGS-B from w = 0 (deterministic).
    """
    from scipy.optimize import minimize

    sign = np.where(y, 1.0, -1.0)

    def loss(theta: np.ndarray) -> tuple[float, np.ndarray]:
        w, b = theta[:-1], theta[-1]
        margin = sign * (x @ w + b)
        # log(1 + exp(-m)) and its derivative, stable for large |m|
        value = 0.5 * w @ w + c * np.logaddexp(0.0, -margin).sum()
        g = -c * sign * _sigmoid(-margin)
        return float(value), np.append(w + x.T @ g, g.sum())

    bounds = [(0.0, None)] * x.shape[1] + [(None, None)]
    result = minimize(loss, np.zeros(x.shape[1] + 1), jac=True, method="L-BFGS-B", bounds=bounds)
    return np.asarray(result.x[:-1], dtype=np.float64), float(result.x[-1])


def forward_selection(
    meta: np.ndarray,
    labels: np.ndarray,
    folds: Sequence[tuple[np.ndarray, np.ndarray]],
    fit_meta: Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, float]],
) -> tuple[list[int], list[float]]:
    """The columns of `meta` chosen one at a time while the meta-model's cross-validated AUC rises.

    Returns the chosen columns (in the order chosen) and the cross-validated AUC after each step. Ties go to the
    earlier column; a step that does not raise the AUC is not taken, so a member that adds nothing stays out, and
    the first must beat chance (0.5: a meta-model that gives a member no weight answers a constant, whose AUC is
    0.5). Where no member beats chance, nothing is chosen: the caller decides.
    """
    from harness.metrics.verification import auc

    def cross_validated_auc(columns: list[int]) -> float:
        values = []
        for fit_on, held_out in folds:
            y_held = labels[held_out]
            if y_held.all() or not y_held.any():  # no AUC on one class
                continue
            coef, intercept = fit_meta(meta[np.ix_(fit_on, columns)], labels[fit_on])
            values.append(auc(y_held, meta[np.ix_(held_out, columns)] @ coef + intercept))
        return float(np.mean(values)) if values else 0.5

    chosen: list[int] = []
    trail: list[float] = []
    best = 0.5
    while len(chosen) < meta.shape[1]:
        trials = [(cross_validated_auc([*chosen, j]), j) for j in range(meta.shape[1]) if j not in chosen]
        value, column = max(trials, key=lambda trial: trial[0])  # max keeps the first of equal values
        if value <= best:
            break
        chosen.append(column)
        trail.append(value)
        best = value
    return chosen, trail


def lone_member_to_step_aside_for(
    lone_answers: np.ndarray,
    ensemble_answers: np.ndarray,
    labels: np.ndarray,
    measure: Callable[[np.ndarray, np.ndarray], float],
    margin: float = 0.0,
) -> tuple[int | None, list[float], float]:
    """The column of the lone member that answers instead of the ensemble, or None where the ensemble beats them all.

    `lone_answers` holds each member's out-of-fold answers alone (a column each), `ensemble_answers` the
    ensemble's, on the same problems; `measure` is the band's own objective. The ensemble must beat the best lone
    member by more than `margin` (ties go to the lone member, the simpler answer, then to the earlier column).
    Returns the column (or None), each member's measure and the ensemble's.
    """
    lone = [measure(labels, lone_answers[:, j]) for j in range(lone_answers.shape[1])]
    ensemble = measure(labels, ensemble_answers)
    best = int(np.argmax(lone))  # argmax keeps the first of equal values
    return (best if ensemble - lone[best] <= margin else None), lone, ensemble


def step_aside_margin_of(rule: str, difference_se: float) -> float:
    """The lead the ensemble must exceed under `rule` (STEP_ASIDE_MARGINS), given its lead's standard error; where the
    bootstrap found too few resamples (NaN), no margin."""
    return difference_se if rule == "one_se" and np.isfinite(difference_se) else 0.0


def paired_bootstrap_se(
    first: np.ndarray,
    second: np.ndarray,
    labels: np.ndarray,
    measure: Callable[[np.ndarray, np.ndarray], float],
    *,
    resamples: int,
    seed: int,
) -> float:
    """The bootstrap standard error of measure(first) - measure(second) over the same problems (Efron & Tibshirani
    1993): both answer sets are resampled together, so what the two share does not count as noise. Resamples of
    one class are skipped (no AUC on them); NaN where fewer than two resamples remain."""
    rng = np.random.default_rng(seed)
    differences = []
    for _ in range(resamples):
        rows = rng.integers(0, len(labels), len(labels))
        y = labels[rows]
        if y.all() or not y.any():
            continue
        differences.append(measure(y, first[rows]) - measure(y, second[rows]))
    return float(np.std(differences, ddof=1)) if len(differences) > 1 else float("nan")


def inner_folds(folds: Sequence[tuple[np.ndarray, np.ndarray]], outer: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """The other folds, restricted to the rows fold `outer` may be fitted on: folds for choices nested inside it."""
    allowed = folds[outer][0]
    return [
        (np.intersect1d(fit_on, allowed), np.intersect1d(held_out, allowed))
        for g, (fit_on, held_out) in enumerate(folds)
        if g != outer
    ]


class StackedEnsemble(CalibratedVerifier):
    """Logistic regression over the members' out-of-fold answers, abstain band on its own out-of-fold scores."""

    name: ClassVar[str] = "stacked"
    FITTED: ClassVar[tuple[str, ...]] = ("_systems", "_coef", "_band", "_chosen")
    CALIBRATION_IN_STATE: ClassVar[bool] = False  # the folds are in "info", with the out-of-fold measures

    def __init__(
        self,
        *,
        members: Sequence[str] | str = DEFAULT_MEMBERS,
        member_params: Mapping[str, Mapping[str, Any]] | None = None,
        folds: int = 5,
        meta_c: float = 1.0,
        non_negative: bool = True,
        grid_step: float = 0.01,
        objective: str = "task",
        select: str = "cv",
        member_values: str = "scores",
        answerers: str = "folds",
        step_aside: bool = True,
        step_aside_margin: str = "none",
    ) -> None:
        if isinstance(members, str):  # `--param members=cngdist,compressor`
            members = [m.strip() for m in members.split(",") if m.strip()]
        members = tuple(members)
        if not members:
            raise ValueError("members must name at least one system")
        if len(set(members)) != len(members):
            raise ValueError(f"members must not repeat a system, got {members!r}")
        if self.name in members:
            raise ValueError("a stacked ensemble cannot be its own member")
        if member_params is None:  # the defaults of the members there are
            member_params = {name: params for name, params in DEFAULT_MEMBER_PARAMS.items() if name in members}
        member_params = {name: dict(params) for name, params in member_params.items()}
        strangers = sorted(set(member_params) - set(members))
        if strangers:
            raise ValueError(f"member_params names {', '.join(strangers)}, which are not members {list(members)}")
        check_folds(folds, "folds")
        if select not in SELECTIONS:
            raise ValueError(f"select must be one of {', '.join(SELECTIONS)}, got {select!r}")
        if member_values not in MEMBER_VALUES:
            raise ValueError(f"member_values must be one of {', '.join(MEMBER_VALUES)}, got {member_values!r}")
        if answerers not in ANSWERERS:
            raise ValueError(f"answerers must be one of {', '.join(ANSWERERS)}, got {answerers!r}")
        if step_aside_margin not in STEP_ASIDE_MARGINS:
            raise ValueError(
                f"step_aside_margin must be one of {', '.join(STEP_ASIDE_MARGINS)}, got {step_aside_margin!r}"
            )
        if not meta_c > 0:
            raise ValueError(f"meta_c must be positive, got {meta_c!r}")
        super().__init__(locals())
        # the members that answer: one group (the chosen members refitted on all training problems) or, with
        # answerers="folds", one group per fold (the chosen members fitted on that fold's training part)
        self._systems: list[list[Any]] | None = None
        self._coef: np.ndarray | None = None
        self._intercept: float | None = None
        self._center: np.ndarray | None = None  # the meta-features' standardisation, per chosen member
        self._scale: np.ndarray | None = None
        self._chosen: list[str] | None = None  # the members that answer, in `members` order
        self._stepped_aside = False  # whether one member, refitted on all problems, answers alone (step 5 above)
        self._info: dict[str, Any] | None = None
        self.meta_features: np.ndarray | None = None  # out-of-fold member values of the last fit (not saved)

    @property
    def info(self) -> dict[str, Any] | None:
        """How the fit went: folds, out-of-fold measures of each member, the members chosen, the meta-model's."""
        return self._info

    def _fit(self, train: VerificationData, labels: np.ndarray, *, seed: int) -> None:
        """Out-of-fold member values -> members chosen -> meta-model and its band -> who answers (steps 1-6 above)."""
        require_both_classes(train, labels)
        classes = [_member_class(name) for name in self.members]  # an unknown name fails before any fitting
        problems = train.problems
        assert train.truth is not None
        authors = truth_authors(train)
        folds, fold_info, authors_apart = author_disjoint_folds(problems, authors, labels, k=self.folds, seed=seed)
        if not authors_apart:
            # a member that learns the training authors (wccn: their within-author covariance) then scores its
            # held-out problems' authors as seen ones: on CMCC wccn's out-of-fold AUC was 0.92, its test AUC 0.62;
            # PAN 2013-2015 truth names no authors, so there it cannot be helped, only said
            logger.warning(
                "%s: %s: folds keep texts apart but not authors (%s); where an author writes several problems, "
                "members that learn the training authors look better out of fold than they are, and the selection "
                "may prefer them",
                self.name,
                train.source,
                "the truth names none" if authors is None else "too few of them",
            )

        meta = np.full((len(problems), len(classes)), np.nan)
        fold_members = []
        for fit_on, held_out in folds:
            part = _subset(train, fit_on)
            held = [problems[i] for i in held_out]
            fold_members.append(self._new_members(classes, self.members))
            for j, member in enumerate(fold_members[-1]):
                member.fit(part, seed=seed)
                _exempt(member, train)  # the held-out training problems are no test texts
                meta[held_out, j] = self._member_values(member, held)
        if np.isnan(meta).any():
            raise HarnessError(f"{self.name}: a member gave NaN answers on held-out training problems")
        self.meta_features = meta
        center, scale = np.zeros(meta.shape[1]), np.ones(meta.shape[1])
        if self.member_values == "scores":
            # the members' scores live on their own scales (a cosine, a distance, a probability): standardised,
            # one L2 penalty treats the members alike (answers, all on [0, 1], stay as they are)
            center, scale = meta.mean(axis=0), meta.std(axis=0)
            scale[scale == 0] = 1.0
        meta = (meta - center) / scale

        order, trail = self._select(meta, labels, folds, seed)
        columns = sorted(order)
        chosen = [self.members[j] for j in columns]

        # the band is fitted on the scores of the meta-model that answers, over the out-of-fold member answers:
        # fold meta-models (each its own weights and intercept) put their scores on other scales than it does
        coef, intercept = self._fit_meta(meta[:, columns], labels, seed)
        meta_scores = _sigmoid(meta[:, columns] @ coef + intercept)
        band = self.fit_band(train, meta_scores, labels)

        # step 5: where no ensemble beats the best lone member on the band's own measure out of fold, that member,
        # refitted on all problems, answers alone (through fold members it would fall short of its own figure)
        band_measure = band_objective(self.objective, train)
        main_measure = objective_function(**band_measure)
        # every candidate's out-of-fold scores come from models fitted per fold, and a band fitted on them: the
        # ensemble's selection and meta-model nested in the folds as the members' fits are
        candidates = np.column_stack([self._nested_scores(meta, labels, folds, seed), self.meta_features])
        answers = np.column_stack([self.fit_band(train, c, labels).apply(c) for c in candidates.T])
        lone_main = [main_measure(labels, answers[:, j]) for j in range(1, answers.shape[1])]
        best_lone = 1 + int(np.argmax(lone_main))
        # the lead's own noise: on PAN15's 80 training problems an ensemble led wccn out of fold by less than it
        # and lost to it on the held-out problems (benchmarks/README.md, "stacked steps aside by a margin")
        margin_se = paired_bootstrap_se(
            answers[:, 0], answers[:, best_lone], labels, main_measure, resamples=MARGIN_RESAMPLES, seed=seed
        )
        margin = step_aside_margin_of(self.step_aside_margin, margin_se)
        lone, lone_main, ensemble_main = lone_member_to_step_aside_for(
            answers[:, 1:], answers[:, 0], labels, main_measure, margin
        )
        # the same measure with the selection and meta-model fitted on the rows they score (optimistic)
        not_nested = main_measure(labels, band.apply(meta_scores))
        self._stepped_aside = self.select == "cv" and self.step_aside and lone is not None
        if self._stepped_aside:
            assert lone is not None
            logger.info(
                "%s: no ensemble beats %s out of fold (%s: %.3f alone, %.3f the ensemble): %s answers alone",
                self.name, self.members[lone], band_measure["objective"], lone_main[lone], ensemble_main,
                self.members[lone],
            )  # fmt: skip
            columns, chosen = [lone], [self.members[lone]]
            coef, intercept = self._fit_meta(meta[:, columns], labels, seed)  # kept for its info, as with "refit"
            meta_scores = _sigmoid(meta[:, columns] @ coef + intercept)
            band = self.fit_band(train, meta_scores, labels)
            groups = [self._new_members([classes[lone]], chosen)]
            groups[0][0].fit(train, seed=seed)
        elif self.answerers == "folds":
            # the models that made the meta-features answer, so test meta-features are on their scale
            groups = [[members[j] for j in columns] for members in fold_members]
        else:
            groups = [self._new_members([classes[j] for j in columns], chosen)]
            for member in groups[0]:
                member.fit(train, seed=seed)

        from harness.metrics.verification import auc

        measure = objective_function("auc_x_c_at_1")
        self._systems, self._chosen = groups, chosen
        self._coef, self._intercept, self._band = coef, intercept, band
        self._center, self._scale = center[columns], scale[columns]
        self._info = fold_info | {
            "member_oof_auc": {n: auc(labels, self.meta_features[:, j]) for j, n in enumerate(self.members)},
            "chosen": chosen,
            "answerers": self.answerers,
            "out_of_fold_main": {
                "measure": band_measure["objective"],
                "ensemble": ensemble_main,
                "members": dict(zip(self.members, lone_main, strict=True)),
                "ensemble_not_nested": not_nested,
                "difference_se": margin_se,
                "margin": margin,
            },
            "stepped_aside_to": chosen[0] if self._stepped_aside else None,
            "selection": [[self.members[j], value] for j, value in zip(order[: len(trail)], trail, strict=True)],
            "meta_auc_x_c_at_1": measure(labels, band.apply(meta_scores)),
        }

    def _select(
        self, meta: np.ndarray, labels: np.ndarray, folds: Sequence[tuple[np.ndarray, np.ndarray]], seed: int
    ) -> tuple[list[int], list[float]]:
        """The members' columns chosen on `folds` of the (standardised) meta-features, and the selection's trail."""
        if self.select == "all":
            return list(range(meta.shape[1])), []
        order, trail = forward_selection(meta, labels, folds, lambda x, y: self._fit_meta(x, y, seed))
        # where no member beats chance out of fold, the training problems cannot choose: every member stays
        return order or list(range(meta.shape[1])), trail

    def _nested_scores(
        self, meta: np.ndarray, labels: np.ndarray, folds: Sequence[tuple[np.ndarray, np.ndarray]], seed: int
    ) -> np.ndarray:
        """The ensemble's out-of-fold scores with its choices nested (step 5): for each fold, members chosen on the
        other folds and a meta-model fitted on the rows the fold may be fitted on score the fold's rows."""
        scores = np.full(len(labels), 0.5)
        for f, (fit_on, held_out) in enumerate(folds):
            columns = sorted(self._select(meta, labels, inner_folds(folds, f), seed)[0])
            coef, intercept = self._fit_meta(meta[np.ix_(fit_on, columns)], labels[fit_on], seed)
            scores[held_out] = _sigmoid(meta[np.ix_(held_out, columns)] @ coef + intercept)
        return scores

    def _member_values(self, member: Any, problems: Sequence[VerificationProblem]) -> np.ndarray:
        """A member's meta-features: its scores before its band (`member_values="scores"`), or its answers.

        A member that has no `scores` (not a `CalibratedVerifier`) gives its answers either way.
        """
        if self.member_values == "scores" and hasattr(member, "scores"):
            return np.asarray(member.scores(problems), dtype=np.float64)
        return np.array([answer.value for answer in member.predict(problems)], dtype=np.float64)

    def _new_members(self, classes: Sequence[Any], names: Sequence[str]) -> list[Any]:
        """Fresh, unfitted members, each built with its `member_params` (defaults for the rest)."""
        from harness.params import build

        return [
            build(cls, self.member_params.get(name, {}), label=f"{self.name} member {name}")
            for name, cls in zip(names, classes, strict=True)
        ]

    def _fit_meta(self, x: np.ndarray, y: np.ndarray, seed: int) -> tuple[np.ndarray, float]:
        if y.all() or not y.any():  # a fold with one class: a constant answer at that class
            return np.zeros(x.shape[1]), (10.0 if y.all() else -10.0)
        if not self.non_negative:
            from sklearn.linear_model import LogisticRegression

            model = LogisticRegression(C=self.meta_c, random_state=legacy_seed(seed)).fit(x, y)
            return model.coef_[0].astype(np.float64), float(model.intercept_[0])
        return _non_negative_logistic(x, y, self.meta_c)

    def _answers_as_lone_member(self) -> bool:
        """Whether one refitted member answers for the ensemble (stepped aside for, or one chosen; steps 5-6)."""
        assert self._systems is not None
        return self._stepped_aside or (self.answerers == "refit" and len(self._systems[0]) == 1)

    def answer_values(self, problems: Sequence[VerificationProblem]) -> np.ndarray:
        """The meta-model's answers; where one refitted member answers, that member's own (steps 5-6 above)."""
        self._check_fitted()
        assert self._systems is not None
        if self._answers_as_lone_member():
            return np.array([answer.value for answer in self._systems[0][0].predict(problems)], dtype=np.float64)
        return super().answer_values(problems)

    def texts_read(self) -> list[TextsRead]:
        """What the answering members' pre-trained encoders read outside the training data: `predict` refuses to
        answer about it, as each member's `scores`, which the meta-model reads, refuse on their own."""
        assert self._systems is not None
        return [
            read._replace(encoder=f"{read.encoder} (member {member.name})")
            for group in self._systems
            for member in group
            for read in getattr(member, "texts_read", list)()
        ]

    def scores(self, problems: Sequence[VerificationProblem]) -> np.ndarray:
        """The meta-model's probabilities before the band; where one refitted member answers, its values."""
        self._check_fitted()
        assert self._systems is not None
        if self._answers_as_lone_member():
            return self._member_values(self._systems[0][0], problems)
        return self.raw_scores(problems)

    def member_matrix(self, problems: Sequence[VerificationProblem]) -> np.ndarray:
        """The chosen members' values (a column each), averaged over the answering groups (one per fold or one)."""
        assert self._systems is not None
        return np.mean(
            [np.column_stack([self._member_values(m, problems) for m in group]) for group in self._systems], axis=0
        )

    def raw_scores(self, problems: Sequence[VerificationProblem]) -> np.ndarray:
        """The meta-model's probability of "same author", before the band."""
        self._check_fitted()
        if not problems:
            return np.zeros(0)
        return self.meta_probability(self.member_matrix(problems))

    def standardised(self, values: np.ndarray) -> np.ndarray:
        """Chosen members' values (a column each) on the scale the meta-model was fitted on."""
        assert self._center is not None and self._scale is not None
        return (values - self._center) / self._scale

    def meta_probability(self, values: np.ndarray) -> np.ndarray:
        """The meta-model's probability of "same author" for the chosen members' values (a column each)."""
        assert self._coef is not None and self._intercept is not None
        return _sigmoid(self.standardised(values) @ self._coef + self._intercept)

    def save(self, directory: Path) -> None:
        """Meta-model and band here (config.json, weights.safetensors); each chosen member in members/<name>/.

        With answerers="folds", fold i's chosen members are in members/fold-<i>/<name>/.
        """
        # the members go in after: save_checkpoint replaces the whole folder
        super().save(directory)
        assert self._systems is not None and self._chosen is not None
        for folder, group in zip(self._group_folders(Path(directory), len(self._systems)), self._systems, strict=True):
            for name, member in zip(self._chosen, group, strict=True):
                member.save(folder / name)

    def _group_folders(self, directory: Path, groups: int) -> list[Path]:
        """Where each of the `groups` answering groups is saved: members/, or members/fold-<i>/ per fold."""
        if self.answerers == "refit" or self._stepped_aside:
            return [directory / MEMBERS_FOLDER]
        return [directory / MEMBERS_FOLDER / FOLD_FOLDER.format(i) for i in range(groups)]

    def _state(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        assert self._coef is not None
        assert self._systems is not None
        state = {"members": list(self.members), "chosen": self._chosen, "intercept": self._intercept}
        state["answering_groups"] = len(self._systems)
        state["stepped_aside"] = self._stepped_aside
        state |= self.band_state() | {"info": self._info}
        assert self._center is not None and self._scale is not None
        return state, {"coef": self._coef, "center": self._center, "scale": self._scale}

    def _restore(self, state: Mapping[str, Any], arrays: Mapping[str, np.ndarray], *, where: Path) -> None:
        """The meta-model from this checkpoint, each chosen member from its own in members/<name>/."""
        if list(state["members"]) != list(self.members):
            raise ValueError(f"members {state['members']} do not match params {list(self.members)}")
        if "chosen" not in state:  # written before members were chosen: every member answers
            self.select = "all"
        chosen = list(state.get("chosen", self.members))
        if not chosen or not set(chosen) <= set(self.members):
            raise ValueError(f"chosen members {chosen} are not among the members {list(self.members)}")
        coef = np.asarray(arrays["coef"], dtype=np.float64)
        if coef.shape != (len(chosen),):
            raise ValueError(f"coef has shape {coef.shape}, expected ({len(chosen)},)")
        self._coef, self._intercept, self._chosen = coef, float(state["intercept"]), chosen
        if "center" not in arrays:  # written before members' scores were read: the meta-model reads answers
            self.member_values = "answers"
        self._center = np.asarray(arrays.get("center", np.zeros(len(chosen))), dtype=np.float64)
        self._scale = np.asarray(arrays.get("scale", np.ones(len(chosen))), dtype=np.float64)
        self._info = state.get("info")
        if "answering_groups" not in state:  # written before the fold members could answer: refitted members did
            self.answerers = "refit"
        if "stepped_aside" not in state:  # written before stacked could step aside
            self.step_aside = False
        self._stepped_aside = bool(state.get("stepped_aside", False))
        groups = []
        for group_folder in self._group_folders(where.parent, int(state.get("answering_groups", 1))):
            group = []
            for name in chosen:
                folder = group_folder / name
                if not folder.is_dir():
                    raise HarnessError(f"{folder}: member checkpoint missing")
                group.append(_member_class(name).load(folder))
            groups.append(group)
        self._systems = groups
