"""The `pan-classic` task: PAN 2013-2015 authorship verification on corpus folders (see tasks.pan.folders)."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import ClassVar

from core.errors import DataError
from core.files import file_problem, sha256_files
from core.records import Answer, VerificationData, VerificationTruth
from harness.metrics.verification import auc_x_c_at_1_from_results
from harness.task import TaskMetadata
from tasks.pan.common import PanVerificationTask, check_truth_ids, checked_split_folder
from tasks.pan.folders import (
    CLASSIC_ANSWERS,
    CLASSIC_GENRES,
    classic_answers_text,
    problem_dirs,
    read_classic_answers,
    read_classic_corpus,
    read_classic_truth,
    warn_of_unknown_genre,
)


class PanClassicTask(PanVerificationTask):
    """PAN 2013-2015 authorship verification: 1-5 known texts and one unknown text per problem.

    Ranked by AUC x c@1 as PAN 2014 and 2015 did; the PAN 2023 measures are reported as well.
    Each problem's discourse types are its corpus genre, once per text (see `classic_genre`).
    Truth has `authors=None` because the corpora do not name authors; `core.records.placeholder_authors`
    gives consistent problem-local labels where training code needs them.
    """

    metadata: ClassVar[TaskMetadata] = TaskMetadata(
        name="pan-classic",
        version="1",
        kind="verification",
        description=(
            "PAN 2013-2015 authorship verification: problem folders (known01..NN.txt, unknown.txt) + truth.txt "
            "per split; ranked by AUC x c@1 (PAN 2014/15), PAN 2023 measures also reported"
        ),
        main_score="auc_x_c_at_1",
        measures=("auc", "c_at_1", "auc_x_c_at_1", "f_05_u", "f1", "brier", "overall", "c_at_1_best_band"),
        published="tasks.pan:published.csv",
        splits=("train", "test"),
        evaluator="pan23",  # auc, c@1 and the extra measures come from the PAN 2023 profile
        citation=(
            "Patrick Juola, Efstathios Stamatatos. Overview of the Author Identification Task at PAN 2013. "
            "CLEF 2013 Working Notes, CEUR-WS.org vol. 1179, 2013. | "
            "Efstathios Stamatatos, Walter Daelemans, Ben Verhoeven, Martin Potthast, Benno Stein, Patrick Juola, "
            "Miguel A. Sanchez-Perez, Alberto Barron-Cedeno. Overview of the Author Identification Task at PAN 2014. "
            "CLEF 2014 Working Notes, CEUR-WS.org vol. 1180, 2014. | "
            "Efstathios Stamatatos, Walter Daelemans, Ben Verhoeven, Patrick Juola, Aurelio Lopez-Lopez, "
            "Martin Potthast, Benno Stein. Overview of the Author Identification Task at PAN 2015. "
            "CLEF 2015 Working Notes, CEUR-WS.org vol. 1391, 2015."
        ),
        extra={"genres": CLASSIC_GENRES},
    )

    _EXPECTED = "a PAN 2013-2015 corpus folder: <ID>/known01.txt ... <ID>/unknown.txt and truth.txt"
    problem_folders = True

    def load_split(self, folder: Path, split: str) -> VerificationData:
        """Read a corpus folder (the `split` split) with its truth.txt."""
        folder = checked_split_folder(folder, split, self._EXPECTED)
        problem_dirs(folder)  # cheap layout check first: a wrong folder is named before truth.txt is asked for
        truth_path = folder / "truth.txt"
        if os.path.lexists(truth_path) and (problem := file_problem(truth_path)) is not None:
            raise DataError(f"{problem}; expected the truth file ('ID Y|N' lines) here", path=truth_path)
        if not truth_path.is_file():
            raise DataError("expected truth.txt ('ID Y|N' lines) in this corpus folder", path=folder)
        truth, truth_lines = read_classic_truth(truth_path)
        problems, files = read_classic_corpus(folder)
        check_truth_ids(problems, truth, truth_lines, truth_path, folder)
        warn_of_unknown_genre(problems, folder)
        checksum = sha256_files([*files, truth_path], root=folder)
        return VerificationData(problems, truth, folder, checksum, self.ranked_by)

    def load_inputs(self, input_dir: Path, *, genre: str | None = None) -> VerificationData:
        """TIRA mode: read the problem folders of `input_dir` only; truth is None and truth.txt never read.

        `genre`: the corpus's genre where neither its contents.json nor its folder's name gives one (see
        `read_classic_corpus`), so that the problems a run read as its test split get its discourse types here too.
        """
        input_dir = Path(input_dir)
        problems, files = read_classic_corpus(input_dir, allow_empty_texts=True, genre=genre)
        warn_of_unknown_genre(problems, input_dir)
        return VerificationData(problems, None, input_dir, sha256_files(files, root=input_dir), self.ranked_by)

    def read_truth(self, path: Path) -> dict[str, VerificationTruth]:
        """Read a truth.txt, or the truth.txt of a corpus folder, into truth by problem id."""
        path = Path(path)
        if path.is_dir():
            if os.path.lexists(path / "truth.txt") and (problem := file_problem(path / "truth.txt")) is not None:
                raise DataError(f"{problem}; expected the truth file here", path=path / "truth.txt")
            if not (path / "truth.txt").is_file():
                raise DataError("expected truth.txt in this directory", path=path)
            path = path / "truth.txt"
        return read_classic_truth(path)[0]

    def answers_file(self, folder: Path) -> Path:
        """A submission folder's answers.jsonl(.gz), or where it holds none, its answers.txt: a PAN 2013-2015
        submission's folder holds that alone (audit 13; `predict` writes both, the same answers)."""
        folder = Path(folder)
        jsonl = [folder / name for name in ("answers.jsonl", "answers.jsonl.gz")]
        if not any(os.path.lexists(file) for file in jsonl) and (folder / CLASSIC_ANSWERS).is_file():
            return folder / CLASSIC_ANSWERS
        return super().answers_file(folder)

    def read_answers(self, path: Path) -> dict[str, float]:
        """PAN 2013-2015's answers.txt ("ID value" lines) where the file is named *.txt; answers.jsonl otherwise."""
        if Path(path).name.lower().endswith(".txt"):
            return read_classic_answers(path)
        return super().read_answers(path)

    def extra_answer_files(self, answers: Sequence[Answer]) -> dict[str, str]:
        """`predict` writes PAN 2013-2015's own answers.txt beside answers.jsonl (what their evaluators read)."""
        return {CLASSIC_ANSWERS: classic_answers_text((a.id, a.value) for a in answers)}

    def derived_measures(self, scores: Mapping[str, float]) -> dict[str, float]:
        """AUC x c@1, the PAN 2014/15 ranking score."""
        return {"auc_x_c_at_1": auc_x_c_at_1_from_results(scores)}
