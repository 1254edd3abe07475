"""Did sharing threads between train and test raise a pair set's figures? An audit of sets built before decffb0.

Until decffb0 `harness pairs` kept authors and texts apart between the splits, and threads only within a pair, so
a forum thread could give texts to both splits. This splits each run's test problems into those with a text from a
thread that also gave the training split a text, and the others, and gives each system's AUC on both parts (mean ±
sd over seeds). If the sharing helped, the first part would score higher. The parts differ in more than the
sharing (the shared threads are the busy ones), so this is a check for a leak, not a measure of its size; the
measure is the rerun on thread-disjoint sets (benchmarks/README.md, "The forum sets made thread-disjoint").

    python benchmarks/thread_sharing.py --sets WORK/sets --runs WORK/runs [--set-prefix forum] [--seeds 0 1 2] \
        [--merge-params]

WORK as `verification_all.py --out` makes it: sets/<prefix>-seedN/ (with pair_origins.jsonl) and
runs/pan23/<prefix>-seedN/<system>/seed-N/answers.jsonl.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core.files import read_jsonl  # noqa: E402
from harness.metrics.verification import auc  # noqa: E402


def touching_training_threads(set_dir: Path) -> dict[str, bool]:
    """Per test problem id: whether one of its texts comes from a group (thread) that gave the training split a text."""
    rows = [row for _, row in read_jsonl(set_dir / "pair_origins.jsonl")]
    training = {group for row in rows if row["split"] == "train" for groups in row["groups"] for group in groups}
    return {
        row["id"]: any(group in training for groups in row["groups"] for group in groups)
        for row in rows
        if row["split"] == "test"
    }


def split_aucs(set_dir: Path, answers: Path) -> dict[bool, tuple[int, float]]:
    """(problems, AUC) of the test problems touching a training thread (True) and of the others (False)."""
    touching = touching_training_threads(set_dir)
    truth = {row["id"]: row["same"] for _, row in read_jsonl(set_dir / "test" / "truth.jsonl")}
    values = {row["id"]: row["value"] for _, row in read_jsonl(answers)}
    out = {}
    for flag in (True, False):
        ids = [i for i in sorted(touching) if touching[i] is flag]
        out[flag] = (len(ids), auc([truth[i] for i in ids], [values[i] for i in ids]) if ids else float("nan"))
    return out


def mean_sd(values: list[float]) -> str:
    if any(value != value for value in values):  # NaN: no problem in that part (a thread-disjoint set)
        return "n/a"
    sd = statistics.stdev(values) if len(values) > 1 else 0.0
    return f"{statistics.fmean(values):.3f} ± {sd:.3f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", type=Path, required=True)
    parser.add_argument("--runs", type=Path, required=True)
    parser.add_argument("--set-prefix", default="forum")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument(
        "--merge-params",
        action="store_true",
        help="one row per system name (runs whose parameters name a file per seed)",
    )
    args = parser.parse_args()
    found: dict[str, list[dict[bool, tuple[int, float]]]] = {}
    for seed in args.seeds:
        name = f"{args.set_prefix}-seed{seed}"
        for answers in sorted((args.runs / "pan23" / name).glob(f"*/seed-{seed}/answers.jsonl")):
            system = answers.parent.parent.name.split("@")[0] if args.merge_params else answers.parent.parent.name
            found.setdefault(system, []).append(split_aucs(args.sets / name, answers))
    if not found:
        raise SystemExit(f"no runs under {args.runs / 'pan23'} for {args.set_prefix}-seed{args.seeds}")
    print(
        "| system | seeds | test problems touching a training thread (seed mean) | their AUC | the others | their AUC |"
    )
    print("|---|---:|---:|---:|---:|---:|")
    for system, per_seed in sorted(found.items()):
        sizes = {flag: statistics.fmean(seed[flag][0] for seed in per_seed) for flag in (True, False)}
        aucs = {flag: mean_sd([seed[flag][1] for seed in per_seed]) for flag in (True, False)}
        print(
            f"| {system} | {len(per_seed)} | {sizes[True]:,.0f} | {aucs[True]} | {sizes[False]:,.0f} | {aucs[False]} |"
        )


if __name__ == "__main__":
    main()
