"""`harness pairs` on the command line: real CMCC in, a PAN 2023 dataset out that `harness run --task pan23` reads."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner
from helpers.cmcc import CMCC_PATTERN

from harness.cli import main


def invoke(*args: str | Path) -> tuple[int, str]:
    result = CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)
    return result.exit_code, result.output


def build(cmcc: Path, out: Path, *extra: str) -> tuple[int, str]:
    return invoke("pairs", "--from", "folders", cmcc, out, "--pattern", CMCC_PATTERN, "--encoding", "cp1252",
                  "--pairs", "100", *extra)  # fmt: skip


def test_cmcc_cross_genre_set_builds_and_runs_as_pan23(cmcc: Path, tmp_path: Path) -> None:
    code, output = build(cmcc, tmp_path / "cmcc-pairs")
    assert code == 0, output
    assert output.startswith("100 pairs (train 50, test 50), half same-author, seed 0")
    assert "next: harness run --system cngdist --task pan23 --data" in output
    manifest = json.loads((tmp_path / "cmcc-pairs" / "manifest.json").read_text(encoding="utf-8"))
    inputs = manifest["source"]["inputs"]
    assert manifest["seed"] == 0 and inputs and all(s["sha256"].startswith("sha256:") for s in inputs)
    test_pairs = [json.loads(x) for x in (tmp_path / "cmcc-pairs" / "test" / "pairs.jsonl").read_text().splitlines()]
    assert all(a != b for a, b in (p["discourse_types"] for p in test_pairs))  # all cross-genre, as PAN 2023

    code, output = invoke("run", "--system", "length_ratio", "--task", "pan23", "--data", tmp_path / "cmcc-pairs",
                          "--out", tmp_path / "runs")  # fmt: skip
    assert code == 0, output
    assert "mean nothing" not in output  # real data, not the format sample
    (result,) = (tmp_path / "runs").glob("pan23/cmcc-pairs/length_ratio/seed-0/result.json")
    assert json.loads(result.read_text(encoding="utf-8"))["task"]["data"]["test"]["size"] == 50


def test_built_twice_with_one_seed_the_same_bytes(cmcc: Path, tmp_path: Path) -> None:
    for name in ("a", "b"):
        code, output = build(cmcc, tmp_path / name, "--seed", "3")
        assert code == 0, output
    files = sorted(p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*") if p.is_file())
    assert {"manifest.json", "train/pairs.jsonl", "test/truth.jsonl"} <= {f.as_posix() for f in files}
    for name in files:
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name


def test_an_existing_output_is_kept_unless_overwrite(cmcc: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "mine.txt").write_text("a user's file\n", encoding="utf-8")
    code, output = build(cmcc, out)
    assert code == 2 and len(output.strip().splitlines()) == 1 and "--overwrite" in output
    assert [p.name for p in out.iterdir()] == ["mine.txt"]


def test_overwrite_onto_the_input_folder_is_refused_and_deletes_nothing(cmcc: Path, tmp_path: Path) -> None:
    """The reliability issue's data loss: `--overwrite` with OUT_DIR = INPUT once deleted the corpus (exit 0)."""
    import shutil
    import subprocess
    import sys

    corpus = tmp_path / "c"
    shutil.copytree(cmcc, corpus)
    (corpus / "notes.txt").write_text("a user's notes\n", encoding="utf-8")
    before = {p: p.read_bytes() for p in corpus.rglob("*") if p.is_file()}
    run = subprocess.run(
        [sys.executable, "-m", "harness.cli", "pairs", "--from", "folders", str(corpus), str(corpus), "--pairs", "40",
         "--text-uses", "4", "--encoding", "cp1252", "--overwrite", "--pattern", CMCC_PATTERN],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert run.returncode == 2, run.stderr
    assert run.stderr.strip() == f"error: {corpus}: the output folder is the input {corpus}; name a folder of its own"
    assert {p: p.read_bytes() for p in corpus.rglob("*") if p.is_file()} == before
