"""The forum TF-IDF system (episode_tfidf, reddit_tfidf) on both forum tasks' records of real posts."""

from __future__ import annotations

import inspect
import json
import re
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from helpers.paths import FIXTURES

from core.errors import HarnessError
from harness import registry
from systems.baselines.forum_tfidf import EpisodeTfidf, ForumTfidf, RedditTfidf
from tasks.darkweb import Episode, EpisodePost
from tasks.forum.records import sample_texts
from tasks.reddit import Action, RedditData
from toolkit.tfidf import WORD_TOKEN_PATTERN

LEGACY = FIXTURES / "forum-tfidf-legacy-checkpoints"


def test_the_registered_variants_keep_their_names_defaults_and_metric():
    assert registry.SYSTEMS["episode_tfidf"].target == "systems.baselines.forum_tfidf:EpisodeTfidf"
    assert registry.SYSTEMS["reddit_tfidf"].target == "systems.baselines.forum_tfidf:RedditTfidf"
    common = {"max_ngram": 1, "min_df": 2, "sublinear_tf": True, "lowercase": True}
    assert EpisodeTfidf().params() == {"max_features": 10000, **common}
    assert RedditTfidf().params() == {"max_features": 20000, **common}
    assert list(EpisodeTfidf().params()) == list(inspect.signature(RedditTfidf).parameters)
    assert (EpisodeTfidf.name, EpisodeTfidf.fit_on) == ("episode_tfidf", "sequences")
    assert (RedditTfidf.name, RedditTfidf.fit_on) == ("reddit_tfidf", "posts")
    assert EpisodeTfidf.metric == RedditTfidf.metric == "cosine"
    assert RedditTfidf(max_features=None).max_features is None
    for bad in ({"max_features": 0}, {"max_ngram": 0}, {"min_df": 0}):
        with pytest.raises(HarnessError, match="must be positive"):
            EpisodeTfidf(**bad)
    with pytest.raises(HarnessError, match="not fitted"):
        RedditTfidf().embed([])
    with pytest.raises(HarnessError, match="not fitted"):
        EpisodeTfidf().save(Path("unused"))


def test_a_sample_reads_the_same_on_both_tasks():
    texts = ("first post", "second post")
    episode = Episode("e", "a", "m", tuple(EpisodePost(t, 0, "f") for t in texts), "a")
    actions = tuple(Action(t, 3, 0) for t in texts)
    assert sample_texts(episode) == sample_texts(actions) == sample_texts(list(actions)) == texts
    assert sample_texts(()) == ()


def terms(*texts: str) -> list[str]:
    """The terms the word analyzer finds (lower case, unigrams)."""
    return [term for text in texts for term in re.findall(WORD_TOKEN_PATTERN, text.lower())]


def check_round_trip(system: ForumTfidf, samples: list, tmp_path: Path) -> np.ndarray:
    embeddings = system.embed(samples)
    assert embeddings.dtype == np.float32 and embeddings.shape[0] == len(samples)
    norms = np.linalg.norm(embeddings, axis=1)
    assert np.allclose(norms[norms > 0], 1.0, atol=1e-5) and (norms > 0).mean() > 0.9
    system.save(tmp_path / system.name)
    config = json.loads((tmp_path / system.name / "config.json").read_text(encoding="utf-8"))
    assert config["system"] == system.name and config["params"] == system.params()
    loaded = type(system).load(tmp_path / system.name)
    assert loaded.params() == system.params() and np.array_equal(loaded.embed(samples), embeddings)
    return embeddings


def test_episode_tfidf_on_real_darkweb_episodes(darkweb_slice, tmp_path: Path):
    task, train, test = darkweb_slice
    system = EpisodeTfidf()
    system.fit(train, seed=0)
    # one document per training episode: a term in a single episode is below min_df = 2
    by_episode = Counter(term for texts in train.post_texts() for term in set(terms(*texts)))
    assert min(by_episode[term] for term in system._tfidf.vocabulary) >= 2
    assert len(system._tfidf.vocabulary) == min(10000, sum(n >= 2 for n in by_episode.values()))
    check_round_trip(system, list(test.episodes), tmp_path)
    scores = task.evaluate(system, test).scores
    assert scores["mrr"] > 0.2  # chance is far lower: dozens of authors a market
    with pytest.raises(HarnessError, match="checkpoint is for system 'episode_tfidf'"):
        RedditTfidf.load(tmp_path / "episode_tfidf")


