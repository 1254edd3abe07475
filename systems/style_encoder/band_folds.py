"""Band folds: style encoders pre-trained each without a part of a set's training authors, so that the verifier
(`ngram_style`, `encoder_wccn`) fits its band on out-of-sample scores while the encoders learn from (nearly) every
training author. This module makes the folds; `toolkit.band_folds` reads them.

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

import copy
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from core.errors import DataError, HarnessError
from core.files import find_data_file, read_jsonl
from systems.style_encoder.corpus import Exclusions, author_names, origin_texts
from toolkit.band_folds import training_digests

logger = logging.getLogger("harness")
MIN_FOLD_PAIRS = 2  # a fold encoder's scale is the mean and sd of its fold's band pairs: two at least
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


def training_pair_folds(
    set_folder: Path, folds: int, *, seed: int
) -> tuple[list[tuple[list[str], Exclusions]], list[str]]:
    """The training split of a `harness pairs` set dealt into `folds` folds of its authors (shuffled with `seed`):
    per fold, the ids of the pairs whose authors are all in it and what an encoder that must not have seen them leaves
    out (the fold's authors, the threads and source posts of their texts); and the ids of the pairs across folds."""
    set_folder = Path(set_folder)
    try:  # plain or gzipped, as the pan23 task and --exclude-test-of read a set (audit 10, F8)
        truth_path = find_data_file(set_folder / "train", "truth.jsonl")
        origins_path = find_data_file(set_folder, "pair_origins.jsonl")
    except DataError as error:
        raise HarnessError(f"{error}; --band-folds takes a set built by `harness pairs`") from None
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
    for k, pair_ids in enumerate(parts, 1):  # refused now, not after K + 1 pre-trainings (audit 10, F4)
        if len(pair_ids) < MIN_FOLD_PAIRS:
            raise HarnessError(
                f"{truth_path}: band fold {k} of {folds} would hold {len(pair_ids)} training pair(s) (pairs whose "
                f"authors all fall in it), and an encoder's scale needs {MIN_FOLD_PAIRS}: give fewer --band-folds, or "
                "a set with more training pairs"
            )
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


def fold_exclusions(exclusions: Exclusions, parts: Sequence[tuple[Sequence[str], Exclusions]]) -> list[Exclusions]:
    """What each fold's encoders leave out: `exclusions` and that fold's part (`training_pair_folds`), logged."""
    merged = []
    for k, (pair_ids, fold_part) in enumerate(parts, 1):
        merged.append(copy.deepcopy(exclusions))
        merged[-1].merge(fold_part, how=f"training fold {k} of {len(parts)}")
        logger.info("band fold %d of %d: %d training authors left out (it scores their %d pairs)",
                    k, len(parts), len(fold_part.authors), len(pair_ids))  # fmt: skip
    return merged


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
        "pair_digests": training_digests(Path(set_folder)),
    }
