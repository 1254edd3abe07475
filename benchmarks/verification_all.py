"""Every verification system on every verification set in ../shared/data, over seeds, in one table (issue 27, item 7).

Sets, under WORK/sets:
- pan13, essays, novels: PAN 2013 English and PAN 2014 English essays and novels on PAN's own train/test splits;
- pan15: PAN 2015 English as 5 text-disjoint folds of its 100 training problems (verification_pan.py's folds;
  the tarball has no official test set), scored on the pooled out-of-fold answers;
- cmcc, forum: CMCC cross-genre and forum submission-vs-comment pairs from `harness pairs`, one set per seed,
  author- and text-disjoint between splits (forum also thread-disjoint), as cross_discourse.py builds them.
Each (system, set, seed) is one `harness run` in its own process, timed, with its peak memory, kept under WORK/runs;
a run that finished, failed or ran past --timeout is not started again, so the command resumes where it stopped.
WORK/summary.md then holds the main score (AUC x c@1 on PAN 2013-2015, overall on the pan23 sets), AUC and c@1 per
system and set (mean ± sd over seeds, n where fewer than asked), the published anchors, and AUC per discourse-type
pair of the CMCC sets.

    python benchmarks/verification_all.py --out WORK [--systems ...] [--sets ...] [--seeds 0 1 2] [--timeout S]
    python benchmarks/verification_all.py --out WORK --collect      # the tables from the runs that exist
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tarfile
from pathlib import Path
from statistics import mean, stdev
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from cross_discourse import build_set, harness, timed  # noqa: E402  (this folder is the script's path entry)
from verification_pan import (  # noqa: E402
    ANCHORS,
    TARBALLS,
    default_data_dir,
    param_options,
    parse_params,
    pooled_scores,
    prepare,
)

from harness.data_location import DataLocation  # noqa: E402
from harness.runner import run_folder  # noqa: E402

# rows: a label, its system and parameters (defaults but where named); fastest first, so an interrupted benchmark
# has every cheap row. pair_features_200 is pair_features as stacked's member (200 trees), so "stacked >= its best
# member" can be read on the same problems.
ROWS: dict[str, tuple[str, dict[str, Any]]] = {
    name: (name, {})
    for name in (
        "length_ratio",
        "cngdist",
        "tfidf",
        "typed_ngrams",
        "pos_ngrams",
        "compressor",
        "wccn",
        "ngram_style",
        "pair_features",
    )
}
ROWS["pair_features_200"] = ("pair_features", {"trees": 200})
HEAVY = ("impostors", "encoder_wccn", "unmasking", "siamese_bilstm", "stacked", "char_lm")
ROWS |= {name: (name, {}) for name in HEAVY}
SETS = ("pan13", "essays", "novels", "pan15", "cmcc", "forum")
LABELS = {"pan13": "PAN13", "essays": "PAN14 essays", "novels": "PAN14 novels", "pan15": "PAN15 5-fold (pooled)",
          "cmcc": "CMCC cross-genre", "forum": "forum sub. vs comm."}  # fmt: skip
PAIR_SETS = ("cmcc", "forum")  # built per seed by `harness pairs`, scored by the pan23 task
# Departures on the forum set's 5,000 training authors, for CPU time (benchmarks/README.md, "char_lm"): char_lm
# compares each text with a seeded sample of 500 authors' heads, not all 5,000 (d correlates 0.999 with all
# heads'); siamese_bilstm reads the 32-chunk features encoder_wccn cached (posts are one chunk but for a few).
FORUM_PARAMS: dict[str, dict[str, Any]] = {
    "char_lm": {"preset.max_reference_heads": 500},
    "siamese_bilstm": {"encoder.max_chunks_per_text": 32},
}
FOLDS = 5


def task_of(name: str) -> str:
    return "pan23" if name in PAIR_SETS else "pan-classic"


def main_measure(name: str) -> str:
    return "overall" if name in PAIR_SETS else "auc_x_c_at_1"


def set_folders(name: str, seed: int, args: argparse.Namespace) -> list[Path]:
    """The data folders of one set for one seed: one, or one per PAN15 fold (the same for every seed).

    With --collect nothing is built: a set not there yet has no folders.
    """
    sets = args.out / "sets"
    if args.collect:
        found = sorted(sets.glob(f"{name}-fold-*")) if name == "pan15" else [sets / name]
        return [sets / f"{name}-seed{seed}"] if name in PAIR_SETS else [f for f in found if f.is_dir()]
    if name in PAIR_SETS:
        return [build_set(name, seed, args)]
    raw = args.out / "raw"
    if not (raw / "done").is_file():
        for tarball in TARBALLS:
            with tarfile.open(args.data_dir / tarball) as archive:
                archive.extractall(raw / tarball.split(".")[0], filter="data")
        (raw / "done").touch()
    existing = sorted(sets.glob(f"{name}-fold-*")) if name == "pan15" else [sets / name]
    if existing and all((folder / "test").exists() for folder in existing):
        return existing
    return prepare(name, raw, sets, FOLDS, 0)


def run_one(row: str, data: Path, seed: int, args: argparse.Namespace) -> dict[str, Any] | None:
    """One run's result.json with its time and memory, or None (not run yet, failed, or past --timeout)."""
    task = task_of(data.name.split("-")[0])
    system, own = ROWS[row]
    forum = FORUM_PARAMS.get(system, {}) if data.name.startswith("forum") else {}
    params: dict[str, Any] = {**forum, **own, **args.params.get(row, {})}
    folder = run_folder(args.out / "runs", task, system, seed, params, data=DataLocation(data))
    record = args.out / "bench" / f"{task}-{data.name}-{folder.parent.name}-seed{seed}.json"  # beside, not in, runs/
    if not record.is_file() and not args.collect:
        command = harness("run", "--system", system, "--task", task, "--data", data, "--seed", seed,
                          "--out", args.out / "runs")  # fmt: skip
        command += param_options(params)
        record.parent.mkdir(parents=True, exist_ok=True)
        figures = timed(command, record.with_suffix(".log"), args.timeout)
        record.write_text(json.dumps(figures), encoding="utf-8")
        print(f"  {data.name} {system} seed {seed}: {figures}", file=sys.stderr, flush=True)
    if not (record.is_file() and (folder / "result.json").is_file()):
        return None
    result = json.loads((folder / "result.json").read_text(encoding="utf-8"))
    return {**result, "bench": json.loads(record.read_text(encoding="utf-8")), "_run_dir": str(folder)}


