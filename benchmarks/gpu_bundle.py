"""What the forum style encoder's GPU benchmark needs, packed to travel to a device machine, and unpacked there.

A device machine takes at most 64 MiB of working tree a call (the repository and what `carry` names), and reaches
nothing outside it. The forum posts (34.6 MB gzipped), the three forum sets (13 MB each) and all-MiniLM-L6-v2
(91 MB of float32 weights) do not fit as they are; packed like this they take about 60 MB:

- the base model's weights rounded to float16, without the rows of the word-embedding matrix for tokens that no post
  holds (a transformer reads only the rows of the tokens it is given, so on these posts the model computes what the
  rounded one computes; pre-training keeps the embeddings frozen); unpacked to float32, those rows are zeros;
- the posts with the six fields pre-training reads (post_id, author, thread_id, subforum, kind, text);
- the sets without their texts: each pair's texts are the posts its pair_origins name (checked while packing), and
  unpacking writes them back; with `--also cmcc`, the CMCC sets of the same seeds as they are (for `--transfer
  cmcc`; their texts' tokens are kept in the model too).

Unpacking checks the sha256 of every set file against the original's and the posts' against the packed copy's, so a
run on the device reads the sets that were scored here, byte for byte.

    # here, into a folder git ignores (echo /.gpu-bundle/ >> .git/info/exclude):
    python benchmarks/gpu_bundle.py pack --posts ../shared/data/forum-posts --sets WORK/sets --out .gpu-bundle
    # there (the `run` tool, carry [".gpu-bundle"]), then the benchmark on what it unpacked:
    python3 benchmarks/gpu_bundle.py unpack --bundle .gpu-bundle --out /tmp/gpu-work
    python3 benchmarks/forum_style_encoder.py --posts /tmp/gpu-work/posts --sets /tmp/gpu-work/sets \
        --out /tmp/gpu-work/out --model /tmp/gpu-work/model --preset gpu --steps 1200
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import lzma
import shutil
import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the project's packages, run from anywhere
from core.files import find_data_file, staged_folder  # noqa: E402

POST_FIELDS = ("post_id", "author", "thread_id", "subforum", "kind", "created", "text")  # what pretraining_corpus reads
MODEL_FILES = ("config.json", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt")
WORD_EMBEDDINGS = "word_embeddings.weight"  # the end of the matrix's name in a BERT checkpoint
TEXT_MARK = "\x00post:"  # stands for a pair's text in a packed pairs.jsonl line; no JSON text holds a raw NUL
MANIFEST = "bundle.json"
CALL_LIMIT = 64 * 2**20  # a device call's working tree and carried paths together


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def read_posts(posts: Path) -> list[dict[str, Any]]:
    """The records of posts.jsonl[.gz], or of the one in folder `posts` (found as pre-training finds it)."""
    path = posts if posts.is_file() else find_data_file(posts, "posts.jsonl")
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as lines:
        return [json.loads(line) for line in lines if line.strip()]


def pack_sets(sets: list[Path], texts: dict[str, str], *, of_posts: bool = True) -> dict[str, Any]:
    """Each set's files; for sets `of_posts` (the forum's), pairs.jsonl lines with every text replaced by the id of
    the post that holds it, other sets (CMCC) as they are."""
    packed = {}
    for folder in sets:
        origins = {}
        for line in (folder / "pair_origins.jsonl").read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            origins[record["id"]] = [source.rpartition("#")[2] for source in record["origins"]]
        files = {}
        for path in sorted(p for p in folder.rglob("*") if p.is_file()):
            name, data = path.relative_to(folder).as_posix(), path.read_bytes()
            lines = data.decode("utf-8").splitlines(keepends=True)
            stripped = of_posts and path.name == "pairs.jsonl"
            if stripped:
                lines = [_strip_texts(line, origins, texts, f"{path}:{i}") for i, line in enumerate(lines, 1)]
            files[name] = {"lines": lines, "sha256": sha256(data), "pairs": stripped}
        packed[folder.name] = files
    return packed


def pair_texts(folder: Path) -> list[str]:
    """Every text of a set's pairs, both splits."""
    texts = []
    for split in ("train", "test"):
        for line in (folder / split / "pairs.jsonl").read_text(encoding="utf-8").splitlines():
            texts.extend(json.loads(line)["pair"])
    return texts


def _strip_texts(line: str, origins: dict[str, list[str]], texts: dict[str, str], where: str) -> str:
    record, original = json.loads(line), line
    for text, post_id in zip(record["pair"], origins[record["id"]], strict=True):
        if texts.get(post_id) != text:
            raise SystemExit(f"{where}: a text of pair {record['id']} is not post {post_id}'s; cannot pack it")
        for encoded in (json.dumps(text), json.dumps(text, ensure_ascii=False)):
            if encoded in line:
                line = line.replace(encoded, json.dumps(TEXT_MARK + post_id + (":a" if encoded.isascii() else ":u")), 1)
                break
        else:
            raise SystemExit(f"{where}: cannot find a text of pair {record['id']} in the line as JSON writes it")
    if _put_texts(line, texts) != original:  # a text's JSON found elsewhere in the line first, say
        raise SystemExit(f"{where}: the line of pair {record['id']} does not unpack to itself; cannot pack it")
    return line


