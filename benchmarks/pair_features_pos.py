"""Do part-of-speech n-grams help pair_features? Out-of-fold AUC on training problems only (issue 27, item 3).

For each set's training split, the pair features of every problem are computed once, with and without the two
`POS_FEATURES` (tag 1-3-gram cosine and min-max), and a model is cross-fitted on `cross_fitted_folds` (5 folds, the
folds pair_features itself uses, 3 fold seeds): the 200-tree forest stacked uses as a member, and one CART tree of
depth 4. The cell is the AUC of the pooled out-of-fold scores, mean over the fold seeds. No test split is read.

    python benchmarks/pair_features_pos.py --set WORK/sets/essays --set WORK/sets/cmcc-seed0 ... [--task pan23]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from sklearn.metrics import roc_auc_score  # noqa: E402

from systems.pair_features import PairFeatures, pos_similarities  # noqa: E402
from tasks.pan.classic import PanClassicTask  # noqa: E402
from tasks.pan.pan23 import Pan23Task  # noqa: E402
from toolkit.calibration import cross_fitted_folds  # noqa: E402

MODELS = {"forest (200 trees)": (200, None), "tree (depth 4)": (1, 4)}
FOLD_SEEDS = (0, 1, 2)


def load_train(folder: Path):
    """The training split of a pan23 set (pairs.jsonl) or of a PAN 2013-2015 corpus folder."""
    task = Pan23Task() if (folder / "train" / "pairs.jsonl").is_file() else PanClassicTask()
    return task.load(folder, "train")


def out_of_fold_auc(x: np.ndarray, labels: np.ndarray, problems, trees: int, depth: int | None) -> float:
    system = PairFeatures(trees=trees)
    aucs = []
    for fold_seed in FOLD_SEEDS:
        folds, _ = cross_fitted_folds(problems, k=5, seed=fold_seed)
        scores = np.full(len(labels), np.nan)
        for fit_on, held_out in folds:
            model = system._fit_tree(x[fit_on], labels[fit_on], "gini", depth, fold_seed)
            scores[held_out] = model.predict(x[held_out])
        answered = ~np.isnan(scores)  # folds that drop shared-text problems leave some unscored
        aucs.append(roc_auc_score(labels[answered], scores[answered]))
    return float(np.mean(aucs))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--set", type=Path, action="append", required=True, help="a set folder (train/ and test/)")
    args = parser.parse_args()
    print("| set (training split) | problems | model | AUC without | AUC with POS | difference | features s |")
    print("|---|---:|---|---:|---:|---:|---:|")
    for folder in args.set:
        data = load_train(folder)
        labels = np.array([data.truth[p.id].same for p in data.problems])
        start = time.perf_counter()
        base = PairFeatures().features(data.problems)
        pos = np.array([pos_similarities(p) for p in data.problems]).reshape(len(labels), 2)
        seconds = time.perf_counter() - start
        both = np.hstack([base, pos])
        for model, (trees, depth) in MODELS.items():
            without = out_of_fold_auc(base, labels, data.problems, trees, depth)
            with_pos = out_of_fold_auc(both, labels, data.problems, trees, depth)
            print(
                f"| {folder.name} | {len(labels)} | {model} | {without:.3f} | {with_pos:.3f} | "
                f"{with_pos - without:+.3f} | {seconds:.0f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
