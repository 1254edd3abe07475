"""The posts a style encoder is pre-trained on: forum posts by author, with the test side of pair sets left out.

An encoder pre-trained on the same forum that a pair set was built from must never have seen that set's test
authors, nor the threads its test texts come from (the harness's splits are author- and thread-disjoint; this keeps
pre-training so too). `excluded_by_sets` reads what to leave out from sets built by `harness pairs`: the test
truth's author names and `pair_origins.jsonl`'s test groups (threads) and origins (post ids). Training-split
authors stay: they are training data. For the forum tasks (darkweb, reddit), whose splits the task makes from the
posts file itself, `training_split_of` keeps only the posts of the task's training split: an encoder pre-trained
for such a task learns from what its systems may fit on, nothing more.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.errors import DataError, HarnessError
from core.files import find_data_file, read_jsonl, require_field
from core.progress import pbar
from tasks.forum.records import PostIds, non_empty_label, post_created, post_kind
from toolkit.text_prep import prepare_text

POSTS_STEM = "posts.jsonl"  # as the forum tasks read it: `<folder>/posts.jsonl[.gz]`, or the file itself


@dataclass
class Exclusions:
    """Authors, threads (groups) and post ids never to pre-train on."""

    authors: set[str] = field(default_factory=set)
    groups: set[str] = field(default_factory=set)
    post_ids: set[str] = field(default_factory=set)
    sets: list[str] = field(default_factory=list)
    only_post_ids: set[str] | None = None  # where set, every other post is left out too (a task's training split)
    training_split_of: dict[str, object] | None = None  # the task (name, parameters) that `only_post_ids` came from

    def merge(self, other: Exclusions, how: str = "both splits") -> None:
        """Leave out what `other` leaves out too (its sets, named with `how`, authors, groups and posts)."""
        self.authors |= other.authors
        self.groups |= other.groups
        self.post_ids |= other.post_ids
        self.sets += [f"{name} ({how})" for name in other.sets]

    def summary(self) -> dict[str, object]:
        sizes = {"authors": len(self.authors), "groups": len(self.groups), "posts": len(self.post_ids)}
        kept = {} if self.only_post_ids is None else {"training_split_posts": len(self.only_post_ids)}
        return {"sets": self.sets} | sizes | {"training_split_of": self.training_split_of} | kept


def training_split_of(task: Any, task_name: str, task_params: dict[str, Any], posts: Path) -> set[str]:
    """The post ids of a forum task's training split of `posts`, as the task itself splits them."""
    if not hasattr(task, "training_post_ids"):
        raise HarnessError(
            f"--train-split-of takes a task that splits a posts file itself (darkweb, reddit), not {task_name!r}"
        )
    kept = set(task.training_post_ids(Path(posts)))
    if not kept:
        raise HarnessError(f"{posts}: task {task_name} {task_params or ''} leaves no training posts")
    return kept


def excluded_by_sets(sets: Sequence[Path], splits: Sequence[str] = ("test",)) -> Exclusions:
    """What these splits of these `harness pairs` sets hold: authors, groups and source post ids."""
    exclusions = Exclusions()
    for folder in map(Path, sets):
        truths = [_set_file(folder / split, "truth.jsonl") for split in splits]
        origins = _set_file(folder, "pair_origins.jsonl")
        for truth in truths:
            for line, record in read_jsonl(truth):
                exclusions.authors.update(author_names(record, truth, line))
        for line, record in read_jsonl(origins):
            split = record.get("split")
            if split not in ("train", "test"):  # skipped, a record would leave its threads in silently
                raise DataError(f"expected 'train' or 'test', got {split!r}", path=origins, line=line, field="split")
            if split not in splits:
                continue
            groups, post_ids = origin_texts(record, origins, line)
            exclusions.groups.update(group for groups_of_text in groups for group in groups_of_text)
            exclusions.post_ids.update(post_ids)
        exclusions.sets.append(str(folder))
    return exclusions


def _set_file(folder: Path, name: str) -> Path:
    """A `harness pairs` set's file, plain or gzipped (as the pan23 task reads it); missing, one line saying why."""
    try:
        return find_data_file(folder, name)
    except DataError as error:
        raise HarnessError(
            f"{error}; --exclude-test-of and --exclude-all-of take a set built by `harness pairs`"
        ) from None


def author_names(record: dict[str, Any], path: Path, line: int) -> list[str]:
    """A truth record's `authors`, checked to be a list of names."""
    authors = record.get("authors")
    if not isinstance(authors, list) or not all(isinstance(name, str) for name in authors):
        raise DataError("expected a list of author names", path=path, line=line, field="authors")
    return authors


def origin_texts(record: dict[str, Any], path: Path, line: int) -> tuple[list[list[str]], list[str]]:
    """A `pair_origins.jsonl` record's groups (threads) and source post id of each of its texts, checked."""
    groups, sources = record.get("groups"), record.get("origins")
    if not isinstance(groups, list) or not all(isinstance(group, list) for group in groups):
        raise DataError("expected a list of lists of group names", path=path, line=line, field="groups")
    if not isinstance(sources, list) or not all(isinstance(source, str) for source in sources):
        raise DataError("expected a list of 'file#id' strings", path=path, line=line, field="origins")
    return [[str(group) for group in groups_of_text] for groups_of_text in groups], [
        source.rpartition("#")[2] for source in sources
    ]


