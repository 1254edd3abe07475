"""varlen_linker parts: sample sizes, batches, tokenizer, model shapes and masking, losses vs a reference."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from systems.varlen_linker.batching import blank_row, post_table, training_batch
from systems.varlen_linker.model import SampleEncoder, SampleEncoderConfig
from systems.varlen_linker.sampling import (
    OverlappingSampling,
    PeriodSampling,
    SampleSizes,
    length_distribution,
    sample_length,
    sample_span,
)
from systems.varlen_linker.text import PAD_ID, SubwordTokenizer
from tasks.reddit import Action
from toolkit.metric_batches import author_batches
from toolkit.metric_losses import LOSSES, TopKLoss, TripletLoss, euclidean_distances, top_k_loss

# ---------------------------------------------------------------------------------------- sample sizes


def test_sample_length_follows_the_exact_discrete_distribution():
    """KS distance between 20,000 seeded draws and the exact CDF of M = 1 + ceil(15 x), x ~ Beta(3, 1)."""
    rng = np.random.default_rng(1234)
    n = 20_000
    draws = np.array([sample_length(rng, min_length=1, max_length=16, alpha=3.0, beta=1.0) for _ in range(n)])
    probs = length_distribution(min_length=1, max_length=16, alpha=3.0, beta=1.0)
    support = sorted(probs)
    assert support == list(range(1, 17)) and math.isclose(sum(probs.values()), 1.0)
    # exact: P(M = 1 + j) = (j/15)^3 - ((j-1)/15)^3 for j >= 1, and P(M = 1) = 0
    assert probs[1] == 0.0 and probs[16] == pytest.approx(1 - (14 / 15) ** 3)
    exact_cdf = np.cumsum([probs[m] for m in support])
    empirical_cdf = np.array([(draws <= m).mean() for m in support])
    ks = np.abs(exact_cdf - empirical_cdf).max()
    assert ks < 1.36 / math.sqrt(n)  # the 5% KS critical value (conservative for a discrete law)
    assert draws.min() >= 2 and draws.max() == 16
    assert abs(draws.mean() - sum(m * p for m, p in probs.items())) < 0.05


def test_sample_length_edge_cases():
    rng = np.random.default_rng(0)
    assert {sample_length(rng, min_length=16, max_length=16, alpha=3, beta=1) for _ in range(20)} == {16}
    assert length_distribution(min_length=1, max_length=1, alpha=3, beta=1) == {1: 1.0}
    with pytest.raises(ValueError):
        sample_length(rng, min_length=0, max_length=4, alpha=3, beta=1)


def test_the_sample_sizes_part_draws_as_sample_length():
    sizes = SampleSizes(min_length=2, max_length=9, beta_a=2.0, beta_b=1.5)
    a, b = np.random.default_rng(5), np.random.default_rng(5)
    assert [sizes.draw(a) for _ in range(50)] == [
        sample_length(b, min_length=2, max_length=9, alpha=2.0, beta=1.5) for _ in range(50)
    ]
    with pytest.raises(ValueError, match="min_length <= max_length"):
        SampleSizes(min_length=5, max_length=2)
    with pytest.raises(ValueError, match="beta_a and beta_b must be positive"):
        SampleSizes(beta_a=0.0)


def test_sample_span_with_fewer_posts_than_requested():
    rng = np.random.default_rng(0)
    assert sample_span(rng, 5, 16) == (0, 5)  # all the author has
    spans = [sample_span(rng, 10, 4) for _ in range(500)]
    assert all(stop - start == 4 and 0 <= start <= 6 for start, stop in spans)
    assert {start for start, _ in spans} == set(range(7))  # every start position is used


def test_epoch_batches_hold_distinct_authors():
    batches = author_batches(10, 4, np.random.default_rng(0), steps=7)
    assert len(batches) == 7 and all(len(set(b.tolist())) == len(b) == 4 for b in batches)
    with pytest.raises(ValueError):
        author_batches(1, 4, np.random.default_rng(0), steps=1)


# ---------------------------------------------------------------------------------------- text and batches


@pytest.fixture(scope="module")
def tokenizer() -> SubwordTokenizer:
    texts = [f"the quick brown fox {i} jumps over the lazy dog number {i % 7}" for i in range(300)]
    return SubwordTokenizer.train(texts, vocab_size=64, seed=0)


def test_tokenizer_pads_truncates_and_is_deterministic(tokenizer: SubwordTokenizer):
    ids = tokenizer.encode(["", "dog", "dog " * 100], 8)
    assert ids.shape == (3, 8) and (ids[0] == PAD_ID).all()
    assert (ids[1] != PAD_ID).sum() < 8 and (ids[2] != PAD_ID).all()
    again = SubwordTokenizer.train(
        [f"the quick brown fox {i} jumps over the lazy dog number {i % 7}" for i in range(300)], vocab_size=64, seed=0
    )
    assert again.model_proto == tokenizer.model_proto
    assert (
        SubwordTokenizer(tokenizer.model_proto).encode(["the lazy dog"], 6).tolist()
        == tokenizer.encode(["the lazy dog"], 6).tolist()
    )


def test_tokenizer_takes_every_seed_a_run_accepts():
    """sentencepiece takes a 32-bit seed; `harness run --seed` up to 2**64 - 1 (audit 6, F4: a TypeError before)."""
    texts = [f"the quick brown fox {i} jumps over the lazy dog number {i % 7}" for i in range(300)]
    large = SubwordTokenizer.train(texts, vocab_size=64, seed=2**64 - 1)
    assert large.model_proto == SubwordTokenizer.train(texts, vocab_size=64, seed=2**32 - 1).model_proto


def test_post_table_maps_unknown_subreddits_to_other(tokenizer: SubwordTokenizer):
    actions = [Action("a", 1, 0), Action("b", 2, 7), Action("", 3, -1), Action("c", 23, 2)]
    table = post_table(actions, tokenizer, post_length=6, num_subreddits=3)
    assert table.subreddits.tolist() == [0, 2, 2, 2, 3]  # 7 and -1 -> other (2); last row: the blank post
    assert table.hours.tolist() == [1, 2, 3, 23, -1] and blank_row(table) == 4
    with pytest.raises(ValueError, match="hours"):
        post_table([Action("a", 24, 0)], tokenizer, post_length=6, num_subreddits=3)


def test_training_batch_shapes_and_padding(tokenizer: SubwordTokenizer):
    actions = [Action(f"text {i}", i % 24, 0) for i in range(30)]
    table = post_table(actions, tokenizer, post_length=6, num_subreddits=2)
    offsets = np.array([0, 20, 23, 30])  # author 1 has only 3 posts
    kwargs = {"samples_per_author": 2, "sizes": SampleSizes(min_length=4, max_length=8)}
    old = {**kwargs, "sampling": OverlappingSampling()}
    batch = training_batch(table, offsets, np.array([0, 1, 2]), np.random.default_rng(0), pad_to=None, **old)
    assert batch.labels.tolist() == [0, 0, 1, 1, 2, 2]
    assert batch.lengths[2] == batch.lengths[3] == 3  # fewer posts than the sample size: all of them
    assert batch.tokens.shape == (batch.lengths.sum(), 6)
    fixed = training_batch(table, offsets, np.array([0, 1]), np.random.default_rng(0), pad_to=8, **old)
    assert fixed.lengths.tolist() == [8, 8, 8, 8]
    assert (fixed.hours[16 + 3 : 24] == -1).all()  # author 1's samples are padded with blank posts
    # periods: author 1's 3 posts are cut into 2 periods (1 and 2 posts), one sample in each
    periods = {**kwargs, "sampling": PeriodSampling(min_posts=1)}
    batch = training_batch(table, offsets, np.array([1]), np.random.default_rng(0), pad_to=None, **periods)
    assert sorted(batch.lengths.tolist()) == [1, 2] and batch.tokens.shape == (3, 6)
    fixed = training_batch(table, offsets, np.array([1]), np.random.default_rng(0), pad_to=8, **periods)
    assert fixed.lengths.tolist() == [8, 8] and int((fixed.hours >= 0).sum()) == 3


# ---------------------------------------------------------------------------------------- model


def tiny_model(**overrides) -> SampleEncoder:
    torch.manual_seed(0)
    options = {"vocab_size": 50, "num_subreddits": 4, "token_dim": 8, "filters": 6, "subreddit_dim": 4}
    options.update({"attention_dim": 12, "embedding_dim": 10})
    options.update(overrides)
    return SampleEncoder(**options).eval()


def random_posts(n: int, length: int = 32, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    return (
        torch.randint(1, 50, (n, length), generator=g),
        torch.randint(0, 24, (n,), generator=g),
        torch.randint(0, 4, (n,), generator=g),
    )


def test_the_encoder_config_builds_the_encoder_with_its_sizes():
    config = SampleEncoderConfig(token_dim=8, filters=6, subreddit_dim=4, attention_dim=12, embedding_dim=10)
    torch.manual_seed(0)
    built = config.build(num_tokens=50, num_subreddits=4).state_dict()
    reference = tiny_model().state_dict()  # the same sizes, built directly
    assert built.keys() == reference.keys() and all(torch.equal(built[k], reference[k]) for k in reference)
    assert config.build(num_tokens=50, num_subreddits=4).subreddits is not None
    assert SampleEncoderConfig(use_subreddit=False).build(num_tokens=50, num_subreddits=4).subreddits is None
    with pytest.raises(ValueError, match="attention_dim must be positive"):
        SampleEncoderConfig(attention_dim=0)
    with pytest.raises(ValueError, match="post_length must be at least 4"):
        SampleEncoderConfig(post_length=3)


def test_model_shapes_and_normalisation():
    model = tiny_model()
    tokens, hours, subs = random_posts(1 + 5 + 16)
    out = model(tokens, hours, subs, torch.tensor([1, 5, 16]))
    assert out.shape == (3, 10)
    assert torch.allclose(out.norm(dim=1), torch.ones(3), atol=1e-5)
    assert tiny_model(normalize=False)(tokens, hours, subs, torch.tensor([1, 5, 16])).norm(dim=1).ne(1).any()
    assert tiny_model(use_subreddit=False, use_hour=False)(tokens, hours, subs, torch.tensor([22])).shape == (1, 10)


@torch.no_grad()
def test_padding_is_masked_a_sample_embeds_the_same_alone_or_in_a_batch():
    model = tiny_model()
    tokens, hours, subs = random_posts(3 + 16, seed=1)
    together = model(tokens, hours, subs, torch.tensor([3, 16]))
    alone = model(tokens[:3], hours[:3], subs[:3], torch.tensor([3]))
    assert torch.allclose(together[0], alone[0], atol=1e-5)


@torch.no_grad()
def test_empty_text_and_blank_posts_give_finite_embeddings():
    model = tiny_model()
    tokens = torch.zeros((2, 32), dtype=torch.long)  # all padding: an empty text
    out = model(tokens, torch.tensor([5, -1]), torch.tensor([1, 4]), torch.tensor([2]))  # the blank post: -1, row 4
    assert torch.isfinite(out).all()


# ---------------------------------------------------------------------------------------- losses


def reference_top_k_loss(embeddings: np.ndarray, labels: list[int], k: int, margin: float) -> float:
    """Lu et al.'s top-k loss by plain loops: rank, find the samples to swap, sum the similarity gaps."""
    n = len(labels)
    total = 0.0
    for i in range(n):
        others = []
        for j in range(n):
            if j == i:
                continue
            similarity = -float(np.sqrt(((embeddings[i] - embeddings[j]) ** 2).sum()))
            positive = labels[j] == labels[i]
            others.append((similarity + (0.0 if positive else margin), positive))
        ranked = sorted(others, key=lambda item: -item[0])
        top, rest = ranked[:k], ranked[k:]
        n_positive = sum(1 for _, positive in others if positive)
        if n_positive < k:
            missed = [s for s, positive in rest if positive]
            intruders = sorted(s for s, positive in top if not positive)[: len(missed)]  # nearest the boundary
        else:
            intruders = [s for s, positive in top if not positive]
            missed = sorted((s for s, positive in rest if positive), reverse=True)[: len(intruders)]
        total += sum(intruders) - sum(missed)
    return total / n


