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
`samples_per_author` samples each, a metric-learning loss (systems.varlen_linker.losses), Adam.
Mixed precision on CUDA; data parallel under torchrun (one batch per process per step).
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import logging
import math
import resource
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar, TypeVar

import numpy as np
import torch

from harness.errors import HarnessError
from harness.progress import pbar
from harness.system import constructor_params
from systems.varlen_linker.batching import PostTable, blank_row, make_batch, padded, post_table, training_batch
from systems.varlen_linker.losses import LOSSES, make_loss
from systems.varlen_linker.model import SampleEncoder
from systems.varlen_linker.sampling import epoch_batches
from systems.varlen_linker.text import SubwordTokenizer
from tasks.reddit.records import Action, RedditData
from toolkit.checkpoint import load_checkpoint, save_checkpoint
from toolkit.devices import autocast, grad_scaler, resolve_device
from toolkit.distributed import DistributedContext, all_reduce_mean, barrier, init_distributed, shard, wrap_model

logger = logging.getLogger("harness")

EMBED_MODES = ("whole", "groups", "posts")
_System = TypeVar("_System", bound="VarlenLinker")


@contextlib.contextmanager
def torch_threads(count: int | None) -> Iterator[None]:
    """torch's intra-op CPU threads set to `count` inside the block (unchanged for None)."""
    if count is None:
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def trim_heap() -> None:
    """Give freed heap memory back to the OS (glibc only; a no-op elsewhere).

    Batches of varying shapes fragment glibc's heap: without this, a CPU training run's resident
    memory grew by about 10 MB per step (2.4 GB after 200 steps); with it, it stays flat.
    """
    global _LIBC
    if _LIBC is None:
        try:
            _LIBC = ctypes.CDLL("libc.so.6")
            _LIBC.malloc_trim  # noqa: B018 - not glibc: no malloc_trim
        except (OSError, AttributeError):
            _LIBC = False
    if _LIBC:
        _LIBC.malloc_trim(0)


_LIBC: Any = None


