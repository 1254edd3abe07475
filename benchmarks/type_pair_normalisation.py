"""Scores on one scale across discourse-type pairs: per-type-pair score normalisation, measured (issue 27, item 4).

On a cross-discourse set each type pair (email + essay, chat + blog, ...) has its own score scale, so one band
across them answers some type pairs with a threshold meant for others. The remedy of speaker verification is
Z-norm: standardise a score by the scores of different-author (non-target) pairs of the same condition. Here the
condition is the problem's unordered type pair, and the statistics come from the training split only, from the
system's own out-of-fold training scores (the ones its band is fitted on), so nothing of a test problem is used:

- **z-norm**: (score - mean) / sd of the out-of-fold scores of the training split's different-author problems of the
  same type pair; a type pair with fewer than `MIN_PROBLEMS` of them, or never seen in training, takes the pooled
  different-author mean and sd (the fallback);
- **all-norm**: the same with every training problem of the type pair, same- and different-author;
- **pooled map** (control): no normalisation, only the monotone map below, to tell its effect from the
  normalisation's.

Each variant's scores go through a logistic map fitted on the out-of-fold training scores (the band needs [0, 1])
and the system's own band search (`fit_band`: its grid and objective). The test problems are scored once by the
fitted system; the cells are test AUC, c@1 and overall of each variant beside the system's own answers. "type
pairs" says how many type pairs had z-norm statistics of their own and how far apart their different-author means
lie ("spread", `TypePairNorm.spread`): the scale the normalisation takes out.

    python benchmarks/type_pair_normalisation.py --set WORK/sets/cmcc-seed0 --seed 0 --systems tfidf,wccn
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from core.records import Answer, VerificationProblem  # noqa: E402
from harness.registry import system_class  # noqa: E402
from tasks.pan.pan23 import Pan23Task  # noqa: E402
from toolkit.calibration import training_labels  # noqa: E402
from toolkit.logistic import fit_standardised_logistic  # noqa: E402

MIN_PROBLEMS = 5  # a type pair with fewer training problems of the kind used takes the pooled statistics


def type_pair(problem: VerificationProblem) -> tuple[str, ...]:
    return tuple(sorted(set(problem.discourse_types or ())))


class TypePairNorm:
    """Per-type-pair mean and sd of training scores, with the pooled ones as the fallback."""

    def __init__(self, problems: Sequence[VerificationProblem], scores: np.ndarray, use: np.ndarray) -> None:
        pairs = [type_pair(p) for p in problems]
        pooled = scores[use]
        self.pooled = (float(pooled.mean()), float(pooled.std()) or 1.0)
        self.by_pair: dict[tuple[str, ...], tuple[float, float]] = {}
        for pair in set(pairs):
            mine = scores[use & np.array([q == pair for q in pairs])]
            if len(mine) >= MIN_PROBLEMS and mine.std() > 0:
                self.by_pair[pair] = (float(mine.mean()), float(mine.std()))

    def spread(self) -> float:
        """How far apart the type pairs with statistics of their own sit: the sd of their means, in units of the
        pooled sd (0 where none has its own): the scale the normalisation takes out."""
        means = [mean for mean, _ in self.by_pair.values()]
        return float(np.std(means) / self.pooled[1]) if means else 0.0

    def __call__(self, problems: Sequence[VerificationProblem], scores: np.ndarray) -> np.ndarray:
        stats = np.array([self.by_pair.get(type_pair(p), self.pooled) for p in problems]).reshape(len(problems), 2)
        return (scores - stats[:, 0]) / stats[:, 1]


def measures(task: Pan23Task, test, values: np.ndarray) -> dict[str, float]:
    answers = [Answer(p.id, float(v)) for p, v in zip(test.problems, values, strict=True)]
    scores = task.score(answers, test)
    return {key: round(float(scores[key]), 4) for key in ("auc", "c_at_1", "overall")}


def run(folder: Path, name: str, seed: int) -> dict[str, dict[str, float]]:
    task = Pan23Task()
    train, test = task.load(folder, "train"), task.load(folder, "test")
    labels = training_labels(train)
    system = system_class(name)()
    system.fit(train, seed=seed)
    oof = system.answering_band_fit().scores  # the out-of-fold scores its band was fitted on
    test_raw = system.raw_scores(test.problems)
    rows = {"own answers": measures(task, test, system.answer_values(test.problems))}
    variants = {
        "pooled map (control)": (oof, test_raw),
        "z-norm": (
            (norm := TypePairNorm(train.problems, oof, ~labels))(train.problems, oof),
            norm(test.problems, test_raw),
        ),
        "all-norm": (
            (norm_all := TypePairNorm(train.problems, oof, np.ones_like(labels)))(train.problems, oof),
            norm_all(test.problems, test_raw),
        ),
    }
    rows["type pairs"] = {"with their own statistics": len(norm.by_pair), "spread": round(norm.spread(), 4)}
    for variant, (train_scores, test_scores) in variants.items():
        probability = fit_standardised_logistic(train_scores[:, None], labels, seed=seed)
        band = system.fit_band(train, probability.probabilities(train_scores[:, None]), labels)
        rows[variant] = measures(task, test, band.apply(probability.probabilities(test_scores[:, None])))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--set", type=Path, required=True, help="a pan23 set folder (train/, test/) with types")
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--systems", required=True, help="comma-separated verification systems (defaults)")
    parser.add_argument("--out", type=Path, help="a JSON file to add the results to")
    args = parser.parse_args()
    results = json.loads(args.out.read_text(encoding="utf-8")) if args.out and args.out.exists() else {}
    for name in args.systems.split(","):
        key = f"{args.set.name}/{name}"
        if key in results:
            print(f"{key}: kept", file=sys.stderr)
            continue
        start = time.perf_counter()
        results[key] = run(args.set, name, args.seed)
        print(f"{key} ({time.perf_counter() - start:.0f} s): {results[key]}", flush=True)
        if args.out:
            partial = args.out.with_suffix(".partial")
            partial.write_text(json.dumps(results, indent=1), encoding="utf-8")
            partial.replace(args.out)


if __name__ == "__main__":
    main()
