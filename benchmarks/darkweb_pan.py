"""The darkweb task on the real forum posts: TF-IDF, CNN (mean pooling), SYSML (softmax), NBCSAuthor
(NBC-Softmax) and the learned view fusion (episode_fusion, not run unless named), single-market and
multitask, several seeds; MRR and R@10 per market, migrant linking,
training seconds per epoch and peak memory.

Each (setting, system) pair runs `harness run` in its own process with all seeds (so peak memory is
that process's maximum resident size); runs that exist under --out are kept, so an interrupted
benchmark resumes. Prints Markdown tables and writes them with the raw numbers to --out/PROTOCOL/summary.json.

    python benchmarks/darkweb_pan.py [--data DIR] [--out runs/bench-darkweb] [--seeds 0 1 2] [--epochs 5]
        [--author-share 0.4] [--systems ...] [--markets ...] [--no-multitask]
        [--protocol thread-disjoint|legacy] [--render summary.json]
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
MARKETS = ("admissions", "campus", "academia")
NEURAL = ("episode_cnn", "sysml", "nbcsauthor")
LABELS = {
    "episode_tfidf": "TF-IDF",
    "episode_cnn": "CNN (mean pool)",
    "sysml": "SYSML (softmax)",
    "nbcsauthor": "NBCSAuthor (NBC-Softmax)",
    "episode_fusion": "view fusion (learned)",
}
NOT_NEURAL = ("episode_tfidf", "episode_fusion")  # their own defaults; no epochs


def default_data() -> Path:
    shared = Path(os.environ.get("HARNESS_SHARED_DATA", REPO_ROOT.parent / "shared" / "data"))
    return shared / "forum-posts"


def neural_params(epochs: int) -> dict[str, Any]:
    """The same budget for every neural system: SYSML's architecture, shrunk for a shared 2-core CPU
    (batches of 64 at a higher learning rate: more updates for the same compute)."""
    return {
        "encoder.vocab_size": 8000,
        "encoder.max_tokens": 48,
        "encoder.filters": 32,
        "encoder.text_dim": 64,
        "encoder.time_dim": 16,
        "encoder.context_dim": 32,
        "encoder.output_dim": 32,
        "encoder.layers": 2,
        "encoder.heads": 4,
        "encoder.ff_dim": 128,
        "graph_init.walks_per_node": 1,
        "training.epochs": epochs,
        "training.batch_size": 64,
        "training.lr": 0.002,
        "device": "cpu",
    }


def settings(
    systems: list[str], include_multitask: bool, author_share: float, markets: list[str]
) -> list[tuple[str, dict[str, Any], list[str]]]:
    """(label, task parameters, systems): each market alone; then all markets, multitask for the
        softmax-family systems and pooled for TF-IDF and the fusion (they learn no author labels: the migrant
    baselines).
        The same share of persons everywhere, so a market's test pool is the same in every setting."""
    share = {} if author_share >= 1.0 else {"author_share": author_share}
    out = [(m, {"market": m, **share}, systems) for m in markets]
    if include_multitask:
        out.append(("multitask", {"multitask": True, **share}, [s for s in systems if s in ("sysml", "nbcsauthor")]))
        out.append(("all markets", share, [s for s in systems if s in NOT_NEURAL]))
    return [(label, task, chosen) for label, task, chosen in out if chosen]


def run_one(
    data: Path, out: Path, system: str, task_params: dict[str, Any], params: dict[str, Any], seeds: list[int]
) -> dict[str, Any]:
    """`harness run` for all seeds in a child process; its wall time and peak resident memory (MiB)."""
    command = [sys.executable, "-m", "harness.cli", "run", "--system", system, "--task", "darkweb"]
    command += ["--data", str(data), "--out", str(out)]
    for seed in seeds:
        command += ["--seed", str(seed)]
    for key, value in task_params.items():
        command += ["--task-param", f"{key}={json.dumps(value)}"]
    for key, value in params.items():
        command += ["--param", f"{key}={json.dumps(value)}"]
    out.mkdir(parents=True, exist_ok=True)
    log_path = out / f"{system}.log"
    started = time.perf_counter()
    with log_path.open("w", encoding="utf-8") as log:
        # one torch thread: on a shared 2-core machine two threads each ran 3-5x slower than one
        env = {**os.environ, "OMP_NUM_THREADS": "1"}
        child = subprocess.Popen(command, cwd=REPO_ROOT, stdout=log, stderr=subprocess.STDOUT, env=env)
        _, status, usage = os.wait4(child.pid, 0)  # the child's own resource usage, peak memory included
    child.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - started
    if child.returncode != 0:
        sys.stderr.write(log_path.read_text(encoding="utf-8")[-4000:])
        raise SystemExit(f"failed ({child.returncode}): {' '.join(command)}")
    return {"command": command, "wall_s": wall, "peak_rss_mib": usage.ru_maxrss / 1024.0}


def collect(out: Path, system: str, seeds: list[int]) -> list[dict[str, Any]]:
    """result.json and the checkpoint's fit info of each seed's run of `system` under `out`."""
    found = []
    for seed in seeds:
        results = sorted(out.glob(f"darkweb*/*/{system}*/seed-{seed}/result.json"))
        if not results:
            raise SystemExit(f"no result for {system} seed {seed} under {out}")
        result = json.loads(results[-1].read_text(encoding="utf-8"))
        config = json.loads((results[-1].parent / "checkpoint" / "config.json").read_text(encoding="utf-8"))
        found.append({"result": result, "info": config["state"].get("info", {})})
    return found


