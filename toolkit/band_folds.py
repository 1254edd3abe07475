"""Reading a band-fold folder (`harness pretrain-style --band-folds K`): which encoder scores which training pair,
and the band pairs' scores on each encoder's own scale. Shared by the verifiers that read such folders (`ngram_style`,
`encoder_wccn`); how the folds are made and pre-trained is `systems.style_encoder.band_folds`.

A band-fold folder holds, beside its main encoder, K encoders each pre-trained without a K-th of a set's training
authors, and `band_folds.json`: each fold's encoder folders and training pair ids, the pairs across folds, and a
digest of each training pair's truth, by which a verifier knows the set the folds were made for (`made_for`). A
training pair whose authors are all in fold k is scored by fold k's encoders, which never saw them, and the band is
fitted on those out-of-sample scores; a pair across folds has no such encoder and is left out. Each encoder scores
on its own scale, so its scores are standardised by their mean and sd over its fold's band pairs, and the verifier's
score is the logistic of the mean of its encoders' standardised scores (`logistic_of_mean`).
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from core.errors import DataError, HarnessError
from core.files import find_data_file, read_jsonl
from core.records import VerificationData, VerificationProblem, VerificationTruth

FOLDS_FILE = "band_folds.json"
logger = logging.getLogger("harness")


def fold_folders(fold: dict[str, Any]) -> list[str]:
    """The subfolders of one fold's encoders, one per repeat (a record written before repeats: its one folder)."""
    return list(fold.get("folders") or [fold["folder"]])


def read_folds(folder: Path) -> dict[str, Any] | None:
    """`band_folds.json` of a model folder, or None where it has none."""
    path = Path(folder) / FOLDS_FILE
    if not path.is_file():
        return None
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
        folds = record["folds"]
        if not isinstance(folds, list) or len(folds) < 2:
            raise ValueError("fewer than 2 folds")
        for fold in folds:
            if not isinstance(fold["folder"], str) or not all(isinstance(i, str) for i in fold["pair_ids"]):
                raise ValueError("a fold without a folder name or pair ids")
            if not all(isinstance(name, str) for name in fold_folders(fold)):
                raise ValueError("a fold's folders are not names")
        if len({len(fold_folders(fold)) for fold in folds}) != 1:
            raise ValueError("folds with different numbers of repeats")
        digests = record.get("pair_digests", {})
        if not isinstance(digests, dict) or not all(isinstance(value, str) for value in digests.values()):
            raise ValueError("pair digests that are not strings by pair id")
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise HarnessError(f"{path}: cannot read band folds ({error})") from None
    return record


def pair_digest(truth: VerificationTruth) -> str:
    """A short fingerprint of a training pair's truth (id, same, authors). `harness pairs` draws pair ids from the
    seed alone, so the sets of one seed built from two corpora (forum-seed0, cmcc-seed0) share their ids: the ids
    cannot say which set a pair belongs to, the truth can."""
    content = json.dumps([truth.id, bool(truth.same), list(truth.authors or ())], separators=(",", ":"))
    return hashlib.sha256(content.encode("utf-8")).hexdigest()[:16]


def training_digests(set_folder: Path) -> dict[str, str]:
    """Each training pair's `pair_digest` of a `harness pairs` set, by id: what tells a verifier that the problems it
    fits are this set's."""
    path = find_data_file(Path(set_folder) / "train", "truth.jsonl")
    digests = {}
    for line, record in read_jsonl(path):
        pair_id, same, authors = record.get("id"), record.get("same"), record.get("authors")
        if not isinstance(pair_id, str):
            raise DataError("expected a pair id (str)", path=path, line=line, field="id")
        if not isinstance(same, bool):
            raise DataError("expected true or false", path=path, line=line, field="same")
        if not isinstance(authors, list) or not all(isinstance(name, str) for name in authors):
            raise DataError("expected a list of author names", path=path, line=line, field="authors")
        digests[pair_id] = pair_digest(VerificationTruth(pair_id, same, tuple(authors)))
    return digests


def made_for(train: VerificationData, record: dict[str, Any]) -> bool:
    """Whether these training problems are pairs of the set the folds were made for (a model pre-trained for one set
    is read on others too, e.g. forum-pretrained and scored on CMCC: there the folds have nothing to say, and the main
    encoder answers). A problem with the id of one of its pairs but another truth is of another set: then none is.
    (A problem whose id it lacks, beside its pairs, is refused when the folds score them: `out_of_fold_scores`.)
    Folds written before the digests take them from their set's folder where it is still there, else the ids."""
    digests = record.get("pair_digests")
    if digests is None and (Path(record["set"]) / "train" / "truth.jsonl").is_file():
        digests = training_digests(Path(record["set"]))
    if digests is None:
        ids = {pair_id for fold in record["folds"] for pair_id in fold["pair_ids"]}
        ids |= set(record.get("across_folds", ()))
        found = any(problem.id in ids for problem in train.problems)
        if found:
            logger.warning(
                "band folds made for %s hold no pair digests (written before them) and that set is not there: "
                "matched by pair ids alone, which the sets of one seed from other corpora share; pre-train again, or "
                "with --reuse-from, to add them",
                record["set"],
            )
        return found
    truth = train.truth or {}
    shared = [problem.id for problem in train.problems if problem.id in digests]
    return bool(shared) and all(
        problem_id in truth and pair_digest(truth[problem_id]) == digests[problem_id] for problem_id in shared
    )


