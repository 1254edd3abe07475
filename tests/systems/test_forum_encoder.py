"""The forum encoder systems (episode_encoder, reddit_encoder) with a tiny random encoder: nothing downloaded."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from click.testing import CliRunner
from helpers.darkweb_data import synthetic_split
from helpers.reddit_data import synthetic_posts, synthetic_train_data, write_posts
from helpers.tiny_encoder import make_tiny_encoder

from core.errors import HarnessError
from harness import registry
from harness.cli import main
from harness.params import build
from harness.runtime import load_like
from systems.forum_encoder.encoding import PostEncoderConfig
from systems.forum_encoder.sampling import Sampling, period_windows, post_rows_batch, sequence_authors, training_posts
from systems.forum_encoder.system import EpisodeEncoder, RedditEncoder
from tasks.darkweb import DarkwebTask
from tasks.forum.records import sample_texts
from toolkit.metric_losses import TopKLoss

REDDIT_TASK = {  # small ranking and linking sets for 20 synthetic authors
    "ranking_query_size": 4,
    "ranking_target_size": 4,
    "linking_query_size": 8,
    "linking_min_query_posts": 4,
    "linking_target_sizes": "[1,2,4]",
    "linking_target_size": 2,
    "linking_min_subreddit_queries": 3,
}


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A random 3-layer BERT of width 16 and its tokenizer, in a folder."""
    return str(make_tiny_encoder(tmp_path_factory.mktemp("tiny-encoder")))


@pytest.fixture(scope="module")
def darkweb():
    return synthetic_split("train", episodes_per_author=8), synthetic_split("test")


def system(cls=EpisodeEncoder, model: str | None = None, **params):
    """A system on the CPU with the given encoder folder and dotted parameters."""
    return build(cls, {"encoder.model": model, "device": "cpu", **params})


def test_registered_variants_presets_and_parts():
    assert registry.SYSTEMS["episode_encoder"].target == "systems.forum_encoder.system:EpisodeEncoder"
    assert registry.SYSTEMS["reddit_encoder"].target == "systems.forum_encoder.system:RedditEncoder"
    assert EpisodeEncoder.metric == RedditEncoder.metric == "cosine"
    cpu = EpisodeEncoder().params()
    assert cpu["preset"] == "cpu" and cpu["encoder"] == {
        "name": "hf_mean",
        "model": None,
        "max_tokens": 64,
        "finetune_layers": 0,
        "normalize": True,
        "batch_size": 64,
        "pooling": "mean",
    }
    assert cpu["sampling"] == {"name": "periods", "min_posts": None, "max_posts": None}
    assert RedditEncoder().params()["sampling"] == {"name": "periods", "min_posts": 1, "max_posts": 16}
    assert cpu["loss"] == {"name": "triplet", "margin": 0.2}
    # a preset gives the parts' defaults; a part's field given on its own overrides only that field
    paper = build(EpisodeEncoder, {"preset": "paper", "training.epochs": 3, "loss": "topk", "loss.top_k": 2})
    assert paper.encoder.finetune_layers == -1 and paper.encoder.max_tokens == 128
    assert paper.training.epochs == 3 and paper.training.weight_decay == 0.01
    assert paper.loss == TopKLoss(top_k=2)
    # the recorded parameters rebuild the same system
    assert build(EpisodeEncoder, paper.params()).params() == paper.params()


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"preset": "gpu"}, "preset must be one of cpu, paper, not 'gpu'"),
        ({"encoder.max_tokens": 0}, "max_tokens must be at least 3"),
        ({"encoder.finetune_layers": -2}, "finetune_layers must be -1"),
        ({"encoder.layers": 2}, "encoder \\(hf_mean\\) has no field 'layers'"),
        ({"sampling.min_posts": 5}, "min_posts and max_posts must both be set"),
        ({"training.samples_per_author": 1}, "samples_per_author must be at least 2"),
        ({"loss": "nope"}, "loss must be one of"),
        ({"cpu_threads": 0}, "cpu_threads must be a positive integer"),
        ({"epochs": 3}, "has no parameter\\(s\\) epochs"),
    ],
)
def test_bad_parameters_are_one_line_errors_naming_them(params, message):
    with pytest.raises(HarnessError, match=message):
        build(EpisodeEncoder, params)


