"""The forum-pretrained style encoder on the forum submission-vs-comment sets, end to end (issue 27, item 2).

For each seed N: pre-train a style encoder on the posts less the test side of that seed's own set (its test authors,
the threads of its test texts, the texts: `harness pretrain-style --exclude-test-of`), score the set with
`encoder_wccn` on the trained embedding (`whiten=auto`: the whitening kept or left out by the out-of-fold AUC on the
training pairs), and put every seed in one table with the mean ± sd. With `--transfer cmcc` the same encoder also
scores `cmcc-seedN` from the same sets folder (transfer to another corpus: the encoder saw none of its texts), in a
table of its own, with its AUC per discourse-type pair. Runs are kept: a seed whose encoder or run exists is not
redone (delete its folder to redo it).

Meant for a GPU machine: `--preset gpu` took 70-76 s a seed on an H200 (1,200 steps) and the verifier 40 s; on a CPU
it takes hours and `--preset cpu` only checks the pipeline (benchmarks/README.md, "The style encoder's GPU preset with
each set's own exclusions").

    python benchmarks/verification_all.py --out WORK --sets forum --systems length_ratio  # builds the sets
    python benchmarks/forum_style_encoder.py --posts ../shared/data/forum-posts --sets WORK/sets --out OUT \
        --seeds 0 1 2 --preset gpu --steps 1200 [--transfer cmcc]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

# what each encoder writes (not imported: no torch here): systems/style_encoder/pretraining.py's manifest, and
# systems/style_encoder/ngram.py's model file, which holds its manifest
MANIFEST = {"transformer": "style_pretraining.json", "ngram": "ngram_style.json"}
VERIFIER = {"transformer": "encoder_wccn", "ngram": "ngram_style"}
FORUM = "forum"  # the sets the encoders leave out the test side (ngram: both sides) of: FORUM-seedN


def pretrain_command(args: argparse.Namespace, seed: int) -> list[str]:
    command = ["pretrain-style", str(args.posts), str(encoder_dir(args.out, seed)), "--seed", str(seed)]
    if args.encoder == "ngram" and args.band_folds:  # the band on out-of-fold scores: the training authors stay
        command += ["--encoder", "ngram", "--exclude-test-of", str(set_dir(args.sets, seed, FORUM))]
        given = [("--steps", args.steps), ("--band-folds", args.band_folds), ("--band-repeats", args.band_repeats)]
        given += [("--band-view", view) for view in args.band_views] + [("--jobs", args.jobs)]
    elif args.encoder == "ngram":  # its verifier fits the band on the training pairs' scores: leave them out too
        command += ["--encoder", "ngram", "--exclude-all-of", str(set_dir(args.sets, seed, FORUM))]
        given = [("--steps", args.steps)]
    else:
        command += ["--preset", args.preset, "--exclude-test-of", str(set_dir(args.sets, seed, FORUM))]
        given = [("--steps", args.steps), ("--model", args.model), ("--device", args.device)]
        given.append(("--band-folds", args.band_folds))  # encoder_wccn then fits its band out of sample
    for option, value in (*given, ("--cross-kind-share", args.cross_kind_share)):
        if value is not None:
            command += [option, str(value)]
    return command


def run_command(args: argparse.Namespace, seed: int, name: str = FORUM) -> list[str]:
    encoder = encoder_dir(args.out, seed)
    verifier = VERIFIER[args.encoder]
    command = ["run", "--system", verifier, "--task", "pan23", "--data", str(set_dir(args.sets, seed, name))]
    command += ["--seed", str(seed), "--out", str(args.out / "runs")]
    if args.encoder == "ngram":
        return command + ["--param", f"model={encoder}"]
    depth = json.loads((encoder / "config.json").read_text(encoding="utf-8"))["num_hidden_layers"]
    command += ["--param", f"encoder.model={encoder}"]
    return command + ["--param", f"encoder.layers=[{depth}]", "--param", "whiten=auto"]


def encoder_dir(out: Path, seed: int) -> Path:
    return out / f"encoder-seed{seed}"


def set_dir(sets: Path, seed: int, name: str = FORUM) -> Path:
    return sets / f"{name}-seed{seed}"


def run_dir(out: Path, seed: int, name: str = FORUM, verifier: str = "encoder_wccn") -> Path | None:
    """The seed's `verifier` run folder on set `name` (its folder name carries the parameters' hash), or None."""
    found = sorted((out / "runs" / "pan23" / f"{name}-seed{seed}").glob(f"{verifier}*/seed-{seed}/result.json"))
    return found[-1].parent if found else None


def read_manifest(out: Path, seed: int, encoder: str = "transformer") -> dict[str, Any]:
    """The seed's pre-training manifest, with the held-out AUC before and after training under one pair of names."""
    found = json.loads((encoder_dir(out, seed) / MANIFEST[encoder]).read_text(encoding="utf-8"))
    if encoder == "transformer":
        return found
    manifest = found["manifest"]
    auc = manifest["held_out_pair_auc"]
    return manifest | {"held_out_pair_auc": auc | {"before": auc["whitened"], "after": auc["kept"]}}