def peak_rss_mb() -> float:
    """This process's peak resident memory so far, in MiB (Linux reports KiB, macOS bytes)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024


class VarlenLinker:
    """Variable-length sample encoder (Khan et al. 2021); see the module docstring.

    Parameters (all JSON values, so `harness run --param KEY=VALUE` can set them):
        vocab_size: SentencePiece vocabulary (paper: 2^16; an upper bound on small corpora).
        post_length: subwords per post, truncated or padded (paper: 32).
        token_dim, filters, subreddit_dim, attention_dim, embedding_dim: layer sizes
            (paper: 512, 512 per width, 512, 512, 1024; defaults 64, 64, 32, 128, 128 for CPU).
        use_subreddit, use_hour: the S and P features (paper's full model TPS: both).
        min_sample_length, max_sample_length: R and S of the training sample sizes.
        beta_a, beta_b: the Beta distribution of x (paper: 3, 1).
        loss: "triplet" (semi-hard mining), "topk" (Lu et al.) or "ranked_list" (pytorch-metric-learning).
        margin: triplet / ranked-list margin (paper: 0.2); top_k, top_k_margin: the top-k loss's k
            and margin (paper: 4 and 0.25).
        authors_per_batch, samples_per_author: batch = authors x samples (samples_per_author >= 2).
        epochs, steps_per_epoch: steps_per_epoch None = one pass over the training authors.
        lr, grad_clip: Adam's learning rate and the gradient-norm clip.
        embed_batch_posts: posts per forward pass when embedding.
        device: "auto", "cpu" or "cuda"; mixed_precision: autocast on CUDA (ignored on CPU).
        cpu_threads: torch's CPU threads while fitting and embedding (None: torch's default). On a
            machine whose cores are shared with other jobs, 1 can be several times faster.
    """

    name: ClassVar[str] = "varlen_linker"
    metric: ClassVar[str] = "euclidean"
    embed_mode: ClassVar[str] = "whole"

    def __init__(
        self,
        *,
        vocab_size: int = 8192,
        post_length: int = 32,
        token_dim: int = 64,
        filters: int = 64,
        subreddit_dim: int = 32,
        attention_dim: int = 128,
        embedding_dim: int = 128,
        use_subreddit: bool = True,
        use_hour: bool = True,
        min_sample_length: int = 1,
        max_sample_length: int = 16,
        beta_a: float = 3.0,
        beta_b: float = 1.0,
        loss: str = "triplet",
        margin: float = 0.2,
        top_k: int = 4,
        top_k_margin: float = 0.25,
        authors_per_batch: int = 32,
        samples_per_author: int = 4,
        epochs: int = 5,
        steps_per_epoch: int | None = None,
        lr: float = 1e-3,
        grad_clip: float = 1.0,
        embed_batch_posts: int = 4096,
        device: str = "auto",
        mixed_precision: bool = True,
        cpu_threads: int | None = None,
    ) -> None:
        if loss not in LOSSES:
            raise HarnessError(f"{self.name}: loss must be one of {LOSSES}, not {loss!r}")
        if not 1 <= min_sample_length <= max_sample_length:
            raise HarnessError(f"{self.name}: need 1 <= min_sample_length <= max_sample_length")
        if samples_per_author < 2 or authors_per_batch < 2:
            raise HarnessError(f"{self.name}: metric learning needs >= 2 authors per batch and >= 2 samples each")
        if min(vocab_size, post_length, token_dim, filters, subreddit_dim, attention_dim, embedding_dim) < 1:
            raise HarnessError(f"{self.name}: sizes must be positive")
        if post_length < 4:
            raise HarnessError(f"{self.name}: post_length must be at least 4 (the widest convolution)")
        if cpu_threads is not None and cpu_threads < 1:
            raise HarnessError(f"{self.name}: cpu_threads must be positive or None")
        if epochs < 0 or (steps_per_epoch is not None and steps_per_epoch < 1):
            raise HarnessError(f"{self.name}: epochs must be >= 0 and steps_per_epoch positive or None")
        self.vocab_size = vocab_size
        self.post_length = post_length
        self.token_dim = token_dim
        self.filters = filters
        self.subreddit_dim = subreddit_dim
        self.attention_dim = attention_dim
        self.embedding_dim = embedding_dim
        self.use_subreddit = use_subreddit
        self.use_hour = use_hour
        self.min_sample_length = min_sample_length
        self.max_sample_length = max_sample_length
        self.beta_a = beta_a
        self.beta_b = beta_b
        self.loss = loss
        self.margin = margin
        self.top_k = top_k
        self.top_k_margin = top_k_margin
        self.authors_per_batch = authors_per_batch
        self.samples_per_author = samples_per_author
        self.epochs = epochs
        self.steps_per_epoch = steps_per_epoch
        self.lr = lr
        self.grad_clip = grad_clip
        self.embed_batch_posts = embed_batch_posts
        self.device = device
        self.mixed_precision = mixed_precision
        self.cpu_threads = cpu_threads
        self._tokenizer: SubwordTokenizer | None = None
        self._model: SampleEncoder | None = None
        self._num_subreddits: int | None = None
        self.training_stats: dict[str, Any] = {}

    def params(self) -> dict[str, Any]:
        """The constructor parameters."""
        return constructor_params(self)

    # ------------------------------------------------------------------ training

    def _build_model(self, vocab_size: int, num_subreddits: int) -> SampleEncoder:
        return SampleEncoder(
            vocab_size=vocab_size,
            num_subreddits=num_subreddits,
            token_dim=self.token_dim,
            filters=self.filters,
            subreddit_dim=self.subreddit_dim,
            attention_dim=self.attention_dim,
            embedding_dim=self.embedding_dim,
            use_subreddit=self.use_subreddit,
            use_hour=self.use_hour,
        )

    def _training_pad(self) -> int | None:
        """Fixed-size models see padded samples in training as at test time; others see real posts only."""
        return self.max_sample_length if self.embed_mode == "groups" else None

    def fit(self, train: RedditData, *, seed: int) -> None:
        """Train the tokenizer and the encoder on the training streams (every author with at least one post)."""
        with torch_threads(self.cpu_threads):
            self._fit(train, seed=seed)

    def _fit(self, train: RedditData, *, seed: int) -> None:
        device = resolve_device(self.device)
        context = init_distributed(device)
        torch.manual_seed(seed)
        started, rss_before = time.perf_counter(), peak_rss_mb()
        streams = [s for s in train.streams if s.actions]
        if len(streams) < 2:
            raise HarnessError(f"{self.name}: training needs at least 2 authors with posts, got {len(streams)}")
        actions = [a for s in streams for a in s.actions]
        self._num_subreddits = len(train.subreddits) + 1  # the task's N most common plus "other"
        tokenizer = self._train_tokenizer([a.text for a in actions], seed, context, device)
        table = post_table(actions, tokenizer, post_length=self.post_length, num_subreddits=self._num_subreddits)
        offsets = np.cumsum([0] + [len(s.actions) for s in streams])
        model = self._build_model(tokenizer.vocab_size, self._num_subreddits).to(device)
        network = wrap_model(model, context, device)
        optimizer = torch.optim.Adam(model.parameters(), lr=self.lr)
        scaler = grad_scaler(device, self.mixed_precision)
        loss_fn = make_loss(self.loss, margin=self.margin, top_k=self.top_k, top_k_margin=self.top_k_margin)
        steps = self.steps_per_epoch or max(1, math.ceil(len(streams) / self.authors_per_batch))
        logger.info(
            "%s: %d authors, %d posts, vocabulary %d, %d epochs x %d steps, %d process(es)",
            self.name, len(streams), len(actions), tokenizer.vocab_size, self.epochs, steps, context.world_size,
        )  # fmt: skip
        model.train()
        samples_seen, posts_seen, steps_done, epoch_losses = 0, 0, 0, []
        train_started = time.perf_counter()
        for epoch in range(self.epochs):
            batches = _epoch_batches(len(streams), self.authors_per_batch, seed, epoch, steps)
            total = 0.0
            mine = shard(list(range(len(batches))), context)
            for index in pbar(mine, desc=f"{self.name} epoch {epoch + 1}", unit="batch"):
                rng = np.random.default_rng([seed, epoch, index])  # the same batch whatever the process count
                batch = training_batch(
                    table, offsets, batches[index], rng,
                    samples_per_author=self.samples_per_author,
                    min_length=self.min_sample_length, max_length=self.max_sample_length,
                    alpha=self.beta_a, beta=self.beta_b, pad_to=self._training_pad(),
                )  # fmt: skip
                loss = self._step(network, optimizer, scaler, loss_fn, batch, device)
                if device == "cpu":
                    trim_heap()
                total += loss
                samples_seen += len(batch.lengths)
                posts_seen += int((batch.hours >= 0).sum())  # real posts, not padding
                steps_done += 1
            mean = all_reduce_mean(total / max(1, len(mine)), context)
            epoch_losses.append(round(mean, 6))
            logger.info("%s: epoch %d/%d, mean loss %.4f", self.name, epoch + 1, self.epochs, mean)
        train_seconds = time.perf_counter() - train_started
        model.eval()
        self._tokenizer, self._model = tokenizer, model
        self.training_stats = {
            "seed": seed,
            "device": device,
            "processes": context.world_size,
            "authors": len(streams),
            "posts": len(actions),
            "vocab_size": tokenizer.vocab_size,
            "steps_per_process": steps_done,
            "samples_per_process": samples_seen,
            "train_seconds": round(train_seconds, 3),
            "fit_seconds": round(time.perf_counter() - started, 3),
            "posts_per_process": posts_seen,
            "train_samples_per_s": round(samples_seen * context.world_size / max(train_seconds, 1e-9), 2),
            "train_posts_per_s": round(posts_seen * context.world_size / max(train_seconds, 1e-9), 2),
            "epoch_losses": epoch_losses,
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
            proto = SubwordTokenizer.train(texts, vocab_size=self.vocab_size, seed=seed).model_proto
        if context.enabled:
            proto = _broadcast_bytes(proto, device)
        return SubwordTokenizer(proto)

    def _step(self, network: Any, optimizer: Any, scaler: Any, loss_fn: Any, batch: Any, device: str) -> float:
        tokens, hours, subreddits, lengths, labels = (torch.as_tensor(a, device=device) for a in batch)
        optimizer.zero_grad(set_to_none=True)
        with autocast(device, self.mixed_precision):
            embeddings = network(tokens, hours, subreddits, lengths)
        loss = loss_fn(embeddings.float(), labels)
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(network.parameters(), self.grad_clip)
        scaler.step(optimizer)
        scaler.update()
        return float(loss.detach())

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
        size = self.max_sample_length
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
            return np.zeros((0, self.embedding_dim), dtype=np.float32)
        actions = [a for sample in samples for a in sample]
        table = post_table(actions, tokenizer, post_length=self.post_length, num_subreddits=num_subreddits)
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
    def _embed_units(self, model: SampleEncoder, table: PostTable, units: list[np.ndarray]) -> np.ndarray:
        device = resolve_device(self.device)
        model.to(device).eval()
        order = sorted(range(len(units)), key=lambda i: -len(units[i]))  # similar sizes together: less padding
        out = np.zeros((len(units), self.embedding_dim), dtype=np.float32)
        start = 0
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
            start = stop
        return out

    # ------------------------------------------------------------------ checkpoints

    def save(self, directory: Path) -> None:
        """Weights and the SentencePiece model (as bytes) in weights.safetensors; sizes and stats in config.json."""
        tokenizer, model, num_subreddits = self._check_fitted()
        arrays = {f"model.{k}": v.detach().cpu().numpy() for k, v in model.state_dict().items()}
        arrays["tokenizer"] = np.frombuffer(tokenizer.model_proto, dtype=np.uint8).copy()
        state = {"num_subreddits": num_subreddits, "training": self.training_stats}
        save_checkpoint(directory, system=self.name, params=self.params(), state=state, arrays=arrays)

    @classmethod
    def load(cls: type[_System], directory: Path) -> _System:
        """Read a checkpoint written by `save` of the same class."""
        params, state, arrays = load_checkpoint(directory, system=cls.name)
        try:
            system = cls(**params)
            tokenizer = SubwordTokenizer(arrays["tokenizer"].tobytes())
            num_subreddits = int(state["num_subreddits"])
            model = system._build_model(tokenizer.vocab_size, num_subreddits)
            weights = {k.removeprefix("model."): torch.from_numpy(v) for k, v in arrays.items() if k != "tokenizer"}
            model.load_state_dict(weights)
        except (KeyError, TypeError, ValueError, RuntimeError) as error:
            raise HarnessError(f"{directory}: malformed {cls.name} checkpoint ({error!r})") from error
        model.eval()
        system._tokenizer, system._model, system._num_subreddits = tokenizer, model, num_subreddits
        system.training_stats = dict(state.get("training", {}))
        return system


def _epoch_batches(n_authors: int, authors_per_batch: int, seed: int, epoch: int, steps: int) -> list[np.ndarray]:
    return epoch_batches(n_authors, authors_per_batch, np.random.default_rng([seed, epoch, 2**31]), steps)


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
    Parameters as VarlenLinker; min_sample_length and max_sample_length default to 16 (set both
    to the same S). Andrews & Bishop (EMNLP 2019) use another encoder and loss; what is kept here
    is what the linking comparison is about: a fixed sample size.
    """

    name: ClassVar[str] = "iur_fixed"
    embed_mode: ClassVar[str] = "groups"
    # the same constructor with other defaults: `harness run --param` and the result record see them
    __init__ = functools.partialmethod(VarlenLinker.__init__, min_sample_length=16, max_sample_length=16)


class VarlenAvg(VarlenLinker):
    """The paper's `Avg` baseline: the encoder trained on single posts (min = max sample length = 1);
    a sample's embedding is the mean of its posts' embeddings. Parameters as VarlenLinker.
    """

    name: ClassVar[str] = "varlen_avg"
    embed_mode: ClassVar[str] = "posts"
    # the same constructor with other defaults: `harness run --param` and the result record see them
    __init__ = functools.partialmethod(VarlenLinker.__init__, min_sample_length=1, max_sample_length=1)
