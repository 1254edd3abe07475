"""benchmarks/forum_style_encoder.py runs its protocol end to end on the real forum slice with a tiny encoder: each
seed's encoder leaves out that seed's own test side, the verifier's whitening is chosen on training data, the table
holds what the runs wrote, and existing runs are kept."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from helpers.benchmark_script import load_benchmark  # noqa: E402

from tasks.pairs import build_pairs  # noqa: E402


def _script() -> Any:
    return load_benchmark("forum_style_encoder")


def test_one_seed_end_to_end_then_kept(forum_slice: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from helpers.tiny_encoder import make_tiny_encoder

    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache"))
    build_pairs("forum", forum_slice, tmp_path / "sets" / "forum-seed0", pairs=60, seed=0)
    encoder = make_tiny_encoder(tmp_path / "tiny", layers=2, hidden=16)
    out = tmp_path / "out"
    argv = ["--posts", str(forum_slice), "--sets", str(tmp_path / "sets"), "--out", str(out), "--seeds", "0"]
    argv += ["--preset", "cpu", "--steps", "2", "--model", str(encoder), "--device", "cpu", "--cross-kind-share", "1"]
    script = _script()
    table = script.main(argv)

    manifest = json.loads((out / "encoder-seed0" / script.MANIFEST).read_text(encoding="utf-8"))
    assert manifest["excluded"]["sets"] == [str(tmp_path / "sets" / "forum-seed0")]
    assert manifest["excluded"]["authors"] > 0 and manifest["settings"]["steps"] == 2
    assert manifest["settings"]["cross_kind_share"] == 1.0
    row = script.seed_row(out, 0)
    run = script.run_dir(out, 0)
    params = json.loads((run / "checkpoint" / "config.json").read_text(encoding="utf-8"))["params"]
    assert params["whiten"] == "auto" and params["encoder"]["layers"] == [2]  # the tiny encoder's top layer
    oof = row["out_of_fold_auc"]
    assert set(oof) == {"true", "false"} and row["whiten"] is (oof["true"] >= oof["false"])
    test_problems = len((tmp_path / "sets" / "forum-seed0" / "test" / "truth.jsonl").read_text().splitlines())
    assert sum(row["answers"]) == test_problems
    result = json.loads((run / "result.json").read_text(encoding="utf-8"))["scores"]
    assert f"| {row['auc']:.3f} | {row['c_at_1']:.3f} | {row['overall']:.3f} |" in table
    assert row["auc"] == result["auc"] and (out / "summary.md").read_text(encoding="utf-8") == table

    def no_rerun(command: list[str]) -> None:
        raise AssertionError(f"existing runs are kept, yet it ran {command}")

    monkeypatch.setattr(script, "harness", no_rerun)
    assert script.main(argv) == table


def test_a_folder_that_is_not_a_set_is_refused(tmp_path: Path) -> None:
    argv = ["--posts", str(tmp_path), "--sets", str(tmp_path), "--out", str(tmp_path / "out"), "--seeds", "0"]
    with pytest.raises(SystemExit):
        _script().main(argv)
    assert not (tmp_path / "out").exists()
