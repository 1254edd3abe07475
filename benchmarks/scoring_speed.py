"""Time PAN verification scoring: tasks.pan.evaluator.score_answers vs a plain per-problem Python loop.

Scores the 14,311-problem PAN 2020 test truth against one real submission with both, checks that
they agree to 1e-9 on every measure, and prints the best-of-N times and their ratio: end to end
(aligning answers to the sorted truth ids, which both share, plus the measures) and the measures alone.

    python benchmarks/scoring_speed.py [--data DIR] [--team boenninghoff20-large] [--repeat 7]
"""

from __future__ import annotations

import argparse
import os
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np

from core.files import read_jsonl
from core.records import VerificationTruth
from harness.metrics.verification import evaluate_all
from tasks.pan.evaluator import read_answers, score_answers

REPO_ROOT = Path(__file__).resolve().parents[1]


# ---- plain Python reference: one loop over problems per measure ------------------------------


def loop_auc(truth: list[bool], scores: list[float]) -> float:
    """Mann-Whitney AUC with mid-ranks, walking the sorted problems once."""
    n_pos = sum(truth)
    n_neg = len(truth) - n_pos
    if n_pos == 0 or n_neg == 0:
        return 0.0
    pairs = sorted(zip(scores, truth, strict=True))
    rank_sum = 0.0
    i = 0
    while i < len(pairs):
        j = i
        while j < len(pairs) and pairs[j][0] == pairs[i][0]:
            j += 1
        mid_rank = (i + 1 + j) / 2
        for k in range(i, j):
            if pairs[k][1]:
                rank_sum += mid_rank
        i = j
    return (rank_sum - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)


def loop_c_at_1(truth: list[bool], scores: list[float]) -> float:
    n = len(scores)
    n_c = n_u = 0
    for gold, score in zip(truth, scores, strict=True):
        if score == 0.5:
            n_u += 1
        elif (score > 0.5) == gold:
            n_c += 1
    return (n_c + n_u * n_c / n) / n


def loop_counts(truth: list[bool], scores: list[float]) -> tuple[int, int, int, int]:
    """(true positives, false positives, false negatives, unanswered), an answer of exactly 0.5 unanswered."""
    tp = fp = fn = n_u = 0
    for gold, score in zip(truth, scores, strict=True):
        if score == 0.5:
            n_u += 1
        elif score > 0.5 and gold:
            tp += 1
        elif score > 0.5:
            fp += 1
        elif gold:
            fn += 1
    return tp, fp, fn, n_u


def loop_f1(truth: list[bool], scores: list[float]) -> float:
    tp, fp, fn, _ = loop_counts(truth, scores)
    return 2 * tp / (2 * tp + fp + fn) if tp else 0.0


def loop_f_05_u(truth: list[bool], scores: list[float]) -> float:
    tp, fp, fn, n_u = loop_counts(truth, scores)
    denominator = 1.25 * tp + 0.25 * (fn + n_u) + fp
    return 1.25 * tp / denominator if denominator else 0.0


def loop_brier(truth: list[bool], scores: list[float]) -> float:
    total = 0.0
    for gold, score in zip(truth, scores, strict=True):
        total += (score - float(gold)) ** 2
    return 1.0 - total / len(scores)


def loop_score(answers: dict[str, float], truth: dict[str, VerificationTruth]) -> dict[str, float]:
    """The pan23 profile with plain Python: align by sorted id, missing answers as 0.5."""
    ids = sorted(truth)
    return loop_measures([truth[i].same for i in ids], [answers.get(i, 0.5) for i in ids])


def loop_measures(gold: list[bool], scores: list[float]) -> dict[str, float]:
    """The five pan23 measures and their mean, one Python loop over problems each."""
    results = {
        "auc": loop_auc(gold, scores),
        "c_at_1": loop_c_at_1(gold, scores),
        "f_05_u": loop_f_05_u(gold, scores),
        "f1": loop_f1(gold, scores),
        "brier": loop_brier(gold, scores),
    }
    results["overall"] = sum(results.values()) / len(results)
    return results


# ---- timing ----------------------------------------------------------------------------------


def best_time(fn: Callable[[], dict[str, float]], repeat: int) -> tuple[float, dict[str, float]]:
    best, result = float("inf"), {}
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return best, result


def main() -> None:
    default_data = Path(os.environ.get("HARNESS_SHARED_DATA", REPO_ROOT.parent / "shared" / "data"))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=default_data, help="the shared data folder")
    parser.add_argument("--team", default="boenninghoff20-large", help="which PAN 2020 submission to score")
    parser.add_argument("--repeat", type=int, default=7, help="runs per method; the best time is reported")
    args = parser.parse_args()

    folder = args.data / "pan20-av-scored"
    truth = {
        obj["id"]: VerificationTruth(obj["id"], bool(obj["same"]), tuple(obj["authors"]))
        for _, obj in read_jsonl(folder / "truth.jsonl.gz")
    }
    answers = read_answers(folder / "answers" / f"{args.team}.jsonl.gz")
    n_abstain = sum(v == 0.5 for v in answers.values())

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a team with missing answers warns on every repeat
        ours_s, ours = best_time(lambda: score_answers(answers, truth, profile="pan23"), args.repeat)
        loop_s, loop = best_time(lambda: loop_score(answers, truth), args.repeat)
    # the measures alone, on already aligned arrays/lists: what vectorising buys
    ids = sorted(truth)
    gold = [truth[i].same for i in ids]
    scores = [answers.get(i, 0.5) for i in ids]
    gold_arr, scores_arr = np.array(gold), np.array(scores)
    ours_m_s, ours_m = best_time(lambda: evaluate_all(gold_arr, scores_arr, profile="pan23"), args.repeat)
    loop_m_s, loop_m = best_time(lambda: loop_measures(gold, scores), args.repeat)

    for name, a, b in (("end to end", ours, loop), ("measures only", ours_m, loop_m)):
        mismatches = {k: (a[k], b[k]) for k in a if abs(a[k] - b[k]) > 1e-9}
        if mismatches or set(a) != set(b):
            raise SystemExit(f"{name}: the two implementations disagree: {mismatches}")
    print(f"{len(truth)} problems, answers of {args.team} ({n_abstain} non-answers), profile pan23")
    print(f"best of {args.repeat} runs       numpy (ours)   Python loop   ratio")
    print(f"score_answers, end to end {ours_s * 1e3:9.2f} ms {loop_s * 1e3:10.2f} ms {loop_s / ours_s:6.1f}x")
    print(f"the 5 measures only       {ours_m_s * 1e3:9.2f} ms {loop_m_s * 1e3:10.2f} ms {loop_m_s / ours_m_s:6.1f}x")
    print("both agree to 1e-9 on: " + ", ".join(f"{k}={v:.6f}" for k, v in ours.items()))


if __name__ == "__main__":
    main()
