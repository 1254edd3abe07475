"""`build_pairs` rules, each checked on real data against the real posts and files (not the builder's own records).

Rules (tasks/pairs/builder.py): 1 authors and threads/problems disjoint across splits; 2 no text in two pairs
(text_uses=1) and never in two splits; 3 no pair takes both texts from one thread/problem; 4 different-author pairs
match same-author pairs in ordered discourse types, communities, topics and time-gap bucket; 5 half same-author per
split; 6 cross_share; 7 deterministic for a seed.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path

import pytest
from helpers.cmcc import CMCC_PATTERN

from tasks.forum.reader import read_forum_posts
from tasks.pairs import build_pairs
from tasks.pairs.builder import GAP_EDGES, GAP_LABELS


def load(out_dir: Path) -> dict[str, list[dict]]:
    """Per split, one dict per pair: its pairs.jsonl, truth.jsonl and pair_origins.jsonl lines merged by id."""
    origins = {}
    for line in (out_dir / "pair_origins.jsonl").read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        origins[row["id"]] = row
    splits = {}
    for split in ("train", "test"):
        pairs = [json.loads(x) for x in (out_dir / split / "pairs.jsonl").read_text(encoding="utf-8").splitlines()]
        truth = [json.loads(x) for x in (out_dir / split / "truth.jsonl").read_text(encoding="utf-8").splitlines()]
        assert [p["id"] for p in pairs] == [t["id"] for t in truth]
        assert all(set(p) == {"id", "discourse_types", "pair"} for p in pairs)  # PAN 2023's fields, no more
        assert all(set(t) == {"id", "same", "authors"} for t in truth)
        splits[split] = [{**p, **t, **origins[p["id"]]} for p, t in zip(pairs, truth, strict=True)]
        assert all(row["split"] == split for row in splits[split])
    assert len(origins) == sum(len(rows) for rows in splits.values())
    return splits


def gap(first: float, second: float) -> str:
    return GAP_LABELS[sum(abs(second - first) >= edge for edge in GAP_EDGES)]


def post_ids(origin: str) -> list[str]:
    return origin.split("#", 1)[1].split(",")


# ------------------------------------------------------------------------------------ the real forum posts


@pytest.fixture(scope="module")
def forum_posts(forum_posts_file: Path) -> dict:
    posts, _ = read_forum_posts(forum_posts_file)
    return {p.post_id: p for p in posts}


@pytest.fixture(scope="module")
def forum_set(forum_posts_file: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    """4,000 cross-kind pairs (submission vs comment) from all 261k real posts, with the defaults otherwise."""
    out = tmp_path_factory.mktemp("forum-pairs") / "set"
    manifest = build_pairs("forum", forum_posts_file, out, pairs=4000, min_chars=30, seed=0)
    return out, manifest.data


def real_facts(rows: list[dict], posts: dict) -> list[dict]:
    """Each pair's facts taken from the real posts its texts came from: author, kind, thread, subforum, time, text."""
    facts = []
    for row in rows:
        sides = []
        for origin, text in zip(row["origins"], row["pair"], strict=True):
            (post_id,) = post_ids(origin)  # join="post": one post per text
            post = posts[post_id]
            assert post.text == text
            sides.append(post)
        facts.append({"row": row, "posts": sides})
    return facts


def test_forum_set_labels_match_the_real_posts(forum_set, forum_posts):
    out, _ = forum_set
    for rows in load(out).values():
        for fact in real_facts(rows, forum_posts):
            row, (first, second) = fact["row"], fact["posts"]
            assert row["authors"] == [first.author, second.author]
            assert row["same"] == (first.author == second.author)
            assert row["discourse_types"] == [first.kind, second.kind]
            assert row["communities"] == [first.subforum, second.subforum]
            assert row["times"] == [first.created, second.created]


def test_rule1_authors_disjoint_across_splits(forum_set):
    out, manifest = forum_set
    splits = load(out)
    authors = {split: {a for row in rows for a in row["authors"]} for split, rows in splits.items()}
    assert authors["train"] and authors["test"]
    assert not authors["train"] & authors["test"]
    assert {s: len(a) for s, a in authors.items()} == {s: manifest["splits"][s]["authors"] for s in authors}


