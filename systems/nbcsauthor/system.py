"""The SYSML episode encoder trained with a choice of metric loss: `nbcsauthor`, `sysml`, `episode_cnn`.

One class, `EpisodeAuthor`, with three registered names that differ only in their default parts:

- `nbcsauthor`: NBC-Softmax (tau 0.2, alpha 0.5), transformer pooling: NBCSAuthor (Kulatilleke et al.).
- `sysml`: plain softmax, transformer pooling: SYSML (Maneriker et al. 2021).
- `episode_cnn`: plain softmax, mean pooling: the CNN baseline with time and context, no transformer.

The loss is a part: `cosface`, `arcface`, `multi_similarity` and `contrastive` (pytorch-metric-learning)
are the paper's comparison, e.g. `harness run --system sysml --param loss=cosface --param loss.margin=0.3`.

Sizes and schedule come from a preset (systems.nbcsauthor.settings): "cpu" (the default, minutes on
a 2-core CPU), "paper" and "paper_multitask" (SYSML's sizes and training, for a GPU), "full" (the
defaults before presets); any field can be changed on top, e.g. `--param preset=paper --param
training.epochs=10`.

Fitting: byte-level BPE trained on the training posts; sub-forum rows initialised from metapath2vec
on each market's training graph (SYSML; optionally frozen); then epochs of batches (see
systems.nbcsauthor.batches for single-task and multitask labels) in toolkit.training's loop, Adam,
mixed precision on CUDA, DDP under torchrun. With `training.validation_share` > 0 a validation split
is held out by author-episodes (systems.nbcsauthor.validation), its loss measured after each epoch,
the learning rate reduced on its plateaus and the best epoch's weights kept, as SYSML trains.
Each epoch's record (fit info `epochs`, saved with the checkpoint) has the mean loss, the learning
rate, the validation loss, and the mean norm of each loss term's gradient with respect to z
(`grad_z_ce`, `grad_z_nbc`: the weighted terms of NBC-Softmax). Only the encoder is kept: class
weights serve training alone.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, NamedTuple

import numpy as np
import torch
from torch import nn

from core.errors import HarnessError
from core.progress import Progress
from harness.params import is_part
from systems.nbcsauthor.batches import HeadBatch, LabelPlan, class_numbers, epoch_batches, plan_labels
from systems.nbcsauthor.graph import GraphInit, Metapath2Vec, RandomInit
from systems.nbcsauthor.losses import (
    LOSSES,
    ArcFace,
    Contrastive,
    CosFace,
    Loss,
    MultiSimilarity,
    NBCSoftmax,
    Softmax,
    term_gradient_norms,
)
from systems.nbcsauthor.model import WINDOWS, EpisodeEncoderConfig, SysmlEpisodeNet
from systems.nbcsauthor.settings import PRESETS, SysmlPreset, SysmlTraining
from systems.nbcsauthor.tokenizer import PostTokenizer
from systems.nbcsauthor.validation import BestEpoch, hold_out
from tasks.darkweb.records import DarkwebData, Episode
from toolkit.devices import autocast, resolve_device, warn_if_gpu_sized
from toolkit.distributed import DistributedContext, all_reduce_mean, init_distributed, shard, wrap_model
from toolkit.legacy import LegacyParams
from toolkit.parts_system import PartsSystem
from toolkit.training import train_epochs

logger = logging.getLogger("harness")

UNKNOWN_CONTEXT = 0
GRAPH_INITS = (Metapath2Vec, RandomInit)


# checkpoints written before parts: flat parameters, the loss as a string
_FLAT_RENAMES = {
    **{
        key: f"encoder.{key}"
        for key in (
            "vocab_size",
            "max_tokens",
            "token_dim",
            "filters",
            "text_dim",
            "time_dim",
            "context_dim",
            "output_dim",
            "pooling",
            "layers",
            "heads",
            "ff_dim",
            "dropout",
        )
    },
    **{key: f"training.{key}" for key in ("epochs", "batch_size", "lr", "cross_sampling")},
    "graph_epochs": "graph_init.epochs",
    "graph_walks": "graph_init.walks_per_node",
    "tau": "loss.tau",
    "alpha": "loss.alpha",
}
# checkpoints written before presets took their unset fields from the parts' own defaults
PRESET_BEFORE_PRESETS = "full"
# the old loss strings -> today's loss part names
_FLAT_LOSSES = {
    "nbc_softmax": NBCSoftmax.name,
    "softmax": Softmax.name,
    "cosface": CosFace.name,
    "arcface": ArcFace.name,
    "multi_similarity": MultiSimilarity.name,
    "contrastive": Contrastive.name,
}


def _flat_parts(flat: dict[str, Any]) -> dict[str, Any]:
    """The flat format's loss string and graph flag as part names; settings the chosen parts do not use dropped."""
    loss = _FLAT_LOSSES[flat.pop("loss")]
    if loss != NBCSoftmax.name:  # tau and alpha were NBC-Softmax's, ignored by the other losses
        flat.pop("tau", None)
        flat.pop("alpha", None)
    graph = Metapath2Vec.name if flat.pop("graph_init", True) else RandomInit.name
    if graph == RandomInit.name:
        flat.pop("graph_epochs", None)
        flat.pop("graph_walks", None)
    return {"loss": loss, "graph_init": graph, **flat}


