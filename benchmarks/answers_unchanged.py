"""Answers unchanged by a restructuring: every registered system, run through the command line, before and after.

A restructuring that moves code between modules must change no answer. This script runs `harness run` (seed 0)
for every system registered today on small slices of the real data in ../shared/data, each run in a child process
with its working folder and PYTHONPATH set to the checkout being measured, so that the checkout's own code answers.
It never imports the project: module paths may differ between the two checkouts it compares.

    python benchmarks/answers_unchanged.py run --checkout DIR --out OUT [--data ../shared/data] [--systems a,b]
    python benchmarks/answers_unchanged.py compare OUT_A OUT_B

`run` prepares OUT/data (PAN13 English train 10 / test 30 problems; a CMCC cross-genre pan23 set built by the
checkout's own `harness pairs --from folders`; all posts of the forum authors chosen by a hash of the name), runs
every (system, task) into OUT/runs/<system>-<task>/ and records exit code, wall time and the paths of result.json and
answers.jsonl in OUT/runs.json (`--systems` runs only those and keeps the other records). `compare` matches the runs
of two OUTs by (system, task), compares answers.jsonl and details.jsonl row by row (exact, every value) and the
scores, main score and curves of result.json (exact float equality, NaN equal to NaN; timings, commit, versions and
paths are ignored), prints a table and exits 1 if anything differs or a run is missing or failed.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import math
import os
import shutil
import subprocess
import sys
import tarfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
RECORD = "runs.json"

VERIFICATION = (
    "cngdist",
    "compressor",
    "tfidf",
    "length_ratio",
    "unmasking",
    "pair_features",
    "impostors",
    "siamese_bilstm",
    "stacked",
    "char_lm",
)
PAN23 = ("cngdist", "length_ratio")  # also on the CMCC cross-genre set
DARKWEB = ("nbcsauthor", "sysml", "episode_cnn", "episode_tfidf", "episode_fusion", "episode_encoder")
REDDIT = ("reddit_tfidf", "reddit_fusion", "varlen_linker", "iur_fixed", "varlen_avg", "reddit_encoder")
SYSTEMS = VERIFICATION + DARKWEB + REDDIT

# forum slice: all posts of this many authors with 40-300 posts each, first by sha256 of the name
FORUM_AUTHORS = 100
FORUM_MIN_POSTS, FORUM_MAX_POSTS = 40, 300
CMCC_PATTERN = r"(?P<discourse_type>[^/]+)/S(?P<author>\d+)[A-Z]\d(?P<topic>[A-Z])\d\.txt"
CMCC_PAIRS = 100  # train 50, test 50

DARKWEB_TASK = {"max_authors": 75, "multitask": True}
REDDIT_TASK = {
    "ranking_query_size": 8,
    "ranking_target_size": 8,
    "linking_query_size": 16,
    "linking_min_query_posts": 8,
    "linking_target_sizes": [1, 2, 4, 8],
    "linking_target_size": 4,
    "linking_min_subreddit_queries": 5,
}

# tiny settings of the slow systems (from their tests); every neural system on the CPU
SMALL_PARAMS: dict[str, dict[str, Any]] = {
    "siamese_bilstm": {
        "encoder.max_tokens": 24,
        "head.hidden_size": 8,
        "training.epochs": 2,
        "training.batch_size": 8,
        "training.steps_per_epoch": 3,
        "calibration.validation_share": 0.4,
        "calibration.grid_step": 0.05,
        "device": "cpu",
    },
    "char_lm": {
        "preset.embedding": 16,
        "preset.hidden": 48,
        "preset.seq_len": 64,
        "preset.batch_size": 32,
        "preset.epochs": 2,
        "preset.max_text_chars": 2500,
        "preset.window": 128,
        "preset.warmup": 16,
        "preset.head_rows": 2500,
        "preset.head_steps": 25,
        "preset.ref_chars": 500,
        "preset.max_refs": 40,
        "device": "cpu",
    },
    "stacked": {"member_params.pair_features.trees": 20},
}
_EPISODE_TINY = {
    "encoder.vocab_size": 300,
    "encoder.max_tokens": 16,
    "encoder.token_dim": 8,
    "encoder.filters": 4,
    "encoder.text_dim": 8,
    "encoder.time_dim": 4,
    "encoder.context_dim": 4,
    "encoder.output_dim": 8,
    "encoder.layers": 1,
    "encoder.heads": 2,
    "encoder.ff_dim": 16,
    "graph_init.walks_per_node": 1,
    "training.epochs": 2,
    "training.batch_size": 8,
    "device": "cpu",
}
_VARLEN_TINY = {
    "encoder.vocab_size": 400,
    "encoder.token_dim": 16,
    "encoder.filters": 16,
    "encoder.subreddit_dim": 8,
    "encoder.attention_dim": 32,
    "encoder.embedding_dim": 32,
    "training.epochs": 1,
    "training.steps_per_epoch": 4,
    "training.authors_per_batch": 8,
    "training.samples_per_author": 2,
    "loss": "topk",
    "loss.top_k": 2,
    "device": "cpu",
    "cpu_threads": 1,
}
_ENCODER_TINY = {"encoder.max_tokens": 32, "training.epochs": 1, "device": "cpu"}  # the default MiniLM, offline
SMALL_PARAMS.update({name: _EPISODE_TINY for name in ("nbcsauthor", "sysml", "episode_cnn")})
SMALL_PARAMS.update({name: _VARLEN_TINY for name in ("varlen_linker", "iur_fixed", "varlen_avg")})
SMALL_PARAMS.update({name: _ENCODER_TINY for name in ("episode_encoder", "reddit_encoder")})

# result.json parts compared exactly; everything else (timings, commit, versions, paths, checksums) is not
COMPARED_RESULT_KEYS = ("scores", "main_score", "curves")
ITEM_FILES = ("answers.jsonl", "details.jsonl")


@dataclass(frozen=True)
class Run:
    system: str
    task: str
    data: tuple[str, ...]  # the data options of `harness run`
    params: dict[str, Any] = field(default_factory=dict)
    task_params: dict[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> str:
        return f"{self.system}-{self.task}"


def _value(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))


def harness_env(checkout: Path, out: Path) -> dict[str, str]:
    """The environment of every child: the checkout's code first, offline, one thread, caches inside OUT."""
    env = dict(os.environ)
    env.update(
        PYTHONPATH=str(checkout),
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        HARNESS_CACHE_DIR=str(out / "cache"),
        HARNESS_PROGRESS_INTERVAL="120",
        OMP_NUM_THREADS="1",
        MKL_NUM_THREADS="1",
        TOKENIZERS_PARALLELISM="false",
        PYTHONHASHSEED="0",
    )
    return env


