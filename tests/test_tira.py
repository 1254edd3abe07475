"""TIRA mode without a container: the entry script, odd inputs, and the checks of tira/build-and-run-here.sh.

The container itself is built and run by `tira/build-and-run-here.sh` (CI runs it after pytest).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli import main

REPO = Path(__file__).resolve().parent.parent
SAMPLE = REPO / "samples" / "pan23-format-sample"
TIRA = REPO / "tira"


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.output


def write_jsonl(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")


def read_ids(path: Path) -> list[str]:
    return [json.loads(line)["id"] for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A cngdist checkpoint fitted on the format sample, as the image bakes one in."""
    out = tmp_path_factory.mktemp("runs")
    code, output = invoke("run", "--system", "cngdist", "--task", "pan23", "--data", str(SAMPLE), "--out", str(out))
    assert code == 0, output
    return out / "pan23" / "pan23-format-sample" / "cngdist" / "seed-0" / "checkpoint"


def predict(checkpoint: Path, input_dir: Path, output_dir: Path) -> tuple[int, str]:
    return invoke(
        "predict", "--system", "cngdist", "--task", "pan23", "--input", str(input_dir), "--output", str(output_dir),
        "--checkpoint", str(checkpoint),
    )  # fmt: skip


ODD_PAIRS = [
    {"id": "one-letter", "pair": ["a", "b"]},
    {"id": "unicode", "pair": ["Ünïcödé ✓ 😀 “quotes” 中文", "Ελληνικά \u200b zero width"]},
    {"id": "control", "pair": ["tab\there\x00nul\x07bell", "line\r\nbreaks\rold mac"]},
    {"id": "punctuation", "pair": ["!!!???...", "..."]},
    {"id": "no shared n-gram", "pair": ["abc", "xyz"]},
    {"id": "long", "pair": ["word " * 50_000, "other words " * 500]},
    {"id": "lone surrogate", "pair": ["\ud83d text", "more text"]},
    {"id": "ünïcode id", "pair": ["same text", "same text"], "discourse_types": ["essay", "email"]},
]


def test_predict_answers_every_odd_problem(checkpoint: Path, tmp_path: Path) -> None:
    write_jsonl(tmp_path / "in" / "pairs.jsonl", ODD_PAIRS)
    code, output = predict(checkpoint, tmp_path / "in", tmp_path / "out")
    assert code == 0, output
    assert read_ids(tmp_path / "out" / "answers.jsonl") == [row["id"] for row in ODD_PAIRS]
    values = [json.loads(line)["value"] for line in (tmp_path / "out" / "answers.jsonl").read_text().splitlines()]
    assert all(0.0 <= v <= 1.0 for v in values)


def test_predict_answers_problems_with_empty_texts(checkpoint: Path, tmp_path: Path) -> None:
    rows = [
        {"id": "empty", "pair": ["", "a text"]},
        {"id": "blank", "pair": ["a text", " \n\t "]},
        {"id": "fine", "pair": ["a text", "another text"]},
    ]
    write_jsonl(tmp_path / "in" / "pairs.jsonl", rows)
    code, output = predict(checkpoint, tmp_path / "in", tmp_path / "out")
    assert code == 0, output
    answers = [json.loads(line) for line in (tmp_path / "out" / "answers.jsonl").read_text().splitlines()]
    assert [a["id"] for a in answers] == ["empty", "blank", "fine"]
    assert answers[0]["value"] == answers[1]["value"] == 0.5


