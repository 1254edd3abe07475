"""The one table of measures: canonical name -> function, direction, description, parameters.

Every part of the harness that names, computes, sorts or resamples a measure reads this table:
task metadata (validated against it), `harness list`, the leaderboard (which direction is better),
resampling of per-item details (confidence intervals, significance), score calibration objectives.
Adding a measure is one entry here plus its function in this package.

Functions are referenced as "module:function" and imported only when a measure is computed, so
this module imports no numpy: `harness list` and `harness --help` stay light.

A measure reads one kind of input, and its function is called with it:

- ``answers`` (PAN verification): ``function(truth, answers)``, answers in [0, 1], 0.5 = no answer.
  Parameter ``profile`` (``pan20``/``pan23``) is the PAN evaluator whose definition is meant: the
  profile's own measures are computed exactly as its evaluator computes them
  (`harness.metrics.verification.evaluate_all`).
- ``ranks`` (retrieval): ``function(ranks, **params)``, the 1-based rank of each query's first
  match, 0 for a query without one (left out of the mean).
- ``trials`` (linking): ``function(scores, labels, **params)``, a similarity per trial and whether
  it is a target (same-author) trial.

Parametrised names are resolved here: ``recall_at_10`` is ``recall_at_k`` with ``k=10``.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, NamedTuple

Inputs = Literal["answers", "ranks", "trials"]
INPUTS: tuple[str, ...] = ("answers", "ranks", "trials")


class Measure(NamedTuple):
    """One measure of the table."""

    name: str  # canonical name; for a parametrised measure the family name, e.g. "recall_at_k"
    function: str  # "module:function", imported when the measure is computed
    higher_is_better: bool
    description: str
    inputs: Inputs  # what its function is called with (module doc); not a task's kind nor the data it gives
    parameters: Mapping[str, Any] = {}  # keyword parameters and their defaults
    pattern: str | None = None  # a parametrised measure's names, e.g. r"recall_at_(?P<k>\d+)"

    def load(self) -> Callable[..., float]:
        """The measure's function (imported now)."""
        module_name, _, attribute = self.function.partition(":")
        return getattr(importlib.import_module(module_name), attribute)


class Resolved(NamedTuple):
    """A measure name resolved in the table: its entry and the parameters its name sets."""

    name: str
    measure: Measure
    params: dict[str, Any]


_VERIFICATION = "harness.metrics.verification"
_PAN = {"profile": "pan23"}

MEASURES: dict[str, Measure] = {
    m.name: m
    for m in (
        Measure("auc", f"{_VERIFICATION}:auc", True, "area under the ROC curve (PAN: non-answers count as 0.5)",
                "answers", _PAN),
        Measure("c_at_1", f"{_VERIFICATION}:c_at_1", True,
                "accuracy that rewards abstaining (0.5) over wrong answers (Penas & Rodrigo 2011)", "answers", _PAN),
        Measure("f1", f"{_VERIFICATION}:f1", True, "F1 of the same-author class over answered problems", "answers",
                _PAN),
        Measure("f_05_u", f"{_VERIFICATION}:f_05_u", True,
                "F0.5u: F0.5 with non-answers counted as false negatives (Bevendorff et al. 2019)", "answers", _PAN),
        Measure("brier", f"{_VERIFICATION}:brier", True, "1 - Brier loss of the scores (PAN 2021-2023)", "answers",
                _PAN),
        Measure("overall", f"{_VERIFICATION}:overall", True,
                "mean of the profile's verification measures (pan20: 4, pan23: 5)", "answers", _PAN),
        Measure("auc_x_c_at_1", f"{_VERIFICATION}:auc_x_c_at_1", True, "AUC x c@1, the PAN 2014-2015 ranking score",
                "answers", _PAN),
        Measure("c_at_1_best_band", f"{_VERIFICATION}:c_at_1_best_band", True,
                "c@1 with the best abstain band chosen on the scored answers themselves (an upper bound; "
                "beside c_at_1 it shows the calibration gap)", "answers", _PAN),
        Measure("mrr", "harness.metrics.ranking:mrr_from_ranks", True,
                "mean reciprocal rank of the first same-author item", "ranks"),
        Measure("recall_at_k", "harness.metrics.ranking:recall_at_k_from_ranks", True,
                "share of queries with a same-author item among the top k (R@k), named recall_at_1, recall_at_10, ...",
                "ranks", {"k": None}, r"recall_at_(?P<k>[1-9]\d*)"),
        Measure("mean_rank", "harness.metrics.ranking:mean_rank_from_ranks", False,
                "mean rank of the first same-author item (MnR)", "ranks"),
        Measure("eer", "harness.metrics.linking:eer", False,
                "equal error rate (variant: interpolated or nearest point)", "trials", {"variant": "interpolated"}),
        Measure("min_dcf", "harness.metrics.linking:min_dcf", False,
                "minimum detection cost over thresholds (p_target, c_miss, c_fa, normalized)", "trials",
                {"p_target": 0.05, "c_miss": 1.0, "c_fa": 2.0, "normalized": False}),
    )
}  # fmt: skip


