"""What the PAN verification tasks share: split folders, truth checks, evaluation and PAN answer files.

`PanVerificationTask` is the base of every PAN verification task (pan23, pan20, pan-classic): it
implements `harness.task.Task.evaluate` (predict, check, score with PAN's official evaluator) and the
`harness.task.PanAnswers` capability (TIRA answering, scoring and recording answer files). Its
subclasses add how a dataset's files are read (`load`, `load_inputs`, `read_truth`) and their metadata.

Scores per discourse-type pair (PAN 2023 reported its results per type): `evaluate` also scores the
problems of each type pair on their own, with the same evaluator, as `<pair>/<measure>` plus
`<pair>/problems` (see `type_pair_scores`).
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from core.errors import DataError, HarnessError
from core.files import file_problem, jsonl_line, refuse_non_files, sha256_files, writing_alone
from core.records import (
    NO_ANSWER,
    Answer,
    RankingMeasure,
    VerificationData,
    VerificationProblem,
    VerificationTruth,
    truth_checksum,
)
from harness.task import Evaluation, TaskMetadata

logger = logging.getLogger("harness")


def split_dir(data_dir: Path, split: str, metadata: TaskMetadata, expected: str) -> Path:
    """`<data_dir>/<split>`, checked to exist; errors say what layout was expected."""
    if split not in metadata.splits:
        raise HarnessError(f"task {metadata.name}: unknown split {split!r}; splits are {', '.join(metadata.splits)}")
    data_dir = Path(data_dir)
    if not data_dir.is_dir():
        raise DataError(f"data folder not found; expected train/ and test/ folders holding {expected}", path=data_dir)
    folder = data_dir / split
    if not folder.is_dir():
        if os.path.lexists(folder):  # a file, a symlink loop, a broken link: said as what it is, not "missing"
            what = file_problem(folder) or "is a file"
            raise DataError(f"split folder '{split}/' {what}; expected {split}/ holding {expected}", path=folder)
        raise DataError(f"missing split folder '{split}/'; expected {split}/ holding {expected}", path=folder)
    return folder


def checked_split_folder(folder: Path, split: str, expected: str) -> Path:
    """A split's own folder (`--train`/`--test`), checked to be a folder; errors say what it should hold."""
    folder = Path(folder)
    if not folder.is_dir():
        what = (file_problem(folder) or "is a file") if os.path.lexists(folder) else "not found"
        raise DataError(f"{split} folder {what}; expected a folder holding {expected}", path=folder)
    return folder


def check_truth_ids(
    problems: Sequence[VerificationProblem],
    truth: Mapping[str, VerificationTruth],
    truth_lines: Mapping[str, int],
    truth_path: Path,
    problems_source: Path,
) -> None:
    """Every problem has truth and every truth id is a problem; otherwise a DataError naming the truth file and id."""
    ids = {p.id for p in problems}
    absent = sorted((line, problem_id) for problem_id, line in truth_lines.items() if problem_id not in ids)
    if absent:
        line, problem_id = absent[0]
        named = ", ".join(name for _, name in absent[:4]) + (", ..." if len(absent) > 4 else "")
        raise DataError(
            f"truth for unknown problem {problem_id!r} (not in {problems_source}); {len(absent)} of the truth's "
            f"{len(truth_lines)} entries name problems that are not there ({named}). A part of a corpus needs a "
            "truth file of its own problems only (PAN 2013's truth.txt lists its English, Greek and Spanish "
            "problems together): copy the folder and keep the lines of the problems it holds",
            path=truth_path,
            line=line,
            field="id",
        )
    for problem in problems:
        if problem.id not in truth:
            raise DataError(f"no truth for problem {problem.id!r} (in {problems_source})", path=truth_path, field="id")


