"""Forum encoder systems: a pretrained sentence encoder fine-tuned with a metric loss, for both forum tasks.

A sample (a darkweb episode, a run of a reddit author's posts) is embedded as the L2-normalised
projection of the mean of its posts' vectors (systems.forum_encoder.head); a post's vector is a
Hugging Face encoder's mean-pooled output (systems.forum_encoder.encoding; all-MiniLM-L6-v2 by
default). The projection, and the encoder's top layers where `encoder.finetune_layers` says so, are
trained with a metric-learning loss of toolkit.metric_losses (semi-hard triplet by default)
on batches of `authors_per_batch` authors x `samples_per_author` samples, each drawn from its own
period of the author's posts (systems.forum_encoder.sampling), in the shared training loop
(toolkit.training). Samples are compared by cosine. The system reads a split through
tasks.forum.records only (post texts, plus author labels for training), so one class serves both tasks.

Two presets (`--param preset=NAME`) give the parts' defaults; a part given on its own overrides them
(`--param preset=paper --param training.epochs=3`):
- "cpu" (the default): the encoder frozen, each distinct post encoded once (64 tokens) and only the
  projection trained: it runs on 2 CPU cores.
- "paper": the GPU-sized setting: 128 tokens, the whole encoder fine-tuned, mixed precision on CUDA.

Registered variants: `episode_encoder` (darkweb: samples as long as the training episodes) and
`reddit_encoder` (reddit: samples of 1 to 16 posts, as the task's ranking and linking samples).
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, NamedTuple, TypeVar

import numpy as np
import torch

from core.errors import HarnessError
from systems.forum_encoder.encoding import PostEncoder, PostEncoderConfig
from systems.forum_encoder.head import ProjectionHead, SampleHead
from systems.forum_encoder.sampling import PostRowsBatch, Sampling, TrainingPosts, post_rows_batch, training_posts
from tasks.forum.records import ForumSample, ForumSplit, sample_texts, split_posts_file
from toolkit.devices import resolve_device, warn_if_gpu_sized
from toolkit.memory import peak_rss_mb, torch_threads
from toolkit.metric_batches import LazyBatches, epoch_plan
from toolkit.metric_losses import LOSSES, MetricLoss, TripletLoss
from toolkit.parts_system import PartsSystem
from toolkit.pretrained import identity_matches, model_folder_checksums
from toolkit.read_texts import (
    TextsRead,
    folder_read_keys,
    prepared_keys,
    pretraining_manifest,
    read_in_split,
    refuse_read_texts,
)
from toolkit.training import check_metric_batches, train_epochs

logger = logging.getLogger("harness")

_System = TypeVar("_System", bound="ForumEncoder")


@dataclass(frozen=True)
class ForumEncoderTraining:
    """The schedule: batches of `authors_per_batch` distinct authors x `samples_per_author` samples
    (>= 2: positives and negatives), `epochs` of `steps_per_epoch` batches (None: one pass over the
    training authors), AdamW with learning rate `lr` for the head and `encoder_lr` for the encoder's
    trainable layers, weight decay, gradients clipped to norm `grad_clip` (None: no clipping).
    """

    name: ClassVar[str] = "adamw"
    authors_per_batch: int = 32
    samples_per_author: int = 4
    epochs: int = 20
    steps_per_epoch: int | None = None
    lr: float = 1e-3
    encoder_lr: float = 2e-5
    weight_decay: float = 0.0
    grad_clip: float | None = 1.0

    def __post_init__(self) -> None:
        check_metric_batches(self.authors_per_batch, self.samples_per_author, self.epochs, self.steps_per_epoch)
        if not 0 < self.lr < math.inf or not 0 < self.encoder_lr < math.inf or not self.weight_decay >= 0:
            raise ValueError(
                f"need lr, encoder_lr > 0 and weight_decay >= 0, got {self.lr}, {self.encoder_lr}, {self.weight_decay}"
            )
        if self.grad_clip is not None and self.grad_clip <= 0:
            raise ValueError(f"grad_clip must be positive or None, got {self.grad_clip}")


class ForumEncoderPreset(NamedTuple):
    """The parts a named preset gives a system, where the caller gives none."""

    encoder: PostEncoderConfig
    head: ProjectionHead
    sampling: Sampling
    loss: MetricLoss
    training: ForumEncoderTraining


def _presets(sampling: Sampling) -> dict[str, ForumEncoderPreset]:
    """The "cpu" and "paper" presets of a variant whose training samples are drawn by `sampling`."""
    return {
        "cpu": ForumEncoderPreset(
            PostEncoderConfig(), ProjectionHead(), sampling, TripletLoss(), ForumEncoderTraining()
        ),
        "paper": ForumEncoderPreset(
            PostEncoderConfig(max_tokens=128, finetune_layers=-1, batch_size=256),
            ProjectionHead(),
            sampling,
            TripletLoss(),
            ForumEncoderTraining(epochs=10, encoder_lr=2e-5, weight_decay=0.01),
        ),
    }


class ForumEncoder(PartsSystem):
    """Pretrained post encoder + mean pooling + a trained projection (see the module docstring).

    Parameters (parts, or JSON values, so `harness run --param KEY=VALUE` can set them):
        preset: "cpu" (default) or "paper": the defaults of the parts below.
        encoder: the Hugging Face model, tokens per post, layers to fine-tune (PostEncoderConfig).
        head: the projection's size (ProjectionHead).
        sampling: posts per training sample (Sampling).
        loss: TripletLoss (semi-hard, margin 0.2), TopKLoss or RankedListLoss (toolkit.metric_losses).
        training: batch shape, epochs, learning rates, gradient clip (ForumEncoderTraining).
        device: "auto", "cpu" or "cuda"; mixed_precision: autocast on CUDA (ignored on CPU).
        cpu_threads: torch's CPU threads while fitting and embedding (None: torch's default).
        cache_dir: a folder to keep frozen-encoder post vectors in across runs (None: memory only).
    """

    name: ClassVar[str]
    metric: ClassVar[str] = "cosine"
    PRESETS: ClassVar[dict[str, ForumEncoderPreset]]
    # the classes each part slot accepts (harness.params.build_part picks one by name)
    PART_CHOICES: ClassVar[dict[str, tuple[type, ...]]] = {
        "encoder": (PostEncoderConfig,),
        "head": (ProjectionHead,),
        "sampling": (Sampling,),
        "loss": LOSSES,
        "training": (ForumEncoderTraining,),
    }
    # the parts (set by `_take_parts`)
    encoder: PostEncoderConfig
    head: ProjectionHead
    sampling: Sampling
    loss: MetricLoss
    training: ForumEncoderTraining

    def __init__(
        self,
        *,
        preset: str = "cpu",
        encoder: PostEncoderConfig | None = None,
        head: ProjectionHead | None = None,
        sampling: Sampling | None = None,
        loss: MetricLoss | None = None,
        training: ForumEncoderTraining | None = None,
        device: str = "auto",
        mixed_precision: bool = True,
        cpu_threads: int | None = None,
        cache_dir: str | None = None,
    ) -> None:
        self._take_parts(
            preset, cpu_threads, encoder=encoder, head=head, sampling=sampling, loss=loss, training=training
        )
        self.device = device
        self.mixed_precision = bool(mixed_precision)
        self.cache_dir = None if cache_dir is None else str(cache_dir)
        self._post_encoder: PostEncoder | None = None
        self._head: SampleHead | None = None
        self._pretrained_read: TextsRead | None = None  # what a pre-trained style encoder read (`_texts_read`)
        self.training_stats: dict[str, Any] = {}

    # ------------------------------------------------------------------ training

    def input_checksums(self) -> dict[str, str]:
        """The checksum of the encoder folder `encoder.model` names, where it names one (`model_folder_checksums`)."""
        return model_folder_checksums(self.encoder.model)

    def _fit(self, train: ForumSplit, *, seed: int) -> None:
        """Train the head (and any trainable encoder layers) on the training split's authors."""
        self._pretrained_read = self._texts_read(train)  # before the training: a refusal comes at once
        device = resolve_device(self.device)
        warn_if_gpu_sized(self.name, self.preset, device)
        torch.manual_seed(seed)
        started, rss_before = time.perf_counter(), peak_rss_mb()
        training = self.training
        posts = training_posts(train, periods=training.samples_per_author)
        if len(posts.authors) < 2:
            raise HarnessError(
                f"{self.name}: training needs at least 2 authors with {training.samples_per_author} posts or more, "
                f"got {len(posts.authors)}"
            )
        encoder = self.encoder.build(device=device, mixed_precision=self.mixed_precision, cache_dir=self.cache_dir)
        head = self.head.build(encoder.width).to(device)
        min_size, max_size = self.sampling.sizes(posts.typical_length)
        logger.info(
            "%s: %d authors (%d left out: fewer than %d posts), %d posts, samples of %d-%d posts, "
            "%d trainable encoder tensors",
            self.name, len(posts.authors), posts.left_out, training.samples_per_author, len(posts.texts),
            min_size, max_size, len(encoder.trainable),
        )  # fmt: skip
        post_vectors = self._post_vectors_of(encoder, posts, device)
        network: torch.nn.Module = (
            head if self.encoder.frozen else torch.nn.ModuleDict({"head": head, "encoder": encoder.model})
        )
        groups = [{"params": list(head.parameters()), "lr": training.lr}]
        if not self.encoder.frozen:
            trainable = [p for p in encoder.model.parameters() if p.requires_grad]
            groups.append({"params": trainable, "lr": training.encoder_lr})
        optimizer = torch.optim.AdamW(groups, weight_decay=training.weight_decay)
        loss_fn = self.loss.build(len(posts.authors), head.linear.out_features)
        steps = training.steps_per_epoch or max(1, math.ceil(len(posts.authors) / training.authors_per_batch))
        seen = {"samples": 0, "posts": 0}

        def batches_of(epoch: int) -> LazyBatches[PostRowsBatch]:
            plan = epoch_plan(len(posts.authors), training.authors_per_batch, seed=seed, epoch=epoch, steps=steps)

            def make(index: int) -> PostRowsBatch:
                rng = np.random.default_rng([seed, epoch, index])
                return post_rows_batch(
                    posts, plan[index], rng, samples_per_author=training.samples_per_author,
                    min_size=min_size, max_size=max_size,
                )  # fmt: skip

            return LazyBatches(range(len(plan)), make)

        def batch_loss(batch: PostRowsBatch) -> torch.Tensor:
            owners = torch.as_tensor(batch.owners, device=device)
            if post_vectors is not None:
                vectors = post_vectors[torch.as_tensor(batch.rows, device=device)]
            else:  # fine-tuning: the posts go through the encoder, with a gradient
                vectors = encoder.forward([token_ids[row] for row in batch.rows])
            embeddings = head(vectors, owners, len(batch.labels))
            return loss_fn(embeddings.float(), torch.as_tensor(batch.labels, device=device))

        def after_step(batch: PostRowsBatch) -> None:
            seen["samples"] += len(batch.labels)
            seen["posts"] += len(batch.rows)

        token_ids = encoder.tokenize(posts.texts) if post_vectors is None else []
        train_started = time.perf_counter()
        history = train_epochs(
            network=network, optimizer=optimizer, epochs=training.epochs, epoch_batches=batches_of,
            batch_loss=batch_loss, device=device, mixed_precision=self.mixed_precision, label=self.name,
            grad_clip=training.grad_clip, after_step=after_step,
        )  # fmt: skip
        train_seconds = time.perf_counter() - train_started
        head.eval()
        encoder.model.eval()
        # the same state as a system loaded from the checkpoint: nothing cached, so both embed alike
        encoder.clear()
        self._post_encoder, self._head = encoder, head
        self.training_stats = {
            "seed": seed,
            "device": device,
            "authors": len(posts.authors),
            "authors_left_out": posts.left_out,
            "posts": len(posts.texts),
            "sample_posts": [min_size, max_size],
            "trainable_encoder_tensors": len(encoder.trainable),
            **{f"encoder_{key}": value for key, value in encoder.stats.items()},
            "encoder_posts_per_s": round(
                encoder.stats["computed_posts"] / max(encoder.stats["encode_seconds"], 1e-9), 2
            ),
            "steps": sum(int(record["batches"]) for record in history),
            "samples": seen["samples"],
            "train_seconds": round(train_seconds, 3),
            "fit_seconds": round(time.perf_counter() - started, 3),
            "epoch_losses": [record["loss"] for record in history],
            "epoch_seconds": [record["seconds"] for record in history],
            "peak_rss_mb_before_fit": round(rss_before, 1),
            "peak_rss_mb_after_fit": round(peak_rss_mb(), 1),
        }
        if device.startswith("cuda"):
            self.training_stats["peak_cuda_mb"] = round(torch.cuda.max_memory_allocated() / 2**20, 1)

    def _texts_read(self, train: ForumSplit) -> TextsRead | None:
        """What a style encoder pre-trained by `harness pretrain-style` (`encoder.model`) read outside the training
        split, which `embed` refuses to answer about; refused at once where it was made for another training split,
        or on these posts with none (`toolkit.read_texts.refuse_other_split`). Any other encoder: None."""
        model = self.encoder.model
        manifest, posts = pretraining_manifest(model), split_posts_file(train)
        return read_in_split(manifest, folder_read_keys(model), train, posts, name=self.name, model=model)

    def _post_vectors_of(self, encoder: PostEncoder, posts: TrainingPosts, device: str) -> torch.Tensor | None:
        """A frozen encoder's vectors of every training post, computed once (None when fine-tuning)."""
        if not self.encoder.frozen:
            return None
        vectors = encoder.vectors(posts.texts, desc=f"{self.name}: encoding training posts")
        encoder.clear()  # the table below holds them; the cache would only double the memory
        return torch.from_numpy(vectors).to(device)

    # ------------------------------------------------------------------ embedding

    def _check_fitted(self) -> tuple[PostEncoder, SampleHead]:
        if self._post_encoder is None or self._head is None:
            raise HarnessError(f"{self.name}: not fitted; call fit() or load() first")
        return self._post_encoder, self._head

    def embed(self, samples: Sequence[ForumSample]) -> np.ndarray:
        """One L2-normalised float32 row per sample; a sample without posts is an error."""
        encoder, head = self._check_fitted()
        texts = [sample_texts(sample) for sample in samples]
        empty = [i for i, own in enumerate(texts) if not own]
        if empty:
            raise HarnessError(f"{self.name}: {len(empty)} sample(s) have no posts (first: sample {empty[0]})")
        if self._pretrained_read is not None:
            keys = prepared_keys(text for own in texts for text in own)
            refuse_read_texts([self._pretrained_read], keys, name=self.name)
        if not texts:
            return np.zeros((0, head.linear.out_features), dtype=np.float32)
        with torch_threads(self.cpu_threads):
            vectors = encoder.vectors([text for own in texts for text in own], desc=f"{self.name}: encoding posts")
            owners = np.repeat(np.arange(len(texts)), [len(own) for own in texts])
            device = next(head.parameters()).device
            with torch.inference_mode():
                embeddings = head(
                    torch.from_numpy(vectors).to(device), torch.as_tensor(owners, device=device), len(texts)
                )
        return embeddings.float().cpu().numpy()

    # ------------------------------------------------------------------ checkpoints

    def save(self, directory: Path) -> None:
        """The head's weights and the encoder's trained layers in weights.safetensors; the encoder's
        identity (a hash of its files), parameters and training statistics in config.json."""
        encoder, head = self._check_fitted()
        arrays = {f"head.{k}": v.detach().cpu().numpy() for k, v in head.state_dict().items()}
        arrays.update({f"encoder.{k}": v for k, v in encoder.trainable_state().items()})
        state = {
            "encoder": {"identity": encoder.identity, "folder": str(encoder.folder), "width": encoder.width},
            "training": self.training_stats,
        }
        if self._pretrained_read is not None:
            read_state, read_arrays = self._pretrained_read.checkpoint()
            state, arrays = state | read_state, arrays | read_arrays
        self._save(directory, state=state, arrays=arrays)

    @classmethod
    def load(cls: type[_System], directory: Path, *, runtime: Mapping[str, Any] | None = None) -> _System:
        """Read a checkpoint of the same class; the encoder must be the one it was trained from (same files).

        Device, mixed precision, CPU threads and the post-vector cache are this machine's (`runtime`, else
        the defaults: device "auto", no disk cache), never the checkpoint's, whose values are provenance only.
        """
        system, state, arrays = cls._read(directory, runtime)
        device = resolve_device(system.device)
        encoder = system.encoder.build(
            device=device, mixed_precision=system.mixed_precision, cache_dir=system.cache_dir
        )
        try:
            identity = state["encoder"]["identity"]
            head = system.head.build(encoder.width)
            head.load_state_dict(
                {k.removeprefix("head."): torch.from_numpy(v) for k, v in arrays.items() if k.startswith("head.")}
            )
        except (KeyError, TypeError, RuntimeError) as error:
            raise HarnessError(f"{directory}: malformed {cls.name} checkpoint ({error!r})") from error
        if not identity_matches(identity, encoder.identity, where=directory):
            raise HarnessError(
                f"{directory}: the encoder {encoder.label} at {encoder.folder} is not the one this checkpoint was "
                f"trained from (its files hash to {encoder.identity[:12]}, the checkpoint's to {identity[:12]})"
            )
        tuned = {k.removeprefix("encoder."): v for k, v in arrays.items() if k.startswith("encoder.")}
        encoder.load_trainable_state(tuned, where=directory)
        system._post_encoder, system._head = encoder, head.to(device).eval()
        system.training_stats = dict(state.get("training", {}))
        system._pretrained_read = TextsRead.from_checkpoint(state, arrays)
        return system


class EpisodeEncoder(ForumEncoder):
    """`episode_encoder` (darkweb): training samples as long as the training episodes, from different periods."""

    name: ClassVar[str] = "episode_encoder"
    PRESETS: ClassVar[dict[str, ForumEncoderPreset]] = _presets(Sampling())


class RedditEncoder(ForumEncoder):
    """`reddit_encoder` (reddit): training samples of 1 to 16 posts (the task's ranking and linking sizes)."""

    name: ClassVar[str] = "reddit_encoder"
    PRESETS: ClassVar[dict[str, ForumEncoderPreset]] = _presets(Sampling(min_posts=1, max_posts=16))