class EpisodeAuthor(PartsSystem):
    """SYSML's episode encoder with a metric loss (see the module docstring).

    Parameters (`--param preset=paper`, `--param encoder.text_dim=64`, `--param loss=cosface` set them):
        preset: "cpu" (default), "paper", "paper_multitask" or "full" (systems.nbcsauthor.settings): the base
            that encoder, training and graph_init start from, and NBC-Softmax's tau.
        encoder: the episode encoder's sizes (EpisodeEncoderConfig: BPE, CNN, time, context, pooling).
        loss: NBCSoftmax(tau, alpha, temperature_form), Softmax(), CosFace, ArcFace, MultiSimilarity
            or Contrastive.
        graph_init: Metapath2Vec(epochs, walks_per_node, walk_length, context_size, freeze) initialises
            the sub-forum rows (SYSML); RandomInit() leaves them random (the "- graph context" ablation).
        training: epochs, batch size, learning rate, multitask CROSS sampling, validation split,
            best-epoch and ReduceLROnPlateau (SysmlTraining).
        device: auto, cpu or cuda; mixed_precision: autocast on CUDA.
        embed_batch_size: episodes per forward pass when embedding.

    A part given as None is the preset's (the loss: the registered name's, with the preset's tau
    where it is NBC-Softmax); a name or a dict of fields changes the preset's part.
    """

    name = "nbcsauthor"
    PRESETS: ClassVar[dict[str, SysmlPreset]] = PRESETS
    PART_CHOICES: ClassVar[dict[str, tuple[type, ...]]] = {
        "encoder": (EpisodeEncoderConfig,),
        "loss": LOSSES,
        "graph_init": GRAPH_INITS,
        "training": (SysmlTraining,),
    }
    DEFAULT_LOSS: ClassVar[type] = NBCSoftmax
    POOLING: ClassVar[str] = "transformer"
    # flat checkpoints (no encoder part) made today's; those written before presets took the parts' own defaults
    LEGACY_PARAMS: ClassVar[LegacyParams] = LegacyParams(
        slot="encoder", renames=_FLAT_RENAMES, convert=_flat_parts, absent={"preset": PRESET_BEFORE_PRESETS}
    )

    def __init__(
        self,
        preset: str = "cpu",
        encoder: EpisodeEncoderConfig | Mapping[str, Any] | None = None,
        loss: Loss | str | Mapping[str, Any] | None = None,
        graph_init: GraphInit | str | Mapping[str, Any] | None = None,
        training: SysmlTraining | Mapping[str, Any] | None = None,
        device: str = "auto",
        mixed_precision: bool = True,
        embed_batch_size: int = 512,
    ) -> None:
        base = self._preset(preset)
        self.encoder: EpisodeEncoderConfig = self._part(
            "encoder", encoder, dataclasses.replace(base.encoder, pooling=self.POOLING)
        )
        self.loss: Loss = self._part("loss", loss, self._preset_loss(self.DEFAULT_LOSS(), base.tau))
        if not (loss is None or is_part(loss) or (isinstance(loss, Mapping) and "tau" in loss)):
            self.loss = self._preset_loss(self.loss, base.tau)  # a loss named without its tau: the preset's
        self.graph_init: GraphInit = self._part("graph_init", graph_init, base.graph_init)
        self.training: SysmlTraining = self._part("training", training, base.training)
        if embed_batch_size < 1:
            raise HarnessError(f"embed_batch_size must be at least 1, got {embed_batch_size!r}")
        self.device = device
        self.mixed_precision = bool(mixed_precision)
        self.embed_batch_size = int(embed_batch_size)
        # fitted state
        self._tokenizer: PostTokenizer | None = None
        self._contexts: dict[tuple[str, str], int] = {}
        self._encoder: SysmlEpisodeNet | None = None
        self._info: dict[str, Any] = {}

    @staticmethod
    def _preset_loss(loss: Any, tau: float) -> Any:
        """NBC-Softmax with the preset's tau (the paper: 0.2 single-market, 0.3 multitask)."""
        return dataclasses.replace(loss, tau=tau) if isinstance(loss, NBCSoftmax) else loss

    # -- the protocol ------------------------------------------------------------------------------

    @property
    def info(self) -> dict[str, Any]:
        """What fitting measured: sizes, the validation split, per-epoch records, set-up seconds."""
        return dict(self._info)

    def _fit(self, train: DarkwebData, *, seed: int) -> None:
        """Tokenizer, sub-forum vectors, then the encoder trained with the loss (see the module doc)."""
        kind = PRESETS[self.preset].multitask
        if kind is not None and kind != train.multitask:
            other = {True: "paper_multitask", False: "paper"}[train.multitask]
            raise HarnessError(
                f"{self.name}: preset {self.preset!r} is the paper's {'multitask' if kind else 'single-market'} "
                f"setting, but this training split is {'multitask' if train.multitask else 'single-task'}: "
                f"use --param preset={other}"
            )
        device = resolve_device(self.device)
        warn_if_gpu_sized(self.name, self.preset, device)
        context = init_distributed(device)
        torch.manual_seed(seed)
        episodes = list(train.episodes)
        if not episodes:
            raise HarnessError(f"{self.name}: no training episodes")
        started = time.perf_counter()
        self._tokenizer = self._train_tokenizer(episodes, context)
        tokenizer_seconds = time.perf_counter() - started
        self._contexts = _context_ids(episodes)
        encoder = self._new_encoder()
        started = time.perf_counter()
        graph_markets = self._init_contexts(encoder, train, seed, device)
        graph_seconds = time.perf_counter() - started
        frozen = isinstance(self.graph_init, Metapath2Vec) and self.graph_init.freeze and encoder.context is not None
        if frozen:
            assert encoder.context is not None
            encoder.context.weight.requires_grad_(False)

        # the validation split: the same on every process (its own generator, seeded alike)
        split = hold_out(episodes, self.training.validation_share, np.random.default_rng([seed, 1]))
        fitting = [episodes[i] for i in split.fit]
        held = [episodes[i] for i in split.validation]
        plan = plan_labels(fitting, multitask=train.multitask, cross_persons=train.cross_persons)
        # ModuleDict keys must be plain names: heads are numbered by their sorted names
        head_keys = {h: f"head{i}" for i, h in enumerate(sorted(plan.classes))}
        dim = self.encoder.output_dim
        heads = nn.ModuleDict({head_keys[h]: self.loss.build(n, dim) for h, n in plan.classes.items()})
        model = _Trainable(encoder, heads).to(device)
        trained = wrap_model(model, context, device)
        # fitting episodes first, so the plan's indices are the tensors' own; validation after them
        tensors = _EpisodeTensors(self, fitting + held)
        numbers = class_numbers(fitting, multitask=train.multitask)
        validation = _Validation(
            [len(fitting) + k for k in range(len(held))], [numbers[(e.market, e.author)] for e in held]
        )
        epochs, best = self._train(trained, model, plan, head_keys, tensors, validation, context, device, seed)
        self._encoder = encoder.cpu().eval()
        self._info = {
            "train_episodes": len(episodes),
            "fit_episodes": len(fitting),
            "validation_episodes": len(held),
            "validation_eligible_accounts": split.eligible_accounts,
            "classes": plan.classes,
            "cross_persons": len({k[0] for k in plan.cross}),
            "vocab_size": self._tokenizer.vocab_size,
            "contexts": len(self._contexts) + 1,
            "graph_markets": graph_markets,
            "context_frozen": frozen,
            "tokenizer_seconds": round(tokenizer_seconds, 3),
            "graph_seconds": round(graph_seconds, 3),
            "epochs": epochs,
            "best_epoch": best,
            "world_size": context.world_size,
            "device": device,
        }

    def embed(self, samples: Sequence[Episode]) -> np.ndarray:
        """z of each episode (n x output_dim, float32), in order."""
        if self._encoder is None:
            raise HarnessError(f"{self.name}: embed() before fit() or load()")
        device = resolve_device(self.device)
        encoder = self._encoder.to(device).eval()
        tensors = _EpisodeTensors(self, list(samples))
        out = []
        with torch.no_grad(), Progress(len(samples), desc=f"{self.name}: embedding", unit="episodes") as progress:
            for start in range(0, len(samples), self.embed_batch_size):
                index = np.arange(start, min(start + self.embed_batch_size, len(samples)))
                with autocast(device, self.mixed_precision):
                    z = encoder(*tensors.batch(index, device))
                out.append(z.float().cpu().numpy())
                progress.update(len(index))
        self._encoder = encoder.cpu()
        return np.concatenate(out) if out else np.zeros((0, self.encoder.output_dim), dtype=np.float32)

    def save(self, directory: Path) -> None:
        """config.json: parameters, tokenizer, sub-forum ids, fit info; weights.safetensors: the encoder."""
        if self._encoder is None or self._tokenizer is None:
            raise HarnessError(f"{self.name}: nothing to save before fit()")
        state = {
            "tokenizer": self._tokenizer.to_json(),
            "contexts": [[market, forum, i] for (market, forum), i in sorted(self._contexts.items())],
            "info": self._info,
        }
        arrays = {k: v.detach().cpu().numpy() for k, v in self._encoder.state_dict().items()}
        self._save(directory, state=state, arrays=arrays)

    @classmethod
    def load(cls, directory: Path, *, runtime: Mapping[str, Any] | None = None) -> EpisodeAuthor:
        """Read a checkpoint; device and mixed precision are this machine's (`runtime`, else the defaults)."""
        system, state, arrays = cls._read(directory, runtime)
        system._tokenizer = PostTokenizer.from_json(state["tokenizer"])
        system._contexts = {(m, f): int(i) for m, f, i in state["contexts"]}
        system._info = state.get("info", {})
        encoder = system._new_encoder()
        encoder.load_state_dict({k: torch.from_numpy(np.array(v)) for k, v in arrays.items()})
        system._encoder = encoder.eval()
        return system

    # -- fitting -----------------------------------------------------------------------------------

    def _train_tokenizer(self, episodes: list[Episode], context: DistributedContext) -> PostTokenizer:
        texts = sorted({p.text for e in episodes for p in e.posts})
        tokenizer = PostTokenizer.train(texts, self.encoder.vocab_size) if context.is_main else None
        if context.enabled:  # every process must number tokens the same way: rank 0's tokenizer
            import torch.distributed as dist

            shared = [tokenizer.to_json() if tokenizer is not None else None]
            dist.broadcast_object_list(shared, src=0)
            tokenizer = PostTokenizer.from_json(shared[0])
        assert tokenizer is not None
        return tokenizer

    def _new_encoder(self) -> SysmlEpisodeNet:
        assert self._tokenizer is not None
        return self.encoder.build(self._tokenizer.vocab_size, len(self._contexts) + 1)

    def _init_contexts(self, encoder: SysmlEpisodeNet, train: DarkwebData, seed: int, device: str) -> list[str]:
        """Copy each market's graph sub-forum vectors into the context table; the markets done."""
        if not isinstance(self.graph_init, Metapath2Vec) or encoder.context is None:
            return []
        done = []
        for market in train.markets:
            posts = [p for p in train.posts if p.market == market]
            vectors = self.graph_init.vectors(posts, dim=self.encoder.context_dim, seed=seed, device=device)
            if not vectors:
                logger.warning("%s: no thread structure for market %r; its sub-forums start random", self.name, market)
                continue
            with torch.no_grad():
                for forum, vector in vectors.items():
                    row = self._contexts.get((market, forum))
                    if row is not None:
                        encoder.context.weight[row] = torch.from_numpy(vector)
            done.append(market)
        return done

    def _train(
        self,
        trained: nn.Module,
        model: _Trainable,
        plan: LabelPlan,
        head_keys: dict[str, str],
        tensors: _EpisodeTensors,
        validation: _Validation,
        context: DistributedContext,
        device: str,
        seed: int,
    ) -> tuple[list[dict[str, Any]], int | None]:
        """Adam in toolkit.training's loop, one epoch per call, then the validation loss, the
        plateau schedule and the best epoch; (one record per epoch, the best epoch or None)."""
        rng = np.random.default_rng(seed)  # the same on every process: batches are planned alike, then sharded
        settings = self.training
        norms: dict[str, list[torch.Tensor]] = {}

        def batches(epoch: int) -> list[HeadBatch]:
            planned = epoch_batches(
                plan, batch_size=settings.batch_size, cross_sampling=settings.cross_sampling, rng=rng
            )
            return shard(planned, context)

        def batch_loss(batch: HeadBatch) -> torch.Tensor:
            inputs = tensors.batch(batch.episodes, device)
            labels = torch.from_numpy(batch.labels).to(device)
            with autocast(device, self.mixed_precision):
                loss, term_norms = trained(inputs, labels, head_keys[batch.head], context.enabled, True)
            for name, value in term_norms.items():
                norms.setdefault(name, []).append(value)
            return loss

        optimizer = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=settings.lr)
        scheduler = None
        if validation.index and settings.lr_patience is not None:
            scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(
                optimizer, mode="min", factor=settings.lr_factor, patience=settings.lr_patience, min_lr=settings.min_lr
            )
        best = BestEpoch()
        history: list[dict[str, Any]] = []
        for epoch in range(settings.epochs):
            lr = optimizer.param_groups[0]["lr"]
            norms.clear()
            # toolkit.training's loop, one epoch at a time: the validation, schedule and best-epoch
            # steps need the end of each epoch (the loop has no per-epoch hook)
            (record,) = train_epochs(
                network=trained,
                optimizer=optimizer,
                epochs=1,
                epoch_batches=lambda _: batches(epoch),  # noqa: B023  (called within this iteration)
                batch_loss=batch_loss,
                device=device,
                mixed_precision=self.mixed_precision,
                label=f"{self.name} [{epoch + 1}/{settings.epochs}]",
                context=context,
            )
            record = {"epoch": epoch + 1, **record, "lr": lr}
            for name, values in sorted(norms.items()):
                mean = float(torch.stack(values).mean()) if values else 0.0
                record[f"grad_z_{name}"] = float(f"{all_reduce_mean(mean, context):.6g}")
            if validation.index:
                loss = all_reduce_mean(self._validation_loss(model, head_keys, tensors, validation, device), context)
                record["val_loss"] = round(loss, 6)
                if scheduler is not None:
                    scheduler.step(loss)
                if best.update(epoch + 1, loss, model.encoder):
                    record["best"] = True
                logger.info("%s epoch %d: validation loss %.4f, lr %.2g", self.name, epoch + 1, loss, lr)
            history.append(record)
        if validation.index and settings.restore_best and best.epoch is not None:
            best.restore(model.encoder)
            logger.info("%s: kept epoch %d (validation loss %.4f)", self.name, best.epoch, best.loss)
            return history, best.epoch
        return history, None

    def _validation_loss(
        self,
        model: _Trainable,
        head_keys: dict[str, str],
        tensors: _EpisodeTensors,
        validation: _Validation,
        device: str,
    ) -> float:
        """The loss on the validation episodes, in eval mode, a mean over episodes (batches by head)."""
        by_head: dict[str, list[int]] = {}
        for k, (head, _) in enumerate(validation.labels):
            by_head.setdefault(head, []).append(k)
        model.eval()
        total, count = 0.0, 0
        with torch.no_grad():
            for head in sorted(by_head):
                members = by_head[head]
                for start in range(0, len(members), self.training.batch_size):
                    chunk = members[start : start + self.training.batch_size]
                    index = np.asarray([validation.index[k] for k in chunk], dtype=np.int64)
                    labels = torch.tensor([validation.labels[k][1] for k in chunk], dtype=torch.long, device=device)
                    with autocast(device, self.mixed_precision):
                        loss, _ = model(tensors.batch(index, device), labels, head_keys[head])
                    total += float(loss) * len(chunk)
                    count += len(chunk)
        model.train()
        return total / max(count, 1)