def test_rule1_threads_disjoint_across_splits(forum_set, forum_posts):
    """From the real posts' thread ids: no thread gives a text to both splits (a thread's subject is not seen in
    training and tested on), and the texts this left out are counted in the manifest."""
    out, manifest = forum_set
    threads = {
        split: {post.thread_id for fact in real_facts(rows, forum_posts) for post in fact["posts"]}
        for split, rows in load(out).items()
    }
    assert len(threads["train"]) > 1000 and len(threads["test"]) > 1000
    assert not threads["train"] & threads["test"]
    assert manifest["dropped"]["texts"]["in a group (thread, problem) of the other split"] > 1000
    assert any("groups (threads, problems) disjoint" in rule for rule in manifest["rules"])


def test_rule1_groups_follow_the_split_that_holds_most_of_their_texts():
    from tasks.pairs.builder import groups_in_one_split
    from tasks.pairs.sources import SourceText

    def text(name: str, author: str, *groups: str) -> SourceText:
        return SourceText(name, author, name, "essay", None, groups, None, None, name)

    texts = [
        text("a1", "a", "g1"),  # g1: two train texts, one test text -> train
        text("b1", "b", "g1"),
        text("c1", "c", "g1"),
        text("c2", "c", "g2"),  # g2: two test texts, one train text -> test
        text("c4", "c", "g2"),
        text("a2", "a", "g1", "g2"),  # a train text in a test group: out, although g1 is train
        text("b2", "b", "g3"),  # g3: one text a side, a seeded coin
        text("c3", "c", "g3"),
    ]
    assignment = {"a": "train", "b": "train", "c": "test"}
    kept, left_out = groups_in_one_split(texts, assignment, random.Random(0))
    names = {t.text_id for t in kept}
    assert {"a1", "b1", "c2", "c4"} <= names and not {"c1", "a2"} & names
    assert len(names & {"b2", "c3"}) == 1 and left_out == 3  # the coin keeps exactly one side of g3
    again, _ = groups_in_one_split(texts, assignment, random.Random(0))
    assert again == kept
    coins = {
        frozenset(t.text_id for t in groups_in_one_split(texts, assignment, random.Random(s))[0]) for s in range(20)
    }
    assert len(coins) == 2  # both sides of the tie are reachable: the coin is not fixed


def test_rule1_a_scarce_discourse_type_outweighs_a_common_one():
    """A thread's opening post (one of 2 submissions) outweighs two of its comments (of 6): the thread keeps it."""
    from tasks.pairs.builder import groups_in_one_split
    from tasks.pairs.sources import SourceText

    def text(name: str, author: str, kind: str, group: str) -> SourceText:
        return SourceText(name, author, name, kind, None, (group,), None, None, name)

    texts = [text("s1", "a", "submission", "t1"), text("c1", "b", "comment", "t1"), text("c2", "c", "comment", "t1")]
    texts += [text("s2", "b", "submission", "t2")] + [text(f"c{i}", "a", "comment", f"t{i}") for i in range(3, 7)]
    kept, left_out = groups_in_one_split(texts, {"a": "train", "b": "test", "c": "test"}, random.Random(0))
    assert "s1" in {t.text_id for t in kept} and left_out == 2  # 1/2 against 2/6: the comments go


def test_rule2_each_text_in_one_pair_only(forum_set, forum_posts):
    out, _ = forum_set
    splits = load(out)
    texts = Counter(" ".join(t.split()) for rows in splits.values() for row in rows for t in row["pair"])
    assert max(texts.values()) == 1  # text_uses=1: no text twice, so none in two splits either
    posts = Counter(pid for rows in splits.values() for row in rows for o in row["origins"] for pid in post_ids(o))
    assert max(posts.values()) == 1


def test_rule3_no_pair_takes_both_texts_from_one_thread(forum_set, forum_posts):
    out, _ = forum_set
    same_author = 0
    for rows in load(out).values():
        for fact in real_facts(rows, forum_posts):
            first, second = fact["posts"]
            assert first.thread_id != second.thread_id  # same-author: the rule; different-author: else a clue
            same_author += fact["row"]["same"]
    assert same_author == 2000


