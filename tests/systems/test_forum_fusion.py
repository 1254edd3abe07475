"""The learned fusion systems (episode_fusion, reddit_fusion): the listwise weights and the systems on real posts."""

from __future__ import annotations

import json

import numpy as np
import pytest

from core.errors import HarnessError
from harness import registry
from systems.forum_fusion.system import EpisodeFusion, RedditFusion, _dense
from systems.forum_fusion.weights import RankingList, _PaddedLists, fit_view_weights, listwise_loss

SMALL = {"word_features": 2000, "char_features": 2000, "training_queries": 60}


def _lists(seed: int, informative: float) -> list[RankingList]:
    """Lists of 30 candidates, 2 positives: view 0 scores positives `informative` higher, view 1 is noise."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(40):
        positive = np.zeros(30, dtype=bool)
        positive[:2] = True
        cosines = rng.uniform(0, 0.5, size=(30, 2))
        cosines[positive, 0] += informative
        out.append(RankingList(cosines, positive))
    return out


def test_the_listwise_loss_is_minus_log_softmax_mass_on_the_positives_and_its_gradient_is_exact():
    ranking = RankingList(np.array([[0.9, 0.1], [0.2, 0.8], [0.4, 0.4]]), np.array([True, False, False]))
    weights = np.array([2.0, 1.0])
    scores = np.array([1.9, 1.2, 1.2])
    loss, _ = listwise_loss(weights, [ranking])
    assert loss == pytest.approx(-np.log(np.exp(1.9) / np.exp(scores).sum()))
    lists = _lists(0, 0.3)
    weights = np.array([3.0, 0.5])
    loss, gradient = listwise_loss(weights, lists)
    step = 1e-6
    for view in range(2):
        moved = weights.copy()
        moved[view] += step
        assert gradient[view] == pytest.approx((listwise_loss(moved, lists)[0] - loss) / step, rel=1e-3)
    # the padded form (lists of different lengths) computes the same loss and gradient
    uneven = lists[:5] + [RankingList(r.cosines[:12], r.positive[:12]) for r in lists[5:10]]
    padded_loss, padded_gradient = _PaddedLists.of(uneven, 2).loss(weights)
    reference_loss, reference_gradient = listwise_loss(weights, uneven)
    assert padded_loss == pytest.approx(reference_loss)
    np.testing.assert_allclose(padded_gradient, reference_gradient, rtol=1e-9)


def test_the_fit_weighs_the_informative_view_and_not_the_noise():
    weights = fit_view_weights(_lists(1, 0.4), 2)
    assert weights[0] > 10 * max(weights[1], 1e-3)
    assert np.all(weights >= 0)
    assert listwise_loss(weights, _lists(1, 0.4))[0] < listwise_loss(np.array([10.0, 10.0]), _lists(1, 0.4))[0]
    with pytest.raises(ValueError, match="cannot learn weights"):
        fit_view_weights([RankingList(np.ones((3, 2)), np.array([True, True, True]))], 2)


def test_parameters_are_checked_and_registered():
    assert registry.SYSTEMS["episode_fusion"].target == "systems.forum_fusion.system:EpisodeFusion"
    assert registry.SYSTEMS["reddit_fusion"].target == "systems.forum_fusion.system:RedditFusion"
    assert EpisodeFusion().params()["word_features"] == 10000  # episode_tfidf's
    assert RedditFusion().params()["word_features"] == 20000  # reddit_tfidf's
    assert RedditFusion(views="word, time").views == ("word", "time")
    for bad in ("", "word,style", "word,word"):
        with pytest.raises(HarnessError, match="views must be"):
            EpisodeFusion(views=bad)
    with pytest.raises(HarnessError, match="must be positive"):
        EpisodeFusion(training_queries=0)
    with pytest.raises(HarnessError, match="not fitted"):
        RedditFusion().embed([])


def test_episode_training_queries_follow_the_thread_disjoint_rule(darkweb_slice):
    _, train, _ = darkweb_slice
    system = EpisodeFusion(**SMALL)
    _, samples, lists = system.training_data(train, np.random.default_rng(0))
    episodes = train.episodes
    assert len(samples) == len(episodes) and lists
    same_thread_removed = 0
    for query, candidates, positive in lists:
        q = episodes[query]
        threads = {p.thread_id for p in q.posts if p.thread_id}
        assert query not in candidates.tolist()
        assert {episodes[c].market for c in candidates} == {q.market}
        for c, is_positive in zip(candidates, positive, strict=True):
            assert is_positive == (episodes[c].author == q.author)
            if is_positive:
                assert not threads & {p.thread_id for p in episodes[c].posts if p.thread_id}
        same_thread_removed += sum(
            1
            for i, e in enumerate(episodes)
            if i != query
            and e.market == q.market
            and e.author == q.author
            and threads & {p.thread_id for p in e.posts if p.thread_id}
        )
    assert same_thread_removed > 0  # the rule had something to remove on real posts


def test_episode_fusion_embeds_the_weighted_sum_of_view_cosines_and_survives_a_checkpoint(darkweb_slice, tmp_path):
    task, train, test = darkweb_slice
    system = EpisodeFusion(**SMALL)
    system.fit(train, seed=0)
    assert set(system.weights) == {"word", "char", "community", "time"} and all(w >= 0 for w in system.weights.values())
    assert system.weights["word"] + system.weights["char"] > 0
    episodes = test.episodes[:30]
    embedding = system.embed(episodes)
    rows = system._view_rows([system.parts(e) for e in episodes])
    dense = {v: _dense(rows[v]) for v in rows}  # the TF-IDF views come sparse
    expected = sum(w * (dense[v] @ dense[v].T) for v, w in system.weights.items())
    np.testing.assert_allclose(embedding @ embedding.T, expected, atol=1e-4)
    system.save(tmp_path / "ckpt")
    loaded = EpisodeFusion.load(tmp_path / "ckpt")
    assert loaded.params() == system.params() and loaded.weights == system.weights
    np.testing.assert_array_equal(loaded.embed(episodes), embedding)
    scores = task.evaluate(system, test).scores
    assert 0 < scores["mrr"] <= 1


def test_a_checkpoint_with_bad_weights_is_refused(darkweb_slice, tmp_path):
    from safetensors.numpy import load_file, save_file

    _, train, _ = darkweb_slice
    system = EpisodeFusion(**SMALL)
    system.fit(train, seed=0)
    system.save(tmp_path / "ckpt")
    arrays = next((tmp_path / "ckpt").glob("*.safetensors"))
    tensors = load_file(arrays)
    tensors["weights"] = np.array([1.0, -1.0, 0.0, 0.0])
    save_file(tensors, arrays)
    with pytest.raises(HarnessError, match="edited or corrupted"):  # the checksum saved with it
        EpisodeFusion.load(tmp_path / "ckpt")
    config = json.loads((tmp_path / "ckpt" / "config.json").read_text(encoding="utf-8"))
    config.pop("checksums")  # unchecked, as a checkpoint written before checksums: the weights themselves are checked
    (tmp_path / "ckpt" / "config.json").write_text(json.dumps(config), encoding="utf-8")
    with pytest.raises(HarnessError, match="finite weights >= 0"):
        EpisodeFusion.load(tmp_path / "ckpt")


def test_reddit_training_queries_and_targets_are_disjoint_and_in_time_order(reddit_slice):
    task, train, test = reddit_slice
    system = RedditFusion(**SMALL)
    documents, samples, lists = system.training_data(train, np.random.default_rng(0))
    assert len(documents) == len(train)  # the vocabulary is fitted on single posts, as reddit_tfidf's
    n = len(lists)
    assert n == len(samples) // 2 and n > 10
    streams = {s.author: s.actions for s in train.streams}
    for query, candidates, positive in lists:
        assert positive.sum() == 1 and candidates[positive][0] == n + query
        q, t = samples[query], samples[n + query]
        assert len(q.texts) == len(t.texts) <= RedditFusion.sample_posts
    # every query is the first posts of a stream and its target the last, with no post in both
    texts = {tuple(a.text for a in actions) for actions in streams.values()}
    for query in range(n):
        q, t = samples[query], samples[n + query]
        stream = next(s for s in texts if s[: len(q.texts)] == q.texts and s[-len(t.texts) :] == t.texts)
        assert len(q.texts) + len(t.texts) <= len(stream)
    system.fit(train, seed=0)
    scores = task.evaluate(system, test).scores
    assert 0 < scores["mrr"] <= 1 and 0 <= scores["eer"] <= 1