def harness(checkout: Path, out: Path, *args: str, log: Path) -> tuple[int, float]:
    """`python -m harness.cli ARGS` in the checkout; output to `log`; returns (exit code, wall seconds)."""
    start = time.perf_counter()
    with log.open("w", encoding="utf-8") as handle:
        code = subprocess.run(
            [sys.executable, "-m", "harness.cli", *args],
            cwd=checkout,
            env=harness_env(checkout, out),
            stdout=handle,
            stderr=subprocess.STDOUT,
            check=False,
        ).returncode
    return code, time.perf_counter() - start


def check_imports_from(checkout: Path, out: Path) -> str:
    """The folder `harness` is imported from in a child (must be the checkout, not the installed copy)."""
    probe = "import harness, os; print(os.path.dirname(os.path.dirname(os.path.realpath(harness.__file__))))"
    found = subprocess.run(
        [sys.executable, "-c", probe], cwd=checkout, env=harness_env(checkout, out), capture_output=True, text=True
    )
    where = found.stdout.strip()
    if found.returncode != 0 or Path(where).resolve() != checkout.resolve():
        raise SystemExit(f"harness is imported from {where or found.stderr.strip()!r}, not from {checkout}")
    return where


# ---- data ----


def _extract(archive: Path, folder: Path) -> None:
    with tarfile.open(archive) as tar:
        tar.extractall(folder, filter="data")


