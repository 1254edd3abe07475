"""The darkweb evaluation protocols: thread-disjoint (default) against legacy, and held-out migrants.

- thread-disjoint: a query's same-author candidates never come from a thread the query posts in
  (hand-worked ranks, and a plain loop over candidates on real posts);
- legacy: the scores of the code before the protocol existed, exactly (numbers measured on it);
- migrant_heldout: decided by what training linked (CROSS labels), not by a hash of the name;
- the protocol is recorded in the task parameters and the measure settings of a result.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from helpers.darkweb_data import synthetic_split
from helpers.forum_slice import write_author_slice

from core.errors import HarnessError
from harness.system import constructor_params
from systems.baselines.forum_tfidf import EpisodeTfidf
from tasks.darkweb import DarkwebTask, Episode, EpisodePost
from tasks.darkweb.evaluation import evaluate_embeddings
from tasks.darkweb.task import _unit_hash
from toolkit.retrieval import similarity


def episode(i: int, author: str, threads: tuple[str, ...], market: str = "m", person: str | None = None) -> Episode:
    posts = tuple(EpisodePost(f"post {i}", 0, "f", thread) for thread in threads)
    return Episode(f"e{i}", author, market, posts, person or author, i)


# e1 posts in t9 and t1: it shares t1 with e0 through its second post. bob's e3 posts in t1 too: a
# candidate by someone else stays, same thread or not. carol's two episodes share their one thread.
EPISODES = [
    episode(0, "alice", ("t1",)),
    episode(1, "alice", ("t9", "t1")),
    episode(2, "alice", ("t2",)),
    episode(3, "bob", ("t1",)),
    episode(4, "bob", ("t3",)),
    episode(5, "carol", ("t4",)),
    episode(6, "carol", ("t4", "t4")),
]
ANGLES = [0, 4, 50, 11, 27, 200, 210]  # degrees on the unit circle: cosine ranks follow angular distance
EMB = np.array([[np.cos(np.radians(a)), np.sin(np.radians(a))] for a in ANGLES])


def ranks(evaluation, kind: str = "within") -> dict[str, int]:
    return {row["query"]: row["rank"] for row in evaluation.details if row["set"] == kind}


def test_a_same_thread_positive_counts_under_legacy_and_not_by_default():
    legacy = evaluate_embeddings(EMB, EPISODES, protocol="legacy")
    # e0 (0 deg): e1 (4, alice, same thread) first -> 1; e1: e0 first -> 1; e2 (50): e4 (23 away),
    # e3 (39), e1 (46, alice) -> 3; e3 (11, bob): e1 (7), e0 (11), e4 (16, bob) -> 3; e4 (27): e3 -> 1;
    # carol: e5 <-> e6 -> 1 each
    assert ranks(legacy) == {"e0": 1, "e1": 1, "e2": 3, "e3": 3, "e4": 1, "e5": 1, "e6": 1}
    assert legacy.scores["mrr"] == pytest.approx((1 + 1 + 1 / 3 + 1 / 3 + 1 + 1 + 1) / 7)  # 17/21
    assert legacy.settings["protocol"] == "legacy" and not any("same_thread" in k for k in legacy.scores)

    default = evaluate_embeddings(EMB, EPISODES)
    # e0 loses e1 (they share t1): e3 (11, bob, also in t1: stays), e4 (27), e2 (50, alice) -> 3;
    # e1 loses e0: e3 (7), e4 (23), e2 (46) -> 3; e2, e3, e4 have no same-thread positive: unchanged;
    # carol's episodes share t4: neither has a match left, so both leave the mean (rank 0)
    assert ranks(default) == {"e0": 3, "e1": 3, "e2": 3, "e3": 3, "e4": 1, "e5": 0, "e6": 0}
    scores = default.scores
    assert scores["mrr"] == pytest.approx((1 / 3 + 1 / 3 + 1 / 3 + 1 / 3 + 1) / 5)  # 7/15
    assert scores["recall_at_1"] == pytest.approx(1 / 5) and scores["recall_at_5"] == 1.0
    assert (scores["queries"], scores["queries_without_match"], scores["queries_only_same_thread"]) == (5, 2, 2)
    assert scores["same_thread_candidates_removed"] == 4  # e0->e1, e1->e0, e5->e6, e6->e5
    assert scores["queries_with_same_thread_positive"] == 4  # e0, e1, e5, e6
    assert scores["m/mrr"] == scores["mrr"] and default.settings["protocol"] == "thread-disjoint"
    with pytest.raises(ValueError, match="protocol must be one of"):
        evaluate_embeddings(EMB, EPISODES, protocol="leaky")


def test_nothing_left_to_rank_is_an_error_that_names_the_threads():
    same = [episode(0, "a", ("t",)), episode(1, "a", ("t",)), episode(2, "b", ("u",))]
    with pytest.raises(ValueError, match="outside its threads"):
        evaluate_embeddings(np.eye(3), same)


def test_migrant_threads_are_keyed_by_market():
    # the same thread id in two markets is two threads: a migrant candidate is never removed
    episodes = [
        episode(0, "a", ("t1",), "m"),
        episode(1, "a", ("t1",), "n"),
        episode(2, "b", ("t1",), "n"),
        episode(3, "b", ("t5",), "n"),
    ]
    emb = np.array([[1.0, 0.0], [1.0, 0.1], [0.0, 1.0], [0.1, 1.0]])
    scores = evaluate_embeddings(emb, episodes).scores
    assert scores["migrant/m->n/mrr"] == 1.0 and scores["migrant/n->m/mrr"] == 1.0
    assert scores["migrant/same_thread_candidates_removed"] == 0 and scores["mrr"] == 1.0


@pytest.fixture(scope="module")
def real_slice(forum_posts_file: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """All posts of 80 real authors (as in test_forum_tfidf): 538 test episodes in 3 markets."""
    return write_author_slice(forum_posts_file, tmp_path_factory.mktemp("forum-slice"), authors=80)


def tfidf_evaluation(folder: Path, **task_params):
    task = DarkwebTask(**task_params)
    train, test = task.load(folder, "train"), task.load(folder, "test")
    system = EpisodeTfidf()
    system.fit(train, seed=0)
    return test, system.embed(test.episodes), task.evaluate(system, test)


def test_no_scored_query_has_a_same_author_candidate_in_its_threads(real_slice: Path):
    test, emb, evaluation = tfidf_evaluation(real_slice)
    episodes = test.episodes
    threads = [{(e.market, p.thread_id) for p in e.posts} for e in episodes]
    got = ranks(evaluation)
    leaky = leaky_queries = 0
    # a plain loop over each query's candidates, the rule written out: same rank for every query
    for q, query in enumerate(episodes):
        market = [j for j, other in enumerate(episodes) if j != q and other.market == query.market]
        same_thread = {j for j in market if episodes[j].author == query.author and threads[j] & threads[q]}
        candidates = [j for j in market if j not in same_thread]
        leaky += len(same_thread)
        leaky_queries += bool(same_thread)
        assert not any(episodes[j].author == query.author and threads[j] & threads[q] for j in candidates)
        sims = similarity(emb[[q]], emb[candidates])[0]
        hits = np.array([episodes[j].author == query.author for j in candidates], dtype=bool)
        expected = 1 + int(np.sum(~hits & (sims >= sims[hits].max()))) if hits.any() else 0
        assert got[query.id] == expected, query.id
    scores = evaluation.scores
    assert leaky == scores["same_thread_candidates_removed"] > 0  # the real posts do have such positives
    assert leaky_queries == scores["queries_with_same_thread_positive"] > 0
    dropped = sum(rank == 0 for rank in got.values())
    assert scores["queries"] + scores["queries_without_match"] == len(episodes)
    assert scores["queries_without_match"] == scores["queries_only_same_thread"] == dropped > 0


def test_legacy_reproduces_the_scores_before_the_protocol_existed(real_slice: Path):
    # measured with the code at commit 3de6812 (before the thread-disjoint protocol), same slice and system
    _, _, evaluation = tfidf_evaluation(real_slice, protocol="legacy")
    scores = evaluation.scores
    assert scores["mrr"] == 0.7428736769926709 and scores["recall_at_10"] == 0.9033457249070632
    assert (scores["academia/mrr"], scores["admissions/mrr"], scores["campus/mrr"]) == (
        0.870701213249687,
        0.6940373163799619,
        0.7205573077039023,
    )
    assert scores["migrant/mrr"] == 0.24945939684314092 and scores["migrant/recall_at_10"] == 0.3181818181818182
    assert (scores["queries"], scores["queries_without_match"], scores["migrant/queries"]) == (538, 0, 22)
    assert "migrant_heldout/mrr" not in scores  # the old hash rule: every migrant of the slice may cross
    assert not any("same_thread" in key for key in scores)
    # and the default protocol scores lower on the same episodes: same-thread positives were easy
    _, _, default = tfidf_evaluation(real_slice)
    assert default.scores["mrr"] < scores["mrr"] - 0.03


def test_legacy_reproduces_the_old_hash_heldout_on_synthetic_episodes():
    # random embeddings of the synthetic split; cross_share 0.9 puts p0 and p3 in the hash share
    test = synthetic_split("test", authors_per_market=8, migrants=4)
    emb = np.random.default_rng(0).normal(size=(len(test.episodes), 4))
    assert [_unit_hash("cross:" + p) < 0.9 for p in ("p0", "p1", "p2", "p3")] == [True, False, False, True]
    scores = DarkwebTask(cross_share=0.9, protocol="legacy").evaluate(Fixed(emb), test).scores
    # measured with the code at commit 3de6812
    assert (scores["mrr"], scores["recall_at_10"]) == (0.27768037211971036, 0.7083333333333334)
    assert (scores["migrant/mrr"], scores["migrant/queries"]) == (0.3301250832500832, 24)
    assert (scores["migrant_heldout/mrr"], scores["migrant_heldout/queries"]) == (0.38614510489510484, 12)
    # the default protocol: the synthetic authors' episodes never share a thread, so the same ranks;
    # the test split of a single-task run links no accounts: every migrant is held out
    default = DarkwebTask(cross_share=0.9).evaluate(Fixed(emb), test).scores
    assert default["mrr"] == scores["mrr"] and default["same_thread_candidates_removed"] == 0
    assert default["migrant_heldout/queries"] == default["migrant/queries"] == 24


class Fixed:
    name = "fixed"

    def __init__(self, embeddings: np.ndarray) -> None:
        self.embeddings = embeddings

    def embed(self, episodes):
        return self.embeddings


def names_by_hash(share: float, inside: bool, count: int) -> list[str]:
    """The first `count` names "u0", "u1", ... whose CROSS hash falls inside (or outside) `share`."""
    found = (f"u{i}" for i in range(10_000) if (_unit_hash(f"cross:u{i}") < share) == inside)
    return [next(found) for _ in range(count)]


def write_posts(folder: Path, presence: dict[str, dict[str, tuple[str, ...]]]) -> Path:
    """posts.jsonl where each person has 2 posts in each (market, split) listed for them; other
    authors pad each market so that its median time falls between the train and the test posts."""
    rows = []
    for market in ("alpha", "beta", "gamma"):
        blocks = {}
        for split, base in (("train", 1_500_000_000), ("test", 1_600_000_000)):
            names = [p for p, where in presence.items() if split in where.get(market, ())]
            blocks[split] = [(name, base) for name in names for _ in range(2)]
        size = max(len(b) for b in blocks.values()) + 4
        for split, block in blocks.items():
            block += [(f"pad-{market}-{k % 2}", 0) for k in range(size - len(block))]
            base = 1_500_000_000 if split == "train" else 1_600_000_000
            for k, (author, _) in enumerate(block):
                rows.append(
                    {
                        "post_id": f"{market}-{split}-{k}",
                        "author": author,
                        "market": market,
                        "subforum": "f",
                        "thread_id": f"{market}-{split}-{k}",
                        "parent_id": None,
                        "kind": "submission",
                        "created": base + k,
                        "text": f"words of {author} number {k}",
                    }
                )
    (folder / "posts.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return folder


def test_migrant_heldout_is_decided_by_training_membership(tmp_path: Path):
    linked, one_market, triple = names_by_hash(0.5, True, 3)  # all three inside the hash share
    (unlinked,) = names_by_hash(0.5, False, 1)
    both = ("train", "test")
    presence = {
        linked: {"alpha": both, "beta": both},  # CROSS-labelled: alpha<->beta linked in training
        one_market: {"alpha": both, "beta": ("test",)},  # in the hash share, but trained in alpha only
        unlinked: {"alpha": both, "beta": both},  # trained in both markets, outside the hash share
        triple: {"alpha": both, "beta": both, "gamma": ("test",)},  # gamma unseen in training
    }
    folder = write_posts(tmp_path, presence)
    task = DarkwebTask(multitask=True, episode_length=1, min_posts=2)
    train, test = task.load(folder, "train"), task.load(folder, "test")
    assert train.cross_persons == {linked, triple}  # in several training markets and inside the share
    assert test.cross_accounts == train.cross_accounts == {(p, m) for p in (linked, triple) for m in ("alpha", "beta")}
    rule = task.heldout_rule(test)
    assert not rule(linked, "alpha", "beta") and not rule(linked, "beta", "alpha")
    assert rule(one_market, "alpha", "beta") and rule(unlinked, "alpha", "beta")  # the old hash rule: only unlinked
    assert not rule(triple, "alpha", "beta") and rule(triple, "alpha", "gamma") and rule(triple, "gamma", "beta")
    legacy = DarkwebTask(multitask=True, episode_length=1, min_posts=2, protocol="legacy").heldout_rule(test)
    assert not legacy(one_market, "alpha", "beta") and legacy(unlinked, "alpha", "beta")

    # scored: 2 episodes a person and market; held out: one_market and unlinked both ways (8),
    # triple alpha/beta <-> gamma (8); linked and triple alpha<->beta are not (8)
    scores = task.evaluate(Fixed(np.eye(len(test.episodes))), test).scores
    assert scores["migrant/queries"] + scores["migrant/queries_without_match"] == 24
    assert scores["migrant_heldout/queries"] + scores["migrant_heldout/queries_without_match"] == 16
    # single-task training links no accounts: every migrant is held out
    single = DarkwebTask(episode_length=1, min_posts=2)
    single_test = single.load(folder, "test")
    assert single_test.cross_accounts == frozenset()
    assert all(single.heldout_rule(single_test)(p, "alpha", "beta") for p in presence)


def test_the_protocol_is_a_recorded_task_parameter(tmp_path: Path):
    assert DarkwebTask().protocol == "thread-disjoint"
    assert constructor_params(DarkwebTask())["protocol"] == "thread-disjoint"
    assert constructor_params(DarkwebTask(protocol="legacy"))["protocol"] == "legacy"
    with pytest.raises(HarnessError, match="query_seed must not be negative"):
        DarkwebTask(query_sample=20, query_seed=-1)
    with pytest.raises(HarnessError, match="protocol must be one of"):
        DarkwebTask(protocol="leaky")
    # posts without thread ids cannot be scored thread-disjoint: a clear error, legacy still works
    bare = [e._replace(posts=tuple(p._replace(thread_id="") for p in e.posts)) for e in EPISODES]

    class Split:
        episodes = tuple(bare)
        cross_accounts = frozenset()

    with pytest.raises(HarnessError, match="protocol=legacy"):
        DarkwebTask().evaluate(Fixed(EMB), Split())
    assert DarkwebTask(protocol="legacy").evaluate(Fixed(EMB), Split()).settings["protocol"] == "legacy"


def test_result_json_records_the_protocol(real_slice: Path, tmp_path: Path):
    from harness.runner import run

    for protocol in ("thread-disjoint", "legacy"):
        given = {} if protocol == "thread-disjoint" else {"protocol": protocol}
        outcome = run(
            system_name="episode_tfidf",
            task_name="darkweb",
            data=real_slice,
            out_dir=tmp_path,
            task_params={"market": "campus", **given},
        )
        task = outcome.result["task"]
        assert task["params"]["protocol"] == task["measure_settings"]["protocol"] == protocol
        written = json.loads((outcome.run_dir / "result.json").read_text(encoding="utf-8"))
        assert written["task"]["params"]["protocol"] == protocol


# -- why migrant_heldout can equal migrant, said where results are read ------------------------------------------


def test_a_run_says_why_its_migrant_heldout_row_equals_migrant(real_slice: Path, tmp_path: Path):
    from click.testing import CliRunner

    from harness.cli import main

    args = ["run", "--system", "episode_tfidf", "--task", "darkweb", "--data", str(real_slice), "--out", str(tmp_path)]
    done = CliRunner().invoke(main, args, catch_exceptions=False)
    assert done.exit_code == 0, done.output
    rows = {line.split()[0]: line.split()[1:] for line in done.output.splitlines() if line.startswith("migrant")}
    assert rows["migrant"] == rows["migrant_heldout"]  # single-task training: the same queries, the same scores
    notes = [line for line in done.output.splitlines() if line.startswith("note: migrant_heldout")]
    assert notes == [
        "note: migrant_heldout equals migrant: single-task training (multitask=false) ties no accounts together, so "
        "every migrant is held out; the rows differ under --task-param multitask=true"
    ]
    (result_file,) = tmp_path.glob("darkweb/*/episode_tfidf/seed-0/result.json")
    assert json.loads(result_file.read_text(encoding="utf-8"))["notes"] == [notes[0].removeprefix("note: ")]


def test_migrant_notes_name_the_setting_that_makes_the_rows_equal(tmp_path: Path):
    test = synthetic_split("test", authors_per_market=8, migrants=4)
    emb = Fixed(np.random.default_rng(0).normal(size=(len(test.episodes), 4)))
    (single,) = DarkwebTask().evaluate(emb, test).notes
    assert single.startswith("migrant_heldout equals migrant: single-task training (multitask=false)")
    (legacy,) = DarkwebTask(cross_share=0.1, protocol="legacy").evaluate(emb, test).notes
    assert legacy.startswith("migrant_heldout equals migrant: every migrant falls outside the cross_share hash")
    # audit 9, C1: under legacy the hash decides which are held out, not training, which the notes said
    (some,) = DarkwebTask(cross_share=0.9, protocol="legacy").evaluate(emb, test).notes
    assert some == (
        "migrant_heldout scores 12 of the 24 migrant queries: those outside the cross_share hash "
        "(protocol=legacy, cross_share=0.9)"
    )
    (none,) = DarkwebTask(cross_share=1.0, protocol="legacy").evaluate(emb, test).notes
    assert none == (
        "no migrant_heldout row: every test migrant falls inside the cross_share hash (protocol=legacy, "
        "cross_share=1.0)"
    )
    # multitask training that linked some migrants: the rows differ, and the note says how many are held out
    linked, one_market = names_by_hash(0.5, True, 2)
    both = ("train", "test")
    folder = write_posts(
        tmp_path, {linked: {"alpha": both, "beta": both}, one_market: {"alpha": both, "beta": ("test",)}}
    )
    task = DarkwebTask(multitask=True, episode_length=1, min_posts=2)
    task.load(folder, "train")
    test = task.load(folder, "test")
    (partial,) = task.evaluate(Fixed(np.eye(len(test.episodes))), test).notes
    assert partial == (
        "migrant_heldout scores 4 of the 8 migrant queries: those whose two accounts training did not tie together"
    )


def test_harness_list_and_the_readme_explain_migrant_heldout():
    from helpers.paths import REPO

    from harness.catalogue import details

    (row,) = [line for line in details("darkweb") if line.startswith("  row migrant_heldout: ")]
    assert "multitask=false" in row and "equals migrant" in row
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    darkweb = readme[readme.index("**`--task darkweb` and `--task reddit`**") :]
    darkweb = darkweb[: darkweb.index("\n## ")]
    assert "`migrant_heldout`" in darkweb and "multitask=true" in darkweb and "same" in darkweb
