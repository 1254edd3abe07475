"""The reddit task on the real forum posts: ranking and linking tables for all systems, 3 seeds.

Every (system, seed) is one `harness run` in its own process (so each run's peak memory is its
own), all on the same task split; finished runs under --out are kept and reused, so an interrupted
benchmark resumes. Then, from the saved checkpoints, the script

- scores linking again restricted to one subreddit (--subreddit, the paper's topic control),
- times embedding of the ranking queries (16-post samples) with each system,

and prints Markdown tables: ranking (MRR, R@4, R@8) and linking (EER, minDCF) as mean +- std over
seeds, EER against target sample size, training throughput and peak memory, embedding throughput.
It also writes the EER-vs-target-size plot (seed 0 of each system) next to the runs.

    python benchmarks/reddit_linking.py [--data DIR] [--out runs/bench-reddit] [--seeds 0 1 2] [--epochs 5]
        [--protocol leak-free|legacy]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
SYSTEMS = ("reddit_tfidf", "reddit_fusion", "varlen_avg", "iur_fixed", "varlen_linker")
NOT_NEURAL = ("reddit_tfidf", "reddit_fusion")  # their own defaults: no epochs or sizes
MEASURES = ("mrr", "recall_at_4", "recall_at_8", "eer", "min_dcf")
RUN_RECORD = "bench-run.json"
LABELS = {"mrr": "MRR", "recall_at_4": "R@4", "recall_at_8": "R@8", "eer": "EER", "min_dcf": "minDCF"}


def default_data() -> Path:
    return Path(os.environ.get("HARNESS_SHARED_DATA", REPO_ROOT.parent / "shared" / "data")) / "forum-posts"


def neural_params(args: argparse.Namespace) -> dict[str, Any]:
    """The caps of the neural systems (all three share them, so they differ only in sample sizes).

    Dotted names set a field of a part (`encoder.token_dim`: the SampleEncoderConfig's token_dim).
    """
    return {
        "encoder.vocab_size": args.vocab_size,
        "encoder.token_dim": args.dim,
        "encoder.filters": args.dim,
        "encoder.attention_dim": 2 * args.dim,
        "encoder.embedding_dim": 2 * args.dim,
        "training.epochs": args.epochs,
        "cpu_threads": args.threads,
        "device": "cpu",
    }


def run_one(system: str, seed: int, args: argparse.Namespace) -> Path:
    """`harness run` in a child process; returns the run folder. A finished run is kept, not rerun.

    The child's peak resident memory (the whole run: data, fit, evaluation) comes from wait4 and is
    stored beside its result as bench-run.json, with the child's wall time.
    """
    from harness.data_location import DataLocation
    from harness.runner import run_folder

    params = {} if system in NOT_NEURAL else neural_params(args)
    # the protocol is always named, so runs of task version 1 (legacy, unnamed) are never reused as the default
    task_params = {"protocol": args.protocol}
    folder = run_folder(args.out, "reddit", system, seed, params, task_params, DataLocation(args.data))
    if (folder / "result.json").is_file() and (folder / RUN_RECORD).is_file():
        print(f"  {system} seed {seed}: kept ({folder})", file=sys.stderr, flush=True)
        return folder
    command = [sys.executable, "-m", "harness.cli", "run", "--system", system, "--task", "reddit"]
    command += ["--data", str(args.data), "--out", str(args.out), "--seed", str(seed)]
    for key, value in params.items():
        command += ["--param", f"{key}={json.dumps(value)}"]
    for key, value in task_params.items():
        command += ["--task-param", f"{key}={json.dumps(value)}"]
    args.out.mkdir(parents=True, exist_ok=True)
    log = args.out / f"log-{system}-seed-{seed}.txt"
    started = time.perf_counter()
    with log.open("w", encoding="utf-8") as handle:
        child = subprocess.Popen(command, cwd=REPO_ROOT, stdout=handle, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(child.pid, 0)
        child.returncode = os.waitstatus_to_exitcode(status)
    seconds = time.perf_counter() - started
    if child.returncode != 0:
        sys.exit(f"{' '.join(command)} failed; see {log}")
    record = {"wall_s": round(seconds, 1), "peak_rss_mib": round(usage.ru_maxrss / 1024, 1)}
    (folder / RUN_RECORD).write_text(json.dumps(record) + "\n", encoding="utf-8")
    print(f"  {system} seed {seed}: {seconds:.0f} s ({folder})", file=sys.stderr, flush=True)
    return folder


def mean_std(values: list[float]) -> str:
    if len(values) == 1:
        return f"{values[0]:.3f}"
    return f"{statistics.mean(values):.3f} ± {statistics.stdev(values):.3f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=default_data())
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "runs" / "bench-reddit")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--systems", nargs="+", default=list(SYSTEMS))
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--dim", type=int, default=48, help="token_dim = filters; attention and embedding: twice")
    parser.add_argument("--vocab-size", type=int, default=8192)
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads per run")
    parser.add_argument("--subreddit", default="ApplyingToCollege", help="the single-subreddit linking condition")
    parser.add_argument(
        "--protocol",
        default="leak-free",
        choices=("leak-free", "legacy"),
        help="the reddit task's protocol (leak-free: EER is the subreddit mean, the pooled one beside it)",
    )
    args = parser.parse_args()

    import numpy as np

    from harness.leaderboard import find_runs
    from harness.plotting import plot_linking_curves
    from harness.registry import system_class
    from tasks.reddit import RedditTask

    started = time.perf_counter()
    runs: dict[str, dict[int, Path]] = {}
    for system in args.systems:
        for seed in args.seeds:
            runs.setdefault(system, {})[seed] = run_one(system, seed, args)
    results = {s: {seed: json.loads((d / "result.json").read_text()) for seed, d in r.items()} for s, r in runs.items()}

    # linking within one subreddit, and embedding speed, from the saved checkpoints
    pooled_task = RedditTask(protocol=args.protocol)
    single_task = RedditTask(protocol=args.protocol, linking_subreddit=args.subreddit)
    test = pooled_task.load(args.data, "test")
    single = single_task.load(args.data, "test")
    single_scores: dict[str, list[dict[str, float]]] = {}
    speed: dict[str, float] = {}
    for system, by_seed in runs.items():
        for seed, folder in by_seed.items():
            fitted = system_class(system).load(folder / "checkpoint")
            single_scores.setdefault(system, []).append(single_task.evaluate(fitted, single).scores)
            if seed == args.seeds[0]:
                queries = list(test.ranking.queries)
                fitted.embed(queries[:32])  # warm-up
                tic = time.perf_counter()
                fitted.embed(queries)
                speed[system] = len(queries) / (time.perf_counter() - tic)

    out: list[str] = []
    seeds_note = ", ".join(str(s) for s in args.seeds)
    counts = test.counts
    out.append(
        f"Split: cutoff {counts['split']['cutoff_utc']}; train {counts['split']['train_authors']} authors / "
        f"{counts['split']['train_posts']} posts; test {counts['split']['test_authors']} authors / "
        f"{counts['split']['test_posts']} posts; protocol {args.protocol}; "
        f"ranking {counts['ranking']['authors']} authors (16 + 16 posts); "
        f"linking {counts['linking']['queries']} distinguished authors x {counts['linking']['target_accounts']} "
        f"target accounts (pooled), {single.counts['linking']['queries']} x "
        f"{single.counts['linking']['target_accounts']} in {args.subreddit}. Seeds {seeds_note}; mean ± std.\n"
    )
    sub = args.subreddit
    pooled = args.protocol != "legacy"  # leak-free: `eer` is the subreddit mean, `eer_pooled` beside it
    extra = " EER (pooled) | minDCF (pooled) |" if pooled else ""
    all_label = "subreddit mean" if pooled else "all"
    out.append(
        f"| system | MRR | R@4 | R@8 | EER ({all_label}) | minDCF ({all_label}) |{extra} EER ({sub}) | minDCF ({sub}) |"
    )
    out.append("|---|---:|---:|---:|---:|---:|" + ("---:|---:|" if pooled else "") + "---:|---:|")
    measures = (*MEASURES, "eer_pooled", "min_dcf_pooled") if pooled else MEASURES
    for system, by_seed in results.items():
        cells = [mean_std([r["scores"][m] for r in by_seed.values()]) for m in measures]
        cells += [mean_std([s[m] for s in single_scores[system]]) for m in ("eer", "min_dcf")]
        out.append(f"| {system} | " + " | ".join(cells) + " |")

    sizes = next(iter(next(iter(results.values())).values()))["curves"]["eer_vs_target_size"]["target_sizes"]
    over = "mean of the subreddits' EERs" if pooled else "all subreddits pooled"
    out.append(f"\nEER against target sample size ({over}; mean over seeds):\n")
    out.append("| system | " + " | ".join(f"{k} post{'s' if k > 1 else ''}" for k in sizes) + " |")
    out.append("|---|" + "---:|" * len(sizes))
    for system, by_seed in results.items():
        curves = np.array([r["curves"]["eer_vs_target_size"]["eer"] for r in by_seed.values()])
        out.append(f"| {system} | " + " | ".join(f"{v:.3f}" for v in curves.mean(axis=0)) + " |")

    out.append(f"\nThroughput and memory on this CPU (mean over seeds; embedding: seed {args.seeds[0]}):\n")
    out.append("| system | run wall s | fit s | train samples/s | train posts/s | peak RSS MiB | embed samples/s |")
    out.append("|---|---:|---:|---:|---:|---:|---:|")
    for system, by_seed in runs.items():
        records = [json.loads((d / RUN_RECORD).read_text()) for d in by_seed.values()]
        stats = [json.loads((d / "checkpoint" / "config.json").read_text())["state"] for d in by_seed.values()]
        rates = [s["training"]["train_samples_per_s"] for s in stats if "training" in s]
        post_rates = [s["training"]["train_posts_per_s"] for s in stats if "training" in s]
        fits = [r["timings_s"]["fit"] for r in results[system].values()]
        out.append(
            f"| {system} | {statistics.mean(r['wall_s'] for r in records):.0f} | {statistics.mean(fits):.0f} | "
            f"{f'{statistics.mean(rates):.0f}' if rates else '-'} | "
            f"{f'{statistics.mean(post_rates):.0f}' if post_rates else '-'} | "
            f"{max(r['peak_rss_mib'] for r in records):.0f} | "
            f"{speed[system]:.0f} |"
        )
    out.append(f"\nTotal wall time: {(time.perf_counter() - started) / 60:.1f} min.")

    all_results = [runs[system][seed] / "result.json" for system in runs for seed in args.seeds]
    plot_linking_curves(find_runs(all_results), args.out / "plots")
    text = "\n".join(out)
    (args.out / f"summary-{args.protocol}.md").write_text(text + "\n", encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
