"""The SYSML episode encoder trained with a choice of metric loss: `nbcsauthor`, `sysml`, `episode_cnn`.

One class, `EpisodeAuthor`, with three registered names that differ only in defaults:

- `nbcsauthor`: NBC-Softmax (tau 0.2, alpha 0.5), transformer pooling: NBCSAuthor (Kulatilleke et al.).
- `sysml`: plain softmax, transformer pooling: SYSML (Maneriker et al. 2021).
- `episode_cnn`: plain softmax, mean pooling: the CNN baseline with time and context, no transformer.

`loss` also takes "cosface", "arcface", "multi_similarity" and "contrastive" (pytorch-metric-learning),
the paper's comparison, e.g. `harness run --system sysml --param loss=cosface`.

Fitting: byte-level BPE trained on the training posts; sub-forum rows initialised from metapath2vec
on each market's training graph (SYSML); then epochs of batches (see systems.nbcsauthor.batches for
single-task and multitask labels), Adam, mixed precision on CUDA, DDP under torchrun. Only the
encoder is kept: class weights serve training alone.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from harness.errors import HarnessError
from harness.progress import pbar
from harness.system import constructor_params
from systems.nbcsauthor.batches import LabelPlan, epoch_batches, plan_labels
from systems.nbcsauthor.graph import subforum_vectors
from systems.nbcsauthor.losses import LOSSES, make_loss
from systems.nbcsauthor.model import POOLINGS, WINDOWS, EpisodeEncoder
from systems.nbcsauthor.tokenizer import PostTokenizer
from tasks.darkweb.records import DarkwebData, Episode
from toolkit.checkpoint import load_checkpoint, save_checkpoint
from toolkit.devices import autocast, grad_scaler, resolve_device
from toolkit.distributed import DistributedContext, all_reduce_mean, init_distributed, shard, wrap_model

logger = logging.getLogger("harness")

UNKNOWN_CONTEXT = 0


class EpisodeAuthor:
    """SYSML's episode encoder with a metric loss (see the module docstring).

    Parameters (JSON values, so `--param KEY=VALUE` sets them):
        loss: one of nbc_softmax, softmax, cosface, arcface, multi_similarity, contrastive.
        tau, alpha: NBC-Softmax's temperature (multiplies the cosine) and CE weight (paper: 0.2, 0.5).
        pooling: "transformer" (SYSML) or "mean" (the CNN baseline).
        vocab_size, max_tokens: BPE vocabulary size and tokens kept per post (SYSML: 30k, 256).
        token_dim, filters, text_dim: CNN token embedding size, filters per window (2-5), projected size.
        time_dim, context_dim: day-of-week and sub-forum embedding sizes (0 leaves the feature out).
        output_dim: size of z (SYSML: 32 single-market, 128 multitask).
        layers, heads, ff_dim, dropout: the pooling transformer (SYSML: 4, 4, 128, 0.1).
        graph_init: initialise sub-forum rows by metapath2vec (else random, the "- graph context" ablation).
        graph_epochs, graph_walks: metapath2vec passes and walks per user and meta-path.
        epochs, batch_size, lr: training (SYSML: 30 epochs, 256, Adam 1e-3).
        cross_sampling: multitask CROSS episodes per epoch, as a share of all episodes (SYSML: 0.2).
        device: auto, cpu or cuda; mixed_precision: autocast on CUDA.
        embed_batch_size: episodes per forward pass when embedding.
    """

    name = "nbcsauthor"

    def __init__(
        self,
        loss: str = "nbc_softmax",
        tau: float = 0.2,
        alpha: float = 0.5,
        pooling: str = "transformer",
        vocab_size: int = 30000,
        max_tokens: int = 256,
        token_dim: int = 32,
        filters: int = 5,
        text_dim: int = 128,
        time_dim: int = 64,
        context_dim: int = 128,
        output_dim: int = 32,
        layers: int = 4,
        heads: int = 4,
        ff_dim: int = 128,
        dropout: float = 0.1,
        graph_init: bool = True,
        graph_epochs: int = 1,
        graph_walks: int = 3,
        epochs: int = 30,
        batch_size: int = 256,
        lr: float = 0.001,
        cross_sampling: float = 0.2,
        device: str = "auto",
        mixed_precision: bool = True,
        embed_batch_size: int = 512,
    ) -> None:
        if loss not in LOSSES:
            raise HarnessError(f"loss must be one of {', '.join(LOSSES)}, not {loss!r}")
        if pooling not in POOLINGS:
            raise HarnessError(f"pooling must be one of {', '.join(POOLINGS)}, not {pooling!r}")
        for label, value, least in (
            ("vocab_size", vocab_size, 300),  # the 256 bytes and the special tokens come first
            ("max_tokens", max_tokens, 5),
            ("epochs", epochs, 0),
            ("batch_size", batch_size, 2),
            ("output_dim", output_dim, 1),
            ("text_dim", text_dim, 1),
            ("filters", filters, 1),
        ):
            if value < least:
                raise HarnessError(f"{label} must be at least {least}, got {value!r}")
        dim = text_dim + max(time_dim, 0) + max(context_dim, 0)
        if pooling == "transformer" and dim % heads:
            raise HarnessError(f"heads ({heads}) must divide text_dim + time_dim + context_dim ({dim})")
        if not 0.0 <= alpha <= 1.0:
            raise HarnessError(f"alpha must lie in [0, 1], got {alpha!r}")
        self.loss = loss
        self.tau = float(tau)
        self.alpha = float(alpha)
        self.pooling = pooling
        self.vocab_size = int(vocab_size)
        self.max_tokens = int(max_tokens)
        self.token_dim = int(token_dim)
        self.filters = int(filters)
        self.text_dim = int(text_dim)
        self.time_dim = int(time_dim)
        self.context_dim = int(context_dim)
        self.output_dim = int(output_dim)
        self.layers = int(layers)
        self.heads = int(heads)
        self.ff_dim = int(ff_dim)
        self.dropout = float(dropout)
        self.graph_init = bool(graph_init)
        self.graph_epochs = int(graph_epochs)
        self.graph_walks = int(graph_walks)
        self.epochs = int(epochs)
        self.batch_size = int(batch_size)
        self.lr = float(lr)
        self.cross_sampling = float(cross_sampling)
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
        graph_markets = self._init_contexts(encoder, train, seed) if self.graph_init and self.context_dim > 0 else []
        graph_seconds = time.perf_counter() - started

        plan = plan_labels(episodes, multitask=train.multitask, cross_persons=train.cross_persons)
        # ModuleDict keys must be plain names: heads are numbered by their sorted names
        head_keys = {h: f"head{i}" for i, h in enumerate(sorted(plan.classes))}
        heads = nn.ModuleDict(
            {
                head_keys[h]: make_loss(self.loss, n, self.output_dim, tau=self.tau, alpha=self.alpha)
                for h, n in plan.classes.items()
            }
        )
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
        return np.concatenate(out) if out else np.zeros((0, self.output_dim), dtype=np.float32)

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
        system = cls(**params)
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
        tokenizer = PostTokenizer.train(texts, self.vocab_size) if context.is_main else None
        if context.enabled:  # every process must number tokens the same way: rank 0's tokenizer
            import torch.distributed as dist

            shared = [tokenizer.to_json() if tokenizer is not None else None]
            dist.broadcast_object_list(shared, src=0)
            tokenizer = PostTokenizer.from_json(shared[0])
        assert tokenizer is not None
        return tokenizer

    def _new_encoder(self) -> EpisodeEncoder:
        assert self._tokenizer is not None
        return EpisodeEncoder(
            self._tokenizer.vocab_size,
            len(self._contexts) + 1,
            token_dim=self.token_dim,
            filters=self.filters,
            text_dim=self.text_dim,
            time_dim=self.time_dim,
            context_dim=self.context_dim,
            output_dim=self.output_dim,
            pooling=self.pooling,
            layers=self.layers,
            heads=self.heads,
            ff_dim=self.ff_dim,
            dropout=self.dropout,
        )

    def _init_contexts(self, encoder: EpisodeEncoder, train: DarkwebData, seed: int) -> list[str]:
        """Copy each market's metapath2vec sub-forum vectors into the context table; the markets done."""
        assert encoder.context is not None
        done = []
        for market in train.markets:
            posts = [p for p in train.posts if p.market == market]
            vectors = subforum_vectors(
                posts, dim=self.context_dim, epochs=self.graph_epochs, walks_per_node=self.graph_walks, seed=seed
            )
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
        optimizer = torch.optim.Adam(model.parameters(), lr=self.lr)
        scaler = grad_scaler(device, self.mixed_precision)
        rng = np.random.default_rng(seed)  # the same on every process: batches are planned alike, then sharded
        history = []
        for epoch in range(self.epochs):
            trained.train()
            started = time.perf_counter()
            planned = epoch_batches(plan, batch_size=self.batch_size, cross_sampling=self.cross_sampling, rng=rng)
            batches = shard(planned, context)
            total = 0.0
            for batch in pbar(batches, desc=f"{self.name} epoch {epoch + 1}", unit="batch"):
                inputs = tensors.batch(batch.episodes, device)
                labels = torch.from_numpy(batch.labels).to(device)
                optimizer.zero_grad(set_to_none=True)
                with autocast(device, self.mixed_precision):
                    loss = trained(*inputs, labels, head_keys[batch.head], context.enabled)
                scaler.scale(loss).backward()
                scaler.step(optimizer)
                scaler.update()
                total += loss.item()
            mean_loss = all_reduce_mean(total / max(len(batches), 1), context)
            seconds = time.perf_counter() - started
            history.append({"loss": round(mean_loss, 6), "seconds": round(seconds, 3), "batches": len(batches)})
            logger.info("%s epoch %d/%d: loss %.4f, %.1fs", self.name, epoch + 1, self.epochs, mean_loss, seconds)
        return history


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
        self._tokens = system._tokenizer.encode(texts, system.max_tokens)
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
    __init__ = functools.partialmethod(EpisodeAuthor.__init__, loss="softmax")


class EpisodeCNN(EpisodeAuthor):
    """The CNN baseline with time and context: mean pooling over the episode instead of the transformer."""

    name = "episode_cnn"
    __init__ = functools.partialmethod(EpisodeAuthor.__init__, loss="softmax", pooling="mean")