@dataclass
class PretrainingCorpus:
    """Prepared post texts by author (authors with two or more posts), each post's kind, thread and community."""

    authors: list[str]
    texts: list[list[str]]
    kinds: list[list[str]]
    threads: list[list[str]]
    communities: list[list[str]]
    source: str
    left_out: dict[str, int]

    @classmethod
    def unthreaded(
        cls, authors: list[str], texts: list[list[str]], kinds: list[list[str]], source: str
    ) -> PretrainingCorpus:
        """Texts by author where threads and communities are unknown (a task's own training data): every text its
        own thread, one community for all, nothing left out."""
        return cls(
            authors=authors,
            texts=texts,
            kinds=kinds,
            threads=[
                [f"{author}:{i}" for i in range(len(texts_))] for author, texts_ in zip(authors, texts, strict=True)
            ],
            communities=[[""] * len(texts_) for texts_ in texts],
            source=source,
            left_out={},
        )

    @property
    def posts(self) -> int:
        return sum(map(len, self.texts))

    def summary(self) -> dict[str, object]:
        both = sum(1 for kinds in self.kinds if len(set(kinds)) > 1)
        return {
            "source": self.source,
            "authors": len(self.authors),
            "posts": self.posts,
            "authors_with_two_kinds": both,
            "left_out": self.left_out,
        }


def pretraining_corpus(posts: Path, exclusions: Exclusions, *, min_chars: int = 30) -> PretrainingCorpus:
    """The posts of `posts` (a posts.jsonl[.gz] or its folder) less the excluded, by author.

    Posts shorter than `min_chars` after preparation (as `harness pairs` drops them) and authors left with fewer
    than two posts are left out.
    """
    path = Path(posts) if Path(posts).is_file() else find_data_file(Path(posts), POSTS_STEM)
    by_author: dict[str, list[tuple[int, str, str, str, str, str]]] = {}  # (created, post id, text, kind, ...)
    left_out = {"excluded_author": 0, "excluded_thread": 0, "excluded_post": 0, "short": 0, "single_post_author": 0}
    if exclusions.only_post_ids is not None:
        left_out["outside_training_split"] = 0
    post_ids = PostIds(path)
    for line, record in pbar(read_jsonl(path), desc="reading posts", unit="posts"):
        # the fields of the forum tasks' posts files (tasks.forum.reader) that pre-training reads, checked as they
        # are there (a GPU bundle's posts hold only these fields, so the tasks' reader itself is not used)
        post_id = post_ids.add(record, line)
        author, thread, community = (
            non_empty_label(record, name, path, line) for name in ("author", "thread_id", "subforum")
        )
        kind = post_kind(record, path, line)
        created = post_created(record, path, line)
        text = require_field(record, "text", str, path, line, free_text=True)
        if author in exclusions.authors:
            left_out["excluded_author"] += 1
        elif thread in exclusions.groups:
            left_out["excluded_thread"] += 1
        elif post_id in exclusions.post_ids:
            left_out["excluded_post"] += 1
        elif exclusions.only_post_ids is not None and post_id not in exclusions.only_post_ids:
            left_out["outside_training_split"] += 1
        else:
            text = prepare_text(text)
            if len(text) < min_chars:
                left_out["short"] += 1
                continue
            # the community is the one `harness pairs --from forum` matches by default
            by_author.setdefault(author, []).append((created, post_id, text, kind, thread, community))
    excluded = left_out["excluded_author"] + left_out["excluded_thread"] + left_out["excluded_post"]
    if exclusions.sets and not excluded:
        raise HarnessError(
            f"{path}: no post here is by an author, in a thread or among the posts of {', '.join(exclusions.sets)}, "
            "so nothing would be left out: was the set built from other posts? Build it from these with `harness "
            "pairs --from forum`, or pre-train without --exclude-test-of/--exclude-all-of"
        )
    # each author's posts oldest first, ties by id: the seeded draws pick posts by position, so the file's order of
    # its lines must not decide which (the real posts file is in this order already)
    kept = {author: sorted(own) for author, own in by_author.items() if len(own) >= 2}
    left_out["single_post_author"] = sum(len(own) for author, own in by_author.items() if author not in kept)
    if len(kept) < 2:
        raise HarnessError(f"{path}: {len(kept)} author(s) with two or more posts left to pre-train on; need 2")
    authors = sorted(kept)
    return PretrainingCorpus(
        authors=authors,
        texts=[[post[2] for post in kept[author]] for author in authors],
        kinds=[[post[3] for post in kept[author]] for author in authors],
        threads=[[post[4] for post in kept[author]] for author in authors],
        communities=[[post[5] for post in kept[author]] for author in authors],
        source=str(path),
        left_out=left_out,
    )
