"""benchmarks/verification_all.py on real data: cells are the runs' own figures, it resumes, anchors sit in place."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from statistics import mean, stdev

import pytest
from helpers.paths import REPO, SHARED_DATA

SCRIPT = REPO / "benchmarks" / "verification_all.py"


def _bench(out: Path, *extra: str) -> str:
    command = [sys.executable, str(SCRIPT), "--out", str(out), "--data-dir", str(SHARED_DATA)]
    command += ["--systems", "length_ratio", "--sets", "pan13", "cmcc", "--seeds", "0", "1", *extra]
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def _row(summary: str, title: str, label: str) -> list[str]:
    """The cells of `label`'s row in the table under `title`."""
    table = summary.split(title, 1)[1].split("\n\n", 2)[1]
    rows = [line for line in table.splitlines() if line.startswith(f"| {label} |")]
    assert len(rows) == 1, table
    return [cell.strip() for cell in rows[0].strip("|").split("|")][1:]


def _scores(out: Path, task: str, dataset: str, seed: int) -> dict[str, float]:
    path = out / "runs" / task / dataset / "length_ratio" / f"seed-{seed}" / "result.json"
    return json.loads(path.read_text(encoding="utf-8"))["scores"]


@pytest.fixture(scope="module")
def bench(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    for name in ("pan13-15-av-en.tar.gz", "pan13-av-en.tar.gz", "cmcc-cross-genre.tar.gz"):
        if not (SHARED_DATA / name).is_file():
            pytest.skip(f"{name} not found in {SHARED_DATA} (set HARNESS_SHARED_DATA)")
    out = tmp_path_factory.mktemp("verification-all")
    return out, _bench(out)


def test_cells_are_the_mean_and_sd_of_the_runs(bench: tuple[Path, str]) -> None:
    out, summary = bench
    pan13 = [_scores(out, "pan-classic", "pan13", seed) for seed in (0, 1)]
    cmcc = [_scores(out, "pan23", f"cmcc-seed{seed}", seed) for seed in (0, 1)]
    for title, pan13_measure, cmcc_measure in (("Main score", "auc_x_c_at_1", "overall"), ("**AUC**", "auc", "auc")):
        values = ([s[pan13_measure] for s in pan13], [s[cmcc_measure] for s in cmcc])
        expected = [f"{mean(v):.3f} ± {stdev(v):.3f}" for v in values]
        assert _row(summary, title, "length_ratio") == expected
    # each CMCC seed is its own set (other authors in its test split), so its figures differ
    assert cmcc[0]["auc"] != cmcc[1]["auc"]


def test_cmcc_type_pairs_are_the_mean_over_seeds(bench: tuple[Path, str]) -> None:
    out, summary = bench
    cmcc = [_scores(out, "pan23", f"cmcc-seed{seed}", seed) for seed in (0, 1)]
    header = summary.split("AUC per discourse-type pair", 1)[1].split("\n\n", 2)[1].splitlines()[0]
    pairs = [cell.strip() for cell in header.strip("|").split("|")][1:]
    assert len(pairs) == 15 and all("+" in pair for pair in pairs)  # CMCC's 6 genres: 15 cross-genre pairs
    cells = _row(summary, "AUC per discourse-type pair", "length_ratio")
    for pair, cell in zip(pairs, cells, strict=True):
        values = [s[f"{pair}/auc"] for s in cmcc if f"{pair}/auc" in s]
        assert cell == f"{mean(values):.2f}"


def test_anchors_stand_in_their_own_column_only(bench: tuple[Path, str]) -> None:
    out, _ = bench
    command = [
        sys.executable,
        str(SCRIPT),
        "--out",
        str(out),
        "--data-dir",
        str(SHARED_DATA),
        "--systems",
        "length_ratio",
    ]
    command.append("--collect")
    summary = subprocess.run(command, capture_output=True, text=True, check=True, timeout=300).stdout
    # --collect over every set: the ones not run stay empty, PAN14 essays' winner sits in the essays column
    cells = _row(summary, "Main score", "*published (PAN14 essays): PAN14 winner (Frery et al.)*")
    header = summary.split("Main score", 1)[1].split("\n\n", 2)[1].splitlines()[0]
    columns = [cell.strip() for cell in header.strip("|").split("|")][1:]
    assert dict(zip(columns, cells, strict=True)) == {c: ("0.513" if c == "PAN14 essays" else "") for c in columns}
    assert _row(summary, "Main score", "length_ratio")[columns.index("PAN14 essays")] == ""


def test_a_second_call_resumes_without_running_again(bench: tuple[Path, str]) -> None:
    out, summary = bench
    records = sorted((out / "bench").glob("*.json"))
    assert len(records) == 4  # 2 sets x 2 seeds
    before = {path: path.stat().st_mtime_ns for path in records}
    assert _bench(out) == summary
    assert {path: path.stat().st_mtime_ns for path in records} == before