def _answers_by_id(answers: Sequence[Answer]) -> dict[str, float]:
    """Answers as the id -> score mapping the evaluator takes; a repeated id is an error, not a silent overwrite."""
    values: dict[str, float] = {}
    for answer in answers:
        if answer.id in values:
            raise DataError(f"more than one answer for problem {answer.id!r}", field="id")
        values[answer.id] = float(answer.value)
    return values


def _require_truth(data: VerificationData, task: str) -> Mapping[str, VerificationTruth]:
    if data.truth is None:
        raise HarnessError(f"task {task}: no truth to score against ({data.source} was loaded without truth)")
    return data.truth


def pair_type(problem: VerificationProblem) -> str | None:
    """The problem's discourse-type pair, unordered: "email+essay"; None where the problem has no types.

    The pair is the first text's type and the last (questioned) text's, as `harness convert` writes a
    PAN 2013-2015 problem's types, so a corpus read from its folders or from its conversion gives one pair.
    """
    types = problem.discourse_types
    if not types:
        return None
    return "+".join(sorted((types[0], types[-1])))


def undefined_measures(labels: Sequence[bool]) -> set[str]:
    """The measures a set of problems of one class cannot have, whatever the answers.

    AUC needs both classes: PAN's evaluator returns 0.0 where scikit-learn refuses, a number that reads
    as the worst ranking. With no same-author problem F1 and F0.5u count no true positive, ever, and PAN
    writes 0.0 for a recall of 0/0. These are recorded as NaN, not as PAN's 0.0, and so is every measure
    computed from them (`overall`, `auc_x_c_at_1`). The best band's c@1 is 1.0 on one class whatever the
    answers (a band answering all one way), so it is NaN there too.
    """
    same = sum(bool(label) for label in labels)
    undefined = set()
    if same in (0, len(labels)):
        undefined |= {"auc", "c_at_1_best_band"}
    if same == 0:
        undefined |= {"f1", "f_05_u"}
    return undefined


def check_answers(answers: Sequence[Answer], problems: Sequence[VerificationProblem]) -> None:
    """A system must answer each problem once, in order, in [0, 1]; anything else is a system bug."""
    expected = [p.id for p in problems]
    got = [a.id for a in answers]
    if got != expected:
        raise HarnessError(f"the system returned {len(got)} answers for {len(expected)} problems, or out of order")
    bad = [a for a in answers if not (0.0 <= a.value <= 1.0)]
    if bad:
        raise HarnessError(f"the system returned {len(bad)} answers outside [0, 1], e.g. {bad[0]}")


