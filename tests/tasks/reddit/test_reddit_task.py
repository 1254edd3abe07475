"""The reddit task: split by author and time, actions, ranking and linking sets, known scores."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from helpers.reddit_data import DAY, T0, post, small_task_settings, synthetic_posts, write_posts

from core.errors import DataError, HarnessError
from harness.metrics.table import direction
from tasks.forum.reader import read_forum_posts
from tasks.reddit import Action, LinkingSet, RankingSet, RedditTask
from tasks.reddit.actions import ActionEncoder, hour_of_day, subreddit_vocabulary
from tasks.reddit.linking import evaluate_linking, staircase
from tasks.reddit.ranking import build_ranking_set, evaluate_ranking
from tasks.reddit.records import Stream
from tasks.reddit.split import is_test_author, split_by_author_and_time

SMALL = small_task_settings(3)  # the fixture's subreddits hold 3-5 distinguished authors


class TableSystem:
    """A fake system: each sample's embedding is looked up by the text of its first action."""

    name = "table"

    def __init__(self, table: dict[str, list[float]], metric: str = "euclidean") -> None:
        self.table = table
        self.metric = metric

    def embed(self, samples):
        return np.asarray([self.table[sample[0].text] for sample in samples], dtype=np.float32)


class AuthorSystem:
    """Embeds a sample by the author name written in its texts ("user07 ..."): a perfect system, or a constant one."""

    name = "author"
    metric = "cosine"

    def __init__(self, constant: bool = False) -> None:
        self.constant = constant

    def embed(self, samples):
        out = np.zeros((len(samples), 64), dtype=np.float32)
        for i, sample in enumerate(samples):
            out[i, 0 if self.constant else int(sample[0].text.split()[0][1:].split("x")[0])] = 1.0
        return out


def sample(text: str) -> tuple[Action, ...]:
    return (Action(text, 0, 0),)


def test_split_is_by_author_and_by_time(tmp_path: Path):
    posts, _ = read_forum_posts(write_posts(tmp_path / "posts.jsonl", synthetic_posts()))
    split = split_by_author_and_time(posts, cutoff_quantile=0.6, test_author_share=0.5, seed=0)
    train_authors = {p.author for p in split.train}
    test_authors = {p.author for p in split.test}
    assert train_authors and test_authors and not train_authors & test_authors
    assert max(p.created for p in split.train) < split.cutoff <= min(p.created for p in split.test)
    counts = split.counts
    assert counts["train_posts"] + counts["test_posts"] + counts["dropped_train_author_posts_from_cutoff"] + counts[
        "dropped_test_author_posts_before_cutoff"
    ] == len(posts)
    # the author coin is a fixed function of the name and seed
    assert all(is_test_author(a, 0.5, 0) for a in test_authors)
    assert not any(is_test_author(a, 0.5, 0) for a in train_authors)
    shares = np.mean([is_test_author(f"name{i}", 0.3, 1) for i in range(4000)])
    assert abs(shares - 0.3) < 0.03


