"""How far more encoders a band fold can take `ngram_style` (issue 27): the repeats curve, on training pairs only.

`harness pretrain-style ... --band-folds K --band-repeats R` pre-trains R encoders a fold with other seeds, and
`ngram_style` scores a training pair by the mean of its fold's R standardised cosines. This reads such a folder and
its set's training split (never the test split) and gives, for each m = 1..R, the band pairs' AUC with every subset
of m repeats a fold averaged, the same band pairs and scales as the verifier (`band_folds.band_cosines`), and the
repeats' mean correlation rho within a fold and a class (the noises': the signal both share left out).

Why the curve bends: if each encoder's standardised cosine is one signal plus its own noise, the noises correlated
rho, a mean of m encoders keeps the signal and keeps (1 + (m - 1) rho) / m of the noise variance. Under a binormal
model (AUC = Phi(d' / sqrt 2)) that gives d'(m) = d'(1) sqrt(m / (1 + (m - 1) rho)), which tends to d'(1) / sqrt(rho)
as m grows: the column "bound" is that limit's AUC, what no number of seed repeats of these encoders can pass.

    python benchmarks/band_repeats.py --encoders OUT/encoder-seed0 --set WORK/sets/forum-seed0 --seed 0 [...]

`--encoders` and `--set` pair up in order, each with its `--seed` (the set's seed: it seeds the band rows as the
verifier does). Prints a markdown table, one row a folder.
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
from pathlib import Path
from typing import Any

import numpy as np


def equicorrelated_auc(single_auc: float, rho: float, members: float) -> float:
    """The binormal AUC of a mean of `members` scores, each of AUC `single_auc`, whose noises correlate `rho`;
    `members=inf` gives the limit."""
    from scipy.stats import norm

    d_prime = np.sqrt(2) * norm.ppf(single_auc)
    shrink = 1 / rho if np.isinf(members) else members / (1 + (members - 1) * rho)
    return float(norm.cdf(d_prime * np.sqrt(shrink) / np.sqrt(2)))


def repeats_curve(standardised: np.ndarray, folds: np.ndarray, labels: np.ndarray) -> dict[str, Any]:
    """AUC of the band rows for every subset of m repeats (rows of `standardised`) averaged, m = 1..R; the repeats'
    mean correlation within a fold and a class; the equicorrelation model's AUC for m = R and its limit, from the single
    encoders' mean AUC."""
    from sklearn.metrics import roc_auc_score

    repeats = len(standardised)
    if repeats < 2:
        raise SystemExit("the curve needs two or more encoders a fold (--band-repeats 2 or more)")
    aucs = {
        m: [float(roc_auc_score(labels, standardised[list(subset)].mean(axis=0)))
            for subset in itertools.combinations(range(repeats), m)]
        for m in range(1, repeats + 1)
    }  # fmt: skip
    cells = [cell for k in np.unique(folds) for cell in ((folds == k) & labels, (folds == k) & ~labels)]
    pair_rho = {  # within a fold and a class: the noises' correlation, the shared signal left out
        (a, b): statistics.mean(
            float(np.corrcoef(standardised[a][cell], standardised[b][cell])[0, 1])
            for cell in cells
            if cell.sum() >= 3  # a correlation needs a few rows
        )
        for a, b in itertools.combinations(range(repeats), 2)
    }
    rho = statistics.mean(pair_rho.values())
    single = statistics.mean(aucs[1])
    return {
        "aucs": aucs,
        "pair_rho": pair_rho,
        "rho": rho,
        "model": equicorrelated_auc(single, rho, repeats),
        "bound": equicorrelated_auc(single, rho, float("inf")),
    }


def folder_curve(encoders: Path, set_folder: Path, seed: int) -> dict[str, Any]:
    """The curve of one band-fold encoder folder on its set's training split."""
    from harness.runner import make_task
    from systems.style_encoder.band_folds import band_cosines, fold_folders, read_folds
    from systems.style_encoder.ngram import load_ngram_style
    from toolkit.calibration import training_labels
    from toolkit.style_space import cosine_scores, distinct_texts

    record = read_folds(encoders)
    if record is None:
        raise SystemExit(f"{encoders}: no band folds (pre-train with --band-folds K --band-repeats R)")
    train = make_task("pan23", {}).load_split(set_folder / "train", "train")
    labels = training_labels(train)
    models = [[load_ngram_style(encoders / name)[0] for name in fold_folders(fold)] for fold in record["folds"]]

    def cosines(problems: Any, k: int, r: int) -> np.ndarray:
        texts = distinct_texts(problems)
        return cosine_scores(problems, texts, models[k][r].embed(texts))

    band = band_cosines(train.problems, labels, record, cosines, seed=seed, where=encoders)
    # each encoder of a fold by its folder's ending: "1", "2", ... the seed repeats, "char", "char-2" ... the views
    names = [name.removeprefix("band-fold-1").lstrip("-") or "1" for name in fold_folders(record["folds"][0])]
    curve = repeats_curve(band.standardised, band.folds, labels[band.rows])
    return curve | {"rows": len(band.rows), "encoders": names}


def table(rows: list[tuple[Path, dict[str, Any]]]) -> str:
    repeats = max(len(curve["aucs"]) for _, curve in rows)
    head = [f"{m} a fold" for m in range(1, repeats + 1)]
    lines = [
        "| encoders | band rows | " + " | ".join(head) + " | rho | model at R | bound (R -> inf) |",
        "|---|---:|" + "---:|" * (repeats + 3),
    ]
    for folder, curve in rows:
        cells = []
        for m in range(1, repeats + 1):
            values = curve["aucs"].get(m, [])
            cells.append(" / ".join(f"{value:.3f}" for value in values) if values else "")
        lines.append(
            f"| {folder} | {curve['rows']} | " + " | ".join(cells)
            + f" | {curve['rho']:.2f} | {curve['model']:.3f} | {curve['bound']:.3f} |"
        )  # fmt: skip
    lines.append("")
    lines.append("Band pairs' AUC (training split, out of sample); a cell lists every subset of that many repeats.")
    lines += ["", "| encoders | each encoder's AUC | noise rho of each two |", "|---|---|---|"]
    for folder, curve in rows:
        names = curve["encoders"]
        singles = ", ".join(f"{name} {auc:.3f}" for name, auc in zip(names, curve["aucs"][1], strict=True))
        pairs = ", ".join(f"{names[a]}-{names[b]} {rho:.2f}" for (a, b), rho in curve["pair_rho"].items())
        lines.append(f"| {folder} | {singles} | {pairs} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> str:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--encoders", type=Path, nargs="+", required=True)
    parser.add_argument("--set", type=Path, nargs="+", required=True, dest="sets")
    parser.add_argument("--seed", type=int, nargs="+", required=True, dest="seeds")
    parser.add_argument("--json", type=Path, help="also write the curves here")
    args = parser.parse_args(argv)
    if not len(args.encoders) == len(args.sets) == len(args.seeds):
        parser.error("give as many --set and --seed values as --encoders folders")
    rows = [(folder, folder_curve(folder, set_folder, seed))
            for folder, set_folder, seed in zip(args.encoders, args.sets, args.seeds, strict=True)]  # fmt: skip
    if args.json is not None:
        curves = {str(folder): curve | {"pair_rho": list(curve["pair_rho"].values())} for folder, curve in rows}
        args.json.write_text(json.dumps(curves, indent=1), encoding="utf-8")
    text = table(rows)
    print(text, end="")
    return text


if __name__ == "__main__":
    main()