def prepare_pan13(shared: Path, data: Path) -> tuple[Path, Path]:
    """PAN13 English train (10 problems) and test (30 problems) corpus folders, as distributed, except that truth.txt
    lists only the problems present (PAN13's also lists Greek and Spanish problems whose folders are not here)."""
    raw, root = data / "pan13-raw", data / "pan13"
    if not raw.is_dir():
        _extract(shared / "pan13-av-en.tar.gz", raw)
    corpora = []
    for split in ("train", "test"):
        (corpus,) = sorted((raw / split).glob("pan13-*"))
        target = root / corpus.name
        if not (target / "truth.txt").is_file():
            present = sorted(p.name for p in corpus.iterdir() if p.is_dir())
            for problem in present:
                shutil.copytree(corpus / problem, target / problem, dirs_exist_ok=True)
            lines = (corpus / "truth.txt").read_text(encoding="utf-8-sig").split()
            truth = dict(zip(lines[::2], lines[1::2], strict=True))
            (target / "truth.txt").write_text("".join(f"{i} {truth[i]}\n" for i in present), encoding="utf-8")
        corpora.append(target)
    return corpora[0], corpora[1]


def prepare_cmcc(shared: Path, data: Path, checkout: Path, out: Path) -> Path:
    """The CMCC cross-genre pan23 set, built by the checkout's own `harness pairs --from folders`."""
    pairs = data / "cmcc-pairs"
    if (pairs / "test" / "truth.jsonl").is_file():
        return pairs
    if not (data / "cmcc").is_dir():
        _extract(shared / "cmcc-cross-genre.tar.gz", data)
    args = ["pairs", "--from", "folders", str(data / "cmcc"), str(pairs), "--pattern", CMCC_PATTERN]
    args += ["--encoding", "cp1252", "--pairs", str(CMCC_PAIRS), "--seed", "0", "--overwrite"]
    code, _ = harness(checkout, out, *args, log=data / "cmcc-pairs.log")
    if code != 0:
        raise SystemExit(f"harness pairs failed ({code}): see {data / 'cmcc-pairs.log'}")
    return pairs


def prepare_forum(shared: Path, data: Path) -> Path:
    """`forum/posts.jsonl`: every post of FORUM_AUTHORS real authors with 40-300 posts, first by sha256 of the name."""
    folder = data / "forum"
    target = folder / "posts.jsonl"
    if target.is_file():
        return folder
    with gzip.open(shared / "forum-posts" / "posts.jsonl.gz", "rt", encoding="utf-8") as handle:
        lines = handle.readlines()
    names = [json.loads(line)["author"] for line in lines]
    counts = Counter(names)
    eligible = [a for a, n in counts.items() if FORUM_MIN_POSTS <= n <= FORUM_MAX_POSTS]
    chosen = set(sorted(eligible, key=lambda a: hashlib.sha256(a.encode()).digest())[:FORUM_AUTHORS])
    folder.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".part")
    partial.write_text("".join(line for line, name in zip(lines, names, strict=True) if name in chosen), "utf-8")
    partial.rename(target)
    return folder