def test_actions_hour_and_subreddit_with_other_bucket(tmp_path: Path):
    assert hour_of_day(T0) == (T0 // 3600) % 24 and hour_of_day(0) == 0 and hour_of_day(23 * 3600 + 59) == 23
    rows = [post(i, "a", T0 + i, "x", sub) for i, sub in enumerate(["B", "A", "B", "C", "A", "B"])]
    posts, _ = read_forum_posts(write_posts(tmp_path / "posts.jsonl", rows))
    assert subreddit_vocabulary(posts, 2) == ("B", "A")
    encoder = ActionEncoder(subreddit_vocabulary(posts, 2))
    assert [encoder.action(p).subreddit for p in posts] == [0, 1, 0, 2, 1, 0]  # C -> other (2)
    assert encoder.subreddit_index("never seen") == encoder.other == 2


def test_unknown_subreddit_at_test_time_goes_to_other(tmp_path: Path):
    rows = synthetic_posts(n_authors=16, per_author=30)
    for row in rows:
        if row["created"] > T0 + 80 * DAY:
            row["subforum"] = "BrandNewSub"  # only in the test period
    path = write_posts(tmp_path / "d" / "posts.jsonl", rows)
    task = RedditTask(cutoff_quantile=0.5, **SMALL)
    train, test = task.load(path.parent, "train"), task.load(path.parent, "test")
    assert "BrandNewSub" not in train.subreddits
    assert test.counts["unknown_subreddit_test_posts"] > 0
    assert {a.subreddit for s in test.streams for a in s.actions} <= set(range(len(train.subreddits) + 1))
    assert test.subreddits == train.subreddits


def test_empty_text_is_kept_as_an_action_and_said(tmp_path: Path, caplog: pytest.LogCaptureFixture):
    rows = synthetic_posts(n_authors=16, per_author=30)
    rows[-1]["text"] = ""
    path = write_posts(tmp_path / "posts.jsonl", rows)
    with caplog.at_level("WARNING", logger="harness"):
        test = RedditTask(**SMALL).load(path, "test")
    assert any(a.text == "" for s in test.streams for a in s.actions)
    assert f"1 of {len(rows)} posts have an empty text" in caplog.text


def test_authors_with_too_few_posts_are_left_out_and_counted():
    streams = [
        Stream("a", tuple(Action(f"a{i}", 0, 0) for i in range(10))),
        Stream("b", tuple(Action(f"b{i}", 0, 0) for i in range(7))),  # 7 posts < 4 + 4 requested
        Stream("c", tuple(Action(f"c{i}", 0, 0) for i in range(8))),
    ]
    ranking, counts = build_ranking_set(streams, query_size=4, target_size=4)
    assert ranking.authors == ("a", "c") and counts == {"authors": 2, "authors_too_few_posts": 1}
    assert [x.text for x in ranking.queries[0]] == ["a0", "a1", "a2", "a3"]
    assert [x.text for x in ranking.targets[0]] == ["a4", "a5", "a6", "a7"]  # disjoint, after the query


def test_ranking_scores_on_hand_made_embeddings():
    # 1-D embeddings: query A=0, B=10, C=20; target A=0.4, B=14, C=11 -> ranks 1, 2, 2
    table = {"qA": [0.0], "qB": [10.0], "qC": [20.0], "tA": [0.4], "tB": [14.0], "tC": [11.0]}
    ranking = RankingSet(
        ("A", "B", "C"), (sample("qA"), sample("qB"), sample("qC")), (sample("tA"), sample("tB"), sample("tC"))
    )
    scores, details = evaluate_ranking(TableSystem(table), ranking, metric="euclidean")
    assert [d["rank"] for d in details] == [1, 2, 2]
    assert scores == pytest.approx({"mrr": 2 / 3, "recall_at_4": 1.0, "recall_at_8": 1.0})


def test_linking_eer_and_min_dcf_on_hand_made_embeddings():
    # scores (negative distances): target trials A-A -1, B-B -3; non-target trials -13 -2 -12 / -9 -8 -2.
    # Accepting >= -2 gives FAR 1/3, FRR 1/2; >= -3 gives FAR 1/3, FRR 0: the interpolated EER is 1/3.
    # minDCF: accepting only -1 costs 0.05 * 1/2 = 0.025; normalised by 0.05 (reject all) -> 0.5.
    table = {"qA": [0.0], "qB": [10.0], "tA": [1.0], "tB": [13.0], "tC": [2.0], "tD": [12.0]}
    linking = LinkingSet(
        query_authors=("A", "B"),
        queries=(sample("qA"), sample("qB")),
        target_authors=("A", "B", "C", "D"),
        targets={1: (sample("tA"), sample("tB"), sample("tC"), sample("tD"))},
        subreddit=None,
    )
    kwargs = {"metric": "euclidean", "main_target_size": 1, "p_target": 0.05, "c_miss": 1.0, "c_fa": 2.0}
    scores, details, curves = evaluate_linking(TableSystem(table), linking, normalized=True, **kwargs)
    assert scores["eer"] == pytest.approx(1 / 3)
    assert scores["min_dcf"] == pytest.approx(0.5)
    raw, _, _ = evaluate_linking(TableSystem(table), linking, normalized=False, **kwargs)
    assert raw["min_dcf"] == pytest.approx(0.025)
    assert [(d["query"], d["true_score"], d["true_rank"]) for d in details] == [("A", -1.0, 1), ("B", -3.0, 2)]
    assert curves["eer_vs_target_size"] == {"target_sizes": [1], "eer": [pytest.approx(1 / 3)], "min_dcf": [0.5]}
    det = curves["det"]["1"]
    assert det["p_fa"][0] == 1.0 and det["p_miss"][0] == 0.0 and det["p_fa"][-1] == 0.0 and det["p_miss"][-1] == 1.0


def test_linking_true_rank_counts_ties_against_the_query():
    # query A at 0: target A at 2 and C at -2 tie (distance 2), D at 1 is nearer -> A ranks 3rd, pessimistically
    table = {"qA": [0.0], "tA": [2.0], "tC": [-2.0], "tD": [1.0]}
    linking = LinkingSet(
        ("A",), (sample("qA"),), ("A", "C", "D"), {1: (sample("tA"), sample("tC"), sample("tD"))}, None
    )
    kwargs = {"metric": "euclidean", "main_target_size": 1, "p_target": 0.05, "c_miss": 1.0, "c_fa": 2.0}
    _, details, _ = evaluate_linking(TableSystem(table), linking, normalized=True, **kwargs)
    assert [(d["true_score"], d["true_rank"]) for d in details] == [(-2.0, 3)]


def test_staircase_keeps_exactly_the_corners():
    p_fa = np.array([1.0, 0.8, 0.6, 0.4, 0.2, 0.0])
    p_miss = np.array([0.0, 0.0, 0.0, 0.5, 0.5, 1.0])
    fa, miss = staircase(p_fa, p_miss)
    assert fa == [1.0, 0.6, 0.4, 0.2, 0.0] and miss == [0.0, 0.0, 0.5, 0.5, 1.0]


@pytest.mark.parametrize(("constant", "expected_eer", "expected_mrr"), [(False, 0.0, 1.0), (True, 0.5, None)])
def test_evaluate_end_to_end_with_perfect_and_constant_systems(tmp_path: Path, constant, expected_eer, expected_mrr):
    path = write_posts(tmp_path / "posts.jsonl", synthetic_posts(n_authors=20, per_author=40))
    task = RedditTask(**SMALL)
    test = task.load(path, "test")
    evaluation = task.evaluate(AuthorSystem(constant=constant), test)
    n_rank = test.counts["ranking"]["authors"]
    assert n_rank >= 2 and test.counts["linking"]["queries"] >= 1
    assert evaluation.scores["eer"] == pytest.approx(expected_eer)
    # a constant system: every item ties, ranked pessimistically last
    assert evaluation.scores["mrr"] == pytest.approx(expected_mrr if expected_mrr else 1 / n_rank)
    assert evaluation.settings["min_dcf"] == {"p_target": 0.05, "c_miss": 1.0, "c_fa": 2.0, "normalized": True}
    assert evaluation.curves["eer_vs_target_size"]["target_sizes"] == [1, 2, 4]
    assert set(evaluation.curves["det"]) == {"1", "2", "4"}
    kinds = {d["evaluation"] for d in evaluation.details}
    assert kinds == {"ranking", "linking"}


def test_linking_can_be_restricted_to_one_subreddit(tmp_path: Path):
    path = write_posts(tmp_path / "posts.jsonl", synthetic_posts(n_authors=24, per_author=40))
    pooled = RedditTask(**SMALL).load(path, "test").linking
    single = RedditTask(**SMALL, linking_subreddit="College").load(path, "test").linking
    assert single.subreddit == "College" and 0 < len(single.target_authors) < len(pooled.target_authors)
    with pytest.raises(HarnessError, match="no test posts"):
        RedditTask(**SMALL, linking_subreddit="Nope").load(path, "test")


def test_bad_parameters_are_refused(tmp_path: Path):
    with pytest.raises(HarnessError):
        RedditTask(cutoff_quantile=1.5)
    with pytest.raises(HarnessError):
        RedditTask(linking_min_query_posts=100, linking_query_size=10)
    with pytest.raises(HarnessError, match="splits"):
        RedditTask().load(tmp_path, "dev")


def names_on_sides(train: int, test: int) -> list[str]:
    """`train` names the default split puts on the training side, then `test` on the test side."""
    names = [f"user{i}" for i in range(100)]
    return [n for n in names if not is_test_author(n, 0.5, 0)][:train] + [
        n for n in names if is_test_author(n, 0.5, 0)
    ][:test]


@pytest.mark.parametrize(
    ("times_of", "cutoff_quantile", "advice"),
    [
        # one author: no setting splits the file by author (was: "adjust cutoff_quantile or test_author_share")
        (lambda: {names_on_sides(1, 0)[0]: range(10)}, 0.5, "the file has 1 author"),
        (lambda: dict.fromkeys(names_on_sides(1, 1), [0] * 5), 0.5, "every post has the same time"),
        (lambda: dict.fromkeys(names_on_sides(0, 3), range(10)), 0.5, "test side (adjust test_author_share"),
        (lambda: dict(zip(names_on_sides(1, 1), [range(15, 20), [*range(15), *range(20, 30)]], strict=True)), 0.1,
         "no training author posted before the cutoff (a higher cutoff_quantile"),
    ],
)  # fmt: skip
def test_a_split_with_an_empty_side_says_why_and_what_would_change_it(tmp_path, times_of, cutoff_quantile, advice):
    rows = [
        post(i, author, T0 + t * DAY, f"post {t}") for author, times in times_of().items() for i, t in enumerate(times)
    ]
    rows = [{**row, "post_id": f"t1_{n}"} for n, row in enumerate(rows)]
    path = write_posts(tmp_path / "posts.jsonl", rows)
    with pytest.raises(DataError, match="both need some: ") as caught:
        RedditTask(cutoff_quantile=cutoff_quantile).load(tmp_path, "train")
    assert advice in str(caught.value) and caught.value.path == str(path)


def test_metadata():
    meta = RedditTask.metadata
    assert meta.name == "reddit" and meta.kind == "linking" and meta.main_score == "eer"
    assert [m for m in meta.measures if direction(m) == "lower"] == ["eer", "min_dcf"]  # from the measure table
    assert set(meta.measures) == {"mrr", "recall_at_4", "recall_at_8", "eer", "min_dcf"}


def test_real_posts_split_counts(forum_posts_file: Path):
    """The documented split of the real forum posts (defaults): counts, no author overlap, time order."""
    task = RedditTask()
    train = task.load(forum_posts_file, "train")
    test = task.load(forum_posts_file, "test")
    split = test.counts["split"]
    assert split["cutoff_utc"] == "2021-09-30T15:04:30+00:00"
    assert (split["train_authors"], split["train_posts"]) == (3232, 63852)
    assert (split["test_authors"], split["test_posts"]) == (2898, 68110)
    assert len(train) == 63852 and len(test) == 68110
    assert not {s.author for s in train.streams} & {s.author for s in test.streams}
    posts = task._posts_cache[2]  # the posts the task read, for the time check
    parts = split_by_author_and_time(posts, cutoff_quantile=0.5, test_author_share=0.5, seed=0)
    assert max(p.created for p in parts.train) < parts.cutoff <= min(p.created for p in parts.test)
    # the leak-free default: 59 of the 465 authors with 32 test posts lack 16 clean target posts
    assert test.counts["ranking"]["authors"] == 406
    assert test.counts["ranking"]["authors_too_few_clean_target_posts"] == 59
    assert (test.counts["linking"]["queries"], test.counts["linking"]["target_accounts"]) == (146, 526)
    assert set(test.linking.query_authors) <= set(test.linking.target_authors)
    by_subreddit = test.counts["linking_by_subreddit"]
    assert by_subreddit["averaged"] == ["College", "ApplyingToCollege"]  # GradSchool (5) is under the minimum of 10
    assert sorted(by_subreddit["left_out"]) == ["AskAcademia", "CollegeRant", "GradSchool"]
    queries = {name: c["queries"] for name, c in by_subreddit["subreddits"].items()}
    assert queries == {"College": 20, "AskAcademia": 3, "ApplyingToCollege": 105, "GradSchool": 5, "CollegeRant": 1}
    # the legacy protocol's sets, as in task version 1
    legacy = RedditTask(protocol="legacy")
    legacy._posts_cache = task._posts_cache  # the same file, read once
    old = legacy.load(forum_posts_file, "test")
    assert old.counts["ranking"]["authors"] == 465
    assert (old.counts["linking"]["queries"], old.counts["linking"]["target_accounts"]) == (147, 526)


def test_the_summary_line_says_when_no_subreddit_is_averaged() -> None:
    """Audit 21: "EER averaged over , left out: ..." where every subreddit was under the minimum."""
    from tasks.reddit.task import _summary

    counts = {
        "ranking": {"authors": 3},
        "linking": {"queries": 4, "target_accounts": 5},
        "linking_by_subreddit": {"averaged": [], "left_out": {"College": "2 queries, under 10"}},
    }
    assert _summary(counts) == (
        "3 ranking authors, linking 4 queries x 5 target accounts, EER averaged over no subreddit, "
        "left out: College (2 queries, under 10)"
    )
