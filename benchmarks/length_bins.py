"""AUC by text length: how much of a verifier's pooled AUC on a pair set is set by its short texts (issue 27).

A forum submission-vs-comment pair is often a submission against a one-line comment: on the forum sets about half of
the pairs have a shorter text under 100 characters. This reads runs that already exist (their answers.jsonl, the
values PAN's AUC is computed on) and the sets they ran on, puts each pair in a bin by the length of its shorter text
(characters, as the set stores it), and gives each system's AUC per bin, mean ± sd over the seeds found, beside the
bin's share of the pairs. Nothing is run or tuned here; it says where the signal is.

    python benchmarks/length_bins.py --sets WORK/sets --runs WORK/runs [OTHER_RUNS ...] [--name forum]

Runs are found as RUNS/pan23/NAME-seedN/SYSTEM[@params]/seed-N/answers.jsonl; each SYSTEM of each RUNS is a row.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from statistics import mean, stdev

from sklearn.metrics import roc_auc_score

BINS = ((0, 100), (100, 300), (300, 1000), (1000, None))  # characters of the shorter text


def bin_label(low: int, high: int | None) -> str:
    return f"{low}-{high}" if high is not None else f">={low}"


def set_pairs(folder: Path) -> dict[str, tuple[int, bool]]:
    """Each test pair's id: (its shorter text's length, whether it is same-author)."""
    truth = {}
    for line in (folder / "test" / "truth.jsonl").read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        truth[record["id"]] = bool(record["same"])
    pairs = {}
    for line in (folder / "test" / "pairs.jsonl").read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        pairs[record["id"]] = (min(len(text) for text in record["pair"]), truth[record["id"]])
    return pairs


def run_aucs(answers: Path, pairs: dict[str, tuple[int, bool]]) -> dict[str, float]:
    """AUC over all pairs and per length bin (a bin with one class only has none)."""
    values = {}
    for line in answers.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        values[record["id"]] = float(record["value"])
    if set(values) != set(pairs):
        raise SystemExit(f"{answers}: answers for {len(values)} problems, the set has {len(pairs)}")
    rows = [(pairs[pair_id][0], pairs[pair_id][1], value) for pair_id, value in values.items()]
    aucs = {"all": roc_auc_score([same for _, same, _ in rows], [value for _, _, value in rows])}
    for low, high in BINS:
        inside = [(same, value) for length, same, value in rows if length >= low and (high is None or length < high)]
        if len({same for same, _ in inside}) == 2:
            aucs[bin_label(low, high)] = roc_auc_score([same for same, _ in inside], [value for _, value in inside])
    return aucs


def shares(pairs: dict[str, tuple[int, bool]]) -> dict[str, float]:
    lengths = [length for length, _ in pairs.values()]
    return {bin_label(low, high): sum(1 for n in lengths if n >= low and (high is None or n < high)) / len(lengths)
            for low, high in BINS}  # fmt: skip


def cell(values: list[float]) -> str:
    if not values:
        return ""
    return f"{mean(values):.3f}" + (f" ± {stdev(values):.3f}" if len(values) > 1 else "") + f" ({len(values)})"


def main(argv: list[str] | None = None) -> str:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", type=Path, required=True, help="the folder holding NAME-seedN sets")
    parser.add_argument("--runs", type=Path, nargs="+", required=True, help="folders of `harness run --out`")
    parser.add_argument("--name", default="forum", help="the sets' name before -seedN (default forum)")
    args = parser.parse_args(argv)
    by_system: dict[str, list[dict[str, float]]] = {}
    share_rows = []
    for folder in sorted(args.sets.glob(f"{args.name}-seed*")):
        pairs = set_pairs(folder)
        share_rows.append(shares(pairs))
        for runs in args.runs:
            for answers in sorted((runs / "pan23" / folder.name).glob("*/seed-*/answers.jsonl")):
                # a system's parameters (its @hash) differ by seed where they name a per-seed model: one row each
                label = f"{answers.parents[1].name.partition('@')[0]} ({runs})"
                by_system.setdefault(label, []).append(run_aucs(answers, pairs))
    if not by_system:
        raise SystemExit(f"no runs on {args.name}-seedN sets under {', '.join(map(str, args.runs))}")
    columns = [bin_label(low, high) for low, high in BINS]
    lines = ["| run (folder) | all | " + " | ".join(f"shorter text {c} chars" for c in columns) + " |"]
    lines.append("|---|" + "---:|" * (len(columns) + 1))
    lines.append("| *share of the test pairs* | 1 | " + " | ".join(
        f"{mean(row[c] for row in share_rows):.2f}" for c in columns) + " |")  # fmt: skip
    for label, runs in by_system.items():
        cells = [cell([run[c] for run in runs if c in run]) for c in ["all", *columns]]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    table = "\n".join(lines) + "\n\nAUC, mean ± sd over seeds (how many seeds in brackets).\n"
    print(table)
    return table


if __name__ == "__main__":
    main()
