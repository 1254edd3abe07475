"""The `pan23` task: PAN 2020-2023 authorship verification scored with the PAN 2023 evaluator."""

from __future__ import annotations

from typing import ClassVar

from harness.task import TaskMetadata
from tasks.pan.jsonl import JsonlVerificationTask, jsonl_metadata

PAN23_DISCOURSE_TYPES = ("essay", "email", "interview", "speech_transcription")


class Pan23Task(JsonlVerificationTask):
    """PAN 2020-2023 authorship verification: pairs of texts, same author or not; PAN 2023 measures."""

    metadata: ClassVar[TaskMetadata] = jsonl_metadata(
        "pan23",
        years="2020-2023",
        measures=("auc", "c_at_1", "f_05_u", "f1", "brier", "overall", "c_at_1_best_band"),
        mean_of="AUC, c@1, F0.5u, F1, Brier",
        citation=(
            "Efstathios Stamatatos, Krzysztof Kredens, Piotr Pezik, Annina Heini, Janek Bevendorff, "
            "Benno Stein, Martin Potthast. Overview of the Authorship Verification Task at PAN 2023. "
            "CLEF 2023 Working Notes, CEUR-WS.org vol. 3497, 2023."
        ),
        extra={"discourse_types": PAN23_DISCOURSE_TYPES},
    )