def length_class(text: str) -> int:
    """Doubling length classes from 64 characters, as match_length uses: 0 below 64, 1 for 64-127, ..."""
    return max(0, (len(text) // 64).bit_length())


def test_rule4_different_author_pairs_match_same_author_pairs(forum_set, forum_posts):
    """Exactly the same counts per (ordered kinds, subforum pair, time-gap bucket, length classes) in both classes."""
    out, manifest = forum_set
    for split, rows in load(out).items():
        mix = {True: Counter(), False: Counter()}
        for fact in real_facts(rows, forum_posts):
            first, second = fact["posts"]
            key = (first.kind, second.kind, first.subforum, second.subforum, gap(first.created, second.created))
            key += (length_class(first.text), length_class(second.text))
            mix[fact["row"]["same"]][key] += 1
        assert mix[True] == mix[False]
        assert len(mix[True]) > 20  # a real mix, not one cell
        # the manifest reports the same tables
        gaps = manifest["splits"][split]["time_gaps"]
        assert all(by_class["same"] == by_class["different"] for by_class in gaps.values())
        assert sum(by_class["same"] for by_class in gaps.values()) == len(rows) // 2


def test_rule4_no_author_crowds_the_different_author_pairs(forum_set):
    """Each author gives at most 2 texts more to different-author pairs than to same-author pairs."""
    out, manifest = forum_set
    for split, rows in load(out).items():
        texts = {True: Counter(), False: Counter()}
        for row in rows:
            texts[row["same"]].update(row["authors"])
        extra = max(n - texts[True][author] for author, n in texts[False].items())
        assert extra <= 2
        assert manifest["splits"][split]["author_balance"]["max_extra_texts_in_different"] == extra
        assert max(texts[False].values()) < 40  # the most prolific users gave over 100 before this rule


def test_rule5_classes_balanced(forum_set):
    out, manifest = forum_set
    for split, rows in load(out).items():
        assert len(rows) == 2000
        assert sum(row["same"] for row in rows) == 1000
        assert manifest["splits"][split]["same"] == manifest["splits"][split]["different"] == 1000


def test_rule6_all_pairs_cross_kind_by_default(forum_set):
    out, manifest = forum_set
    for split, rows in load(out).items():
        assert all(sorted(row["discourse_types"]) == ["comment", "submission"] for row in rows)
        assert manifest["splits"][split]["cross_discourse"] == len(rows)


def test_forum_manifest_records_sources_and_drops(forum_set, forum_posts_file):
    out, manifest = forum_set
    (source,) = manifest["source"]["inputs"]
    assert source["path"] == str(forum_posts_file)
    assert source["sha256"] == read_forum_posts(forum_posts_file)[1]
    assert manifest["parameters"]["pairs"] == 4000 and manifest["seed"] == 0
    # 4 real authors have one post; comment-only authors cannot give a submission-comment pair
    assert manifest["dropped"]["authors"]["author with one text"] > 0
    assert manifest["dropped"]["authors"]["author without two texts of two discourse types from two groups"] > 1000
    assert manifest["dropped"]["texts"]["shorter than min_chars=30"] > 0
    import hashlib

    for name, checksum in manifest["files"].items():
        assert checksum == "sha256:" + hashlib.sha256((out / name).read_bytes()).hexdigest()
    assert json.loads((out / "manifest.json").read_text(encoding="utf-8")) == manifest


# ------------------------------------------------------------------------------ the real slice: options


def test_rule7_same_seed_byte_identical_other_seed_differs(forum_slice, tmp_path):
    def files(folder: Path) -> dict[str, bytes]:
        return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}

    files_of = {}
    for name, seed in (("a", 3), ("b", 3), ("c", 4)):
        build_pairs("forum", forum_slice, tmp_path / name, pairs=60, seed=seed)
        files_of[name] = files(tmp_path / name)
    assert len(files_of["a"]) == 6
    assert files_of["a"] == files_of["b"]
    assert files_of["a"]["train/pairs.jsonl"] != files_of["c"]["train/pairs.jsonl"]
    assert files_of["a"]["test/truth.jsonl"] != files_of["c"]["test/truth.jsonl"]


def test_rule5_odd_split_is_off_by_one(forum_slice, tmp_path):
    build_pairs("forum", forum_slice, tmp_path / "odd", pairs=61, seed=1)
    splits = load(tmp_path / "odd")
    assert {s: len(r) for s, r in splits.items()} == {"train": 31, "test": 30}  # test: round(30.5), to even
    assert sum(r["same"] for r in splits["train"]) == 16
    assert sum(r["same"] for r in splits["test"]) == 15


def test_rule6_cross_share_splits_both_classes_alike(forum_slice, tmp_path):
    build_pairs("forum", forum_slice, tmp_path / "mixed", pairs=200, cross_share=0.3, seed=2)
    for rows in load(tmp_path / "mixed").values():
        cross = Counter(row["same"] for row in rows if row["discourse_types"][0] != row["discourse_types"][1])
        assert cross[True] == cross[False] == round(0.3 * 50)


def test_rule2_text_uses_bounds_reuse_within_a_split(forum_slice, tmp_path):
    build_pairs("forum", forum_slice, tmp_path / "reuse", pairs=240, text_uses=3, seed=0)
    splits = load(tmp_path / "reuse")
    uses = {split: Counter(o for row in rows for o in row["origins"]) for split, rows in splits.items()}
    for split in splits:  # the slice has too few submissions for 240 pairs without reuse
        assert 1 < max(uses[split].values()) <= 3
    assert not set(uses["train"]) & set(uses["test"])
    pairs = Counter(frozenset(row["origins"]) for rows in splits.values() for row in rows)
    assert max(pairs.values()) == 1  # a pair is never repeated


def test_rule4_without_length_matching_the_rest_still_matches(forum_slice, tmp_path):
    build_pairs("forum", forum_slice, tmp_path / "free", pairs=200, cross_share=0.5, match_length=False, seed=5)
    lengths_differ = 0
    for rows in load(tmp_path / "free").values():
        mix = {True: Counter(), False: Counter()}
        lengths = {True: Counter(), False: Counter()}
        for row in rows:
            first, second = row["times"]
            mix[row["same"]][(*row["discourse_types"], *row["communities"], gap(first, second))] += 1
            lengths[row["same"]][tuple(length_class(t) for t in row["pair"])] += 1
        assert mix[True] == mix[False]
        lengths_differ += lengths[True] != lengths[False]
    assert lengths_differ  # without the option, length classes are not matched


def test_thread_join_texts_are_one_authors_posts_in_one_thread(forum_slice, tmp_path):
    posts = {p.post_id: p for p in read_forum_posts(forum_slice / "posts.jsonl")[0]}
    build_pairs("forum", forum_slice, tmp_path / "joined", pairs=80, cross_share=0.0, join="thread", max_chars=1500)
    joined = 0
    for rows in load(tmp_path / "joined").values():
        for row in rows:
            for origin, text, author, kind in zip(
                row["origins"], row["pair"], row["authors"], row["discourse_types"], strict=True
            ):
                run = [posts[pid] for pid in post_ids(origin)]
                assert {(p.author, p.thread_id, p.kind) for p in run} == {(author, run[0].thread_id, kind)}
                assert [p.created for p in run] == sorted(p.created for p in run)
                assert len(text) <= 1500
                if len(run) > 1:
                    joined += 1
                    assert text == "\n\n".join(p.text for p in run)
    assert joined > 0


def test_community_as_discourse_type(forum_slice, tmp_path):
    build_pairs("forum", forum_slice, tmp_path / "market", pairs=100, discourse="market", community="none")
    for rows in load(tmp_path / "market").values():
        assert all(row["discourse_types"][0] != row["discourse_types"][1] for row in rows)
        assert {t for row in rows for t in row["discourse_types"]} <= {"admissions", "campus", "academia"}
        assert all(row["communities"] == [None, None] for row in rows)


# ----------------------------------------------------------------------------- the real CMCC corpus


def test_cmcc_cross_genre_set(cmcc, tmp_path):
    out = tmp_path / "cmcc-set"
    manifest = build_pairs("folders", cmcc, out, pairs=100, pattern=CMCC_PATTERN, encoding="cp1252", seed=0)
    splits = load(out)
    genres = {"Blogs", "Chat", "Discussion", "Emails", "Essays", "Interviews"}
    authors = {s: {a for row in rows for a in row["authors"]} for s, rows in splits.items()}
    assert not authors["train"] & authors["test"]
    assert len(authors["train"] | authors["test"]) == 14
    for rows in splits.values():
        assert sum(row["same"] for row in rows) == 25
        mix = {True: Counter(), False: Counter()}
        for row in rows:
            first, second = row["discourse_types"]
            assert first != second and {first, second} <= genres
            assert row["topics"][0] is not None
            mix[row["same"]][first, second, row["topics"][0] == row["topics"][1]] += 1
            for origin, text in zip(row["origins"], row["pair"], strict=True):
                raw = (cmcc / origin).read_bytes().decode("cp1252")
                assert text == raw.replace("\r\n", "\n").replace("\r", "\n")
                assert "\r" not in text
            # each text's genre and topic are the ones its file name gives
            for origin, genre, topic in zip(row["origins"], row["discourse_types"], row["topics"], strict=True):
                assert origin.split("/")[0] == genre and origin.split("/")[1][-6] == topic
        assert mix[True] == mix[False]  # same-topic share and genre pairs alike in both classes
        assert sum(n for (_, _, same_topic), n in mix[True].items() if same_topic) > 0
    assert manifest.data["dropped"]["texts"]["file not matching the pattern"] == 2  # the two READMEs
    assert manifest.data["dropped"]["texts"]["repeated text of one author"] == 4  # CMCC holds 4 duplicate files