def test_bad_encoders_are_refused_when_loaded(tiny, darkweb, monkeypatch, tmp_path: Path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # a name not in the local cache must not be downloaded
    train, _ = darkweb
    with pytest.raises(HarnessError, match="finetune_layers=9 but the encoder .* has 3 layers"):
        system(model=tiny, **{"encoder.finetune_layers": 9}).fit(train, seed=0)
    with pytest.raises(HarnessError, match="max_tokens=200 is more than the encoder"):
        system(model=tiny, **{"encoder.max_tokens": 200}).fit(train, seed=0)
    with pytest.raises(HarnessError, match="neither a folder nor an available model"):
        system(model="no-such-org/no-such-model").fit(train, seed=0)
    (tmp_path / "empty").mkdir()
    with pytest.raises(HarnessError, match="not a Hugging Face model folder"):
        system(model=str(tmp_path / "empty")).fit(train, seed=0)
    with pytest.raises(HarnessError, match="not fitted"):
        system(model=tiny).embed(train.episodes)


def test_training_samples_come_from_separate_periods(darkweb):
    train, _ = darkweb
    assert sequence_authors(train)[:2] == ["alpha/p0", "alpha/p0"]  # an account is an author within a market
    reddit = synthetic_train_data(n_authors=4, per_author=12)
    assert sequence_authors(reddit) == ["user00", "user01", "user02", "user03"]
    posts = training_posts(reddit, periods=4)
    assert [a.label for a in posts.authors] == ["user00", "user01", "user02", "user03"] and posts.left_out == 0
    assert posts.typical_length == 12 and posts.texts[:12] == list(reddit.post_texts()[0])
    assert training_posts(reddit, periods=13).left_out == 4  # fewer posts than periods: left out
    rng = np.random.default_rng(0)
    for _ in range(50):
        windows = period_windows(12, 4, rng, min_size=1, max_size=16)
        # one run in each period of 3 posts, so never overlapping and in time order
        assert [(start // 3, (stop - 1) // 3) for start, stop in windows] == [(0, 0), (1, 1), (2, 2), (3, 3)]
    batch = post_rows_batch(posts, [2, 0], rng, samples_per_author=3, min_size=2, max_size=2)
    assert batch.labels.tolist() == [2, 2, 2, 0, 0, 0] and np.bincount(batch.owners).tolist() == [2] * 6
    rows_of_sample = [batch.rows[batch.owners == i] for i in range(6)]
    assert all(set(rows) <= set(posts.authors[2].rows) for rows in rows_of_sample[:3])
    assert max(rows_of_sample[0]) < min(rows_of_sample[1]) and max(rows_of_sample[1]) < min(rows_of_sample[2])
    assert Sampling().sizes(5) == (5, 5) and Sampling(1, 16).sizes(5) == (1, 16)


def test_untrained_head_is_the_encoders_mean_and_training_improves_retrieval(tiny, darkweb):
    train, test = darkweb
    untrained = system(model=tiny, **{"training.epochs": 0})
    untrained.fit(train, seed=0)
    encoder = untrained._post_encoder
    episodes = list(test.episodes[:5])
    means = np.stack([encoder.vectors(list(sample_texts(e))).mean(0) for e in episodes])
    expected = means / np.linalg.norm(means, axis=1, keepdims=True)
    assert np.allclose(untrained.embed(episodes), expected, atol=1e-6)  # identity head: the pretrained embedding
    before = DarkwebTask().evaluate(untrained, test).scores["mrr"]

    params = {"loss": "topk", "training.epochs": 30, "training.lr": 0.01, "training.authors_per_batch": 6}
    trained = system(model=tiny, **params)
    trained.fit(train, seed=0)
    losses = trained.training_stats["epoch_losses"]
    assert len(losses) == 30 and np.mean(losses[-5:]) < 0.8 * np.mean(losses[:5])
    after = DarkwebTask().evaluate(trained, test).scores["mrr"]
    assert before < after
    stats = trained.training_stats
    assert stats["authors"] == 12 and stats["sample_posts"] == [3, 3] and stats["trainable_encoder_tensors"] == 0
    # the frozen encoder is the one on disk, unchanged by training
    from transformers import AutoModel

    fresh = AutoModel.from_pretrained(tiny).state_dict()
    assert all(torch.equal(value, fresh[name]) for name, value in trained._post_encoder.model.state_dict().items())
    assert not any(p.requires_grad for p in trained._post_encoder.model.parameters())


def test_fine_tuning_updates_only_the_top_layers_and_reloads_exactly(tmp_path: Path, darkweb):
    from transformers import AutoModel

    train, test = darkweb
    folder = make_tiny_encoder(tmp_path / "encoder")
    fresh = AutoModel.from_pretrained(folder).state_dict()
    tuned = system(
        model=str(folder), **{"encoder.finetune_layers": 1, "training.epochs": 2, "training.encoder_lr": 0.01}
    )
    tuned.fit(train, seed=0)
    after = tuned._post_encoder.model.state_dict()
    changed = {name for name, value in after.items() if not torch.equal(value, fresh[name])}
    assert changed and all(name.startswith("encoder.layer.2.") for name in changed)
    assert set(tuned._post_encoder.trainable) == {
        n for n, _ in tuned._post_encoder.model.named_parameters() if ".layer.2." in n
    }

    embeddings = tuned.embed(test.episodes)
    tuned.save(tmp_path / "checkpoint")
    config = json.loads((tmp_path / "checkpoint" / "config.json").read_text(encoding="utf-8"))
    assert config["state"]["encoder"]["identity"] == tuned._post_encoder.identity
    assert config["params"]["encoder"]["finetune_layers"] == 1
    loaded = load_like(tuned, tmp_path / "checkpoint")  # run-time settings (device) are not the checkpoint's
    assert loaded.params() == tuned.params() and np.array_equal(loaded.embed(test.episodes), embeddings)
    # other weights under the same name: refused, not silently used
    make_tiny_encoder(folder, seed=1)
    with pytest.raises(HarnessError, match="is not the one this checkpoint was trained from"):
        EpisodeEncoder.load(tmp_path / "checkpoint")
    with pytest.raises(HarnessError, match="checkpoint is for system 'episode_encoder'"):
        RedditEncoder.load(tmp_path / "checkpoint")


def test_frozen_checkpoint_and_disk_cache_give_identical_embeddings(tiny, tmp_path: Path):
    train = synthetic_train_data(n_authors=8, per_author=12)
    samples = [stream.actions[:k] for stream, k in zip(train.streams, (1, 3, 5, 12, 2, 7, 9, 4), strict=True)]
    cache = tmp_path / "cache"
    frozen = system(RedditEncoder, tiny, cache_dir=str(cache), **{"training.epochs": 3})
    frozen.fit(train, seed=0)
    embeddings = frozen.embed(samples)
    assert embeddings.shape == (8, 16) and np.allclose(np.linalg.norm(embeddings, axis=1), 1.0, atol=1e-5)
    # every distinct post in the store, all in one shard file (not one file per post)
    stored = frozen._post_encoder.store.stats()
    assert stored == {"shards": 1, "texts": len({a.text for s in train.streams for a in s.actions})}
    assert len(list(cache.rglob("*.rows.npy"))) == 1
    frozen.save(tmp_path / "checkpoint")
    loaded = load_like(frozen, tmp_path / "checkpoint")  # the cache folder is a run-time setting, not the checkpoint's
    assert np.array_equal(loaded.embed(samples), embeddings)
    assert loaded._post_encoder.stats["cached_posts"] > 0 and loaded._post_encoder.stats["computed_posts"] == 0
    again = system(RedditEncoder, tiny, **{"training.epochs": 3})  # no disk cache: the same numbers computed
    again.fit(train, seed=0)
    assert np.allclose(again.embed(samples), embeddings, atol=1e-6)
    with pytest.raises(HarnessError, match="1 sample\\(s\\) have no posts"):
        loaded.embed([samples[0], ()])
    assert loaded.embed([]).shape == (0, 16)
    assert PostEncoderConfig(model=tiny).frozen


def run(*args: str) -> None:
    outcome = CliRunner().invoke(main, ["run", *args], catch_exceptions=False)
    assert outcome.exit_code == 0, outcome.output


def test_harness_run_on_both_forum_tasks(tiny, tmp_path: Path):
    data = write_posts(tmp_path / "data" / "posts.jsonl", synthetic_posts(n_authors=20, per_author=40)).parent
    common = ["--data", str(data), "--out", str(tmp_path / "runs"), "--param", f"encoder.model={tiny}"]
    common += ["--param", "device=cpu", "--param", "training.epochs=2"]
    run("--system", "episode_encoder", "--task", "darkweb", *common)
    task = [item for key, value in REDDIT_TASK.items() for item in ("--task-param", f"{key}={value}")]
    run("--system", "reddit_encoder", "--task", "reddit", *common, *task)

    (darkweb_result,) = (tmp_path / "runs").glob("darkweb*/*/episode_encoder@*/seed-0/result.json")
    result = json.loads(darkweb_result.read_text(encoding="utf-8"))
    assert result["task"]["params"]["protocol"] == "thread-disjoint"
    assert 0.0 < result["scores"]["mrr"] <= 1.0 and "recall_at_10" in result["scores"]
    assert result["system"]["params"]["encoder"]["model"] == tiny and result["system"]["params"]["preset"] == "cpu"
    assert result["task"]["measure_settings"]["metric"] == "cosine"
    (reddit_result,) = (tmp_path / "runs").glob("reddit@*/*/reddit_encoder@*/seed-0/result.json")
    result = json.loads(reddit_result.read_text(encoding="utf-8"))
    assert result["task"]["params"]["protocol"] == "leak-free"
    assert 0.0 < result["scores"]["mrr"] <= 1.0 and 0.0 <= result["scores"]["eer"] <= 1.0
    config = json.loads((reddit_result.parent / "checkpoint" / "config.json").read_text(encoding="utf-8"))
    assert config["system"] == "reddit_encoder" and config["state"]["training"]["sample_posts"] == [1, 16]
    assert len(config["state"]["training"]["epoch_losses"]) == 2