def unpack_sets(packed: dict[str, Any], texts: dict[str, str], out: Path) -> None:
    for name, files in packed.items():
        for relative, entry in files.items():
            lines = entry["lines"]
            if entry["pairs"]:
                lines = [_put_texts(line, texts) for line in lines]
            data = "".join(lines).encode("utf-8")
            if sha256(data) != entry["sha256"]:
                raise SystemExit(f"{name}/{relative}: unpacked bytes differ from the packed set's (sha256)")
            target = out / name / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)


def _put_texts(line: str, texts: dict[str, str]) -> str:
    for marked in json.loads(line)["pair"]:
        post_id, _, encoding = marked.removeprefix(TEXT_MARK).rpartition(":")
        text = json.dumps(texts[post_id], ensure_ascii=encoding == "a")
        line = line.replace(json.dumps(marked), text, 1)
    return line


def used_token_ids(model: Path, texts: list[str]) -> np.ndarray:
    """Every token id the model's tokenizer gives these texts (whole, not truncated), and the special tokens'."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(model))
    config = json.loads((model / "config.json").read_text(encoding="utf-8"))
    used = np.zeros(config["vocab_size"], dtype=bool)  # the matrix's rows, which a tokenizer's length need not be
    used[tokenizer.all_special_ids] = True
    for start in range(0, len(texts), 5000):
        for ids in tokenizer(texts[start : start + 5000], add_special_tokens=True)["input_ids"]:
            used[ids] = True
    return np.flatnonzero(used)


def pack_weights(model: Path, kept_rows: np.ndarray) -> tuple[bytes, list[dict[str, Any]]]:
    """The float16 weights, the word-embedding matrix cut to `kept_rows`, as one buffer whose high and low bytes are
    stored apart (xz finds the repeats of the exponent bytes); and each tensor's name and shape."""
    from safetensors.numpy import load_file

    weights = load_file(str(model / "model.safetensors"))
    parts, layout = [], []
    for name in sorted(weights):
        tensor = weights[name]
        if tensor.dtype.kind != "f":  # a buffer such as position_ids: kept exactly, in the layout (a few KB)
            layout.append(
                {"name": name, "shape": list(tensor.shape), "dtype": str(tensor.dtype), "values": tensor.tolist()}
            )
            continue
        if name.endswith(WORD_EMBEDDINGS):
            layout.append({"name": name, "shape": list(tensor.shape), "rows": kept_rows.tolist()})
            tensor = tensor[kept_rows]
        else:
            layout.append({"name": name, "shape": list(tensor.shape)})
        parts.append(tensor.astype(np.float16).ravel())
    pairs = np.concatenate(parts).view(np.uint8).reshape(-1, 2)
    return np.ascontiguousarray(pairs.T).tobytes(), layout


def unpack_weights(data: bytes, layout: list[dict[str, Any]]) -> dict[str, np.ndarray]:
    planes = np.frombuffer(data, dtype=np.uint8).reshape(2, -1)
    values = np.ascontiguousarray(planes.T).view(np.float16).ravel()
    weights, at = {}, 0
    for entry in layout:
        shape = entry["shape"]
        if "values" in entry:
            weights[entry["name"]] = np.asarray(entry["values"], dtype=entry["dtype"]).reshape(shape)
            continue
        if "rows" in entry:
            rows = np.asarray(entry["rows"], dtype=np.int64)
            size = len(rows) * shape[1]
            full = np.zeros(shape, dtype=np.float32)
            full[rows] = values[at : at + size].reshape(len(rows), shape[1])
        else:
            size = int(np.prod(shape))
            full = values[at : at + size].reshape(shape).astype(np.float32)
        weights[entry["name"]], at = full, at + size
    return weights


def pack(args: argparse.Namespace) -> None:
    out: Path = args.out
    if out.exists():
        raise SystemExit(f"{out} exists; name a new folder")
    sets = [args.sets / f"forum-seed{seed}" for seed in args.seeds]
    posts = [{field: post[field] for field in POST_FIELDS if field in post} for post in read_posts(args.posts)]
    texts = {post["post_id"]: post["text"] for post in posts}
    packed_sets = pack_sets(sets, texts)
    others = [args.sets / f"{name}-seed{seed}" for name in args.also for seed in args.seeds]  # e.g. --transfer cmcc
    packed_sets |= pack_sets(others, texts, of_posts=False)
    other_texts = [text for folder in others for text in pair_texts(folder)]
    kept_rows = used_token_ids(args.model, [*texts.values(), *other_texts])
    weights, layout = pack_weights(args.model, kept_rows)
    posts_data = "".join(json.dumps(post, ensure_ascii=False) + "\n" for post in posts).encode("utf-8")
    with staged_folder(out, new=True) as staging:
        write_bundle(args, staging, weights, posts_data, packed_sets, layout, len(posts))
    size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    rows = layout_rows(layout)
    counts = f"{len(posts):,} posts, {len(sets) + len(others)} sets, {rows} word-embedding rows"
    print(f"wrote {out}: {size / 2**20:.1f} MiB ({counts})")
    tree = travelling_tree()
    if tree is not None:  # what a device call sends besides: the repository's files git does not ignore
        verdict = "fits" if size + tree <= CALL_LIMIT else "does NOT fit: pack fewer seeds or free the tree"
        print(f"with the working tree ({tree / 2**20:.1f} MiB): {(size + tree) / 2**20:.1f} of 64 MiB, {verdict}")