def plan(shared: Path, out: Path, checkout: Path, systems: list[str]) -> list[Run]:
    """Every (system, task) run, its data prepared under OUT/data."""
    data = out / "data"
    data.mkdir(parents=True, exist_ok=True)
    runs: list[Run] = []
    if any(s in VERIFICATION for s in systems):
        train, test = prepare_pan13(shared, data)
        for system in VERIFICATION:
            classic = ("--train", str(train), "--test", str(test))
            runs.append(Run(system, "pan-classic", classic, SMALL_PARAMS.get(system, {})))
    if any(s in PAN23 for s in systems):
        pairs = prepare_cmcc(shared, data, checkout, out)
        runs += [Run(system, "pan23", ("--data", str(pairs))) for system in PAN23]
    if any(s in DARKWEB + REDDIT for s in systems):
        forum = prepare_forum(shared, data)
        for system in DARKWEB:
            runs.append(Run(system, "darkweb", ("--data", str(forum)), SMALL_PARAMS.get(system, {}), DARKWEB_TASK))
        for system in REDDIT:
            runs.append(Run(system, "reddit", ("--data", str(forum)), SMALL_PARAMS.get(system, {}), REDDIT_TASK))
    return [run for run in runs if run.system in systems]


def execute(run: Run, checkout: Path, out: Path) -> dict[str, Any]:
    """One `harness run` (seed 0, --overwrite) into OUT/runs/<system>-<task>/; its record."""
    folder = out / "runs" / run.key
    folder.mkdir(parents=True, exist_ok=True)
    args = ["run", "--system", run.system, "--task", run.task, *run.data, "--seed", "0", "--out", str(folder)]
    args += [item for key, value in run.params.items() for item in ("--param", f"{key}={_value(value)}")]
    args += [item for key, value in run.task_params.items() for item in ("--task-param", f"{key}={_value(value)}")]
    args.append("--overwrite")
    code, wall = harness(checkout, out, *args, log=folder / "harness.log")
    results = sorted(folder.glob("**/seed-0/result.json"))
    result = results[0] if len(results) == 1 else None
    answers = result.parent / "answers.jsonl" if result else None
    return {
        "system": run.system,
        "task": run.task,
        "exit_code": code,
        "wall_s": round(wall, 2),
        "result": str(result) if result else None,
        "answers": str(answers) if answers and answers.is_file() else None,
        "log": str(folder / "harness.log"),
        "command": ["harness", *args],
    }


def command_run(args: argparse.Namespace) -> int:
    checkout, out, shared = args.checkout.resolve(), args.out.resolve(), args.data.resolve()
    systems = SYSTEMS if not args.systems else [s.strip() for s in args.systems.split(",") if s.strip()]
    unknown = sorted(set(systems) - set(SYSTEMS))
    if unknown:
        raise SystemExit(f"unknown system(s) {', '.join(unknown)}; known: {', '.join(SYSTEMS)}")
    out.mkdir(parents=True, exist_ok=True)
    imported_from = check_imports_from(checkout, out)
    record_path = out / RECORD
    record = json.loads(record_path.read_text(encoding="utf-8")) if record_path.is_file() else {"runs": {}}
    commit = subprocess.run(["git", "-C", str(checkout), "rev-parse", "HEAD"], capture_output=True, text=True)
    dirty = subprocess.run(["git", "-C", str(checkout), "status", "--porcelain"], capture_output=True, text=True)
    revision = commit.stdout.strip()[:10] + ("+changes" if dirty.stdout.strip() else "")
    record.update(checkout=str(checkout), commit=revision, imported_from=imported_from)
    start = time.perf_counter()
    failed = []
    for run in plan(shared, out, checkout, list(systems)):
        print(f"{run.system:16} {run.task:12} ...", end=" ", flush=True)
        entry = execute(run, checkout, out)
        record["runs"][run.key] = entry
        record_path.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
        ok = entry["exit_code"] == 0 and entry["result"]
        print(f"exit {entry['exit_code']}  {entry['wall_s']:7.1f} s" + ("" if ok else f"  FAILED: {entry['log']}"))
        if not ok:
            failed.append(run.key)
    print(f"total {time.perf_counter() - start:.0f} s; record: {record_path}")
    if failed:
        print(f"failed: {', '.join(failed)}")
    return 1 if failed else 0


# ---- compare ----