@pytest.mark.parametrize(("per_class", "k", "seed"), [(3, 4, 0), (3, 4, 1), (6, 4, 2), (5, 2, 3), (4, 8, 4)])
def test_top_k_loss_matches_the_reference_loop(per_class, k, seed):
    rng = np.random.default_rng(seed)
    labels = [c for c in range(5) for _ in range(per_class)]
    embeddings = rng.normal(size=(len(labels), 3))
    got = top_k_loss(torch.tensor(embeddings), torch.tensor(labels), k=k, margin=0.25)
    assert float(got) == pytest.approx(reference_top_k_loss(embeddings, labels, k, 0.25), rel=1e-6, abs=1e-9)


def test_top_k_loss_is_zero_when_the_top_k_is_pure_and_has_gradients_otherwise():
    labels = torch.tensor([0, 0, 0, 1, 1, 1])
    clustered = torch.tensor([[0.0], [0.1], [0.2], [10.0], [10.1], [10.2]])
    assert float(top_k_loss(clustered, labels, k=2, margin=0.25)) == 0.0
    mixed = torch.randn(6, 3, generator=torch.Generator().manual_seed(0), requires_grad=True)
    loss = top_k_loss(mixed, labels, k=2, margin=0.25)
    loss.backward()
    assert float(loss.detach()) > 0 and torch.isfinite(mixed.grad).all() and mixed.grad.abs().sum() > 0