def mean_std(values: list[float]) -> str:
    if len(values) == 1:
        return f"{values[0]:.3f}"
    return f"{statistics.mean(values):.3f} ± {statistics.stdev(values):.3f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=default_data())
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "runs" / "bench-darkweb")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--author-share", type=float, default=0.4, help="share of persons kept (by name hash)")
    parser.add_argument("--systems", nargs="+", default=["episode_tfidf", *NEURAL])
    parser.add_argument("--markets", nargs="+", default=list(MARKETS), choices=MARKETS, help="single-market runs")
    parser.add_argument("--no-multitask", action="store_true", help="single-market settings only")
    parser.add_argument(
        "--protocol",
        default="thread-disjoint",
        choices=("thread-disjoint", "legacy"),
        help="the darkweb task's protocol; runs go under OUT/PROTOCOL/, so protocols never mix",
    )
    parser.add_argument("--render", type=Path, help="only print the tables of an earlier summary.json")
    args = parser.parse_args()
    if args.render:
        print(render(json.loads(args.render.read_text(encoding="utf-8"))))
        return

    summary: dict[str, Any] = {
        "seeds": args.seeds,
        "protocol": args.protocol,
        "neural_params": neural_params(args.epochs),
        "rows": [],
    }
    chosen = settings(args.systems, not args.no_multitask, args.author_share, args.markets)
    root = args.out / args.protocol
    for label, task_params, systems in chosen:
        task_params = {**task_params, "protocol": args.protocol}
        for system in systems:
            params = {} if system in NOT_NEURAL else neural_params(args.epochs)
            seeds = args.seeds[:1] if system == "episode_tfidf" else args.seeds  # TF-IDF is deterministic
            out = root / label.replace(" ", "-")
            print(f"[{time.strftime('%H:%M:%S')}] {label} {system} seeds {seeds}", file=sys.stderr, flush=True)
            launched = run_one(args.data, out, system, task_params, params, seeds)
            runs = collect(out, system, seeds)
            summary["rows"].append(
                {
                    "setting": label,
                    "system": system,
                    "task_params": task_params,
                    "command": " ".join(launched["command"][1:]),
                    "seeds": seeds,
                    "wall_s": round(launched["wall_s"], 1),
                    "peak_rss_mib": round(launched["peak_rss_mib"], 1),
                    "train_episodes": runs[0]["result"]["task"]["data"]["train"]["size"],
                    "test_episodes": runs[0]["result"]["task"]["data"]["test"]["size"],
                    "scores": [r["result"]["scores"] for r in runs],
                    "timings": [r["result"]["timings_s"] for r in runs],
                    "epochs": [r["info"].get("epochs", []) for r in runs],
                    "fit_info": [{k: v for k, v in r["info"].items() if k != "epochs"} for r in runs],
                }
            )
            root.mkdir(parents=True, exist_ok=True)
            (root / "summary.json").write_text(json.dumps(summary, indent=1), encoding="utf-8")
    print(render(summary))


def render(summary: dict[str, Any]) -> str:
    """Markdown: within-market MRR / R@10, migrant linking, cost."""
    lines = ["| setting | system | " + " | ".join(f"{m} MRR | {m} R@10" for m in MARKETS) + " |"]
    lines.append("|---|---|" + "---:|---:|" * len(MARKETS))
    for row in summary["rows"]:
        cells = []
        for market in MARKETS:
            key = f"{market}/mrr"
            if key not in row["scores"][0]:
                cells += ["", ""]
                continue
            cells.append(mean_std([s[key] for s in row["scores"]]))
            cells.append(mean_std([s[f"{market}/recall_at_10"] for s in row["scores"]]))
        lines.append(f"| {row['setting']} | {LABELS[row['system']]} | " + " | ".join(cells) + " |")
    lines += ["", "| setting | system | migrant MRR | migrant R@10 | held-out migrant MRR | held-out R@10 | queries |"]
    lines.append("|---|---|---:|---:|---:|---:|---:|")
    for row in summary["rows"]:
        s = row["scores"]
        if "migrant/mrr" not in s[0]:
            continue
        cells = [row["setting"], LABELS[row["system"]]]
        for key in ("migrant/mrr", "migrant/recall_at_10", "migrant_heldout/mrr", "migrant_heldout/recall_at_10"):
            cells.append(mean_std([x[key] for x in s]) if key in s[0] else "-")
        cells.append(str(int(s[0]["migrant/queries"])))
        lines.append("| " + " | ".join(cells) + " |")
    columns = "train episodes | test episodes | s / epoch | fit s | evaluate s | peak RSS MiB"
    lines += ["", f"| setting | system | {columns} |"]
    lines.append("|---|---|---:|---:|---:|---:|---:|---:|")
    for row in summary["rows"]:
        per_epoch = [e["seconds"] for run in row["epochs"] for e in run]
        cells = [
            row["setting"],
            LABELS[row["system"]],
            str(row["train_episodes"]),
            str(row["test_episodes"]),
            f"{statistics.mean(per_epoch):.1f}" if per_epoch else "-",
            f"{statistics.mean(t['fit'] for t in row['timings']):.1f}",
            f"{statistics.mean(t['evaluate'] for t in row['timings']):.1f}",
            f"{row['peak_rss_mib']:.0f}",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