def measure(name: str, row: str, seed: int, args: argparse.Namespace) -> dict[str, Any] | None:
    """One seed's figures on one set: the run's scores, or PAN15's pooled over its folds (None until all ran)."""
    folders = set_folders(name, seed, args)
    runs = [run_one(row, folder, seed, args) for folder in folders]
    if not runs or any(run is None for run in runs):
        return None
    scores = runs[0]["scores"] if len(runs) == 1 else pooled_scores(runs, folders)
    commits = {run["environment"]["git"]["commit"][:7] for run in runs}
    return {
        "scores": scores,
        "commit": ",".join(sorted(commits)),
        "wall_s": sum(run["bench"]["wall_s"] for run in runs),
        "peak_mb": max(run["bench"]["peak_mb"] for run in runs),
    }


def cell(values: list[float], asked: int) -> str:
    values = [v for v in values if not math.isnan(v)]
    if not values:
        return ""
    text = f"{mean(values):.3f}" + (f" ± {stdev(values):.3f}" if len(values) > 1 else "")
    return text + (f" (n={len(values)})" if len(values) < asked else "")


def tables(results: dict[str, dict[str, list[dict[str, Any]]]], asked: int) -> list[str]:
    """Markdown: main score, AUC and c@1 per system and set with the anchors; AUC per CMCC discourse-type pair."""
    names = [name for name in SETS if name in results]
    systems = list(dict.fromkeys(system for name in names for system in results[name]))
    lines: list[str] = []
    for title, measure_of in (
        ("Main score (AUC x c@1 on PAN 2013-2015, overall on the pan23 sets)", main_measure),
        ("AUC", lambda name: "auc"),
        ("c@1", lambda name: "c_at_1"),
    ):
        lines += [f"**{title}**, mean ± sd over seeds:", ""]
        lines += ["| system | " + " | ".join(LABELS[n] for n in names) + " |", "|---|" + "---:|" * len(names)]
        for system in systems:
            cells = [cell([r["scores"][measure_of(n)] for r in results[n].get(system, [])], asked) for n in names]
            lines.append(f"| {system} | " + " | ".join(cells) + " |")
        column = {"auc": 1, "c_at_1": 2, "auc_x_c_at_1": 3}[measure_of("pan13")]
        for index, name in enumerate(names):
            for anchor in ANCHORS.get(name, []):
                if anchor[column]:
                    cells = [anchor[column] if i == index else "" for i in range(len(names))]
                    lines.append(f"| *published ({LABELS[name]}): {anchor[0]}* | " + " | ".join(cells) + " |")
        lines.append("")
    for name in (n for n in PAIR_SETS if n in results):
        pairs = sorted({key.split("/")[0] for runs in results[name].values() for r in runs for key in r["scores"]
                        if key.endswith("/problems")})  # fmt: skip
        if len(pairs) < 2:
            continue
        lines += [f"**{LABELS[name]}: AUC per discourse-type pair**, mean over seeds:", ""]
        lines += ["| system | " + " | ".join(pairs) + " |", "|---|" + "---:|" * len(pairs)]
        for system, runs in results[name].items():
            means = [[r["scores"][f"{p}/auc"] for r in runs if f"{p}/auc" in r["scores"]] for p in pairs]
            lines.append(f"| {system} | " + " | ".join(f"{mean(m):.2f}" if m else "" for m in means) + " |")
        lines.append("")
    return lines


