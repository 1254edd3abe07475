"""Metric-learning losses over a batch of sample embeddings labelled by author, as parts.

One interface for every loss part of the project (these, and systems.nbcsauthor.losses): a frozen
dataclass of its settings (`name` and fields, recorded with a run) whose `build(num_classes, dim)` makes
the loss, called as `loss(embeddings, labels)` with integer labels. `num_classes` and `dim` (the number of
training classes, the embedding size) size the losses that own class weights; the pair and list losses
here have none and ignore them.

- `TripletLoss` ("triplet"): triplet margin loss on semi-hard triplets (Schroff et al. 2015), both
  from pytorch-metric-learning, on Euclidean distance.
- `TopKLoss` ("topk"): the top-k precision loss of Lu et al. (ICCV 2019), as Khan et al. use it;
  written here (pytorch-metric-learning has no such loss) and checked against a plain Python loop
  in the tests.
- `RankedListLoss` ("ranked_list"): pytorch-metric-learning's RankedListLoss (Wang et al. 2019), a
  related list loss.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import torch

LossFunction = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


@dataclass(frozen=True)
class TripletLoss:
    """Triplet margin loss on semi-hard triplets (paper's margin: 0.2)."""

    name: ClassVar[str] = "triplet"
    margin: float = 0.2

    def __post_init__(self) -> None:
        _check_margin(self.margin)

    def build(self, num_classes: int, dim: int) -> LossFunction:
        """The loss as a function of (embeddings, labels); it has no class weights to size."""
        from pytorch_metric_learning import losses, miners

        distance = _euclidean()
        loss = losses.TripletMarginLoss(margin=self.margin, distance=distance)
        miner = miners.TripletMarginMiner(margin=self.margin, type_of_triplets="semihard", distance=distance)
        return lambda embeddings, labels: loss(embeddings, labels, miner(embeddings, labels))


@dataclass(frozen=True)
class TopKLoss:
    """The top-k precision loss of Lu et al. (paper: k = 4, margin 0.25); see `top_k_loss`."""

    name: ClassVar[str] = "topk"
    top_k: int = 4
    margin: float = 0.25

    def __post_init__(self) -> None:
        if self.top_k < 1:
            raise ValueError(f"top_k must be positive, got {self.top_k}")
        _check_margin(self.margin)

    def build(self, num_classes: int, dim: int) -> LossFunction:
        """The loss as a function of (embeddings, labels); it has no class weights to size."""
        return lambda embeddings, labels: top_k_loss(embeddings, labels, k=self.top_k, margin=self.margin)


@dataclass(frozen=True)
class RankedListLoss:
    """pytorch-metric-learning's ranked list loss (Tn = 0: no temperature weighting of negatives)."""

    name: ClassVar[str] = "ranked_list"
    margin: float = 0.2

    def __post_init__(self) -> None:
        _check_margin(self.margin)

    def build(self, num_classes: int, dim: int) -> LossFunction:
        """The loss as a function of (embeddings, labels); it has no class weights to size."""
        from pytorch_metric_learning import losses

        ranked = losses.RankedListLoss(margin=self.margin, Tn=0.0, distance=_euclidean())
        return lambda embeddings, labels: ranked(embeddings, labels)


def _check_margin(margin: float) -> None:
    """A margin below 0 asks the loss to let negatives sit closer than positives (audit 22, F6: accepted silently)."""
    if not 0 <= margin < math.inf:
        raise ValueError(f"margin must be >= 0 and finite, got {margin!r}")


LOSSES = (TripletLoss, TopKLoss, RankedListLoss)
MetricLoss = TripletLoss | TopKLoss | RankedListLoss


def _euclidean() -> Any:
    from pytorch_metric_learning.distances import LpDistance

    # the model normalises already; the loss must measure the distance the task scores with
    return LpDistance(normalize_embeddings=False, p=2, power=1)


def euclidean_distances(embeddings: torch.Tensor) -> torch.Tensor:
    """Pairwise Euclidean distances, with a gradient that stays finite at distance 0 (self, duplicates)."""
    squared = embeddings.pow(2).sum(1)
    gram = embeddings @ embeddings.T
    return (squared.unsqueeze(1) + squared.unsqueeze(0) - 2.0 * gram).clamp(min=1e-12).sqrt()


def top_k_loss(embeddings: torch.Tensor, labels: torch.Tensor, *, k: int = 4, margin: float = 0.25) -> torch.Tensor:
    """Top-k precision loss (Lu et al. 2019) with similarity = -Euclidean distance.

    For each anchor, the other samples are ranked by similarity, with `margin` added to the
    similarity of other authors' samples. Let P be the anchor's positives (same author) and
    K its top k. When |P| < k, every positive should be in K: each positive outside K is paired
    with one of the negatives in K closest to K's boundary (lowest similarity). When |P| >= k, K
    should hold positives only: each negative in K is paired with one of the positives outside K
    closest to the boundary (highest similarity). The loss is the sum over the chosen negatives'
    (margined) similarities minus the chosen positives' similarities, averaged over anchors: it
    moves as few samples as needed to make K as pure as possible.
    """
    n = embeddings.shape[0]
    if n < 2:
        return embeddings.sum() * 0.0
    k = min(k, n - 1)
    similarity = -euclidean_distances(embeddings.float())
    eye = torch.eye(n, dtype=torch.bool, device=embeddings.device)
    same = labels.unsqueeze(0) == labels.unsqueeze(1)
    positive, negative = same & ~eye, ~same
    margined = similarity + margin * negative.to(similarity.dtype)
    ranked = margined.masked_fill(eye, float("-inf"))
    order = ranked.argsort(dim=1, descending=True, stable=True)
    rank = order.argsort(dim=1, stable=True)  # 0-based position of each column in its row's ranking
    in_top = (rank < k) & ~eye
    n_positive = positive.sum(1)
    small = n_positive < k  # case |P| < k: pull every positive into the top k

    positives_out = positive & ~in_top
    negatives_in = negative & in_top
    # |P| < k: all positives outside K, and as many negatives in K, lowest similarity first
    count_small = positives_out.sum(1)
    chosen_neg_small = _first_of_each_row(negatives_in, margined, count_small, largest=False)
    # |P| >= k: all negatives in K, and as many positives outside K, highest similarity first
    count_large = negatives_in.sum(1)
    chosen_pos_large = _first_of_each_row(positives_out, margined, count_large, largest=True)

    chosen_neg = torch.where(small.unsqueeze(1), chosen_neg_small, negatives_in)
    chosen_pos = torch.where(small.unsqueeze(1), positives_out, chosen_pos_large)
    zero = torch.zeros_like(margined)
    per_anchor = torch.where(chosen_neg, margined, zero).sum(1) - torch.where(chosen_pos, margined, zero).sum(1)
    return per_anchor.mean()


def _first_of_each_row(candidates: torch.Tensor, values: torch.Tensor, counts: torch.Tensor, *, largest: bool):
    """Mask of the first `counts[i]` candidates of row i, ordered by value (largest or smallest first)."""
    fill = float("-inf") if largest else float("inf")
    keyed = values.detach().masked_fill(~candidates, fill)
    order = keyed.argsort(dim=1, descending=largest, stable=True)
    position = order.argsort(dim=1, stable=True)
    return candidates & (position < counts.unsqueeze(1))