def travelling_tree() -> int | None:
    """Bytes of the files a device call sends from this repository (tracked, and untracked but not ignored)."""
    import subprocess

    root = Path(__file__).resolve().parents[1]
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=root, capture_output=True
    )
    if listed.returncode != 0:
        return None
    return sum((root / name).stat().st_size for name in listed.stdout.decode().split("\0") if (root / name).is_file())


def write_bundle(
    args: argparse.Namespace,
    staging: Path,
    weights: bytes,
    posts_data: bytes,
    packed_sets: dict[str, Any],
    layout: list[dict[str, Any]],
    posts: int,
) -> None:
    (staging / "model").mkdir()
    for name in MODEL_FILES:
        if (args.model / name).is_file():
            shutil.copy2(args.model / name, staging / "model" / name)
    (staging / "weights.xz").write_bytes(lzma.compress(weights, preset=args.xz_preset))
    (staging / "posts.jsonl.xz").write_bytes(lzma.compress(posts_data, preset=args.xz_preset))
    (staging / "sets.json.xz").write_bytes(
        lzma.compress(json.dumps(packed_sets).encode("utf-8"), preset=args.xz_preset)
    )
    manifest = {"layout": layout, "posts_sha256": sha256(posts_data), "posts": posts, "model": str(args.model)}
    (staging / MANIFEST).write_text(json.dumps(manifest) + "\n", encoding="utf-8")


def layout_rows(layout: list[dict[str, Any]]) -> str:
    matrix = next(entry for entry in layout if "rows" in entry)
    return f"{len(matrix['rows']):,} of {matrix['shape'][0]:,}"


def unpack(args: argparse.Namespace) -> None:
    from safetensors.numpy import save_file

    bundle, out = args.bundle, args.out
    if out.exists():
        raise SystemExit(f"{out} exists; name a new folder")
    manifest = json.loads((bundle / MANIFEST).read_text(encoding="utf-8"))
    posts_data = lzma.decompress((bundle / "posts.jsonl.xz").read_bytes())
    if sha256(posts_data) != manifest["posts_sha256"]:
        raise SystemExit(f"{bundle}/posts.jsonl.xz: unpacked posts differ from the packed ones (sha256)")
    with staged_folder(out, new=True) as staging:
        (staging / "posts").mkdir()
        (staging / "posts" / "posts.jsonl").write_bytes(posts_data)
        texts = {post["post_id"]: post["text"] for post in map(json.loads, posts_data.decode("utf-8").splitlines())}
        unpack_sets(json.loads(lzma.decompress((bundle / "sets.json.xz").read_bytes())), texts, staging / "sets")
        shutil.copytree(bundle / "model", staging / "model")
        weights = unpack_weights(lzma.decompress((bundle / "weights.xz").read_bytes()), manifest["layout"])
        save_file(weights, str(staging / "model" / "model.safetensors"), metadata={"format": "pt"})
    rows = layout_rows(manifest["layout"])
    print(f"unpacked {bundle} into {out}: {manifest['posts']:,} posts, the sets checked, the model ({rows} rows)")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    verbs = parser.add_subparsers(dest="verb", required=True)
    packing = verbs.add_parser("pack", help="here: posts, sets and model into a new folder")
    packing.add_argument("--posts", type=Path, required=True, help="posts.jsonl[.gz] or its folder")
    packing.add_argument("--sets", type=Path, required=True, help="the folder holding forum-seedN sets")
    packing.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    packing.add_argument("--model", type=Path, help="a model folder (default: the offline all-MiniLM-L6-v2)")
    packing.add_argument(
        "--also", action="append", default=[], metavar="NAME",
        help="NAME-seedN sets of the same seeds packed whole, for forum_style_encoder.py's --transfer NAME (cmcc)",
    )  # fmt: skip
    packing.add_argument("--out", type=Path, required=True)
    packing.add_argument("--xz-preset", type=int, default=6)
    unpacking = verbs.add_parser("unpack", help="there: the bundle into a new folder, every file checked")
    unpacking.add_argument("--bundle", type=Path, required=True)
    unpacking.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    if args.verb == "pack":
        if args.model is None:
            from toolkit.pretrained import resolve_encoder

            args.model = Path(resolve_encoder(None))
        pack(args)
    else:
        unpack(args)


if __name__ == "__main__":
    main()