def not_read(record: dict[str, Any]) -> str:
    """What a verifier's info says where a model folder's band folds were made for another set (and the main encoder
    answered): which encoder answered is what a reader of the run must not have to guess."""
    return f"not read: made for {record['set']}, not this set"


def out_of_fold_scores(
    problems: Sequence[VerificationProblem],
    record: dict[str, Any],
    score: Callable[[Sequence[VerificationProblem], int], np.ndarray],
) -> tuple[np.ndarray, np.ndarray]:
    """(scores, fold): each problem's score by `score(problems, fold)` of the fold that holds its id, and that fold
    (a pair across folds: NaN and -1). Every problem must be one of the set's training pairs."""
    fold_of = {pair_id: k for k, fold in enumerate(record["folds"]) for pair_id in fold["pair_ids"]}
    across = set(record.get("across_folds", ()))
    missing = [problem.id for problem in problems if problem.id not in fold_of and problem.id not in across]
    if missing:
        raise HarnessError(
            f"{len(missing)} of {len(problems)} training problems (first: {missing[0]}) are in no band fold: the "
            f"folds were made for the training split of {record['set']}, not for this one"
        )
    folds = np.array([fold_of.get(problem.id, -1) for problem in problems], dtype=np.int64)
    scores = np.full(len(problems), np.nan)
    for k in range(len(record["folds"])):
        rows = np.flatnonzero(folds == k)
        if len(rows):
            scores[rows] = score([problems[i] for i in rows], k)
    return scores, folds


def band_rows(labels: np.ndarray, in_fold: np.ndarray, *, seed: int) -> np.ndarray:
    """The in-fold rows to fit the band on: all of them, less a seeded sample of the class they over-represent, so
    that the classes keep the proportion they have among all `labels`."""
    rows = np.flatnonzero(in_fold)
    same, different = rows[labels[rows]], rows[~labels[rows]]
    share = labels.mean()  # the training split's share of same-author pairs
    if not len(same) or not len(different) or share in (0.0, 1.0):
        return rows
    keep_same = min(len(same), round(len(different) * share / (1 - share)))
    keep_different = min(len(different), round(keep_same * (1 - share) / share))
    rng = np.random.default_rng(seed)
    same = np.sort(rng.choice(same, keep_same, replace=False))
    different = np.sort(rng.choice(different, keep_different, replace=False))
    return np.sort(np.concatenate([same, different]))


class BandCosines(NamedTuple):
    """The band pairs' cosines by their fold's encoders, each encoder's on its own scale (`band_cosines`)."""

    rows: np.ndarray  # the training problems the band is fitted on (`band_rows`)
    folds: np.ndarray  # each row's fold
    standardised: np.ndarray  # (repeats, rows): repeat r of the row's fold's encoders, standardised by its scale
    scales: list[tuple[float, float]]  # each encoder's (mean, sd) on its fold's band rows (fold, then repeat)
    across: int  # training pairs across two folds, scored by no encoder and left out


def band_cosines(
    problems: Sequence[VerificationProblem],
    labels: np.ndarray,
    record: dict[str, Any],
    cosines: Callable[[Sequence[VerificationProblem], int, int], np.ndarray],
    *,
    seed: int,
    where: Path,
) -> BandCosines:
    """Each band pair's cosine by each repeat of its fold's encoders (`cosines(problems, fold, repeat)`), standardised
    by the mean and sd of that encoder's cosines over its fold's band pairs: what `ngram_style` averages into a band
    score, and the scales its test scores are put on. `where` names the encoders' folder in the error for an encoder
    that scores its pairs alike."""
    repeats = len(fold_folders(record["folds"][0]))
    per_repeat = []
    for r in range(repeats):
        scores, fold_of = out_of_fold_scores(problems, record, lambda part, k, r=r: cosines(part, k, r))
        per_repeat.append(scores)
    rows = band_rows(labels, fold_of >= 0, seed=seed)
    folds = fold_of[rows]
    standardised = np.zeros((repeats, len(rows)))
    scales = []
    for k in range(len(record["folds"])):
        for r in range(repeats):
            in_fold = per_repeat[r][rows][folds == k]
            mean, sd = float(in_fold.mean()), float(in_fold.std())
            if not sd > 0:
                raise HarnessError(f"{where}: a band fold encoder scores its training pairs alike; no scale")
            standardised[r, folds == k] = (in_fold - mean) / sd
            scales.append((mean, sd))
    return BandCosines(rows, folds, standardised, scales, int((fold_of < 0).sum()))


def logistic_of_mean(standardised: Sequence[np.ndarray] | np.ndarray) -> np.ndarray:
    """The logistic of the mean over encoders (axis 0) of their standardised scores: one score in (0, 1) a pair."""
    return 1.0 / (1.0 + np.exp(-np.mean(standardised, axis=0)))
