"""SYSML's episode encoder: per post a text CNN, a day-of-week and a sub-forum embedding; per
episode a position-free transformer (or, for the baseline, a mean) over its posts.

Shapes: an episode batch holds B episodes of up to L posts; posts are flattened to B*L rows of
token ids (padded with 0) and `post_mask` (B x L, True = a real post) marks which exist.

`EpisodeEncoderConfig` is the system's `encoder` part: the sizes, once, and `build` makes the module.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import torch
from torch import nn

POOLINGS = ("transformer", "mean")
WINDOWS = (2, 3, 4, 5)  # SYSML's CNN window sizes (tokens)


class TextCNN(nn.Module):
    """Kim (2014) CNN over BPE tokens: windows of 2-5 tokens, max over time, dropout, projection.

    Windows that start past a post's end are masked before the max, so a post's vector does not
    depend on how much padding its batch has.
    """

    def __init__(
        self,
        vocab_size: int,
        token_dim: int = 32,
        filters: int = 5,
        windows: Sequence[int] = WINDOWS,
        out_dim: int = 128,
        dropout: float = 0.1,
    ) -> None:
        super().__init__()
        self.windows = tuple(int(w) for w in windows)
        self.embedding = nn.Embedding(vocab_size, token_dim, padding_idx=0)
        self.convs = nn.ModuleList(nn.Conv1d(token_dim, filters, w) for w in self.windows)
        self.dropout = nn.Dropout(dropout)
        self.project = nn.Linear(filters * len(self.windows), out_dim)

    def forward(self, tokens: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """tokens: (N, T) ids, T >= the largest window; lengths: (N,) -> (N, out_dim)."""
        x = self.embedding(tokens).transpose(1, 2)  # N x token_dim x T
        pooled = []
        for window, conv in zip(self.windows, self.convs, strict=True):
            maps = conv(x)  # N x filters x (T - window + 1)
            starts = torch.arange(maps.shape[-1], device=tokens.device)
            last = (lengths - window).clamp(min=0)  # a post shorter than the window keeps window 0
            valid = starts[None, :] <= last[:, None]
            pooled.append(maps.masked_fill(~valid[:, None, :], float("-inf")).amax(dim=-1))
        return self.project(self.dropout(torch.cat(pooled, dim=1)))


class PoolingTransformer(nn.Module):
    """SYSML's pooling: transformer layers without positions over an episode's posts; after each
    layer a shared LayerNorm and the mean over real posts; the layer means are concatenated,
    dropped out, batch-normalised, projected and batch-normalised again."""

    def __init__(
        self, dim: int, out_dim: int, layers: int = 4, heads: int = 4, ff_dim: int = 128, dropout: float = 0.1
    ) -> None:
        super().__init__()
        self.layers = nn.ModuleList(
            nn.TransformerEncoderLayer(dim, heads, ff_dim, dropout=dropout, batch_first=True) for _ in range(layers)
        )
        self.norm = nn.LayerNorm(dim)
        self.dropout = nn.Dropout(dropout)
        self.norm_in = nn.BatchNorm1d(layers * dim)
        self.project = nn.Linear(layers * dim, out_dim)
        self.norm_out = nn.BatchNorm1d(out_dim)

    def forward(self, posts: torch.Tensor, post_mask: torch.Tensor) -> torch.Tensor:
        """posts: (B, L, dim); post_mask: (B, L), True = real -> (B, out_dim)."""
        means = []
        x = posts
        for layer in self.layers:
            x = self.norm(layer(x, src_key_padding_mask=~post_mask))
            means.append(_masked_mean(x, post_mask))
        return self.norm_out(self.project(self.norm_in(self.dropout(torch.cat(means, dim=1)))))


class MeanPooling(nn.Module):
    """The baseline pooling (SYSML's ProjectViews): mean over real posts, dropout, projection."""

    def __init__(self, dim: int, out_dim: int, dropout: float = 0.1) -> None:
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        self.project = nn.Linear(dim, out_dim)

    def forward(self, posts: torch.Tensor, post_mask: torch.Tensor) -> torch.Tensor:
        return self.project(self.dropout(_masked_mean(posts, post_mask)))


def _masked_mean(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    weights = mask.to(x.dtype).unsqueeze(-1)
    return (x * weights).sum(dim=1) / weights.sum(dim=1).clamp(min=1.0)


class SysmlEpisodeNet(nn.Module):
    """Episode -> z: each post is [text CNN; day-of-week embedding; sub-forum embedding], pooled.

    Sub-forum ids index one table for all markets (row 0: unknown sub-forum); in multitask training
    each market has its own rows, which is SYSML's one context embedding per market.
    """

    def __init__(
        self,
        vocab_size: int,
        num_contexts: int,
        *,
        token_dim: int = 32,
        filters: int = 5,
        windows: Sequence[int] = WINDOWS,
        text_dim: int = 128,
        time_dim: int = 64,
        context_dim: int = 128,
        output_dim: int = 32,
        pooling: str = "transformer",
        layers: int = 4,
        heads: int = 4,
        ff_dim: int = 128,
        dropout: float = 0.1,
    ) -> None:
        super().__init__()
        if pooling not in POOLINGS:
            raise ValueError(f"pooling must be one of {POOLINGS}, not {pooling!r}")
        self.text = TextCNN(vocab_size, token_dim, filters, windows, text_dim, dropout)
        self.time = nn.Embedding(7, time_dim) if time_dim > 0 else None
        self.context = nn.Embedding(num_contexts, context_dim) if context_dim > 0 else None
        dim = text_dim + max(time_dim, 0) + max(context_dim, 0)
        if pooling == "transformer":
            if dim % heads:
                raise ValueError(f"heads ({heads}) must divide the post dimension ({dim})")
            self.pool: nn.Module = PoolingTransformer(dim, output_dim, layers, heads, ff_dim, dropout)
        else:
            self.pool = MeanPooling(dim, output_dim, dropout)
        self.min_tokens = max(windows)

    def forward(
        self,
        tokens: torch.Tensor,
        lengths: torch.Tensor,
        weekdays: torch.Tensor,
        contexts: torch.Tensor,
        post_mask: torch.Tensor,
    ) -> torch.Tensor:
        """tokens (B*L, T), lengths (B*L,), weekdays / contexts / post_mask (B, L) -> z (B, output_dim)."""
        batch, length = post_mask.shape
        parts = [self.text(tokens, lengths).view(batch, length, -1)]
        if self.time is not None:
            parts.append(self.time(weekdays))
        if self.context is not None:
            parts.append(self.context(contexts))
        return self.pool(torch.cat(parts, dim=-1), post_mask)


@dataclass(frozen=True)
class EpisodeEncoderConfig:
    """The episode encoder's settings (SYSML's values where a default differs, in brackets).

    vocab_size, max_tokens: byte-level BPE vocabulary size and tokens kept per post [30k, 256].
    token_dim, filters, text_dim: CNN token embedding size, filters per window (2-5), projected size.
    time_dim, context_dim: day-of-week and sub-forum embedding sizes (0 leaves the feature out).
    output_dim: size of z [32 single-market, 128 multitask].
    pooling: "transformer" (SYSML) or "mean" (the CNN baseline).
    layers, heads, ff_dim, dropout: the pooling transformer [4, 4, 128, 0.1]; dropout also in the CNN.
    """

    name: ClassVar[str] = "episode_encoder"
    vocab_size: int = 30000
    max_tokens: int = 256
    token_dim: int = 32
    filters: int = 5
    text_dim: int = 128
    time_dim: int = 64
    context_dim: int = 128
    output_dim: int = 32
    pooling: str = "transformer"
    layers: int = 4
    heads: int = 4
    ff_dim: int = 128
    dropout: float = 0.1

    def __post_init__(self) -> None:
        if self.pooling not in POOLINGS:
            raise ValueError(f"pooling must be one of {', '.join(POOLINGS)}, not {self.pooling!r}")
        if not 0 <= self.dropout < 1:
            raise ValueError(f"dropout must lie in [0, 1), got {self.dropout!r}")
        for label, least in (
            ("vocab_size", 300),  # the 256 bytes and the special tokens come first
            ("max_tokens", 5),
            ("output_dim", 1),
            ("text_dim", 1),
            ("filters", 1),
            ("token_dim", 1),
            *((("layers", 1), ("heads", 1), ("ff_dim", 1)) if self.pooling == "transformer" else ()),  # audit 25, F4
        ):
            if getattr(self, label) < least:
                raise ValueError(f"{label} must be at least {least}, got {getattr(self, label)!r}")
        if self.pooling == "transformer" and self.post_dim % self.heads:
            raise ValueError(f"heads ({self.heads}) must divide text_dim + time_dim + context_dim ({self.post_dim})")

    @property
    def post_dim(self) -> int:
        """The size of one post's vector: text, weekday and sub-forum parts."""
        return self.text_dim + max(self.time_dim, 0) + max(self.context_dim, 0)

    def build(self, num_tokens: int, num_contexts: int) -> SysmlEpisodeNet:
        """The encoder for a trained tokenizer's `num_tokens` and `num_contexts` sub-forum rows."""
        return SysmlEpisodeNet(
            num_tokens,
            num_contexts,
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
