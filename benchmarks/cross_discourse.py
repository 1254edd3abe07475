"""Every verification system on real cross-discourse sets built by `harness pairs` (issue 16).

Sets, one per seed (the seed builds the set and seeds the system, so the spread covers both):
- forum: the forum posts, submission vs comment (every pair cross-kind), `--forum-pairs` in all, half test;
- cmcc: CMCC's 14 authors across 6 discourse types (every pair cross-genre), `--cmcc-pairs`, texts used up to
  `--cmcc-text-uses` times within a split.
PAN14 essays + novels cannot give a cross-genre set: no author wrote both (the builder refuses, and says why).

Each run is `harness run --task pan23` in its own process, timed, with its peak resident memory (wait4);
runs and sets that exist under --out are kept. `--scale` instead builds 100,000 forum pairs and runs cngdist on
them, with time and peak memory of both steps.

    python benchmarks/cross_discourse.py [--out runs/bench-cross-discourse] [--seeds 0 1 2] [--systems ...]
        [--param SYSTEM:KEY=VALUE ...]
    python benchmarks/cross_discourse.py --scale [--out runs/bench-pairs-scale]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path
from statistics import mean, stdev
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from verification_pan import param_options, parse_params  # noqa: E402  (this folder is the script's path entry)

from harness.data_location import DataLocation  # noqa: E402
from harness.runner import run_folder  # noqa: E402

SYSTEMS = ("length_ratio", "cngdist", "tfidf", "wccn", "encoder_wccn", "compressor", "pair_features", "impostors",
           "unmasking", "stacked", "char_lm", "siamese_bilstm")  # fmt: skip
CMCC_PATTERN = r"(?P<discourse_type>[^/]+)/S(?P<author>\d+)[A-Z]\d(?P<topic>[A-Z])\d\.txt"
MEASURES = ("overall", "auc", "c_at_1", "f_05_u", "f1", "brier")


def timed(command: list[str], log: Path, timeout: float | None = None) -> dict[str, float]:
    """Run `command` with its output in `log`; its wall time and peak resident memory (MB), or a timeout."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(REPO_ROOT)}
    start = time.perf_counter()
    with log.open("w", encoding="utf-8") as handle:
        child = subprocess.Popen(command, stdout=handle, stderr=subprocess.STDOUT, env=env, cwd=REPO_ROOT)
        deadline = None if timeout is None else start + timeout
        while True:
            pid, status, usage = os.wait4(child.pid, os.WNOHANG)
            if pid:
                break
            if deadline is not None and time.perf_counter() > deadline:
                child.kill()
                os.wait4(child.pid, 0)
                return {"timed_out": 1.0, "wall_s": round(time.perf_counter() - start, 1)}
            time.sleep(0.5)
    if os.waitstatus_to_exitcode(status) != 0:  # a refusal is a result too: its one-line error is recorded
        lines = log.read_text(encoding="utf-8", errors="replace").strip().splitlines() or ["no output"]
        return {"failed": lines[-1][:300], "wall_s": round(time.perf_counter() - start, 1)}
    return {"wall_s": round(time.perf_counter() - start, 1), "peak_mb": round(usage.ru_maxrss / 1024, 1)}


def harness(*args: object) -> list[str]:
    return [sys.executable, "-m", "harness.cli", *map(str, args)]


def build_set(name: str, seed: int, args: argparse.Namespace) -> Path:
    folder = args.out / "sets" / f"{name}-seed{seed}"
    if (folder / "manifest.json").is_file():
        return folder
    if name == "forum":
        command = harness("pairs", "--from", "forum", args.data_dir / "forum-posts", folder, "--seed", seed,
                          "--pairs", args.forum_pairs)  # fmt: skip
    else:
        cmcc = args.out / "sets" / "cmcc-source"
        if not (cmcc / "cmcc").is_dir():
            cmcc.mkdir(parents=True, exist_ok=True)
            subprocess.run(["tar", "xzf", args.data_dir / "cmcc-cross-genre.tar.gz", "-C", cmcc], check=True)
        command = harness("pairs", "--from", "folders", cmcc / "cmcc", folder, "--seed", seed, "--pairs",
                          args.cmcc_pairs, "--text-uses", args.cmcc_text_uses, "--encoding", "cp1252",
                          "--pattern", CMCC_PATTERN)  # fmt: skip
    folder.parent.mkdir(parents=True, exist_ok=True)
    figures = timed(command, folder.parent / f"build-{name}-seed{seed}.log")
    if "failed" in figures:
        raise SystemExit(f"building {folder.name} failed: {figures['failed']}")
    print(f"  built {folder.name}: {figures}", file=sys.stderr, flush=True)
    return folder


def run_system(system: str, data: Path, seed: int, args: argparse.Namespace) -> dict | None:
    """The run's result.json with its time and memory, or None when it ran past --timeout."""
    runs = args.out / "runs"
    params: dict[str, Any] = args.params.get(system, {})
    result = run_folder(runs, "pan23", system, seed, params, data=DataLocation(data)) / "result.json"
    record = runs / f"{data.name}-{result.parent.parent.name}-seed{seed}.bench.json"  # the name has params' hash
    if result.is_file() and record.is_file():
        return {**json.loads(result.read_text(encoding="utf-8")), "bench": json.loads(record.read_text())}
    earlier = json.loads(record.read_text()) if record.is_file() else {}
    if earlier.get("timed_out") or earlier.get("failed") or args.collect:
        return None  # ran past --timeout or failed before, or only collecting what exists
    runs.mkdir(parents=True, exist_ok=True)
    command = harness("run", "--system", system, "--task", "pan23", "--data", data, "--seed", seed, "--out", runs)
    command += param_options(params)
    figures = timed(command, record.with_suffix("").with_suffix(".log"), args.timeout)
    record.write_text(json.dumps(figures), encoding="utf-8")
    print(f"  {data.name} {system}: {figures}", file=sys.stderr, flush=True)
    if figures.get("timed_out") or figures.get("failed"):
        return None
    return {**json.loads(result.read_text(encoding="utf-8")), "bench": figures}


