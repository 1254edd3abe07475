"""varlen_linker training samples (issue 13): periods that share no post, the minimum-posts filter,
sample sizes as the paper draws them, the old sampler batch for batch, and the paper preset."""

from __future__ import annotations

import dataclasses
import hashlib
import itertools

import numpy as np
import pytest
from helpers.reddit_data import TINY_VARLEN, synthetic_train_data
from scipy.stats import chisquare

from core.errors import HarnessError
from harness.params import build
from systems.varlen_linker import model as model_module
from systems.varlen_linker.model import SampleEncoderConfig
from systems.varlen_linker.sampling import (
    OverlappingSampling,
    PeriodSampling,
    SampleSizes,
    length_distribution,
    period_spans,
)
from systems.varlen_linker.system import (
    PAPER_ENCODER,
    IurFixed,
    SgdTraining,
    VarlenAvg,
    VarlenLinker,
    VarlenTraining,
)
from toolkit.metric_losses import TripletLoss

TINY = {**TINY_VARLEN, "training.samples_per_author": 3}
# a synthetic user set with streams of many lengths (authors 0-3 have fewer than 8 posts)
LENGTHS = (3, 5, 6, 7, 8, 9, 12, 16, 23, 40, 64, 90)


def varied_train_data():
    base = synthetic_train_data(n_authors=len(LENGTHS), per_author=max(LENGTHS))
    cut = zip(base.streams, LENGTHS, strict=True)
    streams = tuple(stream._replace(actions=stream.actions[:n]) for stream, n in cut)
    return dataclasses.replace(base, streams=streams)


def recorded_spans(monkeypatch) -> list[tuple[int, list[tuple[int, int]]]]:
    """Record (stream length, spans) of every author's samples the samplers draw."""
    calls: list[tuple[int, list[tuple[int, int]]]] = []
    for cls in (PeriodSampling, OverlappingSampling):
        original = cls.spans

        def spans(self, rng, stream_length, sizes, count, _original=original):
            out = _original(self, rng, stream_length, sizes, count)
            calls.append((stream_length, out))
            return out

        monkeypatch.setattr(cls, "spans", spans)
    return calls


def overlaps(spans: list[tuple[int, int]]) -> bool:
    return any(max(a1, a2) < min(b1, b2) for (a1, b1), (a2, b2) in itertools.combinations(spans, 2))


# ---------------------------------------------------------------------------------------- periods


