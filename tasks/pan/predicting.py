"""TIRA mode: answer every problem of an input, whatever its texts look like."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from core.errors import HarnessError
from core.records import NO_ANSWER, Answer, VerificationProblem

logger = logging.getLogger("harness")


def answer_all(system: Any, problems: Sequence[VerificationProblem]) -> list[Answer]:
    """One answer per problem, in input order; a problem with an empty text gets 0.5 (no answer).

    PAN scores a missing answer as 0.5 anyway; answering it explicitly keeps answers.jsonl complete
    and spares the system texts it cannot represent.
    """
    answerable = [p for p in problems if all(text.strip() for text in p.texts)]
    skipped = len(problems) - len(answerable)
    if skipped:
        logger.warning("%d problem(s) with an empty text: answered 0.5 (no answer)", skipped)
    answers = {a.id: a for a in system.predict(answerable)} if answerable else {}
    unknown = sorted(set(answers) - {p.id for p in answerable})
    if unknown:
        raise HarnessError(f"the system answered problems it was not given: {', '.join(unknown[:5])}")
    unanswered = len(answerable) - len(answers)
    if unanswered:
        logger.warning("%d problem(s) the system left unanswered: answered 0.5 (no answer)", unanswered)
    return [answers.get(p.id, Answer(p.id, NO_ANSWER)) for p in problems]
