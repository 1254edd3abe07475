"""Verification systems on the real PAN 2013-2015 English corpora (leak-free protocol) beside published results.

Extracts `pan13-15-av-en.tar.gz` and `pan13-av-en.tar.gz` to a temporary folder and runs every
(corpus, system, seed) as its own `harness run --task pan-classic` process, so each figure has its
`result.json` (with the texts its train and test splits share, `task.data.shared_texts`):

- PAN14 essays, PAN14 novels: trained on the training corpus, scored once on test corpus 2 (the
  official test set; corpus 1 is a subset of it). These are PAN's own splits: they do share texts
  (counted and printed), which every PAN 2014 participant faced alike.
- PAN15 English: the tarball has no PAN15 test corpus, so a text-disjoint k-fold cross-validation
  over its 100 training problems (`toolkit.splits.problem_groups` + `grouped_folds`, fold seed 0):
  each fold trained on the other folds and scored on its held-out fold; AUC, c@1 and AUC x c@1 as
  the mean over folds and on the pooled out-of-fold answers. Not PAN15's official test set.
- PAN13 English: train (10 problems) -> test (30 problems).

Systems with a seed-dependent result get mean ± sample sd over `--seeds`; deterministic ones show sd 0.

    python benchmarks/verification_pan.py [--systems cngdist,tfidf,...] [--seeds 0,1,2]
        [--corpora essays,novels,pan15,pan13] [--out DIR] [--data-dir DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from harness.data_location import DataLocation  # noqa: E402
from harness.registry import SYSTEMS  # noqa: E402
from harness.runner import run_folder  # noqa: E402
from tasks.pan.classic import PanClassicTask  # noqa: E402
from toolkit.splits import grouped_folds, problem_groups  # noqa: E402

TARBALLS = ("pan13-15-av-en.tar.gz", "pan13-av-en.tar.gz")
BASELINES = ("cngdist", "tfidf", "compressor", "length_ratio")
TASK = "pan-classic"

# key -> (label, train folder pattern, test folder pattern or None for cross-validation over train),
# patterns relative to the extraction root
CORPORA: dict[str, tuple[str, str, str | None]] = {
    "essays": (
        "PAN14 English essays",
        "*/train/pan14-*/pan14-*-training-corpus-english-essays-*",
        "*/test/pan14-*/pan14-*-test-corpus2-english-essays-*",
    ),
    "novels": (
        "PAN14 English novels",
        "*/train/pan14-*/pan14-*-training-corpus-english-novels-*",
        "*/test/pan14-*/pan14-*-test-corpus2-english-novels-*",
    ),
    "pan15": ("PAN15 English", "*/train/pan15-*/pan15-*-training-dataset-english-*", None),
    "pan13": ("PAN13 English", "*/train/pan13-*-training-corpus-*", "*/test/pan13-*-test-corpus2-*"),
}

# published English results, AUC x c@1 (AUC, c@1 where the overview gives them)
ANCHORS: dict[str, list[tuple[str, str, str, str]]] = {
    "essays": [
        ("PAN14 winner (Frery et al.)", "0.723", "0.710", "0.513"),
        ("PAN14 meta-classifier over all submissions", "", "", "0.531"),
        ("PAN14 baseline", "", "", "0.288"),
    ],
    "novels": [
        ("PAN14 winner (Modaresi & Gross)", "", "", "0.508"),
        ("PAN14 baseline", "", "", "0.202"),
    ],
    "pan15": [
        ("PAN15 winner (Bagnall), official test set", "0.811", "0.757", "0.614"),
        ("PAN15 baselines, official test set", "", "", "0.409 / 0.404"),
    ],
    "pan13": [],
}
MEASURES = ("auc", "c_at_1", "auc_x_c_at_1")
BEST_BAND = "c_at_1_best_band"  # reported by the task where it has it: the c@1 the best band would give


def default_data_dir() -> Path:
    return Path(os.environ.get("HARNESS_SHARED_DATA", REPO_ROOT.parent / "shared" / "data"))


def only_match(root: Path, pattern: str) -> Path:
    matches = sorted(p for p in root.glob(pattern) if p.is_dir())
    if len(matches) != 1:
        raise SystemExit(f"{root}: expected one folder matching {pattern!r}, found {[str(m) for m in matches]}")
    return matches[0]


def truth_lines(corpus: Path) -> dict[str, str]:
    """truth.txt lines by problem id (BOM, CRLF and blank lines as PAN13 ships them are tolerated)."""
    lines = (corpus / "truth.txt").read_text(encoding="utf-8-sig").splitlines()
    return {line.split()[0]: line.strip() for line in lines if line.split()}


def link_split(corpus: Path, ids: Sequence[str], folder: Path) -> None:
    """`folder/`: links to the chosen problem folders of `corpus` and their truth.txt lines."""
    folder.mkdir(parents=True)
    by_id = truth_lines(corpus)
    for problem_id in ids:
        (folder / problem_id).symlink_to(corpus / problem_id, target_is_directory=True)
    (folder / "truth.txt").write_text("".join(by_id[i] + "\n" for i in ids), encoding="utf-8")


def prepare(key: str, root: Path, work: Path, folds: int, fold_seed: int) -> list[Path]:
    """The data folders (each with train/ and test/) of one corpus: one, or one per fold."""
    _, train_pattern, test_pattern = CORPORA[key]
    train_dir = only_match(root, train_pattern)
    if test_pattern is not None:
        target = work / key  # the genre is read from the corpus folders' names ("pan13", "essays", ...)
        target.mkdir(parents=True)
        for split, corpus in (("train", train_dir), ("test", only_match(root, test_pattern))):
            present = sorted(p.name for p in corpus.iterdir() if p.is_dir())
            if set(truth_lines(corpus)) == set(present):
                (target / split).symlink_to(corpus, target_is_directory=True)
            else:  # PAN13's truth.txt also lists the Greek and Spanish problems, whose folders are not here
                link_split(corpus, present, target / split)
        return [target]
    problems = _load_corpus(train_dir)
    ids = [p.id for p in problems]
    fold_dirs = []
    for index, (train, held) in enumerate(grouped_folds(problem_groups(problems), folds, seed=fold_seed)):
        target = work / f"{key}-fold-{index + 1}"  # "pan15" in the name: the genre is read from it
        link_split(train_dir, [ids[i] for i in train], target / "train")
        link_split(train_dir, [ids[i] for i in held], target / "test")
        fold_dirs.append(target)
    return fold_dirs


def _load_corpus(corpus: Path) -> Any:
    from tasks.pan.folders import read_classic_corpus

    return read_classic_corpus(corpus)[0]


def parse_params(pairs: Sequence[str]) -> dict[str, dict[str, Any]]:
    """`--param SYSTEM:KEY=VALUE` -> {SYSTEM: {KEY: VALUE}}; values are JSON where they parse (as `harness run`)."""
    params: dict[str, dict[str, Any]] = {}
    for pair in pairs:
        system, _, setting = pair.partition(":")
        key, equals, raw = setting.partition("=")
        if not (system and key and equals):
            raise SystemExit(f"--param {pair!r}: expected SYSTEM:KEY=VALUE")
        try:
            value = json.loads(raw)
        except json.JSONDecodeError:
            value = raw
        params.setdefault(system, {})[key] = value
    return params


def param_options(params: dict[str, Any]) -> list[str]:
    """`--param KEY=VALUE` options for `harness run`: strings as they are, other values as JSON."""
    return [option for key, value in params.items()
            for option in ("--param", f"{key}={value if isinstance(value, str) else json.dumps(value)}")]  # fmt: skip


def harness_run(system: str, seed: int, data: Path, out: Path, params: dict[str, Any]) -> dict[str, Any]:
    """One `harness run` in its own process; its result.json, with the run folder."""
    command = [sys.executable, "-m", "harness.cli", "run", "--system", system, "--task", TASK]
    command += ["--data", str(data), "--seed", str(seed), "--out", str(out)]
    command += param_options(params)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(REPO_ROOT)}
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False, cwd=REPO_ROOT)
    if done.returncode != 0:
        raise SystemExit(f"harness run failed: {' '.join(command)}\n{done.stderr[-4000:]}")
    run_dir = run_folder(out, TASK, system, seed, params, data=DataLocation(data))
    result = json.loads((run_dir / "result.json").read_text(encoding="utf-8"))
    result["_run_dir"] = str(run_dir)
    return result


def pooled_scores(results: Sequence[dict[str, Any]], fold_dirs: Sequence[Path]) -> dict[str, float]:
    """The task's measures on the out-of-fold answers of all folds together."""
    task = PanClassicTask()
    answers: dict[str, float] = {}
    truth: dict[str, Any] = {}
    for result, folder in zip(results, fold_dirs, strict=True):
        lines = Path(result["_run_dir"], "answers.jsonl").read_text(encoding="utf-8").splitlines()
        for row in (json.loads(line) for line in lines if line.strip()):
            answers[row["id"]] = row["value"]
        truth.update(task.read_truth(folder / "test"))
    return task.score_truth(answers, truth)