def harness(command: list[str]) -> None:
    print("harness", " ".join(command), flush=True)
    subprocess.run([sys.executable, "-m", "harness.cli", *command], check=True)


def seed_row(out: Path, seed: int, name: str = FORUM, encoder: str = "transformer") -> dict[str, Any]:
    """What one seed gave: pre-training (corpus, held-out AUC: for ngram the whitened space's and the projection's)
    and the verifier on set `name` (choice, out-of-fold and test)."""
    manifest = read_manifest(out, seed, encoder)
    run = run_dir(out, seed, name, VERIFIER[encoder])
    assert run is not None
    scores = json.loads((run / "result.json").read_text(encoding="utf-8"))["scores"]
    info = json.loads((run / "checkpoint" / "config.json").read_text(encoding="utf-8"))["state"]["info"]
    answers = [json.loads(line)["value"] for line in (run / "answers.jsonl").read_text(encoding="utf-8").splitlines()]
    held_out = manifest["held_out_pair_auc"]
    return {
        "seed": seed,
        "posts": manifest["corpus"]["posts"],
        "authors": manifest["corpus"]["authors"],
        "both_kinds": manifest["corpus"]["authors_with_two_kinds"],
        "held_out_before": held_out["before"],
        "held_out_after": held_out["after"],
        "kept_step": held_out["kept_step"],
        "whiten": info.get("whiten", "-"),
        "out_of_fold_auc": info.get("out_of_fold_auc_by_whiten"),
        "auc": scores["auc"],
        "c_at_1": scores["c_at_1"],
        "overall": scores["overall"],
        "answers": [sum(v > 0.5 for v in answers), sum(v < 0.5 for v in answers), sum(v == 0.5 for v in answers)],
        # the AUC of each discourse-type pair (None where a pair has one class: NaN in result.json)
        "type_pair_auc": {
            key.removesuffix("/auc"): (None if value is None or value != value else value)
            for key, value in scores.items()
            if key.endswith("/auc")
        },
    }


def summary(rows: list[dict[str, Any]]) -> str:
    """A markdown table, a row a seed and one of mean ± sd (sd over seeds; none for one seed)."""
    lines = [
        "| seed | posts / authors (both kinds) | held-out pair AUC (kept step) | whiten chosen | out-of-fold AUC "
        "true / false | AUC | c@1 | overall | same / different / no answer |",
        "|---|---|---|---|---|---:|---:|---:|---|",
    ]
    for row in rows:
        oof = row["out_of_fold_auc"] or {}
        lines.append(
            f"| {row['seed']} | {row['posts']:,} / {row['authors']:,} ({row['both_kinds']:,}) | "
            f"{_fmt(row['held_out_before'])} -> {_fmt(row['held_out_after'])} ({row['kept_step']}) | "
            f"{str(row['whiten']).lower()} | {_fmt(oof.get('true'))} / {_fmt(oof.get('false'))} | "
            f"{row['auc']:.3f} | {row['c_at_1']:.3f} | {row['overall']:.3f} | {'/'.join(map(str, row['answers']))} |"
        )
    if rows:
        cells = [_mean_sd([row[name] for row in rows]) for name in ("auc", "c_at_1", "overall")]
        seeds = ",".join(str(row["seed"]) for row in rows)
        lines.append(f"| {seeds} | | | | | {' | '.join(cells)} | |")
    return "\n".join(lines) + "\n"


