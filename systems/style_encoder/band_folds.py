"""Band folds: n-gram encoders pre-trained each without a part of a set's training authors, so that `ngram_style`
fits its band on out-of-sample scores while the encoders learn from (nearly) every training author.

Pre-trained with `--exclude-test-of SET` alone, the encoder has learnt the training pairs' authors: their scores
overstate how alike one author's texts look, and a band fitted on them sits where test scores never reach.
`--exclude-all-of SET` mends that by leaving the training authors out altogether, which on the forum costs most of
the authors who wrote both kinds of post (281 of 1,975 are left on a forum set). `--band-folds K` keeps them: the
training authors are dealt into K folds (seeded), and K more encoders are pre-trained, encoder k without fold k's
authors and the threads and posts of their texts. A training pair whose authors are all in fold k is scored by
encoder k, which never saw them; a different-author pair across two folds has no such encoder and is left out of the
band. (Folds of whole author components would need no such loss, but the pairs link nearly every training author
into one component.) So that the band sees the training split's classes in its own proportion, the class that the
cross-fold pairs leave over-represented is subsampled to it (`band_rows`).

The fold encoders then answer the set's test problems together, not the main encoder: each stops training at its
own step and scores on its own scale (on forum seed 1 the fold encoders' cosines averaged 0.79 and 0.75, the main
encoder's 0.72), so a band fitted on their scores does not fit the main encoder's. Each fold encoder's scores are
standardised by the mean and sd of its own fold's band pairs, and a test problem's raw score is the logistic of the
mean of the fold encoders' standardised cosines (`systems.style_encoder.verifier.NgramStyle`).

With `--band-repeats R` each fold has R encoders, pre-trained alike but with other seeds (another sample of posts
for the basis, other batches, another start), and a pair's score is the mean of their standardised cosines: two
encoders of one fold disagree enough (on forum seed 0, fold 1, their cosines of the fold's pairs correlate 0.70) that
their mean ranks the pairs better than either (band pairs' AUC 0.678 against 0.659 with one, benchmarks/README.md).
Seed repeats stop helping soon, because their errors are much alike (on the forum sets their standardised cosines'
noise correlates 0.64-0.67, and the binormal model of `benchmarks/band_repeats.py` puts the limit of many near 0.69).
`--band-view VIEW` adds an encoder a fold that sees the texts otherwise (`systems.style_encoder.ngram.VIEWS`, e.g.
character n-grams only, whose noise correlates 0.58 with the full view's), averaged with the repeats alike.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from core.errors import DataError, HarnessError
from core.files import read_jsonl
from core.records import VerificationProblem
from systems.style_encoder.corpus import Exclusions, author_names, origin_texts

FOLDS_FILE = "band_folds.json"
REPEAT_SEED_STRIDE = 1000  # repeat r of a fold is pre-trained with seed + 1000 (r - 1): apart from other runs' seeds


def fold_folder(index: int, repeat: int = 1, view: str | None = None) -> str:
    """The subfolder of a model folder that holds repeat `repeat` of band fold `index` (both 1-based), of the main
    encoder's settings or, with `view`, of that view (`systems.style_encoder.ngram.VIEWS`)."""
    base = f"band-fold-{index}" if view is None else f"band-fold-{index}-{view}"
    return base if repeat == 1 else f"{base}-{repeat}"


def fold_encoders(repeats: int, views: Sequence[str] = ()) -> list[tuple[str | None, int]]:
    """(view, repeat) of each encoder of a fold, in the order of its folders: the main settings' `repeats`, then one
    encoder per entry of `views` (a view named twice: its second repeat, with the next repeat seed)."""
    encoders: list[tuple[str | None, int]] = [(None, r) for r in range(1, repeats + 1)]
    for i, view in enumerate(views):
        encoders.append((view, list(views[: i + 1]).count(view)))
    return encoders


def repeat_seed(seed: int, repeat: int) -> int:
    """The pre-training seed of a fold's repeat `repeat` (1-based; the first keeps `seed`)."""
    return seed + REPEAT_SEED_STRIDE * (repeat - 1)


def fold_folders(fold: dict[str, Any]) -> list[str]:
    """The subfolders of one fold's encoders, one per repeat (a record written before repeats: its one folder)."""
    return list(fold.get("folders") or [fold["folder"]])