def mean_sd(values: Sequence[float]) -> str:
    values = np.asarray(values, dtype=float)
    sd = values.std(ddof=1) if len(values) > 1 else 0.0
    return f"{values.mean():.3f} ± {sd:.3f}" if len(values) > 1 else f"{values.mean():.3f}"


def measure_system(
    key: str, system: str, seeds: Sequence[int], fold_dirs: Sequence[Path], out: Path, params: dict[str, Any]
) -> dict[str, Any]:
    """Per seed: the scores (fold means and pooled, for cross-validation), shared-text counts and times."""
    per_seed = []
    for seed in seeds:
        results = [harness_run(system, seed, folder, out / folder.name, params) for folder in fold_dirs]
        fold_scores = [r["scores"] for r in results]
        entry = {
            "scores": {
                m: float(np.mean([s[m] for s in fold_scores]))
                for m in (*MEASURES, BEST_BAND)
                if all(m in s for s in fold_scores)
            },
            "fold_main": [s["auc_x_c_at_1"] for s in fold_scores],
            "shared_texts": [r["task"]["data"].get("shared_texts") for r in results],
            "sharing_problems": [r["task"]["data"].get("test_problems_sharing_a_text") for r in results],
            "n_train": [r["task"]["data"]["train"]["size"] for r in results],
            "n_test": [r["task"]["data"]["test"]["size"] for r in results],
            "fit_s": sum(r["timings_s"]["fit"] for r in results),
            "evaluate_s": sum(r["timings_s"]["evaluate"] for r in results),
        }
        if len(fold_dirs) > 1:
            entry["pooled"] = pooled_scores(results, fold_dirs)
        per_seed.append(entry)
        print(f"{key} {system} seed {seed}: {json.dumps(entry)}", file=sys.stderr, flush=True)
    label = system + "".join(f" {k}={json.dumps(v)}" for k, v in params.items())
    return {"system": label, "seeds": list(seeds), "runs": per_seed}