@pytest.mark.parametrize("count", [2, 4])
def test_period_spans_share_no_post_and_lie_in_distinct_periods(count):
    rng = np.random.default_rng(0)
    sizes = SampleSizes()  # 1..16, Beta(3, 1)
    for length in (count, count + 1, 13, 31, 64, 65, 200, 1000):
        periods = max(count, length // 16)
        bounds = (np.arange(periods + 1) * length) // periods
        for _ in range(200):
            spans = period_spans(rng, length, sizes, count)
            assert len(spans) == count and all(0 <= a < b <= length for a, b in spans)
            assert not overlaps(spans)
            owners = [int(np.searchsorted(bounds, a, side="right")) - 1 for a, _ in spans]
            assert len(set(owners)) == count  # one sample per period
            assert all(b <= bounds[p + 1] for (_, b), p in zip(spans, owners, strict=True))
    with pytest.raises(ValueError, match="3 posts cannot give 4 samples"):
        period_spans(rng, 3, sizes, 4)


def test_every_period_is_drawn_about_equally_often():
    """200 posts, S = 16: 12 periods; 4 of them drawn per author, uniformly (chi-square, seeded)."""
    rng = np.random.default_rng(7)
    bounds = (np.arange(13) * 200) // 12
    counts = np.zeros(12)
    for _ in range(3000):
        for start, _ in period_spans(rng, 200, SampleSizes(), 4):
            counts[np.searchsorted(bounds, start, side="right") - 1] += 1
    assert chisquare(counts).pvalue > 0.01


def test_positive_pairs_share_no_post_in_training(monkeypatch):
    """The system's default sampler, on streams of 3 to 90 posts: no two samples of an author share a
    post; the old sampler on the same data does make such pairs (the check can tell them apart)."""
    train = varied_train_data()
    calls = recorded_spans(monkeypatch)
    build(VarlenLinker, {**TINY, "sampling.min_posts": 1}).fit(train, seed=0)
    assert len(calls) == 2 * 3 * 4  # epochs x steps x authors per batch
    assert not any(overlaps(spans) for _, spans in calls)
    assert {length for length, _ in calls} - {3, 5, 6, 7}  # long streams were drawn too
    calls.clear()
    build(VarlenLinker, {**TINY, "sampling": "overlapping"}).fit(train, seed=0)
    assert sum(overlaps(spans) for _, spans in calls) > len(calls) // 2


# ---------------------------------------------------------------------------------------- filter


def test_the_minimum_posts_filter_leaves_short_and_long_authors_out(monkeypatch):
    train = varied_train_data()
    calls = recorded_spans(monkeypatch)
    system = build(VarlenLinker, {**TINY, "sampling.min_posts": 8, "sampling.max_posts": 64})
    system.fit(train, seed=0)
    kept = [n for n in LENGTHS if 8 <= n <= 64]
    stats = system.training_stats
    assert stats["authors"] == len(kept) and stats["posts"] == sum(kept)
    assert stats["authors_with_posts"] == len(LENGTHS) and stats["authors_left_out_by_filter"] == 5
    assert stats["tokenizer_posts"] == sum(LENGTHS)  # subwords from every training post
    assert {length for length, _ in calls} <= set(kept)  # no sample of a filtered author
    # the default: 8 posts; an author needs K posts for K disjoint samples whatever min_posts says
    assert PeriodSampling().keeps(8, 4) and not PeriodSampling().keeps(7, 4)
    assert not PeriodSampling(min_posts=1).keeps(3, 4) and PeriodSampling(min_posts=1).keeps(4, 4)
    assert OverlappingSampling().keeps(1, 4) and not OverlappingSampling(min_posts=2, max_posts=3).keeps(4, 2)
    with pytest.raises(HarnessError, match="1 of 12 training authors pass the minimum-posts filter"):
        build(VarlenLinker, {**TINY, "sampling.min_posts": 65}).fit(train, seed=0)


# ---------------------------------------------------------------------------------------- sizes


def size_test_pvalue(sizes: np.ndarray, law: dict[int, float]) -> float:
    """Chi-square goodness of fit of sample sizes to the law (cells with P = 0 must stay empty)."""
    support = [m for m, p in law.items() if p > 0]
    assert set(np.unique(sizes).tolist()) <= set(support)
    observed = np.array([(sizes == m).sum() for m in support])
    expected = np.array([law[m] for m in support]) * len(sizes)
    return float(chisquare(observed, expected).pvalue)


@pytest.mark.parametrize("sampling", [PeriodSampling(), OverlappingSampling()])
def test_sample_sizes_follow_the_papers_distribution(sampling):
    """M = 1 + ceil(15 x), x ~ Beta(3, 1), on streams long enough for every period to hold 16 posts;
    the same check rejects sizes drawn with Beta(1, 1) (so it can fail)."""
    law = length_distribution(min_length=1, max_length=16, alpha=3.0, beta=1.0)
    rng = np.random.default_rng(2021)

    def draw(sizes: SampleSizes) -> np.ndarray:
        spans = [span for _ in range(1500) for span in sampling.spans(rng, 64, sizes, 4)]  # 64 = 4 x 16
        return np.array([b - a for a, b in spans])

    paper = draw(SampleSizes())
    assert size_test_pvalue(paper, law) > 0.01
    assert abs(paper.mean() - sum(m * p for m, p in law.items())) < 0.1
    uniform = draw(SampleSizes(beta_a=1.0, beta_b=1.0))
    assert size_test_pvalue(uniform, law) < 1e-6


# ---------------------------------------------------------------------------------------- old batches


# What the encoder received in training (tokens, hours, subreddits, sample lengths of each batch),
# recorded with the code before issue 13 (commit b614166) for the same data, seed and sizes.
OLD_BATCHES = {
    VarlenLinker: ("26b5dfedb99cdeeff072987b06ffacc6afececc84aeb79367be5f8199c847d0d", [0.048408, 0.02386]),
    IurFixed: ("c73f219508f6aa0216981d89f9e29ae4f29aec656ef64de58c2ea6d61c637a7f", [0.038025, 0.022137]),
}


@pytest.mark.parametrize("cls", [VarlenLinker, IurFixed])
def test_the_overlapping_sampler_reproduces_the_old_batches(cls, monkeypatch):
    seen = []
    original = model_module.SampleEncoder.forward

    def forward(self, tokens, hours, subreddits, lengths):
        seen.append([t.numpy().copy() for t in (tokens, hours, subreddits, lengths)])
        return original(self, tokens, hours, subreddits, lengths)

    monkeypatch.setattr(model_module.SampleEncoder, "forward", forward)
    system = build(cls, {**TINY, "sampling": "overlapping"})
    system.fit(synthetic_train_data(n_authors=10, per_author=20), seed=5)
    digest = hashlib.sha256()
    for arrays in seen:
        for array in arrays:
            digest.update(array.astype(np.int64).tobytes())
    expected_digest, expected_losses = OLD_BATCHES[cls]
    assert len(seen) == 6 and digest.hexdigest() == expected_digest
    assert system.training_stats["epoch_losses"] == pytest.approx(expected_losses, abs=2e-6)
    # the default sampler draws other batches from the same data
    default = build(cls, TINY)
    default.fit(synthetic_train_data(n_authors=10, per_author=20), seed=5)
    assert default.training_stats["epoch_losses"] != system.training_stats["epoch_losses"]


# ---------------------------------------------------------------------------------------- presets


def test_the_paper_preset_holds_the_papers_sizes_and_the_released_schedule():
    system = VarlenLinker(preset="paper")
    assert system.encoder == PAPER_ENCODER
    assert (system.encoder.vocab_size, system.encoder.post_length) == (2**16, 32)
    sizes = [getattr(system.encoder, f) for f in ("token_dim", "filters", "subreddit_dim", "attention_dim")]
    assert sizes == [512, 512, 512, 512] and system.encoder.embedding_dim == 1024
    assert system.sample_sizes == SampleSizes(min_length=1, max_length=16, beta_a=3.0, beta_b=1.0)
    assert system.sampling == PeriodSampling(min_posts=100, max_posts=1000)
    assert system.loss == TripletLoss(margin=0.2)
    training = system.training
    assert isinstance(training, SgdTraining) and training.authors_per_batch * training.samples_per_author == 1024
    assert (training.lr, training.momentum, training.lr_decays, training.grad_clip) == (0.05, 0.9, 3, 1.0)
    assert training.epochs * training.steps_per_epoch == 1_000_000
    # the baselines keep their own sample sizes under either preset
    assert IurFixed(preset="paper").sample_sizes == SampleSizes(min_length=16, max_length=16)
    assert VarlenAvg(preset="paper").sample_sizes == SampleSizes(min_length=1, max_length=1)
    assert VarlenLinker().encoder == SampleEncoderConfig() and VarlenLinker().training == VarlenTraining()


def test_the_paper_encoder_builds_at_full_size():
    """The encoder of appendix B (text, hour and subreddit features) for this task's 8 + 1 subreddit buckets."""
    encoder = PAPER_ENCODER.build(num_tokens=2**16, num_subreddits=9)
    assert tuple(encoder.tokens.weight.shape) == (2**16, 512)
    assert [conv.out_channels for conv in encoder.convs] == [512, 512, 512]
    assert tuple(encoder.subreddits.weight.shape) == (10, 512)
    assert encoder.query.in_features == 3 * 512 + 512 + 24 and encoder.query.out_features == 512
    assert encoder.fc2.out_features == 1024
    count = sum(p.numel() for p in encoder.parameters())
    assert 40e6 < count < 46e6  # the paper's Table 6: 45.5M with 2048 subreddits


def test_the_paper_preset_trains_a_few_steps_on_cpu_with_its_sizes_made_small():
    train = varied_train_data()
    small = {key: value for key, value in TINY.items() if key.startswith("encoder.")}
    params = {"preset": "paper", **small, "sampling.min_posts": 8, "training.authors_per_batch": 4}
    params.update({"training.epochs": 2, "training.steps_per_epoch": 2, "device": "cpu", "cpu_threads": 1})
    system = build(VarlenLinker, params)
    assert system.sampling == PeriodSampling(min_posts=8, max_posts=1000)  # the field given, the rest the preset's
    assert system.training == dataclasses.replace(
        SgdTraining(), authors_per_batch=4, samples_per_author=4, epochs=2, steps_per_epoch=2, lr_decays=3
    )
    system.fit(train, seed=0)
    stats = system.training_stats
    assert stats["steps_per_process"] == 4 and np.isfinite(stats["epoch_losses"]).all()
    assert stats["authors"] == sum(1 for n in LENGTHS if 8 <= n <= 1000)
    # 3 decays over 4 steps (after steps 1, 2 and 3): 0.05 / 1000 at the end
    assert stats["final_lr"] == pytest.approx(0.05e-3)
    params = system.params()
    assert params["preset"] == "paper" and params["training"]["name"] == "sgd"
    assert build(VarlenLinker, params).params() == params
    embeddings = system.embed([s.actions[:4] for s in train.streams])
    assert embeddings.shape == (len(LENGTHS), 12) and np.isfinite(embeddings).all()


def test_sgd_learning_rate_decays_at_evenly_spaced_points():
    sgd = SgdTraining(lr_decays=3)
    factors = [sgd.lr_factor(step, 100) for step in (1, 24, 25, 49, 50, 74, 75, 100)]
    assert factors == pytest.approx([1, 1, 0.1, 0.1, 0.01, 0.01, 0.001, 0.001])
    assert SgdTraining().lr_factor(100, 100) == 1.0 and VarlenTraining().lr_factor(100, 100) == 1.0
