"""Posts at scale: wall time and peak memory of the darkweb task on 10^7 forum posts (issue 17, item 4).

Writes a posts file of N posts (default 10^7): the real posts of ../shared/data/forum-posts repeated,
copy k >= 1 under new author names, post ids, parent ids and thread ids (suffix `~k`), so every copy
is a forum of its own authors with the real texts and times. Then measures, each in a fresh
subprocess (wall seconds and peak resident memory from os.wait4's ru_maxrss):

- convert: the one-time validating conversion to Arrow (tasks.forum.post_table), into an empty cache;
- load: `DarkwebTask().load(file, "train")` and `load(file, "test")` from that cache, then the
  number of episodes and posts of each split and their first and last episode and post;
- iterate (--iterate): load, then make every test episode once (pre-processed texts included);

for the N posts and for the real 261k posts, and, with --baseline-repo (a checkout of the code
before the post table, e.g. `git archive <commit> | tar -x -C DIR`), the old list-based `load` on
the real posts for comparison. Prints one table; generated files are deleted unless --keep.

    python benchmarks/posts_scale.py [--posts 10000000] [--work /tmp/posts-scale] [--data POSTS.jsonl.gz]
        [--baseline-repo DIR] [--iterate] [--keep]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = Path(os.environ.get("HARNESS_SHARED_DATA", REPO_ROOT.parent / "shared" / "data"))
DEFAULT_POSTS = DEFAULT_DATA / "forum-posts" / "posts.jsonl.gz"


def write_posts(source: Path, target: Path, n: int) -> int:
    """The first n posts of source repeated under new names (copy k >= 1: author, ids and thread + `~k`)."""
    with gzip.open(source, "rt", encoding="utf-8") as handle:
        real = [json.loads(line) for line in handle if line.strip()]
    written = 0
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target, "w", encoding="utf-8") as out:
        copy = 0
        while written < n:
            suffix = f"~{copy}" if copy else ""
            lines = []
            for post in real[: n - written]:
                if copy:
                    post = {
                        **post,
                        "post_id": post["post_id"] + suffix,
                        "author": post["author"] + suffix,
                        "thread_id": post["thread_id"] + suffix,
                        "parent_id": None if post.get("parent_id") is None else post["parent_id"] + suffix,
                    }
                lines.append(json.dumps(post, ensure_ascii=False))
            out.write("\n".join(lines) + "\n")
            written += len(lines)
            copy += 1
    return written


# -- the measured steps, each run in a child process ------------------------------------------------------


def child(step: str, path: Path) -> dict:
    result = _child_step(step, path)
    status = _proc_status()
    # peak resident memory of this process (VmHWM), and at the end its anonymous memory and its pages of
    # memory-mapped files (the Arrow cache: page cache the kernel can drop, counted in RSS while mapped)
    result.update({f"{key}_mb": round(status[key] / 1024) for key in ("VmHWM", "RssAnon", "RssFile")})
    return result


def _proc_status() -> dict[str, int]:
    """The kB figures of /proc/self/status."""
    figures = {}
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            key, _, value = line.partition(":")
            if value.strip().endswith("kB"):
                figures[key] = int(value.split()[0])
    return figures


def _child_step(step: str, path: Path) -> dict:
    if step == "convert":
        from tasks.forum.post_table import open_post_table

        table = open_post_table(path)
        return {"posts": len(table)}
    from tasks.darkweb import DarkwebTask

    task = DarkwebTask()
    train, test = task.load(path, "train"), task.load(path, "test")
    counts = {
        "train episodes": len(train.episodes),
        "test episodes": len(test.episodes),
        "train posts": len(train.posts),
        "test posts": len(test.posts),
    }
    for data in (train, test):  # make a few: the first and last episode and post of each split
        for item in (data.episodes[0], data.episodes[len(data.episodes) - 1], data.posts[0]):
            assert item
    if step == "iterate":
        counts["test episode posts"] = sum(len(e.posts) for e in test.episodes)
    return counts


def measure(step: str, path: Path, *, cache: Path, pythonpath: Path | None = None) -> dict:
    """Run one step in a fresh interpreter: its wall seconds, peak RSS (MB) and what it printed."""
    env = {**os.environ, "HARNESS_CACHE_DIR": str(cache), "OMP_NUM_THREADS": "1", "HARNESS_PROGRESS_INTERVAL": "600"}
    if pythonpath is not None:
        env["PYTHONPATH"] = f"{pythonpath}{os.pathsep}{env.get('PYTHONPATH', '')}"
    cwd = pythonpath or REPO_ROOT
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        started = time.perf_counter()
        process = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "--child", step, str(path)],
            env=env,
            cwd=cwd,
            stdout=out,
            stderr=err,
            text=True,
        )
        _, status, usage = os.wait4(process.pid, 0)  # reaps the child: its own peak RSS
        wall = time.perf_counter() - started
        process.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    if process.returncode != 0:
        raise SystemExit(f"step {step} on {path} failed:\n{stderr[-4000:]}")
    result = json.loads(stdout.strip().splitlines()[-1])
    result["wall_s"] = wall
    result["peak_mb"] = usage.ru_maxrss / 1024  # kilobytes on Linux; the child's own VmHWM is in the counts
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--posts", type=int, default=10_000_000)
    parser.add_argument("--work", type=Path, default=Path("/tmp/posts-scale"))
    parser.add_argument("--data", type=Path, default=DEFAULT_POSTS)
    parser.add_argument("--baseline-repo", type=Path, default=None, help="a checkout of the list-based code")
    parser.add_argument("--iterate", action="store_true", help="also make every test episode once")
    parser.add_argument("--keep", action="store_true", help="keep the generated posts file and caches")
    parser.add_argument("--child", nargs=2, metavar=("STEP", "PATH"), help=argparse.SUPPRESS)
    parser.add_argument("--write", type=Path, metavar="TARGET", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child[0], Path(args.child[1]))))
        return
    if args.write:
        print(write_posts(args.data, args.write, args.posts))
        return

    work = args.work / f"n{args.posts}"
    big = work / "posts.jsonl"
    started = time.perf_counter()
    # in a child of its own: a process holds its parent's peak memory at spawn in its ru_maxrss; keep this one small
    command = [sys.executable, str(Path(__file__).resolve()), "--data", str(args.data), "--posts", str(args.posts)]
    written = int(subprocess.run([*command, "--write", str(big)], check=True, capture_output=True, text=True).stdout)
    print(f"wrote {written} posts ({big.stat().st_size / 1e9:.2f} GB) in {time.perf_counter() - started:.0f} s")
    steps = ["convert", "load"] + (["iterate"] if args.iterate else [])
    rows = []
    try:
        for label, path, cache in ((f"{written}", big, work / "cache"), ("real", args.data, work / "real-cache")):
            for step in steps:
                rows.append((label, "new", step, measure(step, path, cache=cache)))
            if args.baseline_repo is not None and label == "real":
                rows.append((label, "old", "load", measure("load", path, cache=cache, pythonpath=args.baseline_repo)))
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    print(f"{'posts':>10} {'code':>4} {'step':>8} {'wall s':>8} {'peak MB':>8}  counts")
    for label, code, step, result in rows:
        counts = {k: v for k, v in result.items() if k not in ("wall_s", "peak_mb")}
        print(f"{label:>10} {code:>4} {step:>8} {result['wall_s']:8.1f} {result['peak_mb']:8.0f}  {counts}")


if __name__ == "__main__":
    main()
