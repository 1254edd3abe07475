"""The account-linking systems of Khan et al. 2021 on the reddit task: `varlen_linker` and two baselines.

- `varlen_linker` (VarlenLinker): the sample encoder (systems.varlen_linker.model) trained on
  variable-size samples, M = R + ceil(x (S - R)), x ~ Beta(3, 1), R = 1, S = 16; embeds a sample of
  any size in one pass.
- `iur_fixed` (IurFixed): the same encoder trained on fixed-size samples of S = 16 posts, as the
  IUR model of Andrews & Bishop (2019) is: a sample is padded with blank posts to 16, a longer one
  is cut into contiguous groups of 16 (the last padded) whose embeddings are averaged.
- `varlen_avg` (VarlenAvg): the paper's `Avg`: the same encoder trained on single posts; a
  sample's embedding is the mean of its posts' embeddings.

All three score pairs by Euclidean distance (metric "euclidean"). Training: SentencePiece unigram
model on the training texts, then batches of `authors_per_batch` distinct authors with
`samples_per_author` samples each, a metric-learning loss (toolkit.metric_losses), Adam, in
the shared training loop (toolkit.training). Mixed precision on CUDA; data parallel under torchrun
(one batch per process per step).

Training samples: an author's samples of a batch come from distinct periods of their posts and
never share a post, and authors with fewer than `sampling.min_posts` training posts are left out
(systems.varlen_linker.sampling; `--param sampling=overlapping` gives the sampler of the runs before
issue 13, independent starts over the whole stream, with every author kept).

The constructor takes parts (harness.params): `encoder` (SampleEncoderConfig), `sample_sizes`
(SampleSizes), `sampling` (PeriodSampling or OverlappingSampling), `loss` (TripletLoss, TopKLoss or
RankedListLoss) and `training` (VarlenTraining, Adam; or SgdTraining):
`VarlenLinker(encoder=SampleEncoderConfig(token_dim=32), loss=TopKLoss(top_k=8))`, or on the command
line `--param encoder.token_dim=32 --param loss=topk --param loss.top_k=8`.

Two presets (`--param preset=NAME`) give the parts' defaults; a part given on its own overrides them,
field by field (`--param preset=paper --param training.epochs=3`):
- "cpu" (the default): small layers (64-128), vocabulary 8192, Adam, 5 passes over the authors;
  trains on 2 CPU cores. Minimum-posts filter 8 (2 posts per period for the 4 samples of an author).
- "paper": the paper's sizes (appendix B and C: subword and subreddit embeddings 512, 512
  convolution filters per width, attention 512, embedding D = 1024, SentencePiece vocabulary 2^16,
  32 subwords per post; triplet loss, margin 0.2, appendix A; samples of 1 to 16 posts, Beta(3, 1),
  section 2.3) and MUD's filter of 100 to 1000 posts per author (section 4.1). The paper does not
  state its optimiser or batch; those come from the authors' released configuration
  (github.com/noa/naacl2021, expts/reddit/million_user_configs/full_triplet_varying_1_16.cfg):
  batches of 1024 samples (256 authors x 4), SGD with momentum 0.9, learning rate 0.05 divided by
  10 three times (at 1/4, 1/2, 3/4 of the steps), gradient norm clipped to 1, 100 epochs of 10,000
  steps. Meant for a GPU (mixed precision on CUDA): set `training.epochs` / `training.steps_per_epoch`
  to the time at hand; the decay points follow the total. On this project's forum data only 44 of
  3,232 training authors have 100 posts or more: lower `sampling.min_posts` to train on more.
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
from core.progress import Progress
from systems.varlen_linker.batching import (
    SampleBatch,
    TokenisedPosts,
    blank_row,
    make_batch,
    padded,
    post_table,
    training_batch,
)
from systems.varlen_linker.model import SampleEncoder, SampleEncoderConfig
from systems.varlen_linker.sampling import SAMPLINGS, OverlappingSampling, PeriodSampling, SampleSizes
from systems.varlen_linker.text import SubwordTokenizer
from tasks.reddit.records import Action, RedditData
from toolkit.devices import autocast, resolve_device, warn_if_gpu_sized
from toolkit.distributed import DistributedContext, barrier, init_distributed, shard, wrap_model
from toolkit.legacy import LegacyParams
from toolkit.memory import peak_rss_mb, torch_threads, trim_heap
from toolkit.metric_batches import LazyBatches, epoch_plan
from toolkit.metric_losses import LOSSES, MetricLoss, TripletLoss
from toolkit.parts_system import PartsSystem
from toolkit.training import check_metric_batches, train_epochs

logger = logging.getLogger("harness")

EMBED_MODES = ("whole", "groups", "posts")
_System = TypeVar("_System", bound="VarlenLinker")


@dataclass(frozen=True)
class VarlenTraining:
    """The training schedule: batches of `authors_per_batch` distinct authors x `samples_per_author`
    samples (>= 2 of each: metric learning needs positives and negatives), `epochs` of
    `steps_per_epoch` batches (None: one pass over the training authors), Adam with learning rate
    `lr`, gradients clipped to norm `grad_clip`.
    """

    name: ClassVar[str] = "adam"
    authors_per_batch: int = 32
    samples_per_author: int = 4
    epochs: int = 5
    steps_per_epoch: int | None = None
    lr: float = 1e-3
    grad_clip: float = 1.0

    def __post_init__(self) -> None:
        check_metric_batches(self.authors_per_batch, self.samples_per_author, self.epochs, self.steps_per_epoch)
        if not 0 < self.lr < math.inf:
            raise ValueError(f"lr must be positive and finite, got {self.lr}")
        if (
            not 0 < self.grad_clip < math.inf
        ):  # audit 22, F2: -1 turned every step uphill, 0 stopped learning, both silently
            raise ValueError(f"grad_clip must be positive and finite, got {self.grad_clip}")

    def optimizer(self, parameters: Any) -> torch.optim.Optimizer:
        """Adam over `parameters` at learning rate `lr`."""
        return torch.optim.Adam(parameters, lr=self.lr)

    def lr_factor(self, step: int, total: int) -> float:
        """The learning rate's factor after `step` of `total` steps: constant."""
        return 1.0


