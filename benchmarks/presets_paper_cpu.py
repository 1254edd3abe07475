"""The paper presets of the neural forum systems at full size: a few optimiser steps on CPU, on real data.

For each of `sysml`, `nbcsauthor` (darkweb), `varlen_linker`, `reddit_encoder` (reddit) and
`episode_encoder` (darkweb), `--param preset=paper` is built with every size of the preset kept
(vocabulary, post length, layer widths, layers, output dimension) and only the schedule changed so
that the fit stops after a few optimiser steps:

- varlen_linker, episode_encoder, reddit_encoder: `training.epochs=1`, `training.steps_per_epoch=STEPS`.
- sysml, nbcsauthor: the Training part has no step cap, so they train on a small slice of one market
  (darkweb task `market=academia`, `max_authors=N`) that makes an epoch one batch, for
  `training.epochs=STEPS`. Everything else is the paper's, the metapath2vec graph initialisation
  (200 walks of 80 steps per user and meta-path) and the 10% validation split included.

Data: ../shared/data/forum-posts (HARNESS_SHARED_DATA), read-only. Reddit systems read all of it
(`reddit` task defaults), darkweb systems the slice above. Each system runs in its own child process
(its peak RSS is its own, from wait4) on the CPU with one torch thread, under a wall-clock limit:
a system that does not finish in time is recorded as such, not shrunk. For each it measures the
fit time, the training seconds per step (set-up excluded: tokenizer, graph, encoder load), the
trainable parameters of the fitted modules (and of the encoder built at the preset's configured
vocabulary, which a small training set may not reach), whether every recorded epoch loss is
finite, and the dimension and finiteness of the embeddings of 8 test samples. Prints one Markdown
table and writes the rows as JSON to --out.

    OMP_NUM_THREADS=1 nice -n 5 python benchmarks/presets_paper_cpu.py [--data DIR] \\
        [--out runs/bench-presets/summary.json] [--systems sysml nbcsauthor ...] [--steps 3] \\
        [--darkweb-authors 64] [--timeout 1800]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import resource
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
SYSTEMS = ("sysml", "nbcsauthor", "varlen_linker", "episode_encoder", "reddit_encoder")
TASK_OF = {
    "sysml": "darkweb",
    "nbcsauthor": "darkweb",
    "episode_encoder": "darkweb",
    "varlen_linker": "reddit",
    "reddit_encoder": "reddit",
}
DARKWEB_MARKET = "academia"
EMBED_SAMPLES = 8
COLUMNS = (
    ("system", "system"),
    ("preset", "preset"),
    ("key sizes", "sizes"),
    ("parameters", "parameters"),
    ("steps", "steps"),
    ("fit s", "fit_seconds"),
    ("s/step", "seconds_per_step"),
    ("loss finite", "loss_finite"),
    ("embed dim", "embed_dim"),
    ("peak RSS MiB", "peak_rss_mib"),
    ("status", "status"),
)


def default_data() -> Path:
    return Path(os.environ.get("HARNESS_SHARED_DATA", REPO_ROOT.parent / "shared" / "data")) / "forum-posts"


# ---------------------------------------------------------------------------------------- one system


def schedule(system: str, args: argparse.Namespace) -> dict[str, Any]:
    """The only parameters changed from the paper preset: the schedule (and the device, one thread)."""
    if system in ("sysml", "nbcsauthor"):
        return {"training.epochs": args.steps, "device": "cpu"}
    return {"training.epochs": 1, "training.steps_per_epoch": args.steps, "device": "cpu", "cpu_threads": 1}


def task_params(system: str, args: argparse.Namespace) -> dict[str, Any]:
    if TASK_OF[system] == "darkweb":
        return {"market": DARKWEB_MARKET, "max_authors": args.darkweb_authors}
    return {}


def count(modules: list[Any]) -> tuple[int, int]:
    """(all parameters, trainable parameters) of torch modules."""
    params = [p for m in modules for p in m.parameters()]
    return sum(p.numel() for p in params), sum(p.numel() for p in params if p.requires_grad)


def all_finite(values: list[Any]) -> bool:
    return bool(values) and all(v is not None and math.isfinite(float(v)) for v in values)


def measure(system_name: str, args: argparse.Namespace) -> dict[str, Any]:
    """Load the task, fit the paper preset with the short schedule, embed a few test samples."""
    import numpy as np
    import torch

    from harness.params import build
    from harness.registry import system_class, task_class

    torch.set_num_threads(1)
    row: dict[str, Any] = {"system": system_name, "preset": "paper", "task": TASK_OF[system_name]}
    overrides = schedule(system_name, args)
    row["overrides"] = overrides
    row["task_params"] = task_params(system_name, args)
    task = build(task_class(TASK_OF[system_name]), row["task_params"])
    started = time.perf_counter()
    train, test = task.load(args.data, "train"), task.load(args.data, "test")
    row["load_seconds"] = round(time.perf_counter() - started, 2)
    system = build(system_class(system_name), {"preset": "paper", **overrides})
    row["params"] = system.params()
    started = time.perf_counter()
    system.fit(train, seed=0)
    row["fit_seconds"] = round(time.perf_counter() - started, 2)
    if TASK_OF[system_name] == "darkweb":
        row["data"] = {
            "train_episodes": len(train.episodes),
            "train_accounts": len({(e.market, e.author) for e in train.episodes}),
            "graph_posts": len(train.posts),
            "test_episodes": len(test.episodes),
        }
        samples = list(test.episodes[:EMBED_SAMPLES])
    else:
        row["data"] = {
            "train_authors": len(train.streams),
            "train_posts": len(train),
            "test_authors": len(test.streams),
        }
        samples = [list(q) for q in test.ranking.queries[:EMBED_SAMPLES]]

    if system_name in ("sysml", "nbcsauthor"):
        info = system.info
        epochs = info["epochs"]
        steps = sum(int(e["batches"]) for e in epochs)
        train_seconds = sum(float(e["seconds"]) for e in epochs)
        losses = [e["loss"] for e in epochs] + [e["val_loss"] for e in epochs if "val_loss" in e]
        row["epoch_losses"] = [e["loss"] for e in epochs]
        row["val_losses"] = [e.get("val_loss") for e in epochs]
        row["setup_seconds"] = {"tokenizer": info["tokenizer_seconds"], "graph": info["graph_seconds"]}
        row["realized_vocab"] = info["vocab_size"]
        row["fit_info"] = {k: info[k] for k in ("fit_episodes", "validation_episodes", "classes", "contexts")}
        modules = [system._encoder]
        full_size = system.encoder.build(system.encoder.vocab_size, info["contexts"])
        enc = system.encoder
        sizes = (
            f"BPE {enc.vocab_size} (fitted {info['vocab_size']}), {enc.max_tokens} tok, {enc.filters} filters x 4 "
            f"windows, text {enc.text_dim} + time {enc.time_dim} + ctx {enc.context_dim}, {enc.layers} layers x "
            f"{enc.heads} heads (ff {enc.ff_dim}), z {enc.output_dim}, batch "
            f"{min(system.training.batch_size, info['fit_episodes'])}/{system.training.batch_size} episodes"
        )
        expected_dim = enc.output_dim
        row["parameters_note"] = "encoder only (the loss's class weights are dropped after fitting)"
    elif system_name == "varlen_linker":
        stats = system.training_stats
        steps = int(stats["steps_per_process"])
        train_seconds = float(stats["train_seconds"])
        losses = list(stats["epoch_losses"])
        row["epoch_losses"] = losses
        row["realized_vocab"] = stats["vocab_size"]
        row["fit_info"] = {k: stats[k] for k in ("authors", "posts", "authors_left_out_by_filter", "final_lr")}
        modules = [system._model]
        full_size = system.encoder.build(num_tokens=system.encoder.vocab_size, num_subreddits=system._num_subreddits)
        enc, tr = system.encoder, system.training
        sizes = (
            f"SentencePiece {enc.vocab_size} (fitted {stats['vocab_size']}), {enc.post_length} tok, token "
            f"{enc.token_dim}, {enc.filters} filters/width, subreddit {enc.subreddit_dim}, attention "
            f"{enc.attention_dim}, D {enc.embedding_dim}, batch {min(tr.authors_per_batch, stats['authors'])}"
            f"/{tr.authors_per_batch} authors x {tr.samples_per_author}"
        )
        expected_dim = enc.embedding_dim
    else:
        stats = system.training_stats
        steps = int(stats["steps"])
        train_seconds = float(stats["train_seconds"])
        losses = list(stats["epoch_losses"])
        row["epoch_losses"] = losses
        row["fit_info"] = {k: stats[k] for k in ("authors", "posts", "sample_posts", "trainable_encoder_tensors")}
        encoder, head = system._post_encoder, system._head
        modules = [encoder.model, head]
        full_size = None
        config = encoder.model.config
        tr = system.training
        sizes = (
            f"{encoder.label}: {config.num_hidden_layers} layers x {config.hidden_size}, vocab "
            f"{config.vocab_size}, {system.encoder.max_tokens} tok, fine-tune "
            f"{'all' if system.encoder.finetune_layers == -1 else system.encoder.finetune_layers}, head "
            f"{head.linear.out_features}, batch {min(tr.authors_per_batch, stats['authors'])} authors x "
            f"{tr.samples_per_author} of {stats['sample_posts'][0]}-{stats['sample_posts'][1]} posts"
        )
        expected_dim = system.head.dim or encoder.width
    total, trainable = count(modules)
    row["parameters_total"], row["parameters_trainable"] = total, trainable
    if full_size is not None:
        row["parameters_trainable_configured_vocab"] = count([full_size])[1]
    row["sizes"] = sizes
    row["steps"] = steps
    row["train_seconds"] = round(train_seconds, 2)
    row["seconds_per_step"] = round(train_seconds / steps, 2) if steps else None
    row["loss_finite"] = all_finite(losses)

    started = time.perf_counter()
    embeddings = np.asarray(system.embed(samples))
    row["embed_seconds"] = round(time.perf_counter() - started, 2)
    row["embed_shape"] = list(embeddings.shape)
    row["embed_dim"] = int(embeddings.shape[1])
    row["embed_dim_expected"] = int(expected_dim)
    row["embed_ok"] = bool(
        embeddings.shape == (len(samples), expected_dim) and np.isfinite(embeddings).all() and len(samples) > 0
    )
    row["peak_rss_mib_self"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    ok = row["loss_finite"] and row["embed_ok"] and steps > 0
    row["status"] = "ok" if ok else "check failed"
    return row


def child(args: argparse.Namespace) -> None:
    """`--child SYSTEM --row FILE`: measure one system, write its row (or its error) to FILE."""
    import logging

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s", stream=sys.stderr)
    try:
        row = measure(args.child, args)
    except Exception as error:  # recorded in the table: the point is to see what fails
        import traceback

        traceback.print_exc()
        row = {"system": args.child, "preset": "paper", "status": f"error: {type(error).__name__}: {error}"[:300]}
    Path(args.row).write_text(json.dumps(row, indent=2, default=str), encoding="utf-8")


# ---------------------------------------------------------------------------------------- the parent


def run_child(system: str, args: argparse.Namespace) -> dict[str, Any]:
    """One system in a child process under --timeout; its row, with the child's peak RSS (wait4)."""
    with tempfile.TemporaryDirectory(prefix="bench-presets-") as tmp:
        row_file = Path(tmp) / "row.json"
        command = [sys.executable, str(Path(__file__).resolve()), "--child", system, "--row", str(row_file)]
        command += ["--data", str(args.data), "--steps", str(args.steps)]
        command += ["--darkweb-authors", str(args.darkweb_authors)]
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
        started = time.monotonic()
        process = subprocess.Popen(command, cwd=REPO_ROOT, env=env, start_new_session=True)
        timed_out = False
        while True:
            pid, status, usage = os.wait4(process.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() - started > args.timeout:
                timed_out = True
                os.killpg(process.pid, signal.SIGKILL)
                pid, status, usage = os.wait4(process.pid, 0)
                break
            time.sleep(1.0)
        process.returncode = os.waitstatus_to_exitcode(status)  # reaped here: Popen must not wait again
        wall = time.monotonic() - started
        if row_file.is_file():
            row = json.loads(row_file.read_text(encoding="utf-8"))
        else:
            row = {"system": system, "preset": "paper"}
            if timed_out:
                row["status"] = f"not finished in {args.timeout} s (killed)"
            elif os.WIFSIGNALED(status):
                name = signal.Signals(os.WTERMSIG(status)).name
                row["status"] = f"killed by {name}" + (" (likely out of memory)" if name == "SIGKILL" else "")
            else:
                row["status"] = f"exited {process.returncode} without a result"
    row["wall_seconds"] = round(wall, 1)
    row["peak_rss_mib"] = round(usage.ru_maxrss / 1024, 1)  # Linux: KiB
    return row


def cell(row: dict[str, Any], key: str) -> str:
    if key == "parameters":
        if "parameters_trainable" not in row:
            return "-"
        text = f"{row['parameters_trainable'] / 1e6:.2f}M"
        frozen = row["parameters_total"] - row["parameters_trainable"]
        if frozen:
            text += f" (+{frozen:,} frozen)"
        configured = row.get("parameters_trainable_configured_vocab")
        if configured is not None and configured != row["parameters_trainable"]:
            text += f" ({configured / 1e6:.2f}M at full vocab)"
        return text
    if key == "embed_dim" and "embed_dim" in row:
        ok = "ok" if row.get("embed_ok") else "WRONG"
        return f"{row['embed_dim']} ({ok}, expected {row['embed_dim_expected']})"
    if key == "loss_finite" and key in row:
        return "yes" if row[key] else "NO"
    value = row.get(key)
    return "-" if value is None else str(value).replace("|", "/")


def table(rows: list[dict[str, Any]]) -> str:
    lines = ["| " + " | ".join(label for label, _ in COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(cell(row, key) for _, key in COLUMNS) + " |" for row in rows]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=default_data(), help="the forum-posts folder")
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "runs" / "bench-presets" / "summary.json")
    parser.add_argument("--systems", nargs="+", choices=SYSTEMS, default=list(SYSTEMS))
    parser.add_argument("--steps", type=int, default=3, help="optimiser steps per system")
    parser.add_argument(
        "--darkweb-authors", type=int, default=64, help="persons of the darkweb slice (one batch per epoch)"
    )
    parser.add_argument("--timeout", type=int, default=1800, help="seconds per system (data, fit, embedding)")
    parser.add_argument("--child", choices=SYSTEMS, help=argparse.SUPPRESS)
    parser.add_argument("--row", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return
    import torch

    rows = []
    for system in args.systems:
        print(f"== {system} (paper preset, {args.steps} steps)", file=sys.stderr, flush=True)
        rows.append(run_child(system, args))
        print(f"   {rows[-1]['status']} in {rows[-1]['wall_seconds']} s", file=sys.stderr, flush=True)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        summary = {
            "command": " ".join([Path(sys.executable).name, *sys.argv]),
            "machine": {
                "platform": platform.platform(),
                "cpus": os.cpu_count(),
                "torch": torch.__version__,
                "torch_threads": 1,
                "device": "cpu",
            },
            "data": str(args.data),
            "rows": rows,
        }
        args.out.write_text(json.dumps(summary, indent=2, default=str) + "\n", encoding="utf-8")
    print(table(rows))
    print(f"\nrows written to {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
