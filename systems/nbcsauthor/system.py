"""The SYSML episode encoder trained with a choice of metric loss: `nbcsauthor`, `sysml`, `episode_cnn`.

One class, `EpisodeAuthor`, with three registered names that differ only in their default parts:

- `nbcsauthor`: NBC-Softmax (tau 0.2, alpha 0.5), transformer pooling: NBCSAuthor (Kulatilleke et al.).
- `sysml`: plain softmax, transformer pooling: SYSML (Maneriker et al. 2021).
- `episode_cnn`: plain softmax, mean pooling: the CNN baseline with time and context, no transformer.

The loss is a part: `cosface`, `arcface`, `multi_similarity` and `contrastive` (pytorch-metric-learning)
are the paper's comparison, e.g. `harness run --system sysml --param loss=cosface --param loss.margin=0.3`.

Fitting: byte-level BPE trained on the training posts; sub-forum rows initialised from metapath2vec
on each market's training graph (SYSML); then epochs of batches (see systems.nbcsauthor.batches for
single-task and multitask labels) in toolkit.training's loop, Adam, mixed precision on CUDA, DDP
under torchrun. Only the encoder is kept: class weights serve training alone.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import torch
from torch import nn

from harness.errors import HarnessError
from harness.params import build, rename_legacy
from harness.progress import pbar
from harness.system import constructor_params
from systems.nbcsauthor.batches import Batch, LabelPlan, epoch_batches, plan_labels
from systems.nbcsauthor.graph import GraphInit, Metapath2Vec, RandomInit
from systems.nbcsauthor.losses import LOSSES, ArcFace, Contrastive, CosFace, Loss, MultiSimilarity, NBCSoftmax, Softmax
from systems.nbcsauthor.model import WINDOWS, EpisodeEncoder, EpisodeEncoderConfig
from systems.nbcsauthor.tokenizer import PostTokenizer
from tasks.darkweb.records import DarkwebData, Episode
from toolkit.checkpoint import load_checkpoint, save_checkpoint
from toolkit.devices import autocast, resolve_device
from toolkit.distributed import DistributedContext, init_distributed, shard, wrap_model
from toolkit.training import train_epochs

logger = logging.getLogger("harness")

UNKNOWN_CONTEXT = 0
GRAPH_INITS = (Metapath2Vec, RandomInit)


@dataclass(frozen=True)
class Training:
    """Adam over batches of episodes (SYSML: 30 epochs, batches of 256, lr 1e-3); `cross_sampling`:
    multitask CROSS episodes per epoch, as a share of all episodes (SYSML: 0.2)."""

    name: ClassVar[str] = "training"
    epochs: int = 30
    batch_size: int = 256
    lr: float = 0.001
    cross_sampling: float = 0.2

    def __post_init__(self) -> None:
        if self.epochs < 0:
            raise ValueError(f"epochs must be at least 0, got {self.epochs!r}")
        if self.batch_size < 2:
            raise ValueError(f"batch_size must be at least 2, got {self.batch_size!r}")


# checkpoints written before parts: flat parameters, the loss as a string
LEGACY_RENAMES = {
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
# the old loss strings -> today's loss part names
LEGACY_LOSSES = {
    "nbc_softmax": NBCSoftmax.name,
    "softmax": Softmax.name,
    "cosface": CosFace.name,
    "arcface": ArcFace.name,
    "multi_similarity": MultiSimilarity.name,
    "contrastive": Contrastive.name,
}


def migrate_legacy(params: Mapping[str, Any]) -> dict[str, Any]:
    """A legacy checkpoint's flat parameters as today's dotted ones (unused settings dropped)."""
    flat = dict(params)
    loss = LEGACY_LOSSES[flat.pop("loss")]
    if loss != NBCSoftmax.name:  # tau and alpha were NBC-Softmax's, ignored by the other losses
        flat.pop("tau", None)
        flat.pop("alpha", None)
    graph = Metapath2Vec.name if flat.pop("graph_init", True) else RandomInit.name
    if graph == RandomInit.name:
        flat.pop("graph_epochs", None)
        flat.pop("graph_walks", None)
    return {"loss": loss, "graph_init": graph, **rename_legacy(flat, LEGACY_RENAMES)}


class EpisodeAuthor:
    """SYSML's episode encoder with a metric loss (see the module docstring).

    Parameters (`--param encoder.text_dim=64`, `--param loss=cosface` set them):
        encoder: the episode encoder's sizes (EpisodeEncoderConfig: BPE, CNN, time, context, pooling).
        loss: NBCSoftmax(tau, alpha), Softmax(), CosFace, ArcFace, MultiSimilarity or Contrastive.
        graph_init: Metapath2Vec(epochs, walks_per_node) initialises the sub-forum rows (SYSML);
            RandomInit() leaves them random (the "- graph context" ablation).
        training: epochs, batch size, learning rate and multitask CROSS sampling (Training).
        device: auto, cpu or cuda; mixed_precision: autocast on CUDA.
        embed_batch_size: episodes per forward pass when embedding.
    """

    name = "nbcsauthor"
    PART_CHOICES: ClassVar[dict[str, tuple[type, ...]]] = {"loss": LOSSES, "graph_init": GRAPH_INITS}

    # parts are frozen dataclasses: a shared default instance is safe (hence noqa B008)
    def __init__(
        self,
        encoder: EpisodeEncoderConfig = EpisodeEncoderConfig(),  # noqa: B008
        loss: Loss = NBCSoftmax(),  # noqa: B008
        graph_init: GraphInit = Metapath2Vec(),  # noqa: B008
        training: Training = Training(),
        device: str = "auto",
        mixed_precision: bool = True,
        embed_batch_size: int = 512,
    ) -> None:
        for slot, value, kinds in (
            ("encoder", encoder, (EpisodeEncoderConfig,)),
            ("loss", loss, LOSSES),
            ("graph_init", graph_init, GRAPH_INITS),
            ("training", training, (Training,)),
        ):
            if not isinstance(value, kinds):
                names = ", ".join(kind.__name__ for kind in kinds)
                raise HarnessError(f"{slot} must be one of {names} (a part object), not {value!r}")
        if embed_batch_size < 1:
            raise HarnessError(f"embed_batch_size must be at least 1, got {embed_batch_size!r}")
        self.encoder = encoder
        self.loss = loss
        self.graph_init = graph_init
        self.training = training
        self.device = device
        self.mixed_precision = bool(mixed_precision)
        self.embed_batch_size = int(embed_batch_size)
        # fitted state
        self._tokenizer: PostTokenizer | None = None
        self._contexts: dict[tuple[str, str], int] = {}
        self._encoder: EpisodeEncoder | None = None
        self._info: dict[str, Any] = {}

    # -- the protocol ------------------------------------------------------------------------------

    def params(self) -> dict[str, Any]:
        return constructor_params(self)

    @property
    def info(self) -> dict[str, Any]:
        """What fitting measured: sizes, per-epoch loss and seconds, set-up seconds."""
        return dict(self._info)

    def fit(self, train: DarkwebData, *, seed: int) -> None:
        """Tokenizer, sub-forum vectors, then the encoder trained with the loss (see the module doc)."""
        device = resolve_device(self.device)
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
        graph_markets = self._init_contexts(encoder, train, seed)
        graph_seconds = time.perf_counter() - started

        plan = plan_labels(episodes, multitask=train.multitask, cross_persons=train.cross_persons)
        # ModuleDict keys must be plain names: heads are numbered by their sorted names
        head_keys = {h: f"head{i}" for i, h in enumerate(sorted(plan.classes))}
        dim = self.encoder.output_dim
        heads = nn.ModuleDict({head_keys[h]: self.loss.build(n, dim) for h, n in plan.classes.items()})
        model = _Trainable(encoder, heads).to(device)
        trained = wrap_model(model, context, device)
        batches_of = _EpisodeTensors(self, episodes)
        epochs = self._train(trained, model, plan, head_keys, batches_of, context, device, seed)
        self._encoder = encoder.cpu().eval()
        self._info = {
            "train_episodes": len(episodes),
            "classes": plan.classes,
            "cross_persons": len({k[0] for k in plan.cross}),
            "vocab_size": self._tokenizer.vocab_size,
            "contexts": len(self._contexts) + 1,
            "graph_markets": graph_markets,
            "tokenizer_seconds": round(tokenizer_seconds, 3),
            "graph_seconds": round(graph_seconds, 3),
            "epochs": epochs,
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
        with torch.no_grad():
            for start in pbar(range(0, len(samples), self.embed_batch_size), desc="embedding episodes", unit="batch"):
                index = np.arange(start, min(start + self.embed_batch_size, len(samples)))
                with autocast(device, self.mixed_precision):
                    z = encoder(*tensors.batch(index, device))
                out.append(z.float().cpu().numpy())
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
        save_checkpoint(directory, system=self.name, params=self.params(), state=state, arrays=arrays)

    @classmethod
    def load(cls, directory: Path) -> EpisodeAuthor:
        params, state, arrays = load_checkpoint(directory, system=cls.name)
        if "encoder" not in params:  # written before parts (flat parameters)
            params = migrate_legacy(params)
        system = build(cls, params)
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

    def _new_encoder(self) -> EpisodeEncoder:
        assert self._tokenizer is not None
        return self.encoder.build(self._tokenizer.vocab_size, len(self._contexts) + 1)

    def _init_contexts(self, encoder: EpisodeEncoder, train: DarkwebData, seed: int) -> list[str]:
        """Copy each market's graph sub-forum vectors into the context table; the markets done."""
        if not isinstance(self.graph_init, Metapath2Vec) or encoder.context is None:
            return []
        done = []
        for market in train.markets:
            posts = [p for p in train.posts if p.market == market]
            vectors = self.graph_init.vectors(posts, dim=self.encoder.context_dim, seed=seed)
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
        context: DistributedContext,
        device: str,
        seed: int,
    ) -> list[dict[str, float]]:
        """Adam in toolkit.training's loop; one record per epoch (mean loss, seconds, batches)."""
        rng = np.random.default_rng(seed)  # the same on every process: batches are planned alike, then sharded

        def batches(epoch: int) -> list[Batch]:
            planned = epoch_batches(
                plan, batch_size=self.training.batch_size, cross_sampling=self.training.cross_sampling, rng=rng
            )
            return shard(planned, context)

        def batch_loss(batch: Batch) -> torch.Tensor:
            inputs = tensors.batch(batch.episodes, device)
            labels = torch.from_numpy(batch.labels).to(device)
            with autocast(device, self.mixed_precision):
                return trained(*inputs, labels, head_keys[batch.head], context.enabled)

        return train_epochs(
            network=trained,
            optimizer=torch.optim.Adam(model.parameters(), lr=self.training.lr),
            epochs=self.training.epochs,
            epoch_batches=batches,
            batch_loss=batch_loss,
            device=device,
            mixed_precision=self.mixed_precision,
            label=self.name,
            context=context,
        )


