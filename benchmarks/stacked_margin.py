"""stacked's step-aside margin, measured (issue 27, item 5): keep the ensemble only where it leads its best lone
member out of fold by more than one standard error of that lead ("one_se"), against any lead ("none", the default).

Reads the default stacked runs that `verification_all.py` keeps under WORK. Each run's info holds the ensemble's
nested out-of-fold main score, each member's, and the lead's paired-bootstrap standard error, so the decision of
either margin is known from the run. The margin enters only that decision: where both margins decide alike, the
same fit gives the same answers, and the default run's stand for both. Where they differ, the run with
`--param step_aside_margin=one_se` is made (or read, if it exists) and its answers used. Per set, the main score
(AUC x c@1 on PAN 2013-2015, pooled over PAN15's folds; overall on the pan23 sets) of both, mean ± sd over seeds,
beside the member rows found under WORK (every cell a member row lacks is left empty).

    python benchmarks/verification_all.py --out WORK --systems stacked wccn --sets pan15 --seeds 0 1 2
    python benchmarks/stacked_margin.py --out WORK --sets pan15 --seeds 0 1 2 [--members wccn tfidf]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from statistics import mean, stdev
from typing import Any

import verification_all as va  # this folder is the script's path entry; it puts the repository on the path

from systems.stacked import step_aside_margin_of  # noqa: E402  (numpy only: no torch)

MARGIN = {"step_aside_margin": "one_se"}


def run_info(result: dict[str, Any]) -> dict[str, Any]:
    config = Path(result["_run_dir"], "checkpoint", "config.json")
    return json.loads(config.read_text(encoding="utf-8"))["state"]["info"]


def decision(info: dict[str, Any]) -> dict[str, Any]:
    """What each margin decides on one fit: the lead over the best member, its standard error, who answers."""
    figures = info["out_of_fold_main"]
    if "difference_se" not in figures:
        raise SystemExit(f"a stacked run made before its info held the lead's standard error: rerun it ({figures})")
    best = max(figures["members"], key=lambda name: figures["members"][name])  # first of equal values, as stacked
    lead = figures["ensemble"] - figures["members"][best]
    se = figures["difference_se"]
    keeps = {rule: best if lead <= step_aside_margin_of(rule, se) else None for rule in ("none", "one_se")}
    return {"best": best, "lead": lead, "se": se, **keeps}


def reading(args: argparse.Namespace, params: dict[str, Any], *, make: bool = False) -> argparse.Namespace:
    """`args` for `va.run_one` with these row parameters; the run is made only with `make`, else just read."""
    return argparse.Namespace(**{**vars(args), "params": params, "collect": not make})


def scores_of(name: str, folders: list[Path], runs: list[dict[str, Any]]) -> dict[str, float]:
    return runs[0]["scores"] if len(runs) == 1 else va.pooled_scores(runs, folders)


def one_seed(name: str, seed: int, args: argparse.Namespace) -> dict[str, Any] | None:
    """Both margins' main score on one set and seed, and each fold's decision; None where a default run is missing."""
    folders = va.set_folders(name, seed, args)
    default = [va.run_one("stacked", folder, seed, reading(args, {})) for folder in folders]  # read, never made
    if not folders or any(run is None for run in default):
        return None
    decisions = [decision(run_info(run)) for run in default]  # type: ignore[arg-type]
    margin_runs = []
    for folder, run, choice in zip(folders, default, decisions, strict=True):
        if choice["none"] == choice["one_se"]:
            margin_runs.append(run)
            continue
        margin_run = va.run_one("stacked", folder, seed, reading(args, {"stacked": MARGIN}, make=True))
        if margin_run is None:
            return None
        if run_info(margin_run)["stepped_aside_to"] != choice["one_se"]:
            raise SystemExit(f"{folder} seed {seed}: the one_se run did not decide as the default run's info says")
        margin_runs.append(margin_run)
    measure = va.main_measure(name)
    members = {}
    for member in args.members:
        runs = [va.run_one(member, folder, seed, reading(args, {})) for folder in folders]
        if all(run is not None for run in runs):
            members[member] = scores_of(name, folders, runs)[measure]  # type: ignore[arg-type]
    return {
        "none": scores_of(name, folders, default)[measure],  # type: ignore[arg-type]
        "one_se": scores_of(name, folders, margin_runs)[measure],
        "members": members,
        "decisions": decisions,
    }


def cell(values: list[float]) -> str:
    if not values:
        return ""
    return f"{mean(values):.3f}" + (f" ± {stdev(values):.3f}" if len(values) > 1 else "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="verification_all.py's WORK folder")
    parser.add_argument("--data-dir", type=Path, default=va.default_data_dir())
    parser.add_argument("--sets", nargs="+", default=list(va.SETS), choices=va.SETS)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--members", nargs="*", default=["wccn"], choices=va.ROWS, help="member rows to show beside")
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds one one_se run may take")
    parser.add_argument("--forum-pairs", type=int, default=10_000)
    parser.add_argument("--cmcc-pairs", type=int, default=400)
    parser.add_argument("--cmcc-text-uses", type=int, default=4)
    args = parser.parse_args()
    args.out, args.collect = args.out.resolve(), True  # set_folders finds the sets verification_all.py built

    lines = ["| set | seed | fold | best member out of fold | lead | its SE | none keeps | one_se keeps |",
             "|---|---:|---:|---|---:|---:|---|---|"]  # fmt: skip
    head = "| set | seeds | stacked, margin none | stacked, margin one_se |"
    table = [head + "".join(f" {m} |" for m in args.members), "|---|---:|---:|---:|" + "---:|" * len(args.members)]
    for name in args.sets:
        measured = {seed: one_seed(name, seed, args) for seed in args.seeds}
        done = {seed: m for seed, m in measured.items() if m is not None}
        for seed, m in done.items():
            for fold, d in enumerate(m["decisions"], start=1):
                keeps = ["ensemble" if d[rule] is None else f"{d[rule]} alone" for rule in ("none", "one_se")]
                lines.append(f"| {name} | {seed} | {fold} | {d['best']} | {d['lead']:+.4f} | {d['se']:.4f} | "
                             + " | ".join(keeps) + " |")  # fmt: skip
        rows = [cell([m[rule] for m in done.values()]) for rule in ("none", "one_se")]
        rows += [cell([m["members"][k] for m in done.values() if k in m["members"]]) for k in args.members]
        table.append(f"| {va.LABELS[name]} | {len(done)} |" + "".join(f" {r} |" for r in rows))
        for seed, m in done.items():
            print(f"{name} seed {seed}: none {m['none']:.4f}, one_se {m['one_se']:.4f}, "
                  + ", ".join(f"{k} {v:.4f}" for k, v in m["members"].items()))  # fmt: skip
    print("\n".join(["", *lines, "", *table]))


if __name__ == "__main__":
    main()
