"""Discourse-type compensation in the style space, screened on training pairs (issue 27, item 4, a third angle).

Item 4's score normalisation (benchmarks/type_pair_normalisation.py) shifts and scales each type pair's scores.
Speaker verification also compensates the channel before scoring, in the vector space, and the discourse type is
this field's channel. Two such remedies, on wccn's style space (character and word TF-IDF, SVD, within-author
whitening; wccn's defaults), each scored by cosine:

- **plain**: wccn as it is, (r - mean) W: the control;
- **centre**: (r - the mean of the text's discourse type) W, the type means from the fold's training texts (a type
  the fold never saw takes the global mean);
- **nap**: nuisance attribute projection (Campbell et al., ICASSP 2006): the plain vectors less their part in the
  top (types - 1) directions of the within-author between-type scatter (each training author's per-type mean
  vectors less that author's mean of them, from authors with texts of two or more types);
- **both**: centre, then nap.

Only training pairs are read: a variant's figure is the pooled out-of-fold AUC, each fold's space fitted without
its held-out problems' authors (author- and text-disjoint folds; where few authors write every problem, as on
CMCC, folds that leave two author groups out, `toolkit.calibration.author_pair_folds`).

    python benchmarks/type_compensation.py --set WORK/sets/cmcc-seed0 --seed 0 [--set ... --seed ...]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from core.errors import HarnessError  # noqa: E402
from core.records import VerificationData, VerificationProblem  # noqa: E402
from tasks.pan.pan23 import Pan23Task  # noqa: E402
from toolkit.calibration import author_disjoint_folds, truth_authors  # noqa: E402
from toolkit.style_space import (  # noqa: E402
    cosine_scores,
    distinct_texts,
    fit_basis,
    fit_space,
    text_authors,
    text_types,
)

VARIANTS = ("plain", "centre", "nap", "both")
WCCN = {"dimensions": 200, "char_features": 30_000, "word_features": 10_000, "shrinkage": 0.1}  # wccn's defaults


def nap_directions(vectors: np.ndarray, authors: np.ndarray, types: np.ndarray, rank: int) -> tuple[np.ndarray, int]:
    """(d, rank) orthonormal top directions of the within-author between-type scatter, and how many authors (with
    texts of two or more types) gave it."""
    rows = []
    for author in np.unique(authors):
        mine = authors == author
        kinds = sorted(set(types[mine].tolist()))
        if len(kinds) < 2:
            continue
        means = np.array([vectors[mine & (types == kind)].mean(axis=0) for kind in kinds])
        rows.append(means - means.mean(axis=0))
    if not rows:
        raise HarnessError("no training author has texts of two discourse types: no direction to project out")
    deviations = np.vstack(rows)
    _, vectors_ = np.linalg.eigh(deviations.T @ deviations)
    return vectors_[:, ::-1][:, :rank], len(rows)


def project_out(vectors: np.ndarray, directions: np.ndarray) -> np.ndarray:
    return vectors - (vectors @ directions) @ directions.T


def fold_scores(
    train: VerificationData,
    types_of: Mapping[str, str],
    fitted: Sequence[VerificationProblem],
    held_out: Sequence[VerificationProblem],
    seed: int,
) -> dict[str, np.ndarray]:
    """Each variant's cosine scores of `held_out`, with the space (and type statistics) of `fitted` only;
    `types_of`: every training text's discourse type."""
    assert train.truth is not None
    texts, authors = text_authors(fitted, train.truth)
    basis = fit_basis(
        texts, dimensions=WCCN["dimensions"], char_features=WCCN["char_features"],
        word_features=WCCN["word_features"], seed=seed, label="type_compensation",
    )  # fmt: skip
    space, _ = fit_space(basis, texts, authors, shrinkage=WCCN["shrinkage"])
    reduced = basis.reduce(texts)
    types = np.array([types_of.get(text, "") for text in texts])
    type_mean = {kind: reduced[types == kind].mean(axis=0) for kind in set(types.tolist())}
    rank = max(len(type_mean) - 1, 1)
    plain = (reduced - space.mean) @ space.whitening
    centred = (reduced - np.array([type_mean[kind] for kind in types])) @ space.whitening
    nap_plain, _ = nap_directions(plain, authors, types, rank)
    nap_centred, _ = nap_directions(centred, authors, types, rank)

    scored = distinct_texts(held_out)
    reduced_held = basis.reduce(scored)
    held_means = np.array([type_mean.get(types_of.get(text, ""), space.mean) for text in scored])
    held_plain = (reduced_held - space.mean) @ space.whitening
    held_centred = (reduced_held - held_means) @ space.whitening
    vectors = {
        "plain": held_plain,
        "centre": held_centred,
        "nap": project_out(held_plain, nap_plain),
        "both": project_out(held_centred, nap_centred),
    }
    return {name: cosine_scores(held_out, scored, vectors[name]) for name in VARIANTS}


def screen(train: VerificationData, *, seed: int) -> dict[str, object]:
    """Pooled out-of-fold AUC of every variant on the training problems, and how the folds were made."""
    from sklearn.metrics import roc_auc_score

    assert train.truth is not None
    problems = list(train.problems)
    labels = np.array([train.truth[p.id].same for p in problems], dtype=int)
    folds, info, _ = author_disjoint_folds(problems, truth_authors(train), labels, k=5, seed=seed)
    types_of = text_types(problems)
    scores = {name: np.full(len(problems), np.nan) for name in VARIANTS}
    for fitted, held_out in folds:
        fold = fold_scores(train, types_of, [problems[i] for i in fitted], [problems[i] for i in held_out], seed)
        for name in VARIANTS:
            scores[name][held_out] = fold[name]
    return {"auc": {name: float(roc_auc_score(labels, scores[name])) for name in VARIANTS}, "folds": info}


def summary(rows: Sequence[Mapping[str, object]]) -> str:
    lines = ["| set | seed | " + " | ".join(VARIANTS) + " |", "|---|---:|" + "---:|" * len(VARIANTS)]
    for row in rows:
        auc = row["auc"]
        assert isinstance(auc, Mapping)
        lines.append(f"| {row['set']} | {row['seed']} | " + " | ".join(f"{auc[v]:.4f}" for v in VARIANTS) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--set", type=Path, action="append", required=True, help="a pan23 set (repeatable)")
    parser.add_argument("--seed", type=int, action="append", required=True, help="its seed (one per --set)")
    args = parser.parse_args()
    if len(args.set) != len(args.seed):
        parser.error("give one --seed for each --set")
    rows = []
    for folder, seed in zip(args.set, args.seed, strict=True):
        row = {"set": folder.name, "seed": seed, **screen(Pan23Task().load(folder, "train"), seed=seed)}
        print(json.dumps(row), flush=True)
        rows.append(row)
    print(summary(rows))


if __name__ == "__main__":
    main()