def provenance(results: dict[str, dict[str, list[dict[str, Any]]]]) -> list[str]:
    """Per set and system: the commits the runs were made on, and their mean wall time and peak memory."""
    lines = ["| set | system | seeds run | commit | wall s (mean) | peak MB |", "|---|---|---:|---|---:|---:|"]
    for name, by_system in results.items():
        for system, runs in by_system.items():
            if runs:
                commits = ",".join(sorted({r["commit"] for r in runs}))
                wall = mean(r["wall_s"] for r in runs)
                peak = max(r["peak_mb"] for r in runs)
                lines.append(f"| {LABELS[name]} | {system} | {len(runs)} | {commits} | {wall:.0f} | {peak:.0f} |")
    return [*lines, ""]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="sets, runs and summary.md go here")
    parser.add_argument("--data-dir", type=Path, default=default_data_dir())
    parser.add_argument("--systems", nargs="+", default=list(ROWS), choices=ROWS, help="rows (systems) to run")
    parser.add_argument("--sets", nargs="+", default=list(SETS), choices=SETS)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds one run may take")
    parser.add_argument("--collect", action="store_true", help="summarise the runs under --out; run nothing")
    parser.add_argument("--param", action="append", default=[], help="ROW:KEY=VALUE, as `harness run --param`")
    parser.add_argument("--forum-pairs", type=int, default=10_000)
    parser.add_argument("--cmcc-pairs", type=int, default=400)
    parser.add_argument("--cmcc-text-uses", type=int, default=4)
    args = parser.parse_args()
    args.out = args.out.resolve()
    args.params = parse_params(args.param)
    results: dict[str, dict[str, list[dict[str, Any]]]] = {name: {} for name in args.sets}
    for row in args.systems:  # rows outermost: every set and seed of a fast system before a slow one
        for name in args.sets:
            measured = [measure(name, row, seed, args) for seed in args.seeds]
            results[name][row] = [m for m in measured if m is not None]
        lines = tables(results, len(args.seeds)) + provenance(results)
        (args.out / "summary.md").write_text("\n".join(lines), encoding="utf-8")  # rewritten after each system
    print("\n".join(lines))


if __name__ == "__main__":
    main()