def table(key: str, measured: Sequence[dict[str, Any]], folds: int) -> list[str]:
    """One Markdown table: our systems (best first), then the published anchors.

    Where the task reports the best-band c@1 (the c@1 the test scores would allow with the best abstain
    band, an upper bound), it stands beside the c@1 obtained, so the calibration gap is visible.
    """
    cv = CORPORA[key][2] is None
    label = CORPORA[key][0]
    band = all(BEST_BAND in r["scores"] for item in measured for r in item["runs"])
    measures = ("auc", "c_at_1", BEST_BAND, "auc_x_c_at_1") if band else MEASURES
    names = {"auc": "AUC", "c_at_1": "c@1", BEST_BAND: "c@1 best band", "auc_x_c_at_1": "AUC x c@1"}
    views = [(" (fold mean)", "scores"), (" (pooled)", "pooled")] if cv else [("", "scores")]
    columns = [names[m] + suffix for suffix, _ in views for m in measures]
    columns += ["AUC x c@1 per fold (1st seed)"] if cv else []
    head = f"| {label}: system | seeds | {' | '.join(columns)} | fit s | predict s |"
    rule = "|---|---|" + "---:|" * len(measures) * len(views) + ("---|" if cv else "") + "---:|---:|"
    rows = []
    order = sorted(measured, key=lambda m: -np.mean([r["scores"]["auc_x_c_at_1"] for r in m["runs"]]))
    for item in order:
        runs = item["runs"]
        cells = [mean_sd([r[view][m] for r in runs]) for _, view in views for m in measures]
        if cv:
            cells.append(" ".join(f"{v:.2f}" for v in runs[0]["fold_main"]))
        times = f"{np.mean([r['fit_s'] for r in runs]):.1f} | {np.mean([r['evaluate_s'] for r in runs]):.1f}"
        seeds = ",".join(map(str, item["seeds"]))
        rows.append(f"| {item['system']} | {seeds} | {' | '.join(cells)} | {times} |")
    for name, auc, c1, main in ANCHORS[key]:
        published = {"auc": auc, "c_at_1": c1, BEST_BAND: "", "auc_x_c_at_1": main}
        cells = [published[m] for m in measures] + [""] * (len(columns) - len(measures))
        rows.append(f"| *published: {name}* | | {' | '.join(cells)} | | |")
    return [head, rule, *rows]


