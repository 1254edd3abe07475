"""The measure table: every measure a task declares resolves in it, with a function, a direction and parameters."""

from __future__ import annotations

import inspect
import subprocess
import sys

import numpy as np
import pytest

from harness import registry
from harness.metrics import table
from harness.metrics.verification import evaluate_all
from harness.task import TaskMetadata


def test_every_task_measure_resolves_with_a_direction():
    for name in registry.TASKS:
        meta = registry.task_class(name).metadata
        for measure in meta.measures:
            resolved = table.resolve(measure)
            assert table.direction(measure) in ("higher", "lower"), (name, measure)
            assert callable(resolved.measure.load()), (name, measure)
        if meta.kind == "verification":
            assert set(meta.measures) <= set(table.answer_measures(meta.evaluator)), name


def test_every_function_loads_and_takes_its_parameters():
    for measure in table.MEASURES.values():
        function = measure.load()
        accepted = inspect.signature(function).parameters
        for key in measure.parameters:
            # `profile` names the PAN evaluator whose definition is used, not an argument of every PAN function
            assert key == "profile" or key in accepted, (measure.name, key)
        assert measure.inputs in table.INPUTS


def test_table_imports_no_numpy():
    code = "import sys, harness.metrics.table\nprint(sorted(m for m in sys.modules if m.split('.')[0] == 'numpy'))\n"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_parametrised_names_resolve_and_others_are_refused():
    assert table.resolve("recall_at_10").params == {"k": 10}
    assert table.resolve("recall_at_10").measure.name == "recall_at_k"
    for bad in ("recall_at_0", "recall_at_k", "recall_at_05", "mrr@10", "MRR"):
        assert not table.is_known(bad), bad
    with pytest.raises(KeyError, match="unknown measure 'MRR'; known measures: auc, "):
        table.resolve("MRR")
    assert [n for n in ("auc", "overall", "mrr", "recall_at_1") if not table.higher_is_better(n)] == []
    assert [n for n in ("eer", "min_dcf", "mean_rank") if table.higher_is_better(n)] == []


def test_parameters_come_from_the_name_then_settings_then_defaults():
    from harness.metrics.linking import eer, min_dcf

    scores = np.array([0.1, 0.4, 0.35, 0.8, 0.5, 0.5])
    labels = np.array([False, False, True, True, False, True])
    assert table.measure_function("eer")(scores, labels) == eer(scores, labels)
    assert table.measure_function("eer", {"eer_variant": "nearest"})(scores, labels) == eer(
        scores, labels, variant="nearest"
    )
    nested = {"min_dcf": {"p_target": 0.01, "normalized": True}}
    assert table.measure_function("min_dcf", nested)(scores, labels) == min_dcf(
        scores, labels, p_target=0.01, normalized=True
    )
    assert table.measure_function("recall_at_2", {"k": 9})(np.array([1, 3, 2])) == pytest.approx(2 / 3)


@pytest.mark.parametrize("profile", ["pan20", "pan23"])
def test_pan_measures_are_the_evaluators_numbers(profile):
    rng = np.random.default_rng(3)
    truth = rng.random(80) < 0.5
    answers = np.round(rng.random(80), 1)  # many exact 0.5 answers: pan20 and pan23 differ on F0.5u
    official = evaluate_all(truth, answers, profile=profile)
    for name in table.answer_measures(profile):
        got = table.measure_function(name, {"profile": profile})(truth, answers)
        if name == "auc_x_c_at_1":
            assert got == official["auc"] * official["c_at_1"]  # the same float
        elif name == "c_at_1_best_band":  # no evaluator's number: a bound at or above the evaluator's c@1
            assert got >= official["c_at_1"]
        else:
            assert got == official[name]
    assert "brier" not in table.answer_measures("pan20")
    with pytest.raises(ValueError, match="'brier' is not defined for profile 'pan20'"):
        table.measure_function("brier", {"profile": "pan20"})


def test_task_metadata_refuses_measures_outside_the_table():
    common = {"name": "t", "version": "1", "kind": "retrieval", "description": "d", "main_score": "mrr"}
    TaskMetadata(**common, measures=("mrr", "recall_at_3", "mean_rank"))
    with pytest.raises(ValueError, match=r"measures \['hits_at_3'\] are not in the measure table"):
        TaskMetadata(**common, measures=("mrr", "hits_at_3"))
    with pytest.raises(ValueError, match="direction comes from the measure table"):
        TaskMetadata(**common, measures=("mrr",), extra={"lower_is_better": ["mrr"]})
