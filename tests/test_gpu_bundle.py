"""benchmarks/gpu_bundle.py on the real forum slice with a tiny encoder: the sets unpack byte for byte, the posts keep
the fields pre-training reads, the model left without unused word-embedding rows computes what the float16-rounded
one computes on the posts, and pre-training reads the unpacked posts as it reads the originals."""

from __future__ import annotations

import json
import lzma
import shutil
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from helpers.benchmark_script import load_benchmark  # noqa: E402

from systems.style_encoder.corpus import excluded_by_sets, pretraining_corpus  # noqa: E402
from tasks.pairs import build_pairs  # noqa: E402


def test_pack_then_unpack_gives_the_sets_the_posts_and_the_model(
    forum_slice: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from helpers.tiny_encoder import make_tiny_encoder
    from transformers import AutoModel, AutoTokenizer

    script = load_benchmark("gpu_bundle")
    sets = tmp_path / "sets"
    for seed in (0, 1):
        build_pairs("forum", forum_slice, sets / f"forum-seed{seed}", pairs=40, seed=seed)
    encoder = make_tiny_encoder(tmp_path / "tiny", layers=2, hidden=16)
    bundle, work = tmp_path / "bundle", tmp_path / "work"
    argv = ["pack", "--posts", str(forum_slice), "--sets", str(sets), "--seeds", "0", "1", "--model", str(encoder)]
    script.main([*argv, "--out", str(bundle), "--xz-preset", "1"])
    assert "of 64 MiB, fits" in capsys.readouterr().out  # the bundle with the repository, as a device call sends them
    with pytest.raises(SystemExit, match="exists"):  # a bundle is never written over
        script.main([*argv, "--out", str(bundle)])
    script.main(["unpack", "--bundle", str(bundle), "--out", str(work)])
    tampered = tmp_path / "tampered"
    shutil.copytree(bundle, tampered)
    posts_xz = tampered / "posts.jsonl.xz"
    posts_xz.write_bytes(lzma.compress(lzma.decompress(posts_xz.read_bytes()).replace(b'"text": "', b'"text": "x', 1)))
    with pytest.raises(SystemExit, match="unpacked posts differ"):
        script.main(["unpack", "--bundle", str(tampered), "--out", str(tmp_path / "nowhere")])
    assert not (tmp_path / "nowhere").exists() and [p.name for p in tmp_path.glob(".nowhere.*")] == []

    for seed in (0, 1):
        original = sets / f"forum-seed{seed}"
        files = sorted(p.relative_to(original) for p in original.rglob("*") if p.is_file())
        assert files == sorted(
            p.relative_to(work / "sets" / original.name)
            for p in (work / "sets" / original.name).rglob("*")
            if p.is_file()
        )
        for name in files:
            assert (work / "sets" / original.name / name).read_bytes() == (original / name).read_bytes(), name
    # texts left the packed sets: they travel once, in the posts
    packed = script.pack_sets([sets / "forum-seed0"], script_texts(script, forum_slice))["forum-seed0"]
    for split in ("train", "test"):
        pairs = [json.loads(line)["pair"] for line in packed[f"{split}/pairs.jsonl"]["lines"]]
        assert pairs and all(text.startswith(script.TEXT_MARK) for pair in pairs for text in pair)

    unpacked_posts = [json.loads(line) for line in (work / "posts" / "posts.jsonl").read_text().splitlines()]
    originals = script.read_posts(forum_slice)
    assert len(unpacked_posts) == len(originals)
    assert all(set(post) == set(script.POST_FIELDS) for post in unpacked_posts)
    exclusions = excluded_by_sets([sets / "forum-seed0"])
    there, here = pretraining_corpus(work / "posts", exclusions), pretraining_corpus(forum_slice, exclusions)
    assert (there.authors, there.texts, there.kinds, there.threads) == (
        here.authors,
        here.texts,
        here.kinds,
        here.threads,
    )

    # the model: word-embedding rows of unused tokens are zeros, the rest the float16-rounded weights
    manifest = json.loads((bundle / script.MANIFEST).read_text())
    kept = next(entry for entry in manifest["layout"] if "rows" in entry)
    tokenizer = AutoTokenizer.from_pretrained(str(work / "model"))
    used = {i for post in originals for i in tokenizer(post["text"])["input_ids"]} | set(tokenizer.all_special_ids)
    assert set(kept["rows"]) == used
    rounded, unpacked = (
        AutoModel.from_pretrained(str(encoder)).eval(),
        AutoModel.from_pretrained(str(work / "model")).eval(),
    )
    with torch.no_grad():
        for parameter in rounded.parameters():
            parameter.copy_(parameter.half().float())
        matrix = unpacked.embeddings.word_embeddings.weight
        unused = sorted(set(range(matrix.shape[0])) - used)
        assert unused and not matrix[unused].any()
        assert torch.equal(matrix[sorted(used)], rounded.embeddings.word_embeddings.weight[sorted(used)])
        batch = tokenizer(
            [post["text"] for post in originals[:64]], truncation=True, max_length=64, padding=True, return_tensors="pt"
        )
        assert torch.equal(unpacked(**batch).last_hidden_state, rounded(**batch).last_hidden_state)


def script_texts(script, posts: Path) -> dict[str, str]:
    return {post["post_id"]: post["text"] for post in script.read_posts(posts)}


def test_a_set_text_that_is_not_its_post_is_refused(forum_slice: Path, tmp_path: Path) -> None:
    script = load_benchmark("gpu_bundle")
    folder = tmp_path / "sets" / "forum-seed0"
    build_pairs("forum", forum_slice, folder, pairs=20, seed=0)
    texts = script_texts(script, forum_slice)
    first_id = json.loads((folder / "pair_origins.jsonl").read_text().splitlines()[0])["origins"][0].rpartition("#")[2]
    texts[first_id] += " (edited)"
    with pytest.raises(SystemExit, match="is not post"):
        script.pack_sets([folder], texts)


def test_the_device_script_runs_the_benchmark_on_what_the_bundle_holds(
    forum_slice: Path, cmcc: Path, tmp_path: Path
) -> None:
    """benchmarks/gpu_forum_run.sh as a device call runs it (here on the CPU, two steps, a tiny encoder), seed by
    seed, with CMCC sets packed whole for --transfer cmcc; a seed that fails leaves the seeds before it in $OUT."""
    import os
    import subprocess
    import sys

    from helpers.benchmark_script import BENCHMARKS
    from helpers.cmcc import CMCC_PATTERN
    from helpers.tiny_encoder import make_tiny_encoder

    sets = tmp_path / "sets"
    for seed in (0, 1):
        build_pairs("forum", forum_slice, sets / f"forum-seed{seed}", pairs=60, seed=seed)
        build_pairs(
            "folders", cmcc, sets / f"cmcc-seed{seed}", pairs=40, pattern=CMCC_PATTERN, encoding="cp1252", seed=seed
        )
    encoder = make_tiny_encoder(tmp_path / "tiny", layers=2, hidden=16)
    bundle = tmp_path / "bundle"
    argv = ["pack", "--posts", str(forum_slice), "--sets", str(sets), "--seeds", "0", "1", "--also", "cmcc"]
    load_benchmark("gpu_bundle").main([*argv, "--model", str(encoder), "--out", str(bundle), "--xz-preset", "1"])

    def device_call(name: str, seeds: str, *extra: str) -> tuple[subprocess.CompletedProcess[str], Path]:
        out = tmp_path / name
        out.mkdir()
        env = os.environ | {"OUT": str(out), "GPU_WORK": str(tmp_path / f"{name}-work"), "GPU_BUNDLE": str(bundle)}
        env |= {"PYTHON": sys.executable, "HARNESS_CACHE_DIR": str(tmp_path / "cache"), "SEEDS": seeds}
        command = ["bash", str(BENCHMARKS / "gpu_forum_run.sh"), "--preset", "cpu", "--steps", "2", "--device", "cpu"]
        command += ["--transfer", "cmcc", *extra]
        return subprocess.run(command, cwd=BENCHMARKS.parent, env=env, capture_output=True, text=True), out

    done, out = device_call("OUT", "0 1")
    assert done.returncode == 0, done.stdout + done.stderr
    assert sorted(path.name for path in out.iterdir()) == [
        "log.txt", "pretraining-seed0.json", "pretraining-seed1.json", "result-seed0.json", "result-seed1.json",
        "summary.md",
    ]  # fmt: skip
    manifest = json.loads((out / "pretraining-seed1.json").read_text())
    assert manifest["settings"]["steps"] == 2 and manifest["excluded"]["sets"] == [
        str(tmp_path / "OUT-work" / "sets" / "forum-seed1")
    ]
    table = (out / "summary.md").read_text()
    for seed in (0, 1):
        auc = json.loads((out / f"result-seed{seed}.json").read_text())["scores"]["auc"]
        assert f"| {seed} | " in table and f"| {auc:.3f} |" in table
    assert "| 0,1 |" in table and "cmcc (transfer)" in table  # the table over both seeds, and the transfer's
    for name in ("train/pairs.jsonl", "test/truth.jsonl", "pair_origins.jsonl"):  # the CMCC set, as it was
        assert (tmp_path / "OUT-work" / "sets" / "cmcc-seed1" / name).read_bytes() == (
            sets / "cmcc-seed1" / name
        ).read_bytes()

    # seed 2 has no set in the bundle: the call fails there, and seed 0's files are already out
    failed, out = device_call("STOPPED", "0 2")
    assert failed.returncode != 0 and "forum-seed2" in failed.stdout + failed.stderr
    assert {"pretraining-seed0.json", "result-seed0.json", "summary.md", "log.txt"} == {p.name for p in out.iterdir()}

    # with band folds each fold encoder's manifest comes back too (seed 0: on seed 1's tiny set, since the training
    # problems are read in id order, one fold's 2-step encoder scores all its training pairs alike and is refused)
    done, out = device_call("FOLDS", "0", "--band-folds", "2")
    assert done.returncode == 0, done.stdout + done.stderr
    assert sorted(path.name for path in out.iterdir()) == [
        "log.txt", "pretraining-seed0-band-fold-1.json", "pretraining-seed0-band-fold-2.json",
        "pretraining-seed0.json", "result-seed0.json", "summary.md",
    ]  # fmt: skip
    main_manifest = json.loads((out / "pretraining-seed0.json").read_text())
    for k in (1, 2):
        fold_manifest = json.loads((out / f"pretraining-seed0-band-fold-{k}.json").read_text())
        assert fold_manifest["excluded"]["sets"][-1].endswith(f"forum-seed0 (training fold {k} of 2)")
        assert fold_manifest["held_out_pair_auc"]["after"] == main_manifest["band_folds"]["held_out_pair_auc"][k - 1]


def test_weights_round_trip_rounded_with_unused_rows_zero_and_buffers_exact(tmp_path: Path) -> None:
    import numpy as np
    from safetensors.numpy import save_file

    script = load_benchmark("gpu_bundle")
    rng = np.random.default_rng(0)
    weights = {
        "embeddings.word_embeddings.weight": rng.normal(size=(10, 4)).astype(np.float32),
        "encoder.layer.0.weight": rng.normal(size=(4, 4)).astype(np.float32),
        "embeddings.position_ids": np.arange(8, dtype=np.int64).reshape(1, 8),  # a buffer, as MiniLM's file has
    }
    save_file(weights, str(tmp_path / "model.safetensors"))
    kept = np.array([0, 3, 7])
    back = script.unpack_weights(*script.pack_weights(tmp_path, kept))
    matrix = back["embeddings.word_embeddings.weight"]
    assert np.array_equal(matrix[kept], weights["embeddings.word_embeddings.weight"][kept].astype(np.float16))
    assert not np.delete(matrix, kept, axis=0).any() and matrix.dtype == np.float32
    assert np.array_equal(back["encoder.layer.0.weight"], weights["encoder.layer.0.weight"].astype(np.float16))
    ids = back["embeddings.position_ids"]
    assert ids.dtype == np.int64 and np.array_equal(ids, weights["embeddings.position_ids"])
