"""PAN authorship-verification measures as a Hugging Face `evaluate` metric module.

A thin wrapper around harness.metrics.verification.evaluate_all, loadable offline:

    import evaluate
    metric = evaluate.load("tasks/pan/evaluate_module/pan_verification")
    metric.compute(predictions=[0.9, 0.5, 0.1], references=[1, 1, 0], profile="pan23")
"""

from __future__ import annotations

import datasets
import evaluate

from harness.metrics.verification import PROFILES, evaluate_all

_DESCRIPTION = """\
PAN's official authorship-verification measures: AUC, c@1, F1, F0.5u and (pan23) the complement of
the Brier loss, plus `overall`, their mean. A prediction of exactly 0.5 is a non-answer. Profiles:
`pan20` (the 2020 evaluator, where F0.5u counted 0.5 as a "same" decision; 4 measures) and `pan23`
(the 2021-2023 evaluator, where 0.5 is a non-answer in F0.5u; 5 measures).
"""

_KWARGS_DESCRIPTION = """\
Args:
    predictions (list of float): scores in [0, 1], 1 = same author, exactly 0.5 = no answer.
    references (list of int): gold labels, 1 = same author, 0 = different authors.
    profile (str): "pan23" (default) or "pan20".
Returns:
    dict: auc, c_at_1, f1, f_05_u[, brier], overall (floats, unrounded).
Examples:
    >>> metric = evaluate.load("tasks/pan/evaluate_module/pan_verification")
    >>> metric.compute(predictions=[0.9, 0.4, 0.6, 0.1], references=[1, 1, 0, 0])["auc"]
    0.75
"""

_CITATION = """\
@inproceedings{kestemont2020overview,
  title = {Overview of the Cross-Domain Authorship Verification Task at PAN 2020},
  author = {Kestemont, Mike and Manjavacas, Enrique and Markov, Ilia and Bevendorff, Janek and
            Wiegmann, Matti and Stamatatos, Efstathios and Potthast, Martin and Stein, Benno},
  booktitle = {Working Notes of CLEF 2020 - Conference and Labs of the Evaluation Forum},
  year = {2020}
}
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class PanVerification(evaluate.Metric):
    """PAN verification measures (profiles pan20 and pan23)."""

    def _info(self) -> evaluate.MetricInfo:
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features(
                {"predictions": datasets.Value("float64"), "references": datasets.Value("int32")}
            ),
            codebase_urls=["https://github.com/pan-webis-de/pan-code"],
        )

    def _compute(self, predictions: list[float], references: list[int], profile: str = "pan23") -> dict[str, float]:
        if profile not in PROFILES:
            raise ValueError(f"unknown profile {profile!r}; known: {', '.join(PROFILES)}")
        return evaluate_all(references, predictions, profile=profile)
