"""benchmarks/forum_style_encoder.py runs its protocol end to end on the real forum slice with a tiny encoder: each
seed's encoder leaves out that seed's own test side, the verifier's whitening is chosen on training data, the table
holds what the runs wrote, and existing runs are kept; with --transfer the same encoder scores a CMCC set too."""

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


def test_one_seed_end_to_end_then_kept(
    forum_slice: Path, cmcc: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from helpers.cmcc import CMCC_PATTERN
    from helpers.tiny_encoder import make_tiny_encoder

    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache"))
    build_pairs("forum", forum_slice, tmp_path / "sets" / "forum-seed0", pairs=60, seed=0)
    cmcc_set = tmp_path / "sets" / "cmcc-seed0"
    build_pairs("folders", cmcc, cmcc_set, pairs=40, pattern=CMCC_PATTERN, encoding="cp1252", text_uses=4, seed=0)
    encoder = make_tiny_encoder(tmp_path / "tiny", layers=2, hidden=16)
    out = tmp_path / "out"
    argv = ["--posts", str(forum_slice), "--sets", str(tmp_path / "sets"), "--out", str(out), "--seeds", "0"]
    argv += ["--preset", "cpu", "--steps", "2", "--model", str(encoder), "--device", "cpu", "--cross-kind-share", "1"]
    argv += ["--transfer", "cmcc"]
    script = _script()
    table = script.main(argv)

    manifest = json.loads((out / "encoder-seed0" / script.MANIFEST["transformer"]).read_text(encoding="utf-8"))
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

    # the transfer: seed 0's encoder (left out the forum set's test side only) scores the CMCC set, its own table
    transfer = script.seed_row(out, 0, "cmcc")
    transfer_run = script.run_dir(out, 0, "cmcc")
    assert transfer_run is not None and transfer_run.parts[-3] == "cmcc-seed0"
    params = json.loads((transfer_run / "checkpoint" / "config.json").read_text(encoding="utf-8"))["params"]
    assert params["encoder"]["model"] == str(out / "encoder-seed0") and params["whiten"] == "auto"
    assert sum(transfer["answers"]) == len((cmcc_set / "test" / "truth.jsonl").read_text().splitlines())
    forum_part, cmcc_part = table.split("cmcc (transfer)")
    assert f"| {row['auc']:.3f} |" in forum_part
    assert f"| {transfer['auc']:.3f} | {transfer['c_at_1']:.3f} |" in cmcc_part
    # CMCC's AUC per genre pair, as the run scored them; the forum set has one type pair and no such table
    aucs = transfer["type_pair_auc"]
    scores = json.loads((transfer_run / "result.json").read_text(encoding="utf-8"))["scores"]
    assert len(aucs) > 1 and all("+" in pair for pair in aucs)
    for pair, value in aucs.items():
        if value is not None:
            assert value == scores[f"{pair}/auc"] and f"| {pair} | {value:.3f} | {value:.3f} |" in cmcc_part
    assert script.type_pair_table([row]) == "" and "| type pair |" not in forum_part

    def no_rerun(command: list[str]) -> None:
        raise AssertionError(f"existing runs are kept, yet it ran {command}")

    monkeypatch.setattr(script, "harness", no_rerun)
    assert script.main(argv) == table


def test_a_folder_that_is_not_a_set_is_refused(tmp_path: Path) -> None:
    argv = ["--posts", str(tmp_path), "--sets", str(tmp_path), "--out", str(tmp_path / "out"), "--seeds", "0"]
    with pytest.raises(SystemExit):
        _script().main(argv)
    assert not (tmp_path / "out").exists()


def test_the_ngram_encoder_leaves_out_both_splits_and_ngram_style_reads_it(forum_slice: Path, tmp_path: Path) -> None:
    build_pairs("forum", forum_slice, tmp_path / "sets" / "forum-seed0", pairs=60, seed=0)
    out = tmp_path / "out"
    argv = ["--posts", str(forum_slice), "--sets", str(tmp_path / "sets"), "--out", str(out), "--seeds", "0"]
    script = _script()
    table = script.main([*argv, "--encoder", "ngram", "--steps", "20"])

    manifest = script.read_manifest(out, 0, "ngram")
    assert manifest["excluded"]["sets"] == [f"{tmp_path / 'sets' / 'forum-seed0'} (both splits)"]
    assert manifest["settings"]["steps"] == 20
    truths = [tmp_path / "sets" / "forum-seed0" / split / "truth.jsonl" for split in ("train", "test")]
    truth = [json.loads(line) for path in truths for line in path.read_text().splitlines()]
    assert manifest["excluded"]["authors"] == len({name for record in truth for name in record["authors"]})
    row = script.seed_row(out, 0, encoder="ngram")
    run = script.run_dir(out, 0, verifier="ngram_style")
    assert run is not None and row["whiten"] == "-"
    params = json.loads((run / "checkpoint" / "config.json").read_text(encoding="utf-8"))["params"]
    assert params["model"] == str(out / "encoder-seed0")
    auc = manifest["held_out_pair_auc"]
    assert (row["held_out_before"], row["held_out_after"]) == (auc["whitened"], auc["kept"])
    assert f"| {row['auc']:.3f} | {row['c_at_1']:.3f} | {row['overall']:.3f} |" in table


def test_band_folds_leave_out_the_test_side_only(tmp_path: Path) -> None:
    script = _script()
    args = script.argparse.Namespace(posts=tmp_path, sets=tmp_path / "sets", out=tmp_path / "out", encoder="ngram",
                                     band_folds=2, band_repeats=None, band_views=[], steps=None, jobs=None,
                                     cross_kind_share=None)  # fmt: skip
    command = script.pretrain_command(args, 1)
    assert command[-4:] == ["--exclude-test-of", str(tmp_path / "sets" / "forum-seed1"), "--band-folds", "2"]
    args.band_repeats = 3
    assert script.pretrain_command(args, 1)[-4:] == ["--band-folds", "2", "--band-repeats", "3"]
    args.band_views = ["char", "word"]
    assert script.pretrain_command(args, 1)[-6:] == [
        "--band-repeats",
        "3",
        "--band-view",
        "char",
        "--band-view",
        "word",
    ]
    args.jobs = 2
    assert script.pretrain_command(args, 1)[-2:] == ["--jobs", "2"]
    args.band_folds = None
    assert "--exclude-all-of" in script.pretrain_command(args, 1)
    args.encoder, args.preset, args.model, args.device, args.band_folds, args.steps = (
        "transformer",
        "gpu",
        None,
        None,
        3,
        9,
    )
    command = script.pretrain_command(args, 2)  # the transformer's band folds: the repeats and views are ngram's
    assert command[-6:] == [
        "--exclude-test-of",
        str(tmp_path / "sets" / "forum-seed2"),
        "--steps",
        "9",
        "--band-folds",
        "3",
    ]
    assert "--band-repeats" not in command and "--preset" in command