def _same(a: Any, b: Any) -> bool:
    """Exact equality of JSON values; NaN equals NaN, and an int equals the float of the same value (1 == 1.0)."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    numbers = all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in (a, b))
    return a == b if numbers else type(a) is type(b) and a == b


def _first_difference(a: Any, b: Any, where: str = "") -> str | None:
    """Where a and b first differ (a dotted path), or None where they are the same (`_same`)."""
    if isinstance(a, dict) and isinstance(b, dict):
        if a.keys() != b.keys():
            return f"{where} keys"
        found = (_first_difference(a[k], b[k], f"{where}.{k}" if where else k) for k in a)
        return next((w for w in found if w is not None), None)
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return f"{where} length"
        found = (_first_difference(x, y, f"{where}[{i}]") for i, (x, y) in enumerate(zip(a, b, strict=True)))
        return next((w for w in found if w is not None), None)
    return None if _same(a, b) else where


def _max_diff(a: Any, b: Any) -> float:
    """The largest |difference| of the numbers at the same places of a and b (inf where a shape differs)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return 0.0 if a == b else math.inf
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        if math.isnan(a) or math.isnan(b):
            return 0.0 if math.isnan(a) and math.isnan(b) else math.inf
        return abs(a - b)
    if isinstance(a, dict) and isinstance(b, dict):
        if a.keys() != b.keys():
            return math.inf
        return max((_max_diff(a[k], b[k]) for k in a), default=0.0)
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return math.inf
        return max((_max_diff(x, y) for x, y in zip(a, b, strict=True)), default=0.0)
    return 0.0 if a == b else math.inf


def _rows(path: Path) -> list[Any]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def compare_run(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """Items and scores of one (system, task) in two OUTs."""
    row: dict[str, Any] = {"items": 0, "identical": False, "answers_diff": math.nan, "scores_diff": math.nan}
    problems = []
    for side, entry in (("A", a), ("B", b)):
        if entry["exit_code"] != 0 or not entry["result"] or not Path(entry["result"]).is_file():
            problems.append(f"{side} failed (exit {entry['exit_code']})")
    if problems:
        row["note"] = "; ".join(problems)
        return row
    dir_a, dir_b = Path(a["result"]).parent, Path(b["result"]).parent
    answers_diff, same, notes = 0.0, True, []
    for name in ITEM_FILES:
        file_a, file_b = dir_a / name, dir_b / name
        if not file_a.is_file() and not file_b.is_file():
            continue
        if not (file_a.is_file() and file_b.is_file()):
            same, answers_diff = False, math.inf
            notes.append(f"{name} on one side only")
            continue
        rows_a, rows_b = _rows(file_a), _rows(file_b)
        if name == "answers.jsonl" or not row["items"]:
            row["items"] = len(rows_a)
        where = _first_difference(rows_a, rows_b, "rows")
        if where is not None:
            same = False
            notes.append(f"{name} {where} differs")
        answers_diff = max(answers_diff, _max_diff(rows_a, rows_b))
    result_a = json.loads(Path(a["result"]).read_text(encoding="utf-8"))
    result_b = json.loads(Path(b["result"]).read_text(encoding="utf-8"))
    scores_diff = 0.0
    for key in COMPARED_RESULT_KEYS:
        part_a, part_b = result_a.get(key), result_b.get(key)
        where = _first_difference(part_a, part_b, key)
        if where is not None:
            same = False
            notes.append(f"result.json {where} differs")
        scores_diff = max(scores_diff, _max_diff(part_a, part_b))
    checksums = [r.get("task", {}).get("data", {}) for r in (result_a, result_b)]
    if _digest(checksums[0]) != _digest(checksums[1]):
        notes.append("data checksums differ")
    weights_same, weights_diff, weight_notes = compare_checkpoints(dir_a / "checkpoint", dir_b / "checkpoint")
    notes += weight_notes
    row.update(identical=same, answers_diff=answers_diff, scores_diff=scores_diff, note="; ".join(notes))
    row.update(checkpoint="same" if weights_same else "DIFF", weights_diff=weights_diff)
    return row


# checkpoint state keys that hold timings, throughput, paths or cache statistics, not what was fitted
VOLATILE_STATE = (
    "seconds",
    "per_s",
    "timings",
    "rss",
    "_mb",
    "folder",
    "path",
    "feature_stats",
    "device",
    "world_size",
)
_NUMPY_DTYPES = {"F64": "<f8", "F32": "<f4", "F16": "<f2", "I64": "<i8", "I32": "<i4", "I16": "<i2", "I8": "i1"}


def _tensors(path: Path) -> dict[str, tuple[str, list[int], bytes]]:
    """The tensors of a safetensors file by name: (dtype, shape, raw bytes); read without the project's code."""
    raw = path.read_bytes()
    size = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8 : 8 + size])
    body = raw[8 + size :]
    return {
        name: (info["dtype"], info["shape"], body[info["data_offsets"][0] : info["data_offsets"][1]])
        for name, info in header.items()
        if name != "__metadata__"
    }