def test_distances_have_finite_gradients_at_zero():
    x = torch.tensor([[1.0, 0.0], [1.0, 0.0]], requires_grad=True)
    euclidean_distances(x).sum().backward()
    assert torch.isfinite(x.grad).all()


@pytest.mark.parametrize("part", LOSSES)
def test_every_loss_trains_a_batch(part):
    torch.manual_seed(0)
    embeddings = torch.nn.functional.normalize(torch.randn(16, 8), dim=1).requires_grad_()
    labels = torch.arange(16) // 4
    loss = part().build(4, 5)(embeddings, labels)
    loss.backward()
    assert torch.isfinite(loss) and torch.isfinite(embeddings.grad).all()


def test_the_top_k_part_is_the_top_k_loss_with_its_settings():
    embeddings = torch.nn.functional.normalize(torch.randn(12, 5, generator=torch.Generator().manual_seed(3)), dim=1)
    labels = torch.arange(12) // 3
    built = TopKLoss(top_k=2, margin=0.1).build(4, 5)(embeddings, labels)
    assert torch.equal(built, top_k_loss(embeddings, labels, k=2, margin=0.1))
    with pytest.raises(ValueError, match="top_k"):
        TopKLoss(top_k=0)


def test_triplet_loss_is_the_semi_hard_triplet_margin_loss():
    """On one hand-made anchor: the semi-hard negative (d_ap < d_an < d_ap + margin) gives d_ap - d_an + margin."""
    embeddings = torch.tensor([[0.0, 0.0], [0.3, 0.0], [-0.1, 0.35], [2.0, 0.0]])
    labels = torch.tensor([0, 0, 1, 2])
    # anchor 0 / positive 1 (d 0.3): negative 2 (d 0.364) is semi-hard, negative 3 (d 2) easy;
    # anchor 1 / positive 0 (d 0.3): negative 2 (d 0.532 > 0.3 + 0.2) and 3 are easy: one triplet in all
    loss = TripletLoss(margin=0.2).build(4, 5)(embeddings, labels)
    assert float(loss) == pytest.approx(0.3 - math.hypot(0.1, 0.35) + 0.2, abs=1e-5)


@torch.no_grad()
def test_all_padding_texts_skip_the_convolutions_and_give_the_same_vectors():
    model = tiny_model()
    tokens, _, _ = random_posts(4, seed=2)
    tokens[1] = 0  # an empty text
    tokens[3] = 0
    assert torch.allclose(model.text_vectors(tokens), model._convolve(tokens), atol=1e-6)
    assert torch.allclose(model.text_vectors(tokens[1:2]), model._convolve(tokens[1:2]), atol=1e-6)