def fake_harness(tmp_path: Path) -> dict[str, str]:
    """An environment whose `harness` prints its arguments, one a line."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "harness").write_text('#!/bin/sh\nfor a in "$@"; do echo "$a"; done\n')
    (bin_dir / "harness").chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith("HARNESS_")}
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    return env


@pytest.mark.skipif(shutil.which("sh") is None, reason="needs sh")
def test_entry_script_runs_harness_predict_with_tira_variables(tmp_path: Path) -> None:
    env = fake_harness(tmp_path) | {"inputDataset": "/tira-data/input", "outputDir": "/tira-data/output"}
    out = subprocess.run(["sh", str(TIRA / "predict.sh")], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split("\n")[:-1] == [
        "predict", "--system", "cngdist", "--task", "pan23", "--input", "/tira-data/input",
        "--output", "/tira-data/output", "--checkpoint", "/opt/harness/checkpoint",
    ]  # fmt: skip

    env |= {"HARNESS_SYSTEM": "siamese_bilstm", "HARNESS_CHECKPOINT": "/ck"}
    out = subprocess.run(["sh", str(TIRA / "predict.sh"), "--overwrite"], env=env, capture_output=True, text=True)
    assert "siamese_bilstm" in out.stdout and "/ck" in out.stdout and out.stdout.endswith("--overwrite\n")


@pytest.mark.skipif(shutil.which("sh") is None, reason="needs sh")
def test_entry_script_names_a_missing_tira_variable(tmp_path: Path) -> None:
    env = fake_harness(tmp_path) | {"inputDataset": "/in"}
    out = subprocess.run(["sh", str(TIRA / "predict.sh")], env=env, capture_output=True, text=True)
    assert out.returncode != 0 and "outputDir" in out.stderr


def check(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(TIRA / "check_answers.py"), *args], capture_output=True, text=True)


def test_check_answers_ids(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "pairs.jsonl", [{"id": "a", "pair": ["x", "y"]}, {"id": "b", "pair": ["x", "y"]}])
    write_jsonl(tmp_path / "good.jsonl", [{"id": "b", "value": 0.5}, {"id": "a", "value": [1.0]}])
    assert check("ids", str(tmp_path / "pairs.jsonl"), str(tmp_path / "good.jsonl")).returncode == 0
    bad_files = {
        "missing": [{"id": "a", "value": 0.1}],
        "unknown": [{"id": "a", "value": 0.1}, {"id": "b", "value": 0.1}, {"id": "c", "value": 0.1}],
        "twice": [{"id": "a", "value": 0.1}, {"id": "b", "value": 0.1}, {"id": "a", "value": 0.2}],
        "out of range": [{"id": "a", "value": 1.5}, {"id": "b", "value": 0.1}],
        "not a number": [{"id": "a", "value": "0.5"}, {"id": "b", "value": 0.1}],
    }
    for name, rows in bad_files.items():
        write_jsonl(tmp_path / "bad.jsonl", rows)
        result = check("ids", str(tmp_path / "pairs.jsonl"), str(tmp_path / "bad.jsonl"))
        assert result.returncode == 1 and "FAIL" in result.stderr, name


def test_check_answers_same_scores(tmp_path: Path) -> None:
    scores = {"auc": 0.75, "overall": 0.6}
    (tmp_path / "a.json").write_text(json.dumps(scores))
    (tmp_path / "b.json").write_text(json.dumps(scores))
    assert check("same-scores", str(tmp_path / "a.json"), str(tmp_path / "b.json")).returncode == 0
    (tmp_path / "b.json").write_text(json.dumps({**scores, "auc": 0.7500000001}))
    result = check("same-scores", str(tmp_path / "a.json"), str(tmp_path / "b.json"))
    assert result.returncode == 1 and "auc" in result.stderr


def test_dockerignore_lets_in_what_the_dockerfile_copies() -> None:
    """Every COPY source of the Dockerfile is let back in by .dockerignore (which leaves out everything else)."""
    ignore = (REPO / ".dockerignore").read_text().splitlines()
    allowed = [line[1:].rstrip("/") for line in ignore if line.startswith("!")]
    sources = []
    for line in (REPO / "Dockerfile").read_text().splitlines():
        parts = line.split()
        if parts[:1] == ["COPY"] and not any(p.startswith("--from") for p in parts):
            sources += [p.rstrip("/") for p in parts[1:-1] if not p.startswith("--")]
    sources.append("samples/pan23-format-sample/test/pairs.jsonl")  # the build's RUN --mount
    for source in sources:
        if source == "${CHECKPOINT}":
            source = "runs/**/checkpoint"
        # a folder counts when something in it is let in (COPY tira/ takes tira/predict.sh and tira/wheels/)
        assert any(source == a or source.startswith(a + "/") or a.startswith(source + "/") for a in allowed), source