@dataclass(frozen=True)
class SgdTraining(VarlenTraining):
    """Training with SGD and momentum, the learning rate divided by 10 `lr_decays` times, at evenly
    spaced points of the run (3: at 1/4, 1/2 and 3/4 of the steps, as the authors' released
    configuration does at 250k, 500k and 750k of 1M steps). Other fields as VarlenTraining.
    """

    name: ClassVar[str] = "sgd"
    lr: float = 0.05
    momentum: float = 0.9
    lr_decays: int = 0

    def __post_init__(self) -> None:
        super().__post_init__()
        if not 0.0 <= self.momentum < 1.0:
            raise ValueError(f"momentum must lie in [0, 1), got {self.momentum}")
        if self.lr_decays < 0:
            raise ValueError(f"lr_decays must be >= 0, got {self.lr_decays}")

    def optimizer(self, parameters: Any) -> torch.optim.Optimizer:
        """SGD with momentum over `parameters` at learning rate `lr`."""
        return torch.optim.SGD(parameters, lr=self.lr, momentum=self.momentum)

    def lr_factor(self, step: int, total: int) -> float:
        """0.1 to the number of decay points (k total / (lr_decays + 1), k = 1..lr_decays) reached by `step`."""
        points = [k * total // (self.lr_decays + 1) for k in range(1, self.lr_decays + 1)]
        return 0.1 ** sum(1 for point in points if step >= point)


TRAININGS = (VarlenTraining, SgdTraining)
Sampling = PeriodSampling | OverlappingSampling


class VarlenPreset(NamedTuple):
    """The parts a named preset gives a system, where the caller gives none."""

    encoder: SampleEncoderConfig
    sample_sizes: SampleSizes
    sampling: Sampling
    loss: MetricLoss
    training: VarlenTraining


# the paper's sizes (appendix B, C) and the released configuration's schedule; see the module doc
PAPER_ENCODER = SampleEncoderConfig(
    vocab_size=2**16, post_length=32, token_dim=512, filters=512, subreddit_dim=512, attention_dim=512,
    embedding_dim=1024,
)  # fmt: skip
PAPER_TRAINING = SgdTraining(
    authors_per_batch=256, samples_per_author=4, epochs=100, steps_per_epoch=10_000, lr=0.05, momentum=0.9,
    lr_decays=3, grad_clip=1.0,
)  # fmt: skip


def _presets(sample_sizes: SampleSizes) -> dict[str, VarlenPreset]:
    """The "cpu" and "paper" presets of a variant trained on samples of `sample_sizes`."""
    return {
        "cpu": VarlenPreset(SampleEncoderConfig(), sample_sizes, PeriodSampling(), TripletLoss(), VarlenTraining()),
        "paper": VarlenPreset(
            PAPER_ENCODER, sample_sizes, PeriodSampling(min_posts=100, max_posts=1000), TripletLoss(margin=0.2),
            PAPER_TRAINING,
        ),
    }  # fmt: skip


# Checkpoints written before parts had flat parameters and the loss as a string: old name -> dotted name.
_FLAT_RENAMES = {
    **{
        key: f"encoder.{key}"
        for key in ("vocab_size", "post_length", "token_dim", "filters", "subreddit_dim", "attention_dim")
        + ("embedding_dim", "use_subreddit", "use_hour")
    },
    "min_sample_length": "sample_sizes.min_length",
    "max_sample_length": "sample_sizes.max_length",
    "beta_a": "sample_sizes.beta_a",
    "beta_b": "sample_sizes.beta_b",
    **{
        key: f"training.{key}"
        for key in ("authors_per_batch", "samples_per_author", "epochs", "steps_per_epoch", "lr", "grad_clip")
    },
}
# the old loss strings -> (the loss part's name, {old flat parameter: the part's field})
_FLAT_LOSSES = {
    "triplet": ("triplet", {"margin": "margin"}),
    "topk": ("topk", {"top_k": "top_k", "top_k_margin": "margin"}),
    "ranked_list": ("ranked_list", {"margin": "margin"}),
}
_FLAT_LOSS_PARAMS = ("margin", "top_k", "top_k_margin")


def _flat_loss(flat: dict[str, Any]) -> dict[str, Any]:
    """The flat format's loss string and its settings as a loss part (dotted), the other parameters as they are."""
    loss = flat.pop("loss")
    if loss not in _FLAT_LOSSES:
        raise HarnessError(f"unknown loss {loss!r} in a checkpoint; known: {', '.join(_FLAT_LOSSES)}")
    part, fields = _FLAT_LOSSES[loss]
    settings = {key: flat.pop(key) for key in _FLAT_LOSS_PARAMS if key in flat}
    return {
        **flat,
        "loss": part,
        **{f"loss.{field}": settings[old] for old, field in fields.items() if old in settings},
    }


class VarlenLinker(PartsSystem):
    """Variable-length sample encoder (Khan et al. 2021); see the module docstring.

    Parameters (parts, or JSON values, so `harness run --param KEY=VALUE` can set them):
        preset: "cpu" (default) or "paper": the defaults of the five parts below (module docstring).
        encoder: the sample encoder's vocabulary, post length, layer sizes and features
            (SampleEncoderConfig; paper: 2^16, 32, 512, 512 per width, 512, 512, 1024, S and P).
        sample_sizes: R, S and Beta(a, b) of the training sample sizes (SampleSizes; paper: 1, 16, 3, 1).
        sampling: where an author's samples lie and which authors train: PeriodSampling (distinct
            periods, no shared post; minimum-posts filter) or OverlappingSampling (the old sampler).
        loss: TripletLoss (semi-hard mining, paper margin 0.2), TopKLoss (Lu et al.; paper k = 4,
            margin 0.25) or RankedListLoss (pytorch-metric-learning).
        training: batch shape, epochs and steps, learning rate, gradient clip: VarlenTraining (Adam) or
            SgdTraining (SGD with momentum and step decays).
        embed_batch_posts: posts per forward pass when embedding.
        device: "auto", "cpu" or "cuda"; mixed_precision: autocast on CUDA (ignored on CPU).
        cpu_threads: torch's CPU threads while fitting and embedding (None: torch's default). On a
            machine whose cores are shared with other jobs, 1 can be several times faster.
    """

    name: ClassVar[str] = "varlen_linker"
    metric: ClassVar[str] = "euclidean"
    embed_mode: ClassVar[str] = "whole"
    # the classes each part slot accepts (harness.params.build_part picks one by name)
    PART_CHOICES: ClassVar[dict[str, tuple[type, ...]]] = {
        "encoder": (SampleEncoderConfig,),
        "sample_sizes": (SampleSizes,),
        "sampling": SAMPLINGS,
        "loss": LOSSES,
        "training": TRAININGS,
    }
    # the parts (set by `_take_parts`)
    encoder: SampleEncoderConfig
    sample_sizes: SampleSizes
    sampling: Sampling
    loss: MetricLoss
    training: VarlenTraining
    PRESETS: ClassVar[dict[str, VarlenPreset]] = _presets(SampleSizes())
    # flat checkpoints (the loss a string) made today's; one without a sampling part was trained with the
    # overlapping sampler (before issue 13), and says so
    LEGACY_PARAMS: ClassVar[LegacyParams] = LegacyParams(
        slot="loss", renames=_FLAT_RENAMES, convert=_flat_loss, absent={"sampling": OverlappingSampling.name}
    )

    def __init__(
        self,
        *,
        preset: str = "cpu",
        encoder: SampleEncoderConfig | None = None,
        sample_sizes: SampleSizes | None = None,
        sampling: Sampling | None = None,
        loss: MetricLoss | None = None,
        training: VarlenTraining | None = None,
        embed_batch_posts: int = 4096,
        device: str = "auto",
        mixed_precision: bool = True,
        cpu_threads: int | None = None,
    ) -> None:
        if embed_batch_posts < 1:
            raise HarnessError(f"{self.name}: embed_batch_posts must be positive, got {embed_batch_posts}")
        self._take_parts(
            preset, cpu_threads, encoder=encoder, sample_sizes=sample_sizes, sampling=sampling, loss=loss,
            training=training,
        )  # fmt: skip
        self.embed_batch_posts = embed_batch_posts
        self.device = device
        self.mixed_precision = mixed_precision
        self._tokenizer: SubwordTokenizer | None = None
        self._model: SampleEncoder | None = None
        self._num_subreddits: int | None = None
        self.training_stats: dict[str, Any] = {}

    # ------------------------------------------------------------------ training

    def _training_pad(self) -> int | None:
        """Fixed-size models see padded samples in training as at test time; others see real posts only."""
        return self.sample_sizes.max_length if self.embed_mode == "groups" else None

    def _fit(self, train: RedditData, *, seed: int) -> None:
        """Train the tokenizer on every training post, the encoder on the authors `sampling` keeps."""
        device = resolve_device(self.device)
        warn_if_gpu_sized(self.name, self.preset, device)
        context = init_distributed(device)
        torch.manual_seed(seed)
        started, rss_before = time.perf_counter(), peak_rss_mb()
        training = self.training
        with_posts = [s for s in train.streams if s.actions]
        if len(with_posts) < 2:
            raise HarnessError(f"{self.name}: training needs at least 2 authors with posts, got {len(with_posts)}")
        streams = [s for s in with_posts if self.sampling.keeps(len(s.actions), training.samples_per_author)]
        if len(streams) < 2:
            raise HarnessError(
                f"{self.name}: {len(streams)} of {len(with_posts)} training authors pass the minimum-posts filter "
                f"(sampling: {self.sampling}, {training.samples_per_author} samples per author); metric learning "
                "needs at least 2: lower sampling.min_posts"
            )
        self._num_subreddits = len(train.subreddits) + 1  # the task's N most common plus "other"
        # subwords from every training post: the filter is about which authors give samples
        all_texts = [a.text for s in with_posts for a in s.actions]
        tokenizer = self._train_tokenizer(all_texts, seed, context, device)
        actions = [a for s in streams for a in s.actions]
        post_length = self.encoder.post_length
        table = post_table(actions, tokenizer, post_length=post_length, num_subreddits=self._num_subreddits)
        offsets = np.cumsum([0] + [len(s.actions) for s in streams])
        model = self.encoder.build(num_tokens=tokenizer.vocab_size, num_subreddits=self._num_subreddits).to(device)
        network = wrap_model(model, context, device)
        optimizer = training.optimizer(model.parameters())
        loss_fn = self.loss.build(len(streams), self.encoder.embedding_dim)
        steps = training.steps_per_epoch or max(1, math.ceil(len(streams) / training.authors_per_batch))
        total_steps = training.epochs * len(shard(list(range(steps)), context))  # this process's, for lr decays
        logger.info(
            "%s: %d of %d authors (sampling %s), %d posts, vocabulary %d, %d epochs x %d steps, %d process(es)",
            self.name, len(streams), len(with_posts), self.sampling.name, len(actions), tokenizer.vocab_size,
            training.epochs, steps, context.world_size,
        )  # fmt: skip
        seen = {"samples": 0, "posts": 0, "steps": 0}

        def batches_of(epoch: int) -> LazyBatches[SampleBatch]:
            plan = epoch_plan(len(streams), training.authors_per_batch, seed=seed, epoch=epoch, steps=steps)

            def make(index: int) -> SampleBatch:
                rng = np.random.default_rng([seed, epoch, index])  # the same batch whatever the process count
                return training_batch(
                    table, offsets, plan[index], rng, samples_per_author=training.samples_per_author,
                    sizes=self.sample_sizes, sampling=self.sampling, pad_to=self._training_pad(),
                )  # fmt: skip

            return LazyBatches(shard(list(range(len(plan))), context), make)

        def batch_loss(batch: SampleBatch) -> torch.Tensor:
            tokens, hours, subreddits, lengths, labels = (torch.as_tensor(a, device=device) for a in batch)
            with autocast(device, self.mixed_precision):
                embeddings = network(tokens, hours, subreddits, lengths)
            return loss_fn(embeddings.float(), labels)  # the loss in float32, outside autocast

        def after_step(batch: SampleBatch) -> None:
            if device == "cpu":
                trim_heap()
            seen["samples"] += len(batch.lengths)
            seen["posts"] += int((batch.hours >= 0).sum())  # real posts, not padding
            seen["steps"] += 1
            factor = training.lr_factor(seen["steps"], total_steps)
            for group in optimizer.param_groups:
                group["lr"] = training.lr * factor

        train_started = time.perf_counter()
        history = train_epochs(
            network=network, optimizer=optimizer, epochs=training.epochs, epoch_batches=batches_of,
            batch_loss=batch_loss, device=device, mixed_precision=self.mixed_precision, label=self.name,
            context=context, grad_clip=training.grad_clip, after_step=after_step,
        )  # fmt: skip
        train_seconds = time.perf_counter() - train_started
        model.eval()
        self._tokenizer, self._model = tokenizer, model
        samples_seen, posts_seen = seen["samples"], seen["posts"]
        self.training_stats = {
            "seed": seed,
            "device": device,
            "processes": context.world_size,
            "authors": len(streams),
            "posts": len(actions),
            "authors_with_posts": len(with_posts),
            "authors_left_out_by_filter": len(with_posts) - len(streams),
            "tokenizer_posts": len(all_texts),
            "final_lr": optimizer.param_groups[0]["lr"],
            "vocab_size": tokenizer.vocab_size,
            "steps_per_process": sum(int(record["batches"]) for record in history),
            "samples_per_process": samples_seen,
            "train_seconds": round(train_seconds, 3),
            "fit_seconds": round(time.perf_counter() - started, 3),
            "posts_per_process": posts_seen,
            "train_samples_per_s": round(samples_seen * context.world_size / max(train_seconds, 1e-9), 2),
            "train_posts_per_s": round(posts_seen * context.world_size / max(train_seconds, 1e-9), 2),
            "epoch_losses": [record["loss"] for record in history],
            "epoch_seconds": [record["seconds"] for record in history],
            "peak_rss_mb_before_fit": round(rss_before, 1),
            "peak_rss_mb_after_fit": round(peak_rss_mb(), 1),
        }
        if device.startswith("cuda"):
            self.training_stats["peak_cuda_mb"] = round(torch.cuda.max_memory_allocated() / 2**20, 1)
        barrier(context)

    def _train_tokenizer(
        self, texts: list[str], seed: int, context: DistributedContext, device: str
    ) -> SubwordTokenizer:
        """Train on the main process and share the model bytes, so every process has the same subwords."""
        proto = b""
        if context.is_main:
            proto = SubwordTokenizer.train(texts, vocab_size=self.encoder.vocab_size, seed=seed).model_proto
        if context.enabled:
            proto = _broadcast_bytes(proto, device)
        return SubwordTokenizer(proto)

    # ------------------------------------------------------------------ embedding

    def _check_fitted(self) -> tuple[SubwordTokenizer, SampleEncoder, int]:
        if self._tokenizer is None or self._model is None or self._num_subreddits is None:
            raise HarnessError(f"{self.name}: not fitted; call fit() or load() first")
        return self._tokenizer, self._model, self._num_subreddits

    def _units(self, rows: np.ndarray, blank: int) -> list[np.ndarray]:
        """What the encoder embeds for one sample (given as its table rows); their embeddings are averaged."""
        if self.embed_mode == "whole":
            return [rows]
        if self.embed_mode == "posts":
            return [rows[i : i + 1] for i in range(len(rows))]
        size = self.sample_sizes.max_length
        return [padded(rows[i : i + size], size, blank) for i in range(0, len(rows), size)]

    def embed(self, samples: Sequence[Sequence[Action]]) -> np.ndarray:
        """One L2-normalised row per sample (the fixed-size and averaging baselines: a mean of such rows).

        Unknown subreddit indices fall into "other"; empty texts are all padding. A sample
        without posts cannot be embedded and is an error.
        """
        tokenizer, model, num_subreddits = self._check_fitted()
        empty = [i for i, sample in enumerate(samples) if len(sample) == 0]
        if empty:
            raise HarnessError(f"{self.name}: {len(empty)} sample(s) have no posts (first: sample {empty[0]})")
        if not samples:
            return np.zeros((0, self.encoder.embedding_dim), dtype=np.float32)
        actions = [a for sample in samples for a in sample]
        table = post_table(actions, tokenizer, post_length=self.encoder.post_length, num_subreddits=num_subreddits)
        offsets = np.cumsum([0] + [len(s) for s in samples])
        units, owner = [], []
        for i in range(len(samples)):
            for unit in self._units(np.arange(offsets[i], offsets[i + 1], dtype=np.int64), blank_row(table)):
                units.append(unit)
                owner.append(i)
        with torch_threads(self.cpu_threads):
            vectors = self._embed_units(model, table, units)
        sums = np.zeros((len(samples), vectors.shape[1]), dtype=np.float64)
        np.add.at(sums, np.asarray(owner), vectors)
        counts = np.bincount(np.asarray(owner), minlength=len(samples))
        return (sums / counts[:, None]).astype(np.float32)

    @torch.no_grad()
    def _embed_units(self, model: SampleEncoder, table: TokenisedPosts, units: list[np.ndarray]) -> np.ndarray:
        device = resolve_device(self.device)
        model.to(device).eval()
        order = sorted(range(len(units)), key=lambda i: -len(units[i]))  # similar sizes together: less padding
        out = np.zeros((len(units), self.encoder.embedding_dim), dtype=np.float32)
        start = 0
        progress = Progress(len(units), desc=f"{self.name}: embedding", unit="samples")
        while start < len(order):
            stop, posts = start, 0
            while stop < len(order) and (stop == start or posts + len(units[order[stop]]) <= self.embed_batch_posts):
                posts += len(units[order[stop]])
                stop += 1
            chosen = order[start:stop]
            batch = make_batch(table, [units[i] for i in chosen], chosen)
            tokens, hours, subreddits, lengths, _ = (torch.as_tensor(a, device=device) for a in batch)
            with autocast(device, self.mixed_precision):
                vectors = model(tokens, hours, subreddits, lengths)
            out[np.asarray(chosen)] = vectors.float().cpu().numpy()
            progress.update(len(chosen))
            start = stop
        progress.close()
        return out

    # ------------------------------------------------------------------ checkpoints

    def save(self, directory: Path) -> None:
        """Weights and the SentencePiece model (as bytes) in weights.safetensors; sizes and stats in config.json."""
        tokenizer, model, num_subreddits = self._check_fitted()
        arrays = {f"model.{k}": v.detach().cpu().numpy() for k, v in model.state_dict().items()}
        arrays["tokenizer"] = np.frombuffer(tokenizer.model_proto, dtype=np.uint8).copy()
        state = {"num_subreddits": num_subreddits, "training": self.training_stats}
        self._save(directory, state=state, arrays=arrays)

    @classmethod
    def load(cls: type[_System], directory: Path, *, runtime: Mapping[str, Any] | None = None) -> _System:
        """Read a checkpoint written by `save` of the same class (or by its flat-parameter version).

        Device, mixed precision and CPU threads are this machine's (`runtime`, else the defaults), not the checkpoint's.
        """
        system, state, arrays = cls._read(directory, runtime)
        try:
            tokenizer = SubwordTokenizer(arrays["tokenizer"].tobytes())
            num_subreddits = int(state["num_subreddits"])
            model = system.encoder.build(num_tokens=tokenizer.vocab_size, num_subreddits=num_subreddits)
            weights = {k.removeprefix("model."): torch.from_numpy(v) for k, v in arrays.items() if k != "tokenizer"}
            model.load_state_dict(weights)
        except (KeyError, TypeError, ValueError, RuntimeError) as error:
            raise HarnessError(f"{directory}: malformed {cls.name} checkpoint ({error!r})") from error
        model.eval()
        system._tokenizer, system._model, system._num_subreddits = tokenizer, model, num_subreddits
        system.training_stats = dict(state.get("training", {}))
        return system


def _broadcast_bytes(data: bytes, device: str) -> bytes:
    """Rank 0's bytes on every process (a length, then the bytes, as uint8 tensors)."""
    import torch.distributed as dist

    where = device if device.startswith("cuda") else "cpu"
    length = torch.tensor([len(data)], dtype=torch.int64, device=where)
    dist.broadcast(length, src=0)
    buffer = torch.zeros(int(length.item()), dtype=torch.uint8, device=where)
    if data:
        buffer.copy_(torch.frombuffer(bytearray(data), dtype=torch.uint8))
    dist.broadcast(buffer, src=0)
    return bytes(buffer.cpu().numpy())


class IurFixed(VarlenLinker):
    """Fixed-length IUR-style baseline: the encoder trained on samples of exactly S posts.

    Shorter samples are padded with blank posts to S (in training too: authors with fewer posts);
    longer ones are cut into contiguous groups of S (the last padded) whose embeddings are averaged.
    Parameters as VarlenLinker; sample_sizes defaults to min_length = max_length = 16 (set both to
    the same S). Andrews & Bishop (EMNLP 2019) use another encoder and loss; what is kept here
    is what the linking comparison is about: a fixed sample size.
    """

    name: ClassVar[str] = "iur_fixed"
    embed_mode: ClassVar[str] = "groups"
    # the same constructor, presets with other sample sizes: `harness run --param` and the result record see them
    PRESETS: ClassVar[dict[str, VarlenPreset]] = _presets(SampleSizes(min_length=16, max_length=16))


class VarlenAvg(VarlenLinker):
    """The paper's `Avg` baseline: the encoder trained on single posts (sample_sizes min = max length = 1);
    a sample's embedding is the mean of its posts' embeddings. Parameters as VarlenLinker.
    """

    name: ClassVar[str] = "varlen_avg"
    embed_mode: ClassVar[str] = "posts"
    # the same constructor, presets with other sample sizes: `harness run --param` and the result record see them
    PRESETS: ClassVar[dict[str, VarlenPreset]] = _presets(SampleSizes(min_length=1, max_length=1))