def mean_sd(values: list[float]) -> str:
    values = [v for v in values if not math.isnan(v)]
    if not values:
        return "nan"
    return f"{mean(values):.3f}" + (f" ± {stdev(values):.3f}" if len(values) > 1 else "")


def summary(name: str, results: dict[str, list[dict]], params: dict[str, dict[str, Any]]) -> list[str]:
    """A table of the measures (mean ± sd over seeds) and one of `overall` per discourse-type pair."""
    lines = [f"### {name}", "", "| system | seeds | " + " | ".join(MEASURES) + " | fit+answer s | peak MB |"]
    lines.append("|---|---:|" + "---:|" * (len(MEASURES) + 2))
    pair_types: dict[str, int] = {}
    for runs in results.values():
        for run in runs:
            for key, value in run["scores"].items():
                if key.endswith("/problems"):
                    pair_types[key.split("/")[0]] = int(value)
    for system, runs in results.items():
        label = system + "".join(f" {k}={json.dumps(v)}" for k, v in params.get(system, {}).items())
        if not runs:
            lines.append(f"| {label} | 0 | " + " | ".join("-" for _ in MEASURES) + " | not run or past --timeout | |")
            continue
        cells = [mean_sd([run["scores"][m] for run in runs]) for m in MEASURES]
        wall = mean(run["bench"]["wall_s"] for run in runs)
        peak = max(run["bench"]["peak_mb"] for run in runs)
        lines.append(f"| {label} | {len(runs)} | " + " | ".join(cells) + f" | {wall:.0f} | {peak:.0f} |")
    if len(pair_types) > 1:
        lines += ["", "`overall` per discourse-type pair (test problems of seed 0 in brackets):", ""]
        types = sorted(pair_types)
        lines.append("| system | " + " | ".join(f"{t} ({pair_types[t]})" for t in types) + " |")
        lines.append("|---|" + "---:|" * len(types))
        for system, runs in results.items():
            cells = [mean_sd([run["scores"].get(f"{t}/overall", math.nan) for run in runs]) for t in types]
            lines.append(f"| {system} | " + " | ".join(cells) + " |")
    return [*lines, ""]


def scale(args: argparse.Namespace) -> None:
    folder = args.out / "forum-100k"
    args.out.mkdir(parents=True, exist_ok=True)
    build = timed(harness("pairs", "--from", "forum", args.data_dir / "forum-posts", folder, "--pairs", 100_000,
                          "--text-uses", 12, "--overwrite"), args.out / "build.log")  # fmt: skip
    print(f"build 100,000 pairs: {build}", flush=True)
    run = timed(harness("run", "--system", "cngdist", "--task", "pan23", "--data", folder, "--out", args.out / "runs",
                        "--overwrite"), args.out / "cngdist.log")  # fmt: skip
    print(f"cngdist on 100,000 pairs: {run}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=REPO_ROOT.parent / "shared" / "data")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--systems", nargs="+", default=list(SYSTEMS))
    parser.add_argument("--sets", nargs="+", default=["forum", "cmcc"], choices=["forum", "cmcc"])
    parser.add_argument("--forum-pairs", type=int, default=10_000)
    parser.add_argument("--cmcc-pairs", type=int, default=400)
    parser.add_argument("--cmcc-text-uses", type=int, default=4)
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds one run may take")
    parser.add_argument("--scale", action="store_true", help="the 100,000-pair build and cngdist run only")
    parser.add_argument("--collect", action="store_true", help="summarise the runs under --out; run nothing")
    parser.add_argument(
        "--param", action="append", default=[], help="SYSTEM:KEY=VALUE, a system parameter as `harness run --param`"
    )
    args = parser.parse_args()
    args.params = parse_params(args.param)
    args.out = args.out or REPO_ROOT / "runs" / ("bench-pairs-scale" if args.scale else "bench-cross-discourse")
    args.out = args.out.resolve()
    if args.scale:
        scale(args)
        return
    sets = {name: {seed: build_set(name, seed, args) for seed in args.seeds} for name in args.sets}
    results: dict[str, dict[str, list[dict]]] = {name: {} for name in args.sets}
    for system in args.systems:  # systems outermost: every set and seed of a fast system before a slow one
        for name in args.sets:
            runs = [run_system(system, sets[name][seed], seed, args) for seed in args.seeds]
            results[name][system] = [run for run in runs if run is not None]
        lines = ["## Cross-discourse verification (harness pairs sets)", ""]
        for name in args.sets:
            lines += summary(f"{name} ({', '.join(s.name for s in sets[name].values())})", results[name], args.params)
        (args.out / "summary.md").write_text("\n".join(lines), encoding="utf-8")  # rewritten after each system
    print("\n".join(lines))


if __name__ == "__main__":
    main()