def type_pair_table(rows: list[dict[str, Any]]) -> str:
    """AUC per discourse-type pair of the seeds' rows, a column a seed and the mean over the seeds that have it ("" for
    one pair)."""
    per_seed = [row["type_pair_auc"] for row in rows]
    pairs = sorted(set().union(*per_seed))
    if len(pairs) < 2:
        return ""
    lines = [
        "| type pair | " + " | ".join(f"seed {row['seed']}" for row in rows) + " | mean |",
        "|---|" + "---:|" * (len(rows) + 1),
    ]
    for pair in pairs:
        values = [aucs.get(pair) for aucs in per_seed]
        known = [value for value in values if value is not None]
        mean = statistics.fmean(known) if known else None
        lines.append(f"| {pair} | " + " | ".join(_fmt(value) for value in [*values, mean]) + " |")
    return "\n" + "\n".join(lines) + "\n"


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _mean_sd(values: list[float]) -> str:
    mean = statistics.fmean(values)
    return f"{mean:.3f}" if len(values) < 2 else f"{mean:.3f} ± {statistics.stdev(values):.3f}"


def main(argv: list[str] | None = None) -> str:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--posts", type=Path, required=True, help="the forum posts (posts.jsonl[.gz] or its folder)")
    parser.add_argument("--sets", type=Path, required=True, help="the folder holding forum-seedN sets")
    parser.add_argument("--out", type=Path, required=True, help="encoders, runs and summary.md go here")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument(
        "--encoder", choices=("transformer", "ngram"), default="transformer", help="as `harness pretrain-style`"
    )
    parser.add_argument("--preset", choices=("cpu", "gpu"), default="gpu", help="the transformer's")
    parser.add_argument("--steps", type=int, help="pre-training steps (the preset's by default)")
    parser.add_argument("--model", help="the base encoder (default: all-MiniLM-L6-v2, offline)")
    parser.add_argument("--device", choices=("auto", "cpu", "cuda"))
    parser.add_argument("--cross-kind-share", type=float, help="as `harness pretrain-style` takes it (default 0.5)")
    parser.add_argument(
        "--band-folds", type=int, help="this many band fold encoders (ngram: then the set's test side only is left out)"
    )
    parser.add_argument("--band-repeats", type=int, help="ngram, with --band-folds: encoders a fold (default 1)")
    parser.add_argument(
        "--band-view", dest="band_views", action="append", choices=("char", "word"), default=[],
        help="ngram, with --band-folds: one more encoder a fold of this view (repeatable), as `harness pretrain-style`",
    )  # fmt: skip
    parser.add_argument("--jobs", type=int, help="ngram, with --band-folds: encoders pre-trained at a time")
    parser.add_argument(
        "--transfer", action="append", default=[], metavar="NAME", help="also score NAME-seedN with seed N's encoder"
    )
    args = parser.parse_args(argv)
    names = [FORUM, *dict.fromkeys(args.transfer)]
    for seed in args.seeds:
        for where in (set_dir(args.sets, seed, name) for name in names):
            if not (where / "test" / "truth.jsonl").is_file():
                parser.error(f"{where}: not a set built by `harness pairs` (no test/truth.jsonl)")
    args.out.mkdir(parents=True, exist_ok=True)
    for seed in args.seeds:
        if not (encoder_dir(args.out, seed) / MANIFEST[args.encoder]).is_file():
            harness(pretrain_command(args, seed))
        for name in names:
            if run_dir(args.out, seed, name, VERIFIER[args.encoder]) is None:
                harness(run_command(args, seed, name))
    tables = []
    for name in names:
        rows = [seed_row(args.out, seed, name, args.encoder) for seed in args.seeds]
        tables.append((f"{name} (transfer)\n\n" if name != FORUM else "") + summary(rows) + type_pair_table(rows))
    table = "\n".join(tables)
    (args.out / "summary.md").write_text(table, encoding="utf-8")
    print(table)
    return table


if __name__ == "__main__":
    main()