def _tensor_diff(a: tuple[str, list[int], bytes], b: tuple[str, list[int], bytes]) -> float:
    if a[:2] != b[:2]:
        return math.inf
    if a[2] == b[2]:
        return 0.0
    import numpy as np

    dtype = _NUMPY_DTYPES.get(a[0])
    if dtype is None:
        return math.inf
    x, y = np.frombuffer(a[2], dtype=dtype).astype(np.float64), np.frombuffer(b[2], dtype=dtype).astype(np.float64)
    return float(np.max(np.abs(x - y))) if x.size else 0.0


def _stable(value: Any) -> Any:
    """A checkpoint state without its volatile keys (timings, paths, devices, cache statistics)."""
    if isinstance(value, dict):
        return {k: _stable(v) for k, v in value.items() if not any(word in k for word in VOLATILE_STATE)}
    if isinstance(value, list):
        return [_stable(v) for v in value]
    return value


def compare_checkpoints(dir_a: Path, dir_b: Path) -> tuple[bool, float, list[str]]:
    """Whether two checkpoint folders hold the same fitted system: every tensor of every weights.safetensors (exact
    bytes) and every config.json's params and state (volatile keys left out); (same, max |d| of weights, notes)."""
    files_a = {p.relative_to(dir_a).as_posix() for p in dir_a.rglob("*") if p.is_file()} if dir_a.is_dir() else set()
    files_b = {p.relative_to(dir_b).as_posix() for p in dir_b.rglob("*") if p.is_file()} if dir_b.is_dir() else set()
    notes = [f"checkpoint file {name} on one side only" for name in sorted(files_a ^ files_b)]
    diff = 0.0
    for name in sorted(files_a & files_b):
        if name.endswith(".safetensors"):
            tensors_a, tensors_b = _tensors(dir_a / name), _tensors(dir_b / name)
            if tensors_a.keys() != tensors_b.keys():
                notes.append(f"{name}: tensor names differ")
                diff = math.inf
                continue
            worst = max((_tensor_diff(tensors_a[t], tensors_b[t]) for t in tensors_a), default=0.0)
            if worst or any(tensors_a[t] != tensors_b[t] for t in tensors_a):
                notes.append(f"{name} differs")
            diff = max(diff, worst)
        elif name.endswith("config.json"):
            config_a = json.loads((dir_a / name).read_text(encoding="utf-8"))
            config_b = json.loads((dir_b / name).read_text(encoding="utf-8"))
            for part in ("params", "state"):
                where = _first_difference(_stable(config_a.get(part)), _stable(config_b.get(part)), part)
                if where is not None:
                    notes.append(f"{name} {where or part} differs")
    return not notes, diff, notes