def test_reddit_tfidf_on_real_reddit_samples(reddit_slice, tmp_path: Path):
    task, train, test = reddit_slice
    system = RedditTfidf()
    system.fit(train, seed=0)
    samples = [*test.ranking.queries, *test.ranking.targets, *test.linking.queries]
    check_round_trip(system, samples, tmp_path)
    scores = task.evaluate(system, test).scores
    assert scores["mrr"] > 0.1 and 0.0 <= scores["eer"] < 0.5
    with pytest.raises(HarnessError, match="checkpoint is for system 'reddit_tfidf'"):
        EpisodeTfidf.load(tmp_path / "reddit_tfidf")


def test_each_variant_reads_the_other_tasks_records(darkweb_slice, reddit_slice):
    # the system knows neither task: each variant fits and embeds the other task's records too
    _, dark_train, dark_test = darkweb_slice
    _, reddit_train, reddit_test = reddit_slice
    per_post, per_episode = RedditTfidf(), EpisodeTfidf()
    per_post.fit(dark_train, seed=0)
    per_episode.fit(reddit_train, seed=0)
    assert per_post.embed(dark_test.episodes[:5]).shape[0] == 5
    assert per_episode.embed(reddit_test.ranking.queries[:5]).shape[0] == 5
    # a term in two episodes is in two posts, not the other way round: posts as documents keep more terms
    per_post, per_episode = RedditTfidf(max_features=None), EpisodeTfidf(max_features=None)
    per_post.fit(dark_train, seed=0)
    per_episode.fit(dark_train, seed=0)
    assert set(per_episode._tfidf.vocabulary) < set(per_post._tfidf.vocabulary)


def test_tiny_training_sets_keep_each_variants_min_df_rule(darkweb_slice, reddit_slice):
    _, dark_train, _ = darkweb_slice
    _, reddit_train, _ = reddit_slice
    # episode_tfidf caps min_df by the number of episodes; reddit_tfidf keeps every term below 2 x min_df posts
    one_episode = dark_train._replace(episodes=dark_train.episodes[:1])
    system = EpisodeTfidf(min_df=5)
    system.fit(one_episode, seed=0)
    assert set(system._tfidf.vocabulary) == set(terms(*sample_texts(one_episode.episodes[0])))
    stream = reddit_train.streams[0]
    three_posts = RedditData("train", (stream._replace(actions=stream.actions[:3]),), (), Path("x"), "x")
    system = RedditTfidf(min_df=2)
    system.fit(three_posts, seed=0)
    assert set(system._tfidf.vocabulary) == set(terms(*(a.text for a in stream.actions[:3])))


@pytest.mark.parametrize(("cls", "sample"), [(EpisodeTfidf, "episode"), (RedditTfidf, "actions")])
def test_checkpoints_of_the_old_classes_load_and_embed_the_same(cls: type[ForumTfidf], sample: str, tmp_path: Path):
    """Written by systems/nbcsauthor/tfidf.py and systems/varlen_linker/tfidf.py before the merge (see README)."""
    texts = json.loads((LEGACY / "samples.json").read_text(encoding="utf-8"))[cls.name]
    if sample == "episode":
        samples = [
            Episode(str(i), "a", "m", tuple(EpisodePost(t, 0, "f") for t in s), "a") for i, s in enumerate(texts)
        ]
    else:
        samples = [tuple(Action(t, 0, 0) for t in s) for s in texts]
    expected = np.load(LEGACY / f"{cls.name}.npy", allow_pickle=False)
    system = cls.load(LEGACY / cls.name)
    assert np.array_equal(system.embed(samples), expected)
    # saved again, the checkpoint is the same but for the checksums it now records: the format did not change
    system.save(tmp_path / "again")
    name = "weights.safetensors"
    assert (tmp_path / "again" / name).read_bytes() == (LEGACY / cls.name / name).read_bytes()
    again = json.loads((tmp_path / "again" / "config.json").read_text(encoding="utf-8"))
    assert set(again.pop("checksums")) == {"content", name}
    assert again == json.loads((LEGACY / cls.name / "config.json").read_text(encoding="utf-8"))