class PanVerificationTask:
    """Evaluation and PAN answer files shared by the PAN verification tasks; subclasses read the data.

    Subclasses set `metadata` and `_EXPECTED` (the layout of a split folder, for messages) and implement
    `load_split`, `load_inputs` and `read_truth`.
    """

    metadata: ClassVar[TaskMetadata]
    _EXPECTED: ClassVar[str]
    # whether a split is a folder of problem folders, beside its truth file: a folder written there is read back
    # as a problem (so `score --record` stays out of a truth file's folder too)
    problem_folders: ClassVar[bool] = False

    @property
    def ranked_by(self) -> RankingMeasure:
        """What this task ranks systems by (its main score, by its evaluator): carried by every split it reads."""
        return RankingMeasure(self.metadata.main_score, self.metadata.evaluator)

    def load(self, data_dir: Path, split: str) -> VerificationData:
        """Read `<data_dir>/<split>/` with its truth."""
        return self.load_split(split_dir(data_dir, split, self.metadata, self._EXPECTED), split)

    def load_split(self, folder: Path, split: str) -> VerificationData:
        """Read one split's own folder with its truth (`harness run --train DIR --test DIR`)."""
        raise NotImplementedError

    def load_inputs(self, input_dir: Path) -> VerificationData:
        """TIRA mode: read problems only; truth is None and never looked for."""
        raise NotImplementedError

    def read_truth(self, path: Path) -> dict[str, VerificationTruth]:
        """Read a truth file (or the truth file of a folder) into truth by problem id."""
        raise NotImplementedError

    def problems_beside_truth(
        self, truth_path: Path, truth: Mapping[str, VerificationTruth]
    ) -> Sequence[VerificationProblem] | None:
        """The problems of the split folder a truth lies in, for `harness score` to score each discourse-type pair
        apart as a run does; None where the truth stands alone (a PAN truth file) or the folder's problems are
        not the truth's."""
        return None

    # -- the Task protocol -------------------------------------------------------------------------

    def evaluate(self, system: Any, data: VerificationData) -> Evaluation:
        """Answer every problem of the split, check the answers, score them with PAN's official evaluator.

        The scores are the task's measures over all problems, then those of each discourse-type pair
        (`type_pair_scores`); a details row names its problem's `pair_type` where the problem has types,
        so an interval can be resampled within one pair type.
        """
        answers = tuple(system.predict(data.problems))
        check_answers(answers, data.problems)
        scores = self.score(answers, data)
        truth = _require_truth(data, self.metadata.name)
        scores.update(self.type_pair_scores(_answers_by_id(answers), truth, data.problems))
        details = []
        for answer, problem in zip(answers, data.problems, strict=True):  # in order: check_answers said so
            row: dict[str, Any] = {"id": answer.id, "value": answer.value, "same": truth[answer.id].same}
            kind = pair_type(problem)
            if kind is not None:
                row["pair_type"] = kind
            details.append(row)
        return Evaluation(scores=scores, details=details, answers=answers)

    def type_pair_scores(
        self,
        answers: Mapping[str, float],
        truth: Mapping[str, VerificationTruth],
        problems: Sequence[VerificationProblem],
    ) -> dict[str, float]:
        """The task's measures on the problems of each discourse-type pair, by the task's evaluator.

        Keys `<pair>/<measure>` and `<pair>/problems` (how many), pairs in sorted order; problems without
        types are in no pair, and a split without types gives {}. A measure the pair's problems cannot
        have (one class only: see `undefined_measures`) is NaN, as is `overall` when one of its parts is.
        """
        from harness.metrics.verification import PROFILES

        by_pair: dict[str, list[str]] = {}
        for problem in problems:
            kind = pair_type(problem)
            if kind is not None:
                by_pair.setdefault(kind, []).append(problem.id)
        parts = PROFILES[self.metadata.evaluator]
        scores: dict[str, float] = {}
        for kind in sorted(by_pair):
            ids = by_pair[kind]
            # a missing answer is a non-answer, filled here so that only the whole set's scoring warns of it
            subset = self.score_truth({i: answers.get(i, NO_ANSWER) for i in ids}, {i: truth[i] for i in ids})
            undefined = undefined_measures([truth[i].same for i in ids])
            for name in undefined & subset.keys():
                subset[name] = math.nan
            if "overall" in subset and undefined & set(parts):
                subset["overall"] = math.nan
            subset.update({k: v for k, v in self.derived_measures(subset).items() if k in subset})
            scores.update({f"{kind}/{name}": value for name, value in subset.items()})
            scores[f"{kind}/problems"] = len(ids)
        return scores

    def check_splits(self, train: VerificationData, test: VerificationData) -> None:
        """Warn, in one line before any fitting, when the training split holds one class only (`harness.task.
        SplitCheck`): a band or classifier fitted on it has nothing to tell apart (some systems refuse it)."""
        if not train.truth or not train.problems:
            return
        same = sum(bool(train.truth[p.id].same) for p in train.problems if p.id in train.truth)
        if same in (0, len(train.problems)):
            kind = "same-author" if same else "different-author"
            logger.warning(
                "%s: the training split holds only %s problems (%d of %d): a system learns no line between "
                "the classes from it",
                train.source, kind, len(train.problems), len(train.problems),
            )  # fmt: skip

    def overlap(self, train: VerificationData, test: VerificationData) -> dict[str, int]:
        """What the splits share (`harness.task.SplitOverlap`): texts equal after normalisation, by hash.

        `shared_texts`: distinct texts found in both splits; `test_problems_sharing_a_text`: test problems
        holding at least one of them.
        """
        from toolkit.splits import shared_texts, text_key

        train_keys = {text_key(t) for p in train.problems for t in p.texts}
        touched = sum(any(text_key(t) in train_keys for t in p.texts) for p in test.problems)
        return {
            "shared_texts": shared_texts(train.problems, test.problems),
            "test_problems_sharing_a_text": touched,
        }

    def score(self, answers: Sequence[Answer], data: VerificationData) -> dict[str, float]:
        """Score answers against the split's truth with the task's evaluator profile."""
        return self.score_truth(_answers_by_id(answers), _require_truth(data, self.metadata.name))

    def score_truth(
        self,
        answers: Mapping[str, float],
        truth: Mapping[str, VerificationTruth],
        *,
        profile: str | None = None,
        answers_path: Path | None = None,
    ) -> dict[str, float]:
        """Score answers by id against truth by id; `profile` (pan20/pan23) overrides the task's evaluator.

        With the task's own profile the result holds exactly the task's measures, in its order.
        """
        from tasks.pan.evaluator import score_answers

        scores = score_answers(answers, truth, profile=profile or self.metadata.evaluator, answers_path=answers_path)
        scores.update(self.derived_measures(scores))
        if profile in (None, self.metadata.evaluator):
            # measures the task lists beyond its evaluator's (e.g. c_at_1_best_band) come from the measure table
            extra = [name for name in self.metadata.measures if name not in scores]
            if extra:
                from harness.metrics.table import score_answer_measures

                same = {problem_id: t.same for problem_id, t in truth.items()}
                scores.update(score_answer_measures(extra, answers, same, profile=self.metadata.evaluator))
            return {name: scores[name] for name in self.metadata.measures}
        return scores

    def derived_measures(self, scores: Mapping[str, float]) -> dict[str, float]:
        """Measures computed from the evaluator's (none by default)."""
        return {}

    # -- the PanAnswers capability: answer files as TIRA writes and PAN scores them ---------------

    def answer(self, system: Any, data: VerificationData) -> list[Answer]:
        """TIRA mode: one answer per problem, in input order; problems with an empty text get 0.5."""
        from tasks.pan.predicting import answer_all

        return answer_all(system, data.problems)

    def extra_answer_files(self, answers: Sequence[Answer]) -> dict[str, str]:
        """Answer files in a format of the task's own, written by `predict` beside answers.jsonl (name -> text)."""
        return {}

    def answers_file(self, folder: Path) -> Path:
        """The answers file of a submission's folder (`harness score --answers FOLDER`): answers.jsonl(.gz)."""
        from core.files import find_data_file

        return find_data_file(folder, "answers.jsonl")

    def read_answers(self, path: Path) -> dict[str, float]:
        """Read a PAN answers file (jsonl or jsonl.gz) into value by problem id, validating every line."""
        from tasks.pan.evaluator import read_answers

        return read_answers(path)

    def score_files(self, output_dir: Path) -> list[Path]:
        """The files `write_scores` writes into `output_dir`."""
        from tasks.pan.evaluator import OUT_JSON, PROTOTEXT

        return [Path(output_dir) / OUT_JSON, Path(output_dir) / PROTOTEXT]

    def write_scores(self, scores: Mapping[str, float], output_dir: Path, *, overwrite: bool = False) -> list[Path]:
        """Write out.json and TIRA's evaluation.prototext; existing files are an error unless `overwrite`."""
        from tasks.pan.evaluator import OUT_JSON, PROTOTEXT, write_tira_outputs

        paths = self.score_files(output_dir)
        # one writer at a time: what a killed `score --output` left here (`.out.json.XXXXXXXX.tmp`) is removed
        with writing_alone(output_dir, [OUT_JSON, PROTOTEXT]):
            existing = [p for p in paths if p.exists()]
            if existing and not overwrite:
                raise HarnessError(f"{existing[0]} exists; pass --overwrite to replace it")
            write_tira_outputs(scores, output_dir)
        return paths

    def record_answers(
        self,
        truth_path: Path,
        truth: Mapping[str, VerificationTruth],
        answers: Mapping[str, float],
        scores: dict[str, float],
        *,
        system_name: str,
        record_dir: Path,
        answers_path: Path,
        overwrite: bool = False,
        problems: Sequence[VerificationProblem] | None = None,
    ) -> dict[str, Any]:
        """Write result.json + details.jsonl for an answers file made elsewhere (e.g. a PAN submission).

        Missing answers are recorded as 0.5; a details row names its problem's `pair_type` where `problems` (those
        beside the truth) give it, as a run's does. An existing result is refused unless `overwrite`; a second
        record into the folder while one is being written is refused (its lock), so a record's two files are always
        one record's.
        """
        from harness.data_location import short_corpus_name
        from harness.results import DETAILS_NAME, RESULT_NAME, build_result, task_record, write_result

        truth_files = sorted(Path(truth_path).glob("truth*")) if Path(truth_path).is_dir() else [Path(truth_path)]
        ids = sorted(truth)  # PAN's evaluator orders problems by id
        details = [{"id": i, "value": answers.get(i, NO_ANSWER), "same": truth[i].same} for i in ids]
        kinds = {problem.id: pair_type(problem) for problem in problems or ()}
        for row in details:
            if kinds.get(row["id"]) is not None:
                row["pair_type"] = kinds[row["id"]]
        evaluation = Evaluation(scores=scores, details=details)
        test = {"checksum": sha256_files(truth_files), "truth_checksum": truth_checksum(truth), "size": len(ids)}
        identity = {"test": {**test, "truth_only": True}}  # truth_checksum: a run of this test data has it too
        # the dataset's name (harness.data_location): the truth's folder, or above a split folder (`DATA/test`) the
        # dataset's, as a run with --data DATA names it
        folder = Path(truth_path).resolve() if Path(truth_path).is_dir() else Path(truth_path).resolve().parent
        folder = folder.parent if folder.name.lower() in ("test", "train") else folder
        data = {**identity, "name": short_corpus_name(folder.name)}
        answers_checksum = sha256_files([answers_path])
        result = build_result(
            task=task_record(self.metadata, {}, evaluation, data),
            system={"name": system_name, "class": None, "params": {}, "answers": {"checksum": answers_checksum}},
            seed=None,
            evaluation=evaluation,
            timings={},
            fingerprint="sha256:" + hashlib.sha256(json.dumps([identity, answers_checksum]).encode()).hexdigest(),
            command=sys.argv,
        )
        # under the lock no other record writes here (a second is refused at once, not queued to replace it), and
        # what a killed record left (`.result.json.XXXXXXXX.tmp`) is removed
        with writing_alone(record_dir, [RESULT_NAME, DETAILS_NAME], timeout=0):
            result_path, details_path = Path(record_dir) / RESULT_NAME, Path(record_dir) / DETAILS_NAME
            refuse_non_files([result_path, details_path], "the record's")  # again, as for result.json below
            if result_path.exists() and not overwrite:  # again: another record may have landed meanwhile
                raise HarnessError(f"{result_path} exists; pass --overwrite to replace it")
            # details without a result: this same record killed before its result.json (rewritten as it was), or
            # a file that is not this record's, replaced only when asked
            if (
                details_path.exists()
                and not overwrite
                and details_path.read_bytes() != "".join(map(jsonl_line, details)).encode()
            ):
                raise HarnessError(f"{details_path} exists, and is not this record's; pass --overwrite to replace it")
            result_path.unlink(missing_ok=True)  # the old result goes first: never beside the new details
            write_result(record_dir, result, details)
        return result
