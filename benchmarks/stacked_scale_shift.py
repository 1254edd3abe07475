"""Where do stacked's test meta-features fall against the training ones? (issue 27, item 5; a diagnosis)

stacked fits its meta-model and band on its members' out-of-fold values on the training problems, and with
`answerers="folds"` the fold members' values on a test problem, averaged over the folds, are what it reads. If
its answers lean to one class on a test split, either the averaging moved the values (an average of five models
varies less than one) or every member's values moved (the test corpus differs from the training one). This script
fits stacked (defaults) on a PAN 2013-2015 corpus's training split and prints, for the training problems' out-of-fold
values and for each fold's members on the test problems, then their average: each chosen member's standardised
mean and sd, where the meta-model's scores fall against the band, and their AUC.

    python benchmarks/stacked_scale_shift.py --data runs/verification-all/sets/novels --seed 0
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from harness.metrics.verification import auc  # noqa: E402
from systems.stacked import StackedEnsemble  # noqa: E402
from tasks.pan.classic import PanClassicTask  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True, help="a PAN 2013-2015 corpus folder (train/, test/)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    task = PanClassicTask()
    train, test = task.load(args.data, "train"), task.load(args.data, "test")
    assert train.truth is not None and test.truth is not None
    train_labels = np.array([train.truth[p.id].same for p in train.problems])
    test_labels = np.array([test.truth[p.id].same for p in test.problems])
    stacked = StackedEnsemble()
    stacked.fit(train, seed=args.seed)
    assert stacked.meta_features is not None and stacked._systems is not None and stacked._band is not None
    assert stacked._coef is not None
    band = stacked._band
    print(f"chosen {stacked._chosen}, band [{band.p1}, {band.p2}], weights {np.round(stacked._coef, 2)}")

    columns = [stacked.members.index(name) for name in stacked._chosen]
    rows = [("training, out of fold", stacked.meta_features[:, columns], train_labels)]
    per_fold = [
        np.column_stack([stacked._member_values(member, test.problems) for member in group])
        for group in stacked._systems
    ]
    rows += [(f"test, fold {i} members", values, test_labels) for i, values in enumerate(per_fold)]
    rows.append(("test, averaged (answers)", np.mean(per_fold, axis=0), test_labels))
    print("| values | mean per member (sd units) | sd per member | below band | in band | above band | AUC |")
    print("|---|---|---|---:|---:|---:|---:|")
    for name, values, labels in rows:
        standard = stacked.standardised(values)
        scores = stacked.meta_probability(values)
        below, above = (scores < band.p1).mean(), (scores > band.p2).mean()
        print(
            f"| {name} | {' / '.join(f'{m:+.2f}' for m in standard.mean(axis=0))} | "
            f"{' / '.join(f'{s:.2f}' for s in standard.std(axis=0))} | {below:.2f} | {1 - below - above:.2f} | "
            f"{above:.2f} | {auc(labels, scores):.3f} |"
        )
    print(f"same-author share: training {train_labels.mean():.2f}, test {test_labels.mean():.2f}")


if __name__ == "__main__":
    main()
