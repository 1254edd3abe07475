"""Band-fold pre-training one encoder at a time against several side by side (`harness pretrain-style --jobs N`).

For each N of --jobs: `harness pretrain-style POSTS OUT/jobs-N --encoder ngram --exclude-test-of SET --band-folds K
[--band-repeats R] [--band-view V ...] --jobs N` in a process of its own, alone on the machine, with the machine's
default threads (--jobs 1: torch's and BLAS's own; N > 1: each worker a share). Reported per N: wall time, the peak
of the resident memory summed over the command's processes (sampled every 0.2 s), and, against the first N, the
largest difference between the two folders' embeddings of the set's first 500 test texts, per encoder (the same
recipes; only summation order may differ). Folders that exist are not redone: delete one to time it again.

    python benchmarks/band_fold_jobs.py --posts ../shared/data/forum-posts --set WORK/sets/forum-seed0 \
        --out JOBS --band-folds 3 --jobs 1 2
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

try:
    import psutil  # memory of every process of the command, the workers included
except ImportError:
    sys.exit("benchmarks/band_fold_jobs.py needs psutil: pip install psutil")


def pretrain(args: argparse.Namespace, jobs: int, folder: Path) -> dict[str, float]:
    command = [sys.executable, "-m", "harness.cli", "pretrain-style", str(args.posts), str(folder)]
    command += ["--encoder", "ngram"]
    command += ["--seed", str(args.seed), "--exclude-test-of", str(args.set)]
    command += ["--band-folds", str(args.band_folds), "--jobs", str(jobs)]
    if args.band_repeats:
        command += ["--band-repeats", str(args.band_repeats)]
    for view in args.band_views:
        command += ["--band-view", view]
    # the steps and the style space's size: the command's defaults unless given
    for option in ("steps", "dimensions", "char_features", "word_features"):
        if getattr(args, option):
            command += ["--" + option.replace("_", "-"), str(getattr(args, option))]
    log = open(folder.with_suffix(".log"), "w", encoding="utf-8")  # noqa: SIM115 - closed below
    started, peak = time.perf_counter(), 0
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    watched = psutil.Process(process.pid)
    while process.poll() is None:
        try:
            tree = [watched, *watched.children(recursive=True)]
            peak = max(peak, sum(p.memory_info().rss for p in tree if p.is_running()))
        except psutil.Error:  # a process ended between listing and reading
            pass
        time.sleep(0.2)
    log.close()
    if process.returncode != 0:
        sys.exit(f"{' '.join(command)} failed ({process.returncode}); see {folder.with_suffix('.log')}")
    return {"jobs": jobs, "wall_s": round(time.perf_counter() - started, 1), "peak_gb": round(peak / 2**30, 2)}


def embeddings(folder: Path, texts: list[str]) -> dict[str, np.ndarray]:
    from systems.style_encoder.ngram import load_ngram_style
    from toolkit.band_folds import fold_folders, read_folds

    names = ["."] + [name for fold in read_folds(folder)["folds"] for name in fold_folders(fold)]
    return {name: load_ngram_style(folder / name)[0].embed(texts) for name in names}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--posts", type=Path, required=True)
    parser.add_argument("--set", type=Path, required=True, help="a `harness pairs --from forum` set of these posts")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--band-folds", type=int, default=3)
    parser.add_argument("--band-repeats", type=int)
    parser.add_argument("--band-view", dest="band_views", action="append", default=[])
    parser.add_argument("--steps", type=int)
    parser.add_argument("--dimensions", type=int)
    parser.add_argument("--char-features", type=int)
    parser.add_argument("--word-features", type=int)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--jobs", type=int, nargs="+", default=[1, 2])
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    texts = []
    with open(args.set / "test" / "pairs.jsonl", encoding="utf-8") as handle:
        for line in handle:
            texts.extend(json.loads(line)["pair"])
            if len(texts) >= 500:
                break
    rows, first = [], None
    for jobs in args.jobs:
        folder = args.out / f"jobs-{jobs}"
        timing_file = folder.with_suffix(".json")
        if not timing_file.is_file():
            timing_file.write_text(json.dumps(pretrain(args, jobs, folder)) + "\n", encoding="utf-8")
        row = json.loads(timing_file.read_text(encoding="utf-8"))
        embedded = embeddings(folder, texts)
        if first is None:
            first = embedded
        row["largest_difference"] = max(float(np.abs(embedded[name] - first[name]).max()) for name in first)
        rows.append(row)
    print("| jobs | wall s | speed-up | peak memory GB (all processes) | largest embedding difference vs first |")
    print("|---:|---:|---:|---:|---:|")
    for row in rows:
        speed_up = rows[0]["wall_s"] / row["wall_s"]
        cells = [row["jobs"], row["wall_s"], f"{speed_up:.2f}", row["peak_gb"], f"{row['largest_difference']:.1e}"]
        print("| " + " | ".join(str(cell) for cell in cells) + " |")


if __name__ == "__main__":
    main()
