"""The `pan20` task: PAN 2020-2021 authorship verification data scored with the PAN 2020 evaluator.

Same data layout as `pan23` (pairs.jsonl + truth.jsonl per split); the difference is the evaluator
profile: PAN 2020's four measures (AUC, c@1, F1, F0.5u, no Brier) and their mean, with F0.5u counting
an answer of exactly 0.5 as "same author", as the 2020 code did. Use it to compare with the PAN 2020
overview table; PAN 2021 ranked the same kind of data with the later evaluator (`pan23`).
"""

from __future__ import annotations

from typing import ClassVar

from harness.task import TaskMetadata
from tasks.pan.jsonl import JsonlVerificationTask, jsonl_metadata


class Pan20Task(JsonlVerificationTask):
    """PAN 2020-2021 authorship verification: pairs of fanfiction texts; PAN 2020 measures."""

    metadata: ClassVar[TaskMetadata] = jsonl_metadata(
        "pan20",
        years="2020-2021",
        measures=("auc", "c_at_1", "f1", "f_05_u", "overall"),
        mean_of="AUC, c@1, F1, F0.5u",
        citation=(
            "Mike Kestemont, Enrique Manjavacas, Ilia Markov, Janek Bevendorff, Matti Wiegmann, Efstathios "
            "Stamatatos, Martin Potthast, Benno Stein. Overview of the Cross-Domain Authorship Verification Task at "
            "PAN 2020. CLEF 2020 Working Notes, CEUR-WS.org vol. 2696, 2020. | "
            "Mike Kestemont, Enrique Manjavacas, Ilia Markov, Janek Bevendorff, Matti Wiegmann, Efstathios "
            "Stamatatos, Benno Stein, Martin Potthast. Overview of the Cross-Domain Authorship Verification Task at "
            "PAN 2021. CLEF 2021 Working Notes, CEUR-WS.org vol. 2936, 2021."
        ),
    )