def _digest(data: Any) -> list[str]:
    """The checksums of a result's task data (paths left out)."""
    found: list[str] = []
    if isinstance(data, dict):
        for key, value in sorted(data.items()):
            if isinstance(value, str) and value.startswith("sha256:"):
                found.append(f"{key}={value}")
            else:
                found += _digest(value)
    elif isinstance(data, list):
        for value in data:
            found += _digest(value)
    return found


def _fmt(value: float) -> str:
    return "-" if math.isnan(value) else f"{value:.3g}"


def command_compare(args: argparse.Namespace) -> int:
    records = []
    for out in (args.out_a, args.out_b):
        path = out / RECORD
        if not path.is_file():
            raise SystemExit(f"{path} not found: run `answers_unchanged.py run --out {out}` first")
        records.append(json.loads(path.read_text(encoding="utf-8")))
    runs_a, runs_b = records[0]["runs"], records[1]["runs"]
    for side, out, record in (("A", args.out_a, records[0]), ("B", args.out_b, records[1])):
        print(f"{side}: {out} (checkout {record.get('checkout', '?')}, commit {record.get('commit', '?')})")
    header = (
        f"{'system':16} {'task':12} {'items':>6} {'identical':9} {'max|d| answers':>15} {'max|d| scores':>14} "
        f"{'checkpoint':10} {'max|d| weights':>14}  note"
    )
    print(header)
    print("-" * len(header))
    differs = checkpoints = 0
    for key in sorted(set(runs_a) | set(runs_b), key=lambda k: _order(runs_a.get(k) or runs_b[k])):
        entry = runs_a.get(key) or runs_b[key]
        if key not in runs_a or key not in runs_b:
            row = {"items": 0, "identical": False, "answers_diff": math.nan, "scores_diff": math.nan}
            row["note"] = f"only in {'A' if key in runs_a else 'B'}"
        else:
            row = compare_run(runs_a[key], runs_b[key])
        differs += not row["identical"]
        checkpoints += row.get("checkpoint") == "DIFF"
        print(
            f"{entry['system']:16} {entry['task']:12} {row['items']:6d} {'yes' if row['identical'] else 'NO':9} "
            f"{_fmt(row['answers_diff']):>15} {_fmt(row['scores_diff']):>14} {row.get('checkpoint', '-'):10} "
            f"{_fmt(row.get('weights_diff', math.nan)):>14}  {row.get('note', '')}".rstrip()
        )
    total = len(set(runs_a) | set(runs_b))
    print(
        f"{total - differs} of {total} runs give identical answers and scores"
        + (f"; {differs} differ" if differs else "")
    )
    if checkpoints:
        print(
            f"{checkpoints} run(s) with another fitted checkpoint (shown only: the exit status is answers and scores)"
        )
    return 1 if differs else 0


def _order(entry: dict[str, Any]) -> tuple[int, int]:
    tasks = ("pan-classic", "pan23", "darkweb", "reddit")
    return tasks.index(entry["task"]) if entry["task"] in tasks else len(tasks), SYSTEMS.index(entry["system"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="run every system on the checkout; record under OUT")
    run.add_argument("--checkout", type=Path, required=True, help="the checkout whose code runs")
    run.add_argument("--out", type=Path, required=True, help="where data, runs and runs.json go")
    default_data = Path(os.environ.get("HARNESS_SHARED_DATA", REPO_ROOT.parent / "shared" / "data"))
    run.add_argument("--data", type=Path, default=default_data, help="the shared real data (default: %(default)s)")
    run.add_argument("--systems", default="", help="comma-separated: run only these (the others' records are kept)")
    compare = commands.add_parser("compare", help="compare the answers and scores of two OUTs; exit 1 if any differ")
    compare.add_argument("out_a", type=Path)
    compare.add_argument("out_b", type=Path)
    args = parser.parse_args(argv)
    return command_run(args) if args.command == "run" else command_compare(args)


if __name__ == "__main__":
    sys.exit(main())