class _Validation(NamedTuple):
    """The validation episodes: their rows in the episode tensors, and their (head, label)."""

    index: list[int]
    labels: list[tuple[str, int]]


class _Trainable(nn.Module):
    """Encoder plus one loss head per label set, as one module so that DDP sees every parameter."""

    def __init__(self, encoder: SysmlEpisodeNet, heads: nn.ModuleDict) -> None:
        super().__init__()
        self.encoder = encoder
        self.heads = heads

    def forward(
        self,
        episodes: tuple[torch.Tensor, ...],
        labels: torch.Tensor,
        head: str,
        touch_all: bool = False,
        measure: bool = False,
    ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """(the loss, {term: norm of its gradient w.r.t. z} when `measure` and gradients are on, else {}).

        `episodes`: the encoder's inputs (`_EpisodeTensors.batch`).
        """
        z = self.encoder(*episodes)
        # the terms see z in full precision: gradients of 1e-9 must not underflow in float16
        z = z.float() if z.dtype in (torch.float16, torch.bfloat16) else z
        terms = self.heads[head].terms(z, labels)
        norms = term_gradient_norms(terms, z) if measure and torch.is_grad_enabled() else {}
        loss = None
        for term in terms.values():
            loss = term if loss is None else loss + term
        assert loss is not None
        if touch_all:
            # DDP waits for a gradient of every parameter: the heads this batch did not use get zeros
            idle = [p.sum() for name, h in self.heads.items() if name != head for p in h.parameters()]
            if idle:
                loss = loss + 0.0 * torch.stack(idle).sum()
        return loss, norms


class _EpisodeTensors:
    """Episodes as token/weekday/sub-forum arrays, batched into tensors on demand."""

    def __init__(self, system: EpisodeAuthor, episodes: list[Episode]) -> None:
        assert system._tokenizer is not None
        texts = sorted({p.text for e in episodes for p in e.posts})
        number = {t: i for i, t in enumerate(texts)}
        self._tokens = system._tokenizer.encode(texts, system.encoder.max_tokens)
        length = max((len(e.posts) for e in episodes), default=1)
        shape = (len(episodes), length)
        self._text = np.full(shape, -1, dtype=np.int64)
        self._weekday = np.zeros(shape, dtype=np.int64)
        self._context = np.zeros(shape, dtype=np.int64)
        for i, episode in enumerate(episodes):
            for j, post in enumerate(episode.posts):
                self._text[i, j] = number[post.text]
                self._weekday[i, j] = post.weekday
                self._context[i, j] = system._contexts.get((episode.market, post.subforum), UNKNOWN_CONTEXT)
        self._min_tokens = max(WINDOWS)  # the CNN needs a full window

    def batch(self, index: np.ndarray, device: str) -> tuple[torch.Tensor, ...]:
        text = self._text[index]
        mask = text >= 0
        rows = [self._tokens[t] if t >= 0 else np.zeros(0, dtype=np.int32) for t in text.reshape(-1)]
        lengths = np.array([len(r) for r in rows], dtype=np.int64)
        width = max(int(lengths.max(initial=0)), self._min_tokens)
        tokens = np.zeros((len(rows), width), dtype=np.int64)
        for k, row in enumerate(rows):
            tokens[k, : len(row)] = row
        return tuple(
            torch.from_numpy(a).to(device) for a in (tokens, lengths, self._weekday[index], self._context[index], mask)
        )


def _context_ids(episodes: list[Episode]) -> dict[tuple[str, str], int]:
    """(market, sub-forum) -> row of the context table; row 0 is the unknown sub-forum."""
    keys = sorted({(e.market, p.subforum) for e in episodes for p in e.posts})
    return {key: i + 1 for i, key in enumerate(keys)}


class SYSML(EpisodeAuthor):
    """SYSML (Maneriker et al. 2021): the same encoder trained with plain softmax."""

    name = "sysml"
    DEFAULT_LOSS = Softmax


class EpisodeCNN(EpisodeAuthor):
    """The CNN baseline with time and context: mean pooling over the episode instead of the transformer."""

    name = "episode_cnn"
    DEFAULT_LOSS = Softmax
    POOLING = "mean"