def notes(key: str, measured: Sequence[dict[str, Any]], folds: int, fold_seed: int) -> list[str]:
    first = measured[0]["runs"][0]
    label = CORPORA[key][0]
    shared = ", ".join(map(str, first["shared_texts"]))
    sharing = ", ".join(map(str, first["sharing_problems"]))
    if CORPORA[key][2] is None:
        return [
            f"- {label}: text-disjoint {folds}-fold cross-validation over its {sum(first['n_test'])} training "
            f"problems (fold seed {fold_seed}; held-out folds of {', '.join(map(str, first['n_test']))} problems); "
            f"texts shared between a fold's train and held-out part: {shared}. Not PAN15's official test set "
            "(not in the tarball): the published rows are on that test set and are not directly comparable.",
        ]
    return [
        f"- {label}: {first['n_train'][0]} train / {first['n_test'][0]} test problems (PAN's own split); "
        f"texts in both (normalised-text hash): {shared}, held by {sharing} of the test problems.",
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=default_data_dir(), help=f"folder holding {TARBALLS}")
    present = [name for name in BASELINES if name in SYSTEMS]
    parser.add_argument("--systems", default=",".join(present), help="comma-separated registry names")
    parser.add_argument("--seeds", default="0", help="comma-separated system seeds")
    parser.add_argument("--corpora", default="essays,novels,pan15,pan13", help=f"comma-separated: {', '.join(CORPORA)}")
    parser.add_argument("--folds", type=int, default=5, help="folds of the PAN15 cross-validation")
    parser.add_argument("--fold-seed", type=int, default=0, help="seed of the PAN15 fold assignment")
    parser.add_argument("--out", type=Path, help="keep the runs here (default: a temporary folder)")
    parser.add_argument(
        "--param", action="append", default=[], help="SYSTEM:KEY=VALUE, a system parameter as `harness run --param`"
    )
    args = parser.parse_args(argv)
    systems = [n.strip() for n in args.systems.split(",") if n.strip()]
    unknown = [n for n in systems if n not in SYSTEMS]
    if unknown:
        raise SystemExit(f"unknown systems {unknown}; registered: {', '.join(SYSTEMS)}")
    corpora = [c.strip() for c in args.corpora.split(",") if c.strip()]
    if [c for c in corpora if c not in CORPORA]:
        raise SystemExit(f"unknown corpora in {corpora}; choose from {', '.join(CORPORA)}")
    seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
    params = parse_params(args.param)
    missing = [name for name in TARBALLS if not (args.data_dir / name).is_file()]
    if missing:
        raise SystemExit(f"{args.data_dir}: {missing} not found (set HARNESS_SHARED_DATA or pass --data-dir)")
    output: list[str] = []
    with tempfile.TemporaryDirectory(prefix="verification-pan-") as tmp:
        root = Path(tmp) / "extracted"
        for name in TARBALLS:
            with tarfile.open(args.data_dir / name) as archive:
                archive.extractall(root / name.split(".")[0], filter="data")
        out = args.out or Path(tmp) / "runs"
        for key in corpora:
            fold_dirs = prepare(key, root, Path(tmp) / "corpora", args.folds, args.fold_seed)
            measured = [
                measure_system(key, system, seeds, fold_dirs, out / key, params.get(system, {})) for system in systems
            ]
            output += [*table(key, measured, args.folds), "", *notes(key, measured, args.folds, args.fold_seed), ""]
            print("\n".join(output[-(len(measured) + len(ANCHORS[key]) + 5) :]), file=sys.stderr, flush=True)
    print("\n".join(output))
    print(
        f"- `harness run --task {TASK}` per (corpus, system, seed), default parameters unless named beside the "
        f"system; seeds {args.seeds} (mean ± sample sd where more than one); times are the runs' own fit and "
        "evaluate seconds (summed over folds)."
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
