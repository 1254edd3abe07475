"""char_lm's `max_reference_heads`: how far d with a sample of reference heads is from d with every head.

Loads a fitted char_lm checkpoint, scores the first `--problems` test problems of a pan23 split twice, with the
checkpoint's sample of reference heads and with every training head, and prints the time of each, their
Pearson and Spearman correlations, the mean absolute difference beside the spread of d, and the AUC of each.

    python benchmarks/char_lm_reference_sample.py --checkpoint runs/.../char_lm@.../seed-1/checkpoint \
        --data runs/bench-cross-discourse/sets/forum-seed1 [--problems 400]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from scipy.stats import pearsonr, spearmanr  # noqa: E402
from sklearn.metrics import roc_auc_score  # noqa: E402

from systems.char_lm.system import CharLM  # noqa: E402
from tasks.pan.pan23 import Pan23Task  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", type=Path, required=True)
    parser.add_argument("--data", type=Path, required=True, help="a pan23 data folder (its test split is scored)")
    parser.add_argument("--problems", type=int, default=400)
    args = parser.parse_args()

    system = CharLM.load(args.checkpoint, runtime={"device": "cpu"})
    test = Pan23Task().load(args.data, "test")
    problems = test.problems[: args.problems]
    assert test.truth is not None
    labels = np.array([test.truth[p.id].same for p in problems])
    heads = len(system._heads["weights"])
    print(f"reference heads: {len(system._heads['reference'])} of {heads}; {len(problems)} test problems")

    start = time.perf_counter()
    sampled = system.raw_scores(problems)
    sampled_s = time.perf_counter() - start
    system._heads["reference"] = np.arange(heads)  # every training head: the paper's rule
    start = time.perf_counter()
    full = system.raw_scores(problems)
    full_s = time.perf_counter() - start

    print(f"time: sample {sampled_s:.0f} s, every head {full_s:.0f} s")
    print(f"Pearson {pearsonr(sampled, full)[0]:.4f}, Spearman {spearmanr(sampled, full)[0]:.4f}")
    print(f"mean |d_sample - d_all| {np.abs(sampled - full).mean():.5f}; sd of d_all {full.std():.5f}")
    print(f"AUC: sample {roc_auc_score(labels, sampled):.4f}, every head {roc_auc_score(labels, full):.4f} "
          f"({int(labels.sum())} same-author of {len(labels)})")  # fmt: skip


if __name__ == "__main__":
    main()
