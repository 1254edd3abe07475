"""The reddit task's protocols: leak-free ranking and linking (the default), per-subreddit averaging, legacy."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from helpers.forum_slice import write_author_slice
from helpers.reddit_data import DAY, HOUR, T0, small_task_settings, synthetic_posts, threaded_posts, write_posts

from core.errors import HarnessError
from harness.cli import main
from harness.metrics.linking import eer, min_dcf
from systems.baselines.forum_tfidf import RedditTfidf
from tasks.forum.reader import read_forum_posts
from tasks.forum.records import ForumPost
from tasks.reddit import RedditTask
from tasks.reddit.actions import ActionEncoder
from tasks.reddit.ranking import build_leak_free_ranking_set
from tasks.reddit.task import posts_by_author

SMALL = small_task_settings(5)  # the fixture's subreddits hold 5-10 distinguished authors


class Coarse:
    """A weak, deterministic system: hour-of-day (mod 4) and subreddit (mod 4) counts, cosine."""

    name = "coarse"
    metric = "cosine"

    def embed(self, samples):
        out = np.zeros((len(samples), 8), dtype=np.float32)
        for i, sample in enumerate(samples):
            for action in sample:
                out[i, action.hour % 4] += 1
                out[i, 4 + action.subreddit % 4] += 1
        return out


class WordHash:
    """A deterministic bag of words hashed into 32 dimensions (author words, topics and shared words alike)."""

    name = "wordhash"
    metric = "cosine"

    def embed(self, samples):
        out = np.zeros((len(samples), 32), dtype=np.float32)
        for i, sample in enumerate(samples):
            for action in sample:
                for word in action.text.split():
                    out[i, sum(word.encode()) % 32] += 1
        return out + 1e-3  # no all-zero row


@pytest.fixture(scope="module")
def threaded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, ForumPost]]:
    path = write_posts(tmp_path_factory.mktemp("threaded") / "posts.jsonl", threaded_posts())
    posts, _ = read_forum_posts(path)
    return path, {p.post_id: p for p in posts}


def fp(i: int, author: str, created: int, thread: str) -> ForumPost:
    return ForumPost(f"p{i}", author, "campus", "College", thread, None, "comment", created, f"text {i}")


def test_an_authors_posts_of_the_same_second_come_by_id_whatever_the_files_order():
    posts = [fp(7, "a", T0, "t1"), fp(2, "a", T0, "t2"), fp(5, "a", T0 - 1, "t1"), fp(1, "b", T0, "t1")]
    assert [p.post_id for p in posts_by_author(posts)["a"]] == ["p5", "p2", "p7"]
    assert posts_by_author(posts[::-1]) == posts_by_author(posts)


def test_linking_samples_of_the_same_second_come_by_id_whatever_the_files_order():
    """Audit 14, F8: the linking set sorted by time alone, so the file's order broke ties within a second."""
    from tasks.reddit.linking import build_linking_set

    posts = [fp(i, "a", T0 + (i // 2) * DAY, f"t{i}") for i in range(12)]  # pairs of posts in one second
    posts += [fp(20 + i, "b", T0 + (i // 2) * DAY, f"u{i}") for i in range(12)]
    sets = [
        build_linking_set(
            order, ActionEncoder(["College"]), split_quantile=0.5, query_size=4, min_query_posts=2, target_sizes=[2]
        )[0]  # fmt: skip
        for order in (posts, posts[::-1])
    ]
    assert sets[0].query_post_ids == sets[1].query_post_ids and sets[0].target_post_ids == sets[1].target_post_ids
    assert sets[0].query_post_ids and any(len(ids) > 1 for ids in sets[0].query_post_ids)


def test_leak_free_ranking_skips_the_gap_and_the_query_threads_and_counts_what_it_drops():
    a = [fp(i, "a", T0 + i * DAY, "t1" if i % 2 else "t2") for i in range(4)]  # query: threads t1, t2
    a += [
        fp(4, "a", T0 + 3 * DAY + 2 * HOUR, "t9"),  # within a day of the last query post
        fp(5, "a", T0 + 5 * DAY, "t1"),  # a query thread
        fp(6, "a", T0 + 6 * DAY, "t3"),
        fp(7, "a", T0 + 7 * DAY, "t2"),  # a query thread
        fp(8, "a", T0 + 8 * DAY, "t4"),
        fp(9, "a", T0 + 9 * DAY, "t3"),
        fp(10, "a", T0 + 10 * DAY, "t5"),
        fp(11, "a", T0 + 11 * DAY, "t6"),  # not needed: the target is full
    ]
    b = [fp(20 + i, "b", T0 + i * DAY, "u1") for i in range(10)]  # every later post in the query's thread
    c = [fp(40 + i, "c", T0 + i * DAY, f"v{i}") for i in range(7)]  # 7 posts < 4 + 4
    ranking, counts = build_leak_free_ranking_set(
        {"a": a, "b": b, "c": c}, ActionEncoder(["College"]), query_size=4, target_size=4, gap_seconds=DAY
    )
    assert ranking.authors == ("a",)
    assert ranking.query_post_ids == (("p0", "p1", "p2", "p3"),)
    assert ranking.target_post_ids == (("p6", "p8", "p9", "p10"),)
    assert [x.text for x in ranking.targets[0]] == ["text 6", "text 8", "text 9", "text 10"]
    assert counts == {
        "authors": 1,
        "authors_too_few_posts": 1,
        "authors_too_few_clean_target_posts": 1,
        "target_posts_skipped_in_gap": 1,
        "target_posts_skipped_same_thread": 2,
    }


def test_default_ranking_targets_are_later_than_and_thread_disjoint_from_their_queries(threaded):
    path, by_id = threaded
    task = RedditTask(**SMALL)
    assert task.protocol == "leak-free" and task.ranking_gap_days == 1.0
    test = task.load(path, "test")
    ranking, counts = test.ranking, test.counts["ranking"]
    assert len(ranking.authors) >= 10
    assert counts["target_posts_skipped_same_thread"] > 0 and counts["target_posts_skipped_in_gap"] > 0
    for author, query_ids, target_ids in zip(
        ranking.authors, ranking.query_post_ids, ranking.target_post_ids, strict=True
    ):
        query = [by_id[i] for i in query_ids]
        target = [by_id[i] for i in target_ids]
        assert len(query) == len(target) == 4 and {p.author for p in query + target} == {author}
        assert not {p.thread_id for p in target} & {p.thread_id for p in query}
        assert min(p.created for p in target) > max(p.created for p in query) + DAY
        # the samples the systems see are these posts
        assert [a.text for a in ranking.targets[ranking.authors.index(author)]] == [p.text for p in target]
    test_authors = counts["authors"] + counts["authors_too_few_posts"] + counts["authors_too_few_clean_target_posts"]
    assert test_authors == len(test.streams)
    # the fixture does leak under the legacy protocol: consecutive query and target share threads
    legacy = RedditTask(**SMALL, protocol="legacy").load(path, "test").ranking
    own = posts_by_author(list(by_id.values()))
    shared = 0
    for author, query in zip(legacy.authors, legacy.queries, strict=True):
        posts = [p for p in own[author] if p.created >= test.counts["split"]["cutoff"]]
        assert [p.text for p in posts[:4]] == [a.text for a in query]
        shared += bool({p.thread_id for p in posts[:4]} & {p.thread_id for p in posts[4:8]})
    assert shared == len(legacy.authors)


def test_default_linking_targets_never_share_a_thread_with_their_query(threaded):
    path, by_id = threaded
    test = RedditTask(**SMALL).load(path, "test")
    split_time = test.counts["linking"]["split_time"]
    sets = [test.linking, *test.linking_by_subreddit.values()]
    assert len(sets) == 4  # pooled and three subreddits
    for linking in sets:
        for q, author in enumerate(linking.query_authors):
            query = [by_id[i] for i in linking.query_post_ids[q]]
            assert {p.author for p in query} == {author} and max(p.created for p in query) < split_time
            if linking.subreddit is not None:
                assert {p.subforum for p in query} == {linking.subreddit}
            j = linking.target_authors.index(author)
            for size, targets in linking.target_post_ids.items():
                target = [by_id[i] for i in targets[j]]
                assert len(target) == size and min(p.created for p in target) >= split_time
                assert not {p.thread_id for p in target} & {p.thread_id for p in query}


def test_averaged_eer_is_the_mean_of_per_subreddit_eers_computed_independently(threaded):
    path, _ = threaded
    task = RedditTask(**(SMALL | {"linking_min_subreddit_queries": 3}))
    test = task.load(path, "test")
    system = WordHash()
    evaluation = task.evaluate(system, test)
    subreddits = evaluation.settings["linking_averaged_subreddits"]
    assert sorted(subreddits) == ["ApplyingToCollege", "College", "GradSchool"]

    def by_hand(linking):
        queries = system.embed(list(linking.queries))
        targets = system.embed(list(linking.targets[2]))  # linking_target_size
        queries /= np.linalg.norm(queries, axis=1, keepdims=True)
        targets /= np.linalg.norm(targets, axis=1, keepdims=True)
        scores = (queries @ targets.T).ravel().astype(np.float64)
        labels = (np.asarray(linking.query_authors)[:, None] == np.asarray(linking.target_authors)[None, :]).ravel()
        return eer(scores, labels), min_dcf(scores, labels, p_target=0.05, c_miss=1.0, c_fa=2.0, normalized=True)

    per = {name: by_hand(test.linking_by_subreddit[name]) for name in subreddits}
    for name, (e, d) in per.items():
        assert evaluation.scores[f"eer@{name}"] == pytest.approx(e, abs=1e-9)
        assert evaluation.scores[f"min_dcf@{name}"] == pytest.approx(d, abs=1e-9)
    assert evaluation.scores["eer"] == pytest.approx(np.mean([e for e, _ in per.values()]), abs=1e-9)
    assert evaluation.scores["min_dcf"] == pytest.approx(np.mean([d for _, d in per.values()]), abs=1e-9)
    pooled_eer, pooled_dcf = by_hand(test.linking)
    assert evaluation.scores["eer_pooled"] == pytest.approx(pooled_eer, abs=1e-9)
    assert evaluation.scores["min_dcf_pooled"] == pytest.approx(pooled_dcf, abs=1e-9)
    assert len({round(e, 9) for e, _ in per.values()}) > 1  # the mean is not trivially any one subreddit's
    # a subreddit's set is what the single-subreddit task builds
    single = RedditTask(**SMALL, linking_subreddit="College")
    alone = single.evaluate(system, single.load(path, "test")).scores
    assert alone["eer"] == alone["eer_pooled"] == pytest.approx(per["College"][0], abs=1e-9)
    # the curve is the per-size mean of the subreddits' curves
    by_size = evaluation.curves["by_subreddit"]
    mean_curve = np.mean([by_size[name]["eer"] for name in subreddits], axis=0)
    assert evaluation.curves["eer_vs_target_size"]["eer"] == pytest.approx(mean_curve.tolist())
    assert evaluation.curves["eer_vs_target_size"]["eer"][1] == pytest.approx(evaluation.scores["eer"])
    sets = {row["linking_set"] for row in evaluation.details if row["evaluation"] == "linking"}
    assert sets == {"pooled", *subreddits}


def test_subreddits_with_too_few_queries_are_left_out_and_recorded(threaded):
    path, _ = threaded
    task = RedditTask(**(SMALL | {"linking_min_subreddit_queries": 8}))
    test = task.load(path, "test")
    averaged = test.counts["linking_by_subreddit"]
    queries = {name: c["queries"] for name, c in averaged["subreddits"].items()}
    assert set(averaged["averaged"]) == {name for name, n in queries.items() if n >= 8}
    assert set(averaged["left_out"]) == {name for name, n in queries.items() if n < 8} != set()
    assert set(test.linking_by_subreddit) == set(averaged["averaged"])
    too_strict = RedditTask(**(SMALL | {"linking_min_subreddit_queries": 1000}))
    train, test = too_strict.load(path, "train"), too_strict.load(path, "test")
    with pytest.raises(HarnessError, match="no subreddit has 1000 or more") as refused:
        too_strict.check_splits(train, test)  # `harness run` calls it before the fit, which it then spares
    assert "{" not in str(refused.value) and f"{sorted(queries)[0]}: " in str(refused.value)  # no raw dict
    with pytest.raises(HarnessError, match="no subreddit has 1000 or more"):
        too_strict.evaluate(Coarse(), test)


# Scores of task version 1 (before the protocols existed), computed with that code on these inputs.
OLD_SYNTHETIC = {
    "mrr": 0.27272727272727276,
    "recall_at_4": 0.5454545454545454,
    "recall_at_8": 1.0,
    "eer": 0.22535211267605632,
    "min_dcf": 1.0,
}
OLD_SLICE_TFIDF = {
    "mrr": 0.572465246188694,
    "recall_at_4": 0.6944444444444444,
    "recall_at_8": 0.7777777777777778,
    "eer": 0.43478260869565216,
    "min_dcf": 0.9565217391304348,
}
OLD_SLICE_EER_CURVE = [0.49184782608695654, 0.4782608695652174, 0.43478260869565216, 0.34782608695652173]


def test_legacy_protocol_reproduces_the_version_1_scores_on_synthetic_posts(tmp_path: Path):
    path = write_posts(tmp_path / "posts.jsonl", synthetic_posts(n_authors=20, per_author=40))
    task = RedditTask(**SMALL, protocol="legacy")
    test = task.load(path, "test")
    evaluation = task.evaluate(Coarse(), test)
    assert evaluation.scores == OLD_SYNTHETIC
    assert test.counts["ranking"] == {"authors": 11, "authors_too_few_posts": 0}
    assert (test.counts["linking"]["queries"], test.counts["linking"]["target_accounts"]) == (11, 11)
    assert evaluation.curves["eer_vs_target_size"]["eer"] == [OLD_SYNTHETIC["eer"]] * 3
    assert not test.linking_by_subreddit and evaluation.settings["protocol"] == "legacy"
    # the same inputs under the default protocol: other sets, other keys
    default = RedditTask(**SMALL).evaluate(Coarse(), RedditTask(**SMALL).load(path, "test")).scores
    assert {"eer_pooled", "min_dcf_pooled"} <= set(default) and default["eer"] != OLD_SYNTHETIC["eer"]


def test_legacy_protocol_reproduces_the_version_1_tfidf_scores_on_real_posts(forum_posts_file: Path, tmp_path: Path):
    folder = write_author_slice(forum_posts_file, tmp_path, authors=120)
    params = {
        "ranking_query_size": 8,
        "ranking_target_size": 8,
        "linking_query_size": 16,
        "linking_min_query_posts": 8,
        "linking_target_sizes": [1, 2, 4, 8],
        "linking_target_size": 4,
    }
    task = RedditTask(**params, protocol="legacy")
    system = RedditTfidf()
    system.fit(task.load(folder, "train"), seed=0)
    evaluation = task.evaluate(system, task.load(folder, "test"))
    assert evaluation.scores == pytest.approx(OLD_SLICE_TFIDF, abs=1e-12)
    assert evaluation.curves["eer_vs_target_size"]["eer"] == pytest.approx(OLD_SLICE_EER_CURVE, abs=1e-12)


def test_every_result_records_its_protocol(tmp_path: Path):
    data = write_posts(tmp_path / "data" / "posts.jsonl", threaded_posts()).parent
    base = ["run", "--system", "reddit_tfidf", "--task", "reddit", "--data", str(data), "--out", str(tmp_path / "r")]
    small = [item for key, value in SMALL.items() for item in ("--task-param", f"{key}={json.dumps(value)}")]
    results = {}
    for protocol in ("leak-free", "legacy"):
        extra = [] if protocol == "leak-free" else ["--task-param", "protocol=legacy"]
        outcome = CliRunner().invoke(main, base + small + extra, catch_exceptions=False)
        assert outcome.exit_code == 0, outcome.output
        results[protocol] = [
            json.loads(path.read_text(encoding="utf-8"))
            for path in (tmp_path / "r").glob("reddit@*/*/reddit_tfidf/seed-0/result.json")
            if json.loads(path.read_text(encoding="utf-8"))["task"]["params"]["protocol"] == protocol
        ]
    for protocol, found in results.items():
        (result,) = found  # one run per protocol, each in its own folder
        task = result["task"]
        assert task["version"] == "2"
        assert task["params"]["protocol"] == protocol
        assert task["measure_settings"]["protocol"] == protocol
        assert task["measure_settings"]["counts"]["protocol"] == protocol
    assert set(results["legacy"][0]["scores"]) == {"mrr", "recall_at_4", "recall_at_8", "eer", "min_dcf"}
    leak_free = results["leak-free"][0]
    assert {"eer_pooled", "min_dcf_pooled", "eer@College"} <= set(leak_free["scores"])
    assert leak_free["main_score"] == {"name": "eer", "value": leak_free["scores"]["eer"]}


def test_bad_protocol_parameters_are_refused():
    with pytest.raises(HarnessError, match="protocol must be one of"):
        RedditTask(protocol="leaky")
    with pytest.raises(HarnessError, match="ranking_gap_days"):
        RedditTask(ranking_gap_days=-1)
    with pytest.raises(HarnessError, match="must be positive"):
        RedditTask(linking_min_subreddit_queries=0)
    # values that numpy refused with a traceback, after the posts were read (second bad-input audit)
    with pytest.raises(HarnessError, match="split_seed must not be negative"):
        RedditTask(split_seed=-1)
    with pytest.raises(HarnessError, match="linking_target_size must be positive"):
        RedditTask(linking_target_size=0)
    with pytest.raises(HarnessError, match="max_linking_queries must be positive or None"):
        RedditTask(max_linking_queries=-1)
