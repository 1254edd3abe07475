"""The sample encoder of Khan et al. 2021 (section 2.1, figure 2), in PyTorch.

Per post: subword embeddings -> 1-D convolutions of widths 2, 3, 4 (ReLU) -> max over time,
concatenated with a learned subreddit embedding and a one-hot hour of day. The post vectors of a
sample go through dot-product self-attention, are max-pooled over the sample, and two fully
connected layers with bias give the embedding (L2-normalised, so Euclidean distances lie in [0, 2]).

Posts of a batch are passed flat, with each sample's length: the convolutions run over real posts
only, and padding positions are masked out of the attention and the max-pool.

`SampleEncoderConfig` is the encoder as a part of a system (harness.params): the tokenizer's
vocabulary and post length, the layer sizes and the feature switches; it builds the module.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import torch
from torch import nn
from torch.nn import functional as F

from systems.varlen_linker.text import PAD_ID

HOURS = 24


@dataclass(frozen=True)
class SampleEncoderConfig:
    """The sample encoder's settings (paper: vocabulary 2^16, 32 subwords per post, layer sizes 512,
    512 per width, 512, 512, 1024 with both the S and P features; the defaults are small, for CPU).

    vocab_size: SentencePiece vocabulary (an upper bound on small corpora); post_length: subwords per
    post, truncated or padded; token_dim, filters, subreddit_dim, attention_dim, embedding_dim: layer
    sizes; use_subreddit, use_hour: the subreddit (S) and hour-of-day (P) features.
    """

    name: ClassVar[str] = "sample_encoder"
    vocab_size: int = 8192
    post_length: int = 32
    token_dim: int = 64
    filters: int = 64
    subreddit_dim: int = 32
    attention_dim: int = 128
    embedding_dim: int = 128
    use_subreddit: bool = True
    use_hour: bool = True

    def __post_init__(self) -> None:
        sizes = ("vocab_size", "post_length", "token_dim", "filters", "subreddit_dim", "attention_dim", "embedding_dim")
        for size in sizes:
            if getattr(self, size) < 1:
                raise ValueError(f"{size} must be positive, got {getattr(self, size)}")
        if self.post_length < 4:
            raise ValueError(f"post_length must be at least 4 (the widest convolution), got {self.post_length}")
        if self.vocab_size < 8:  # the tokenizer's own floor, checked before the data is read (audit 22, F4)
            raise ValueError(f"vocab_size must be at least 8, got {self.vocab_size}")

    def build(self, *, num_tokens: int, num_subreddits: int) -> SampleEncoder:
        """The encoder for a trained tokenizer's `num_tokens` subwords and the task's subreddit buckets."""
        return SampleEncoder(
            vocab_size=num_tokens,
            num_subreddits=num_subreddits,
            token_dim=self.token_dim,
            filters=self.filters,
            subreddit_dim=self.subreddit_dim,
            attention_dim=self.attention_dim,
            embedding_dim=self.embedding_dim,
            use_subreddit=self.use_subreddit,
            use_hour=self.use_hour,
        )


class SampleEncoder(nn.Module):
    """Embeds variable-size samples of actions (text ids, hour, subreddit) into R^embedding_dim.

    Subreddit indices run over `num_subreddits` buckets (the task's N most common plus "other");
    one more index, `num_subreddits`, is the blank post of padded fixed-size samples. An hour of
    -1 (a blank post) encodes as all zeros.
    """

    def __init__(
        self,
        *,
        vocab_size: int,
        num_subreddits: int,
        token_dim: int = 128,
        filters: int = 128,
        widths: Sequence[int] = (2, 3, 4),
        subreddit_dim: int = 32,
        attention_dim: int = 256,
        embedding_dim: int = 256,
        use_subreddit: bool = True,
        use_hour: bool = True,
        normalize: bool = True,
    ) -> None:
        super().__init__()
        self.num_subreddits = num_subreddits
        self.use_subreddit = use_subreddit
        self.use_hour = use_hour
        self.normalize = normalize
        self.attention_dim = attention_dim
        self.tokens = nn.Embedding(vocab_size, token_dim, padding_idx=PAD_ID)
        self.convs = nn.ModuleList(nn.Conv1d(token_dim, filters, width) for width in widths)
        # only parameters the forward pass uses: DDP fails on parameters that never get a gradient
        self.subreddits = nn.Embedding(num_subreddits + 1, subreddit_dim) if use_subreddit else None
        post_dim = filters * len(widths) + (subreddit_dim if use_subreddit else 0) + (HOURS if use_hour else 0)
        self.query = nn.Linear(post_dim, attention_dim)
        self.key = nn.Linear(post_dim, attention_dim)
        self.value = nn.Linear(post_dim, attention_dim)
        self.fc1 = nn.Linear(attention_dim, embedding_dim)
        self.fc2 = nn.Linear(embedding_dim, embedding_dim)

    def text_vectors(self, tokens: torch.Tensor) -> torch.Tensor:
        """(posts, length) ids -> (posts, filters x widths): ReLU convolutions, max over time.

        An all-padding text (empty, or a blank post) has zero embeddings, so every convolution gives
        its bias at every position: its vector is relu(bias), computed without running the convolutions.
        """
        filled = (tokens != PAD_ID).any(dim=1)
        constant = torch.cat([F.relu(conv.bias) for conv in self.convs])
        if bool(filled.all()):
            return self._convolve(tokens)
        out = constant.unsqueeze(0).expand(tokens.shape[0], -1)
        if not bool(filled.any()):
            return out
        return out.index_put((filled.nonzero(as_tuple=True)[0],), self._convolve(tokens[filled]).to(out.dtype))

    def _convolve(self, tokens: torch.Tensor) -> torch.Tensor:
        embedded = self.tokens(tokens).transpose(1, 2)  # (posts, token_dim, length)
        return torch.cat([F.relu(conv(embedded)).amax(dim=2) for conv in self.convs], dim=1)

    def post_vectors(self, tokens: torch.Tensor, hours: torch.Tensor, subreddits: torch.Tensor) -> torch.Tensor:
        """(posts, length) ids, (posts,) hours and subreddits -> (posts, post_dim)."""
        parts = [self.text_vectors(tokens)]
        if self.subreddits is not None:
            parts.append(self.subreddits(subreddits))
        if self.use_hour:
            known = hours >= 0
            one_hot = F.one_hot(hours.clamp(min=0), HOURS).to(parts[0].dtype)
            parts.append(one_hot * known.unsqueeze(1).to(one_hot.dtype))
        return torch.cat(parts, dim=1)

    def forward(
        self, tokens: torch.Tensor, hours: torch.Tensor, subreddits: torch.Tensor, lengths: torch.Tensor
    ) -> torch.Tensor:
        """Posts of all samples, flat and in sample order, and each sample's length -> (samples, embedding_dim)."""
        posts = self.post_vectors(tokens, hours, subreddits)
        n_samples, longest = lengths.shape[0], int(lengths.max())
        mask = torch.arange(longest, device=lengths.device).unsqueeze(0) < lengths.unsqueeze(1)  # (samples, longest)
        padded = posts.new_zeros(n_samples, longest, posts.shape[1])
        padded[mask] = posts
        q, k, v = self.query(padded), self.key(padded), self.value(padded)
        logits = q @ k.transpose(1, 2) / math.sqrt(self.attention_dim)
        lowest = torch.finfo(logits.dtype).min
        logits = logits.masked_fill(~mask.unsqueeze(1), lowest)
        attended = torch.softmax(logits, dim=-1) @ v  # (samples, longest, attention_dim)
        pooled = attended.masked_fill(~mask.unsqueeze(2), lowest).amax(dim=1)
        embedding = self.fc2(F.relu(self.fc1(pooled)))
        return F.normalize(embedding.float(), dim=1) if self.normalize else embedding