def resolve(name: str) -> Resolved:
    """The table entry of a measure name and the parameters the name sets; KeyError naming the known ones."""
    if name in MEASURES and MEASURES[name].pattern is None:
        return Resolved(name, MEASURES[name], {})
    for measure in MEASURES.values():
        if measure.pattern is not None and (match := re.fullmatch(measure.pattern, name)):
            return Resolved(name, measure, {key: int(value) for key, value in match.groupdict().items()})
    raise KeyError(f"unknown measure {name!r}; known measures: {', '.join(MEASURES)}")


def is_known(name: str) -> bool:
    """Whether a name resolves in the table."""
    try:
        resolve(name)
    except KeyError:
        return False
    return True


def higher_is_better(name: str) -> bool:
    """Whether larger values of the measure are better."""
    return resolve(name).measure.higher_is_better


def direction(name: str) -> str:
    """ "higher" or "lower": which values of the measure are better."""
    return "higher" if higher_is_better(name) else "lower"


def measure_function(name: str, settings: Mapping[str, Any] | None = None) -> Callable[..., float]:
    """The measure as a function of its inputs (see the module doc), with its parameters bound.

    Parameters come from the name (``k`` of ``recall_at_10``), then from `settings`, then from the
    table's defaults. A setting for measure ``m`` and parameter ``p`` is read from ``settings[m][p]``,
    ``settings["m_p"]`` or ``settings["p"]`` (first found), the ways result files record them.
    """
    resolved = resolve(name)
    measure = resolved.measure
    settings = settings or {}
    params = {}
    for key, default in measure.parameters.items():
        value = resolved.params.get(key, _setting(settings, measure.name, key, default))
        if value is None:
            raise ValueError(f"measure {name!r} needs parameter {key!r}")
        params[key] = value
    if measure.inputs == "answers":
        return _answers_function(resolved, params.pop("profile"))
    return _bind(measure.load(), params)


def _setting(settings: Mapping[str, Any], measure: str, key: str, default: Any) -> Any:
    nested = settings.get(measure)
    if isinstance(nested, Mapping) and key in nested:
        return nested[key]
    return settings.get(f"{measure}_{key}", settings.get(key, default))


def _bind(function: Callable[..., float], params: dict[str, Any]) -> Callable[..., float]:
    def compute(*inputs: Any) -> float:
        return function(*inputs, **params)

    return compute


def _answers_function(resolved: Resolved, profile: str) -> Callable[..., float]:
    """A PAN measure as `profile`'s evaluator computes it; measures beyond the profile's own by their function."""
    from harness.metrics.verification import PROFILES, evaluate_all

    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r}; known: {', '.join(PROFILES)}")
    name = resolved.measure.name
    if name not in answer_measures(profile):
        raise ValueError(f"measure {name!r} is not defined for profile {profile!r}")
    if name in PROFILES[profile] or name == "overall":
        # the evaluator computes a profile's measures together (overall is their mean; pan20's F0.5u
        # counts 0.5 as "same"): taking them from it keeps every number the evaluator's
        return lambda truth, answers: evaluate_all(truth, answers, profile=profile)[name]
    return resolved.measure.load()


def answer_measures(profile: str) -> tuple[str, ...]:
    """The verification measures a PAN profile defines: its evaluator's, `overall`, and those built on them."""
    from harness.metrics.verification import PROFILES

    evaluators = {name for names in PROFILES.values() for name in names} | {"overall"}
    built_on = tuple(m.name for m in MEASURES.values() if m.inputs == "answers" and m.name not in evaluators)
    return (*PROFILES[profile], "overall", *built_on)


def score_answer_measures(
    names: Sequence[str], answers: Mapping[str, float], truth: Mapping[str, bool], *, profile: str
) -> dict[str, float]:
    """`answers` measures of the table by name, of answers by id against truth (same author?) by id.

    For the measures a task lists beyond its evaluator's (e.g. `c_at_1_best_band`). Problems are
    aligned by sorted id, as PAN's evaluator does; a problem without an answer counts as 0.5.
    """
    import numpy as np

    ids = sorted(truth)
    labels = np.array([bool(truth[i]) for i in ids], dtype=bool)
    values = np.array([answers.get(i, 0.5) for i in ids], dtype=np.float64)
    results = {}
    for name in names:
        if resolve(name).measure.inputs != "answers":
            raise ValueError(f"measure {name!r} is not computed from answers")
        results[name] = float(measure_function(name, {"profile": profile})(labels, values))
    return results
