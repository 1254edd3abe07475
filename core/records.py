"""Small immutable records that flow from task adapters to systems to metrics."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple

# PAN's convention: an answer of exactly 0.5 is a non-answer (the system abstains).
NO_ANSWER = 0.5


class VerificationProblem(NamedTuple):
    """One verification problem: did the last text's author write the others?

    PAN 2020-2023 pairs have two texts; PAN 2013-2015 problems have one to five known
    texts followed by the questioned (unknown) text, which is always last.
    """

    id: str
    texts: tuple[str, ...]
    discourse_types: tuple[str, ...] | None = None

    @property
    def known(self) -> tuple[str, ...]:
        return self.texts[:-1]

    @property
    def unknown(self) -> str:
        return self.texts[-1]


class VerificationTruth(NamedTuple):
    """Ground truth of one problem; `authors` is None where the corpus does not name them."""

    id: str
    same: bool
    authors: tuple[str, ...] | None = None

    @property
    def named_authors(self) -> tuple[str, ...] | None:
        """`authors` where they name people; None where the corpus names none, or where they are the problem-local
        labels `harness convert` writes for PAN 2013-2015 (`placeholder_authors`), which say only whether the two
        texts share an author (audit 16: calibration took them for authors and said folds kept them apart)."""
        if self.authors is not None and tuple(self.authors) == placeholder_authors(self.id, self.same):
            return None
        return self.authors


def placeholder_authors(problem_id: str, same: bool) -> tuple[str, str]:
    """Problem-local author labels for a PAN 2013-2015 problem, whose corpus does not name authors.

    The known texts get `"<id>-known"`; the unknown text gets the same label when `same`, else
    `"<id>-unknown"`, so `authors[0] == authors[1]` exactly when the truth says Y. `PanClassicTask`
    itself reports `authors=None`; training code that needs author labels (pair mining, contrastive
    losses) can call this, and `harness convert` writes these labels into truth.jsonl.

    Caveat: the labels are local to one problem. PAN 2014 corpora reuse texts and authors across
    problems (and across train and test for essays), so two different labels may be the same real
    person: never treat labels from different problems as different authors (e.g. as negatives).
    """
    return f"{problem_id}-known", f"{problem_id}-known" if same else f"{problem_id}-unknown"


class Answer(NamedTuple):
    """A system's answer: a score in [0, 1]; exactly 0.5 means "no answer"."""

    id: str
    value: float


class RankingMeasure(NamedTuple):
    """The measure a split's task ranks systems by, and the evaluator profile that defines it.

    E.g. ("overall", "pan23") for PAN 2020-2023 data, ("auc_x_c_at_1", "pan23") for PAN 2013-2015 corpora:
    a system that tunes a threshold can tune it for what it will be ranked by (`objective="task"`).
    """

    name: str
    profile: str


class VerificationData(NamedTuple):
    """A loaded split: its problems, its truth (None in TIRA mode) and where it came from.

    `ranked_by` is what the task that read the split ranks systems by (None where no task says: data made
    in code).
    """

    problems: tuple[VerificationProblem, ...]
    truth: Mapping[str, VerificationTruth] | None
    source: Path
    checksum: str  # sha256 over the files read, so a result names exactly the data it saw
    ranked_by: RankingMeasure | None = None

    @property
    def truth_checksum(self) -> str | None:
        """The identity of the split's truth (`truth_checksum`); None without truth (TIRA mode)."""
        return None if self.truth is None else truth_checksum(self.truth)

    def in_id_order(self) -> VerificationData:
        """The split with its problems in id order. A system fits the set of training problems, not the order of
        their lines: in file order, the cross-fitting folds and some models (wccn's SVD basis) followed it
        (audits 16 and 17: PAN14 essays' training lines shuffled moved wccn's raw scores by up to 0.08)."""
        return self._replace(problems=tuple(sorted(self.problems, key=lambda problem: problem.id)))


def truth_checksum(truth: Mapping[str, VerificationTruth]) -> str:
    """One identity of a split's truth, whatever file or folder it was read from: "sha256:<hex>".

    A sha256 over the truth records' content (id, same, authors), sorted by id, as compact JSON: the same truth
    read from a test folder (`harness run`) or from its truth file (`harness score --record`), plain or gzipped,
    with any line order, gives the same checksum. Leaderboards compare test data by it (result.json's
    `task.data.test.truth_checksum`).
    """
    records = [
        [record.id, bool(record.same), None if record.authors is None else list(record.authors)]
        for _, record in sorted(truth.items())
    ]
    canonical = json.dumps(records, ensure_ascii=False, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()
