"""stacked against the member a user would pick on training data alone (issue 27, item 5, the bar restated).

Item 5 asks that stacked be at least as good as its best member on every set. "Best" there is read on the test
split, which no method may see; the question a user can act on is whether stacked beats the simple alternative
of picking one member by cross-validation on the training split. For each set, seed and (PAN15) fold this script
fits each of stacked's default candidates on the training split as it fits itself (its own cross-fitted band),
keeps the out-of-fold scores its band is fitted on, and takes the member whose banded out-of-fold answers score
best on the task's main measure (AUC x c@1 on PAN 2013-2015, overall on the pan23 sets). That member's test
answers (of the run benchmarks/verification_all.py made, pooled over PAN15's folds) are the bar; stacked's run and
the member best on the test split (the old bar) stand beside it.

    python benchmarks/verification_all.py --out WORK --systems cngdist tfidf compressor pair_features_200 stacked
    python benchmarks/stacked_selection_bar.py --out WORK --sets pan13 essays novels pan15 cmcc --seeds 0 1 2
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from statistics import mean
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from verification_all import ROWS, main_measure, set_folders, task_of  # noqa: E402

from harness.data_location import DataLocation  # noqa: E402
from harness.metrics.verification import auc_x_c_at_1, overall  # noqa: E402
from harness.registry import system_class  # noqa: E402
from harness.runner import run_folder  # noqa: E402
from tasks.pan.classic import PanClassicTask  # noqa: E402
from tasks.pan.pan23 import Pan23Task  # noqa: E402
from toolkit.calibration import training_labels  # noqa: E402

CANDIDATES = ("cngdist", "compressor", "pair_features_200", "tfidf")  # stacked's default members, as rows


def task_of_folder(folder: Path) -> Pan23Task | PanClassicTask:
    return Pan23Task() if task_of(folder.name.split("-")[0]) == "pan23" else PanClassicTask()


def out_of_fold_main(row: str, folder: Path, seed: int, measure: str) -> float:
    """The row's system fitted on `folder`'s training split: its main measure on its own banded out-of-fold answers."""
    system_name, params = ROWS[row]
    train = task_of_folder(folder).load(folder, "train")
    system = system_class(system_name)(**params)
    system.fit(train, seed=seed)
    band_fit = system.answering_band_fit()  # its band and the out-of-fold scores it was fitted on
    answers = band_fit.band.apply(band_fit.scores)
    labels = training_labels(train)
    return float(auc_x_c_at_1(labels, answers) if measure == "auc_x_c_at_1" else overall(labels, answers))


def pooled_test(rows: list[str], folders: list[Path], seed: int, out: Path, measure: str) -> float:
    """The main measure of the test answers of each folder's row's run, pooled over the folders (PAN15's folds)."""
    task = task_of_folder(folders[0])
    answers: dict[str, float] = {}
    truth: dict[str, Any] = {}
    for row, folder in zip(rows, folders, strict=True):
        system_name, params = ROWS[row]
        run = run_folder(out / "runs", task.metadata.name, system_name, seed, params, data=DataLocation(folder))
        lines = (run / "answers.jsonl").read_text(encoding="utf-8").splitlines()
        answers.update((line["id"], line["value"]) for line in map(json.loads, filter(str.strip, lines)))
        truth.update(task.read_truth(folder / "test"))
    return float(task.score_truth(answers, truth)[measure])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True, help="verification_all.py's WORK folder")
    parser.add_argument("--sets", nargs="+", required=True)
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    args = parser.parse_args()
    print("| set | seed | chosen on training (out-of-fold main score) | its test score | stacked | best on test |")
    print("|---|---:|---|---:|---:|---|")
    summary: dict[str, list[tuple[float, float, float]]] = {}
    for name in args.sets:
        measure = main_measure(name)
        for seed in args.seeds:
            folders = set_folders(name, seed, argparse.Namespace(out=args.out, collect=True))
            chosen: list[str] = []
            notes: list[str] = []
            for folder in folders:  # PAN15: a member chosen per fold, as stacked chooses per fold
                oof = {row: out_of_fold_main(row, folder, seed, measure) for row in CANDIDATES}
                chosen.append(max(CANDIDATES, key=lambda row: (oof[row], -CANDIDATES.index(row))))
                notes.append(f"{chosen[-1]} ({oof[chosen[-1]]:.3f})")
            chosen_test = pooled_test(chosen, folders, seed, args.out, measure)
            stacked = pooled_test(["stacked"] * len(folders), folders, seed, args.out, measure)
            tests = {row: pooled_test([row] * len(folders), folders, seed, args.out, measure) for row in CANDIDATES}
            best_test = max(tests, key=tests.get)
            summary.setdefault(name, []).append((chosen_test, stacked, tests[best_test]))
            print(
                f"| {name} | {seed} | {', '.join(notes)} | {chosen_test:.3f} | {stacked:.3f} | "
                f"{best_test} {tests[best_test]:.3f} |",
                flush=True,
            )
    print("\n| set | chosen on training (mean) | stacked (mean) | best on test (mean) |")
    print("|---|---:|---:|---:|")
    for name, rows in summary.items():
        chosen, stacked, best = (mean(column) for column in zip(*rows, strict=True))
        print(f"| {name} | {chosen:.3f} | {stacked:.3f} | {best:.3f} |")


if __name__ == "__main__":
    main()