class _Trainable(nn.Module):
    """Encoder plus one loss head per label set, as one module so that DDP sees every parameter."""

    def __init__(self, encoder: EpisodeEncoder, heads: nn.ModuleDict) -> None:
        super().__init__()
        self.encoder = encoder
        self.heads = heads

    def forward(
        self,
        tokens: torch.Tensor,
        lengths: torch.Tensor,
        weekdays: torch.Tensor,
        contexts: torch.Tensor,
        post_mask: torch.Tensor,
        labels: torch.Tensor,
        head: str,
        touch_all: bool = False,
    ) -> torch.Tensor:
        loss = self.heads[head](self.encoder(tokens, lengths, weekdays, contexts, post_mask), labels)
        if touch_all:
            # DDP waits for a gradient of every parameter: the heads this batch did not use get zeros
            idle = [p.sum() for name, h in self.heads.items() if name != head for p in h.parameters()]
            if idle:
                loss = loss + 0.0 * torch.stack(idle).sum()
        return loss


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
    __init__ = functools.partialmethod(EpisodeAuthor.__init__, loss=Softmax())


class EpisodeCNN(EpisodeAuthor):
    """The CNN baseline with time and context: mean pooling over the episode instead of the transformer."""

    name = "episode_cnn"
    __init__ = functools.partialmethod(
        EpisodeAuthor.__init__, encoder=EpisodeEncoderConfig(pooling="mean"), loss=Softmax()
    )