def training_pair_folds(
    set_folder: Path, folds: int, *, seed: int
) -> tuple[list[tuple[list[str], Exclusions]], list[str]]:
    """The training split of a `harness pairs` set dealt into `folds` folds of its authors (shuffled with `seed`):
    per fold, the ids of the pairs whose authors are all in it and what an encoder that must not have seen them leaves
    out (the fold's authors, the threads and source posts of their texts); and the ids of the pairs across folds."""
    set_folder = Path(set_folder)
    truth_path, origins_path = set_folder / "train" / "truth.jsonl", set_folder / "pair_origins.jsonl"
    for path in (truth_path, origins_path):
        if not path.is_file():
            raise HarnessError(f"{path}: not found; --band-folds takes a set built by `harness pairs`")
    authors_of: dict[str, list[str]] = {}
    for line, record in read_jsonl(truth_path):
        pair_id, authors = record.get("id"), author_names(record, truth_path, line)
        if not isinstance(pair_id, str):
            raise DataError("expected a pair id (str)", path=truth_path, line=line, field="id")
        if not authors:
            raise DataError("expected a list of author names", path=truth_path, line=line, field="authors")
        authors_of[pair_id] = authors
    names = sorted({name for authors in authors_of.values() for name in authors})
    if len(names) < folds:
        raise HarnessError(f"{truth_path}: {len(names)} training author(s) cannot make {folds} band folds")
    order = np.random.default_rng(seed).permutation(len(names))
    fold_of_author = {names[i]: rank % folds for rank, i in enumerate(order.tolist())}
    parts: list[list[str]] = [[] for _ in range(folds)]
    across: list[str] = []
    for pair_id, authors in authors_of.items():
        held = {fold_of_author[name] for name in authors}
        (parts[held.pop()] if len(held) == 1 else across).append(pair_id)
    exclusions = [Exclusions(sets=[str(set_folder)]) for _ in range(folds)]
    for name, fold in fold_of_author.items():
        exclusions[fold].authors.add(name)
    for line, record in read_jsonl(origins_path):
        if record.get("split") != "train":
            continue
        authors = authors_of.get(record.get("id"))  # type: ignore[arg-type]
        if authors is None:
            raise DataError("a training pair id that train/truth.jsonl does not hold", path=origins_path, line=line,
                            field="id")  # fmt: skip
        groups, post_ids = origin_texts(record, origins_path, line)
        if len(groups) != len(authors):
            raise DataError("expected a list of group names per text", path=origins_path, line=line, field="groups")
        if len(post_ids) != len(authors):
            raise DataError("expected a 'file#id' string per text", path=origins_path, line=line, field="origins")
        for name, groups_of_text, post_id in zip(authors, groups, post_ids, strict=True):
            exclusions[fold_of_author[name]].groups.update(groups_of_text)
            exclusions[fold_of_author[name]].post_ids.add(post_id)
    return list(zip(parts, exclusions, strict=True)), across


def folds_record(
    set_folder: Path,
    pair_ids: Sequence[Sequence[str]],
    across: Sequence[str],
    *,
    repeats: int = 1,
    views: Sequence[str] = (),
) -> dict[str, Any]:
    """What `band_folds.json` says: the set, how folds were made, each fold's folders (one per encoder,
    `fold_encoders`; "folder" is the first) and pair ids, and the ids of the pairs across folds (training pairs, but
    in no fold)."""
    folds = []
    for k, ids in enumerate(pair_ids, 1):
        folders = [fold_folder(k, r, view) for view, r in fold_encoders(repeats, views)]
        folds.append({"folder": folders[0], "folders": folders, "pair_ids": list(ids)})
    return {
        "set": str(set_folder),
        "grouping": "training authors dealt into folds",
        "repeats": repeats,
        "views": list(views),
        "folds": folds,
        "across_folds": list(across),
    }


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
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise HarnessError(f"{path}: cannot read band folds ({error})") from None
    return record


def made_for(problems: Sequence[VerificationProblem], record: dict[str, Any]) -> bool:
    """Whether any of these problems is a training pair of the set the folds were made for (a model pre-trained for
    one set is read on others too, e.g. forum-pretrained and scored on CMCC: there the folds have nothing to say)."""
    ids = {pair_id for fold in record["folds"] for pair_id in fold["pair_ids"]} | set(record.get("across_folds", ()))
    return any(problem.id in ids for problem in problems)


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
