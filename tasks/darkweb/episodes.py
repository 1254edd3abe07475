"""The paper's data protocol on forum posts: time split per market, active users, episodes.

- Time split per market: train = the market's posts before its median post time, test = the rest,
  so half of each forum's posts lie before the cut and nothing from the future leaks into training.
- Active users: authors with at least `min_posts` posts in that market's split (the paper: 10, i.e.
  enough for two episodes of 5).
- Episodes: an author's posts of one market and split, oldest first, cut into consecutive runs of
  L posts; a last run shorter than L is dropped. Each post is the triple (pre-processed text, day
  of week, sub-forum), with its thread id for the evaluator's thread-disjoint protocol.

Everything here is deterministic, and the file's order of its lines changes nothing: posts made in the same
second are ordered by post id.

Two forms of the same protocol: on lists of ForumPosts (`time_split`, `build_episodes`: small inputs,
tests, and the reference), and on the columns of a tasks.forum.post_table.PostTable (`time_split_rows`,
`episode_index`), which the task uses: index arrays, no Python object per post, the same episodes in
the same order. `EpisodeRows` makes the Episodes of an index only when they are read.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, NamedTuple, overload

import numpy as np

from tasks.darkweb.records import Episode, EpisodePost
from tasks.forum.post_table import LazyRows
from tasks.forum.preprocess import clean_post
from tasks.forum.records import ForumPost, time_order

if TYPE_CHECKING:
    from tasks.forum.post_table import PostTable

EPISODE_LENGTHS = (1, 3, 5)
_SECONDS_PER_DAY = 86_400
_EPOCH_WEEKDAY = 3  # 1970-01-01 was a Thursday (Monday = 0)


def weekday(created: int) -> int:
    """Day of the week of Unix seconds, in UTC: 0 = Monday ... 6 = Sunday."""
    return int((created // _SECONDS_PER_DAY + _EPOCH_WEEKDAY) % 7)


def split_time(posts: Sequence[ForumPost]) -> float:
    """The median post time: the train/test cut of one market."""
    if not posts:
        raise ValueError("no posts to split")
    return float(np.median(np.fromiter((p.created for p in posts), dtype=np.float64, count=len(posts))))


def time_split(posts: Sequence[ForumPost]) -> dict[str, dict[str, list[ForumPost]]]:
    """{market: {"train": posts before the market's median time, "test": the others}}, in time order."""
    by_market: dict[str, list[ForumPost]] = defaultdict(list)
    for post in posts:
        by_market[post.market].append(post)
    splits: dict[str, dict[str, list[ForumPost]]] = {}
    for market in sorted(by_market):
        ordered = sorted(by_market[market], key=time_order)
        cut = split_time(ordered)
        splits[market] = {
            "train": [p for p in ordered if p.created < cut],
            "test": [p for p in ordered if p.created >= cut],
        }
    return splits


def build_episodes(
    posts: Sequence[ForumPost],
    *,
    split: str,
    length: int = 5,
    min_posts: int = 10,
    text_of: Callable[[ForumPost], str] | None = None,
) -> list[Episode]:
    """Episodes of the active authors among one market's posts of one split (posts in time order).

    `text_of` gives a post's pre-processed text (default: clean_post of its text). Episodes come out grouped by author
    (authors in order of their first post), each author's oldest first.
    """
    if length < 1:
        raise ValueError(f"episode length must be at least 1, got {length}")
    if min_posts < length:
        raise ValueError(f"min_posts ({min_posts}) must be at least the episode length ({length})")
    text_of = text_of or (lambda post: clean_post(post.text))
    by_author: dict[str, list[ForumPost]] = defaultdict(list)
    for post in posts:
        by_author[post.author].append(post)
    episodes: list[Episode] = []
    for author, own in by_author.items():
        if len(own) < min_posts:
            continue
        markets = {p.market for p in own}
        if len(markets) != 1:
            raise ValueError(f"posts of {author!r} span markets {sorted(markets)}; build episodes per market")
        market = own[0].market
        for number, start in enumerate(range(0, len(own) - length + 1, length)):
            run = own[start : start + length]
            episodes.append(
                Episode(
                    id=f"{market}/{split}/{author}/{number}",
                    author=author,
                    market=market,
                    posts=tuple(EpisodePost(text_of(p), weekday(p.created), p.subforum, p.thread_id) for p in run),
                    person=author,  # on one site, the same username is the same person
                    start=run[0].created,
                )
            )
    return episodes


# -- the same protocol on the columns of a PostTable ---------------------------------------------------


def time_split_rows(
    market_codes: np.ndarray, created: np.ndarray, id_ranks: np.ndarray
) -> dict[int, dict[str, np.ndarray]]:
    """`time_split` on columns: {market code: {"train": rows, "test": rows}}, rows in time order (ties: by post id,
    `id_ranks` being each post's rank by post_id, as PostTable.id_ranks gives it).

    Markets come in code order (a PostTable's codes follow the sorted names, as `time_split`'s markets do).
    """
    market_codes = np.asarray(market_codes, dtype=np.int64)
    created = np.asarray(created, dtype=np.int64)
    order = np.lexsort((np.asarray(id_ranks), created, market_codes))  # by market, then time, then post id
    codes = market_codes[order]
    bounds = np.flatnonzero(np.diff(codes)) + 1
    splits: dict[int, dict[str, np.ndarray]] = {}
    for rows in np.split(order, bounds):
        if len(rows) == 0:
            continue
        times = created[rows]
        cut = float(np.median(times.astype(np.float64)))
        before = times.astype(np.float64) < cut  # as `time_split` compares an int to the float median
        splits[int(market_codes[rows[0]])] = {"train": rows[before], "test": rows[~before]}
    return splits


class EpisodeIndex(NamedTuple):
    """Episodes as rows of a PostTable: episode k is the posts at rows[k] (oldest first) of authors[k] in markets[k].

    `numbers[k]` is the episode's number among its author's episodes of that market and split (its id's last part).
    """

    markets: np.ndarray  # (n,) market codes
    authors: np.ndarray  # (n,) author codes
    numbers: np.ndarray  # (n,)
    rows: np.ndarray  # (n, length)

    def select(self, which: np.ndarray) -> EpisodeIndex:
        """The episodes picked by a boolean mask or an index array, in that order."""
        return EpisodeIndex(*(array[which] for array in self))

    @staticmethod
    def concatenate(parts: Sequence[EpisodeIndex], length: int) -> EpisodeIndex:
        """The episodes of several indexes, one after the other."""
        if not parts:
            empty = np.zeros(0, dtype=np.int64)
            return EpisodeIndex(empty, empty, empty, np.zeros((0, length), dtype=np.int64))
        return EpisodeIndex(*(np.concatenate(arrays) for arrays in zip(*parts, strict=True)))


def episode_index(
    rows: np.ndarray, author_codes: np.ndarray, market: int, *, length: int = 5, min_posts: int = 10
) -> EpisodeIndex:
    """`build_episodes` on columns: the episodes of the active authors among one market's split.

    `rows` are the split's posts in time order, `author_codes` the author code of every post of the table.
    Episodes come grouped by author (authors in order of their first post), each author's oldest first.
    """
    if length < 1:
        raise ValueError(f"episode length must be at least 1, got {length}")
    if min_posts < length:
        raise ValueError(f"min_posts ({min_posts}) must be at least the episode length ({length})")
    rows = np.asarray(rows, dtype=np.int64)
    authors = np.asarray(author_codes, dtype=np.int64)[rows]
    by_author = np.argsort(authors, kind="stable")  # positions, grouped by author, time order within each
    _, starts, counts = np.unique(authors[by_author], return_index=True, return_counts=True)
    firsts = by_author[starts]  # the position of each author's first post
    active = counts >= min_posts
    order = np.argsort(firsts[active], kind="stable")  # authors in order of their first post
    starts, counts = starts[active][order], counts[active][order]
    per_author = counts // length
    total = int(per_author.sum())
    group_start = np.repeat(starts, per_author)
    numbers = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(per_author) - per_author, per_author)
    positions = group_start[:, None] + numbers[:, None] * length + np.arange(length, dtype=np.int64)[None, :]
    episode_rows = rows[by_author[positions]].reshape(total, length)
    return EpisodeIndex(
        markets=np.full(total, market, dtype=np.int64),
        authors=authors[by_author[group_start]],
        numbers=numbers,
        rows=episode_rows,
    )


_BLOCK = 2048  # episodes made at a time when iterating


class EpisodeRows(LazyRows[Episode]):
    """A read-only sequence of the Episodes of an EpisodeIndex over a PostTable, each made when it is read.

    A post's text is its pre-processed text (tasks.forum.preprocess.clean_post); the person is the
    author (on one site, the same username is the same person). Compares equal to any sequence of the
    same Episodes (a tuple, a list); `+` gives a tuple.
    """

    def __init__(self, table: PostTable, split: str, index: EpisodeIndex) -> None:
        self.table = table
        self.split = split
        self.index = index

    def __len__(self) -> int:
        return len(self.index.authors)

    @overload
    def __getitem__(self, index: int) -> Episode: ...
    @overload
    def __getitem__(self, index: slice) -> EpisodeRows: ...
    def __getitem__(self, index: int | slice) -> Episode | EpisodeRows:
        if isinstance(index, slice):
            return EpisodeRows(self.table, self.split, self.index.select(np.arange(len(self))[index]))
        position = int(index)
        if position < 0:
            position += len(self)
        if not 0 <= position < len(self):
            raise IndexError("episode index out of range")
        return self._make(position, position + 1)[0]

    def __iter__(self) -> Iterator[Episode]:
        for start in range(0, len(self), _BLOCK):
            yield from self._make(start, min(start + _BLOCK, len(self)))

    def _make(self, start: int, stop: int) -> list[Episode]:
        table, index = self.table, self.index
        rows = index.rows[start:stop]
        flat = rows.reshape(-1)
        texts = table.cleaned_texts(flat)
        subforum_names, thread_names = table.names("subforum"), table.names("thread_id")
        subforums = [subforum_names[c] for c in table.codes("subforum")[flat].tolist()]
        threads = [thread_names[c] for c in table.codes("thread_id")[flat].tolist()]
        created = table.created[flat]
        weekdays = ((created // _SECONDS_PER_DAY + _EPOCH_WEEKDAY) % 7).tolist()  # as `weekday`, for a block
        posts = list(map(EpisodePost, texts, weekdays, subforums, threads))
        starts = created[:: rows.shape[1]].tolist()
        market_names, author_names = table.names("market"), table.names("author")
        length = rows.shape[1]
        episodes = []
        for k, (market, author, number) in enumerate(
            zip(
                index.markets[start:stop].tolist(),
                index.authors[start:stop].tolist(),
                index.numbers[start:stop].tolist(),
                strict=True,
            )
        ):
            market_name, author_name = market_names[market], author_names[author]
            episodes.append(
                Episode(
                    id=f"{market_name}/{self.split}/{author_name}/{number}",
                    author=author_name,
                    market=market_name,
                    posts=tuple(posts[k * length : (k + 1) * length]),
                    person=author_name,
                    start=starts[k],
                )
            )
        return episodes

    def __eq__(self, other: object) -> bool:
        if (
            isinstance(other, EpisodeRows)
            and other.table is self.table
            and other.split == self.split
            and all(np.array_equal(a, b) for a, b in zip(self.index, other.index, strict=True))
        ):
            return True  # the same rows of the same table: no need to make the episodes
        return super().__eq__(other)

    __hash__ = None  # type: ignore[assignment]  # defining __eq__ would otherwise reset it

    def __repr__(self) -> str:
        return f"EpisodeRows({len(self)} {self.split} episodes of {self.table!r})"
