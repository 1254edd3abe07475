"""Task `darkweb`: author retrieval within forum markets and migrant linking across them.

Input is either the forum-posts jsonl (`posts.jsonl[.gz]`, as in ../shared/data/forum-posts) or the
layout SYSML released its darkweb data in (see tasks.darkweb.sysml_layout). From the jsonl the task
does the paper's protocol itself (tasks.forum.preprocess, tasks.darkweb.episodes); SYSML's layout
comes pre-processed, split and cut into episodes.
"""

from __future__ import annotations

import hashlib
import logging
import os
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any, ClassVar, NamedTuple

import numpy as np

from core.errors import DataError, HarnessError
from core.files import sha256_files
from harness.task import Evaluation, TaskMetadata
from tasks.darkweb.episodes import EPISODE_LENGTHS, EpisodeIndex, EpisodeRows, episode_index, time_split_rows
from tasks.darkweb.evaluation import DEFAULT_PROTOCOL, PROTOCOLS, evaluate_embeddings, queries_with_a_match
from tasks.darkweb.records import DarkwebData, Episode
from tasks.darkweb.sysml_layout import (
    MATCHES_NAME,
    MarketSplit,
    is_sysml_layout,
    market_dirs,
    read_market_split,
    read_matches,
)
from tasks.forum.post_table import PostRows, PostTable, open_post_table
from tasks.forum.reader import POSTS_STEM, find_posts_file
from tasks.forum.records import ForumPost
from toolkit.retrieval import system_metric

logger = logging.getLogger("harness")

SPLITS = ("train", "test")


class DarkwebTask:
    """Author fingerprinting on forum markets (SYSML / NBC-Softmax protocol) with migrant linking.

    Parameters:
        market: one market's name (single-market task), or None for all markets.
        episode_length: posts per episode (the papers: 1, 3 or 5).
        min_posts: posts an author needs in a market's split to be kept (jsonl input only).
        query_sample: evaluate a seeded sample of this many queries (None: all); migrant pairs are
            capped at the same number each.
        query_seed: seed of that sample (fixed by default, so systems and seeds see the same queries).
        multitask: train with SYSML's multitask set-up: the training split names the persons active
            in several markets, which get a CROSS label (needs market=None).
        cross_share: share of the persons (chosen by a hash of the name) that may get a CROSS label
            in multitask training; the other training migrants keep their accounts unlinked.
        author_share: keep only the persons whose name hash falls in this share (1.0: all), in
            both splits: a smaller benchmark with the same protocol, and the same persons whatever
            the market selection, so single-market and multitask runs rank the same pools.
        max_authors: then keep at most this many persons (the first by name hash), for quick runs.
        protocol: "thread-disjoint" (default): a query's same-author candidates never come from a
            thread the query posts in; "legacy": SYSML's protocol as this harness ran it before,
            whose scores are those of earlier results (tasks.darkweb.evaluation). Recorded with the
            task's parameters and in the measure settings of every result.

    Episodes are ranked by the similarity the system asks for (its `metric` attribute; cosine, SYSML's
    default, when it has none), as in every embedding task (toolkit.retrieval.system_metric).

    `migrant_heldout/...` scores the migrant queries whose two accounts training did not link: the
    person had no CROSS label in training, or had one but no training episodes in one of the two
    markets (`DarkwebData.cross_accounts`). Single-task training links no accounts, so there every
    migrant is held out. Under protocol="legacy" it is, as before, the persons outside the
    `cross_share` hash, whether or not training linked them.
    """

    metadata: ClassVar[TaskMetadata] = TaskMetadata(
        name="darkweb",
        version="2",  # 2: the thread-disjoint protocol became the default (version 1 = protocol "legacy")
        kind="retrieval",
        description=(
            "Forum author retrieval over episodes of consecutive posts (text, day of week, sub-forum), "
            "time split per market; MRR and R@k within each market and for migrants across markets"
        ),
        main_score="mrr",
        measures=("mrr", "recall_at_1", "recall_at_2", "recall_at_5", "recall_at_10"),
        citation=(
            "Maneriker, He, Parthasarathy. SYSML: StYlometry with Structure and Multitask Learning. EMNLP 2021. "
            "Kulatilleke, Chandra, Portmann. NBC-Softmax: Darkweb Author Fingerprinting and Migration Tracking. 2022."
        ),
        plot_parameters=("episode_length",),  # `harness plot` draws MRR against episode length
        scopes={
            "migrant": (
                "migrant linking: each test episode of a person with accounts in two markets ranks the other "
                "market's test episodes, a hit being that person's; pooled over the market pairs"
            ),
            "migrant_heldout": (
                "the migrant queries whose two accounts training did not tie together (a CROSS label of "
                "multitask=true training), links a model cannot have memorised; single-task training (the default, "
                "multitask=false) ties no accounts, so there every migrant is held out and this row equals migrant; "
                "under protocol=legacy, the migrants outside the cross_share hash instead"
            ),
        },
        ranking_rows={"set": "within"},  # the headline R@k pools the within-market queries, not the migrants
        table_note=(
            "MRR and R@k pool the within-market queries of every market (protocol {protocol}): {queries} queries; "
            "{queries_without_match} more, left with no same-author candidate, are left out, not counted as misses "
            "(lowest-seed run of the first row)."
        ),
    )

    def __init__(
        self,
        market: str | None = None,
        episode_length: int = 5,
        min_posts: int = 10,
        query_sample: int | None = None,
        query_seed: int = 0,
        multitask: bool = False,
        cross_share: float = 0.5,
        author_share: float = 1.0,
        max_authors: int | None = None,
        protocol: str = DEFAULT_PROTOCOL,
    ) -> None:
        if episode_length not in EPISODE_LENGTHS:
            raise HarnessError(f"episode_length must be one of {EPISODE_LENGTHS}, got {episode_length!r}")
        if min_posts < 2 * episode_length:
            raise HarnessError(f"min_posts must allow two episodes (>= {2 * episode_length}), got {min_posts!r}")
        if query_sample is not None and query_sample < 1:
            raise HarnessError(f"query_sample must be positive or None, got {query_sample!r}")
        if query_seed < 0:  # numpy's generators take seeds of any size, but none below 0
            raise HarnessError(f"query_seed must not be negative, got {query_seed!r}")
        if max_authors is not None and max_authors < 2:
            raise HarnessError(f"max_authors must be at least 2 or None, got {max_authors!r}")
        if multitask and market is not None:
            raise HarnessError("multitask training needs all markets: leave market unset (--task-param market=null)")
        if not 0.0 <= cross_share <= 1.0:
            raise HarnessError(f"cross_share must lie in [0, 1], got {cross_share!r}")
        if not 0.0 < author_share <= 1.0:
            raise HarnessError(f"author_share must lie in (0, 1], got {author_share!r}")
        if protocol not in PROTOCOLS:
            raise HarnessError(f"protocol must be one of {PROTOCOLS}, got {protocol!r}")
        self.market = market
        self.episode_length = int(episode_length)
        self.min_posts = int(min_posts)
        self.query_sample = query_sample
        self.query_seed = int(query_seed)
        self.multitask = bool(multitask)
        self.cross_share = float(cross_share)
        self.author_share = float(author_share)
        self.max_authors = max_authors
        self.protocol = protocol
        self._loaded: dict[Path, dict[str, DarkwebData]] = {}

    # -- the EmbeddingTask protocol ----------------------------------------------------------------

    def load(self, data_dir: Path, split: str) -> DarkwebData:
        """One split; both splits are built together (and kept) on the first call."""
        if split not in SPLITS:
            raise HarnessError(f"split must be one of {SPLITS}, not {split!r}")
        data_dir = Path(data_dir).resolve()
        if data_dir not in self._loaded:
            self._loaded[data_dir] = self._build(data_dir)
        return self._loaded[data_dir][split]

    def training_post_ids(self, data_dir: Path) -> set[str]:
        """The post ids of the training split: all that a model made for this task may learn from
        (`harness pretrain-style --train-split-of darkweb`)."""
        return {post.post_id for post in self.load(data_dir, "train").posts}

    def evaluate(self, system: Any, data: DarkwebData) -> Evaluation:
        """Embed every episode of the split, then rank within markets and across them (see evaluation)."""
        if self.protocol == "thread-disjoint":  # check_splits warned of posts without a thread before the fit
            _check_threads(data.episodes, warn=False)
        embeddings = np.asarray(system.embed(data.episodes))
        evaluation = evaluate_embeddings(
            embeddings,
            data.episodes,
            metric=system_metric(system),
            query_sample=self.query_sample,
            query_seed=self.query_seed,
            protocol=self.protocol,
            heldout=self.heldout_rule(data),
        )
        return evaluation._replace(notes=self.migrant_notes(evaluation.scores))

    def migrant_notes(self, scores: dict[str, float]) -> tuple[str, ...]:
        """Which migrant queries `migrant_heldout` scores, in words: the rows are equal under the default setting,
        and without a word why, two equal rows read like a bug."""

        def asked(prefix: str) -> int:
            return int(scores.get(prefix + "queries", 0) + scores.get(prefix + "queries_without_match", 0))

        migrants, held_out = asked("migrant/"), asked("migrant_heldout/")
        if not migrants:
            return ()
        legacy = f"(protocol=legacy, cross_share={self.cross_share})"
        if held_out == 0:
            if self.protocol == "legacy":
                return (f"no migrant_heldout row: every test migrant falls inside the cross_share hash {legacy}",)
            return ("no migrant_heldout row: training tied every test migrant's two accounts together",)
        if held_out < migrants:
            # under legacy the hash decides, not training (audit 9: the note said training did)
            which = (
                f"those outside the cross_share hash {legacy}"
                if self.protocol == "legacy"
                else "those whose two accounts training did not tie together"
            )
            return (f"migrant_heldout scores {held_out} of the {migrants} migrant queries: {which}",)
        if self.protocol == "legacy":
            why = f"every migrant falls outside the cross_share hash (protocol=legacy, cross_share={self.cross_share})"
        elif not self.multitask:
            why = (
                "single-task training (multitask=false) ties no accounts together, so every migrant is held out; "
                "the rows differ under --task-param multitask=true"
            )
        else:
            why = "training tied none of the test migrants' two accounts together"
        return (f"migrant_heldout equals migrant: {why}",)

    def check_splits(self, train: DarkwebData, test: DarkwebData) -> None:
        """Refuse, before any fitting, splits this task cannot score (`harness.task.SplitCheck`): a training split
        without episodes, or a test split where no query has another episode by its author to find (too few posts
        per author, or under the thread-disjoint protocol all of an author's episodes in the same threads, or posts
        without thread ids, which that protocol needs)."""
        if self.protocol == "thread-disjoint":  # before the fit, not after it (audit 9: a fit was wasted)
            _check_threads(test.episodes)
        if not len(train.episodes):
            raise DataError(
                f"the training split has no episodes of {self.episode_length} posts by authors with at least "
                f"{self.min_posts} posts in a market; nothing to fit on: give more posts",
                path=train.source,
            )
        if queries_with_a_match(
            test.episodes, query_sample=self.query_sample, query_seed=self.query_seed, protocol=self.protocol
        ):
            return
        episodes, authors = len(test.episodes), len({episode.author for episode in test.episodes})
        where = " outside the query's threads" if self.protocol == "thread-disjoint" else ""
        raise DataError(
            f"the test split cannot be scored: none of its {episodes} episodes ({authors} authors) has another "
            f"episode by its author in its market{where}, so no query has an answer to find; give more posts per "
            "author (or a smaller --task-param episode_length)",
            path=test.source,
        )

    def heldout_rule(self, data: DarkwebData) -> Callable[[str, str, str], bool]:
        """Whether a migrant query (person, source market, target market) of `data` counts as held out.

        Held out: training did not tie the person's accounts in the two markets together with a CROSS
        label (`data.cross_accounts`). Legacy protocol: the person is outside the `cross_share` hash.
        """
        if self.protocol == "legacy":
            return lambda person, source, target: not self.may_cross(person)
        linked = data.cross_accounts
        return lambda person, source, target: not ((person, source) in linked and (person, target) in linked)

    # -- building the splits -----------------------------------------------------------------------

    def may_cross(self, person: str) -> bool:
        """Whether a person falls in the `cross_share` that may get a CROSS label (a fixed hash rule).

        It picks which training migrants get a CROSS label; whether a test migrant is held out is
        decided by that training membership (`heldout_rule`), not by this hash (except under "legacy").
        """
        return _unit_hash("cross:" + person) < self.cross_share  # salted: independent of author_share

    def _build(self, data_dir: Path) -> dict[str, DarkwebData]:
        if is_sysml_layout(data_dir):
            posts = [data_dir / name for name in (POSTS_STEM, f"{POSTS_STEM}.gz") if os.path.lexists(data_dir / name)]
            if posts:  # which one the user meant is not ours to guess (the CSVs were read, unsaid)
                raise DataError(
                    f"holds both SYSML's layout (a train.csv) and {posts[0].name}; give --data {posts[0]} to read "
                    "the posts, or move it out to read the CSVs",
                    path=data_dir,
                )
            return self._build_from_sysml_layout(data_dir)
        return self._build_from_posts(data_dir)

    def _build_from_posts(self, data_dir: Path) -> dict[str, DarkwebData]:
        """The splits of a posts file, as index arrays over its PostTable: no Python object per post or episode.

        The same selection as `_build_from_sysml_layout` on lists; on a posts file the person is the author.
        """
        path = find_posts_file(data_dir)
        protocol = _posts_protocol(path, self.episode_length, self.min_posts)
        if self.market is not None and self.market not in protocol.markets:
            raise HarnessError(f"market {self.market!r} not in {path}; it has {', '.join(protocol.markets)}")
        table = protocol.table
        markets = protocol.markets if self.market is None else (self.market,)
        episodes = {
            split: EpisodeIndex.concatenate([protocol.episodes[m][split] for m in markets], self.episode_length)
            for split in SPLITS
        }
        posts = {split: np.concatenate([protocol.posts[m][split] for m in markets]) for split in SPLITS}
        author_names, market_names = table.names("author"), table.names("market")
        present = np.unique(np.concatenate([episodes[split].authors for split in SPLITS]))
        keep = self._kept_persons(author_names[code] for code in present.tolist())
        if keep is not None:
            kept_author = np.zeros(len(author_names), dtype=bool)
            kept_author[[code for code in present.tolist() if author_names[code] in keep]] = True
            author_codes = table.codes("author")
            episodes = {split: index.select(kept_author[index.authors]) for split, index in episodes.items()}
            posts = {split: rows[kept_author[author_codes[rows]]] for split, rows in posts.items()}
        # the (person, market) accounts of the training episodes, as codes
        train_accounts = _unique_pairs(episodes["train"].authors, episodes["train"].markets)
        accounts = [(author_names[a], market_names[m]) for a, m in train_accounts]
        cross_persons = self._cross_persons(accounts) if self.multitask else frozenset()
        cross_accounts = frozenset(account for account in accounts if account[0] in cross_persons)
        result = {}
        for split in SPLITS:
            index = episodes[split]
            result[split] = self._split_data(
                data_dir,
                split,
                EpisodeRows(table, split, index),
                PostRows(table, posts[split]),
                markets=tuple(sorted(market_names[m] for m in np.unique(index.markets).tolist())),
                authors=len(_unique_pairs(index.authors, index.markets)),
                checksum=protocol.table.checksum,
                cross_persons=cross_persons,
                cross_accounts=cross_accounts,
            )
        return result

    def _build_from_sysml_layout(self, data_dir: Path) -> dict[str, DarkwebData]:
        """The splits of SYSML's layout (small, pre-processed): lists of episodes and posts."""
        episodes, posts, checksums = self._from_sysml_layout(data_dir)
        keep = self._kept_persons(e.person for split in SPLITS for e in episodes[split])
        person_of = {(e.market, e.author): e.person for split in SPLITS for e in episodes[split]}
        kept = {split: [e for e in episodes[split] if keep is None or e.person in keep] for split in SPLITS}
        accounts = {(e.person, e.market) for e in kept["train"]}
        cross_persons = self._cross_persons(accounts) if self.multitask else frozenset()
        # the (person, market) accounts a CROSS label ties together: both splits carry them for the evaluator
        cross_accounts = frozenset(account for account in accounts if account[0] in cross_persons)
        result = {}
        for split in SPLITS:
            split_episodes = kept[split]
            split_posts = [
                p for p in posts[split] if keep is None or person_of.get((p.market, p.author), p.author) in keep
            ]
            result[split] = self._split_data(
                data_dir,
                split,
                tuple(split_episodes),
                tuple(split_posts),
                markets=tuple(sorted({e.market for e in split_episodes})),
                authors=len({(e.market, e.author) for e in split_episodes}),
                checksum=checksums[split],
                cross_persons=cross_persons,
                cross_accounts=cross_accounts,
            )
        return result

    def _split_data(
        self,
        data_dir: Path,
        split: str,
        episodes: Sequence[Episode],
        posts: Sequence[ForumPost],
        *,
        markets: tuple[str, ...],
        authors: int,
        checksum: str,
        cross_persons: frozenset[str],
        cross_accounts: frozenset[tuple[str, str]],
    ) -> DarkwebData:
        if not len(episodes):
            raise DataError(f"no {split} episodes (market={self.market!r}, min_posts={self.min_posts})", path=data_dir)
        logger.info("darkweb %s: %d episodes of %d authors in %s", split, len(episodes), authors, ", ".join(markets))
        return DarkwebData(
            split=split,
            episodes=episodes,
            markets=markets,
            posts=posts,
            multitask=self.multitask,
            cross_persons=cross_persons if split == "train" else frozenset(),
            source=data_dir,
            checksum=checksum,
            cross_accounts=cross_accounts,
        )

    def _from_sysml_layout(
        self, data_dir: Path
    ) -> tuple[dict[str, list[Episode]], dict[str, list[ForumPost]], dict[str, str]]:
        matches_path = data_dir / MATCHES_NAME
        persons = read_matches(matches_path) if matches_path.is_file() else {}
        episodes: dict[str, list[Episode]] = defaultdict(list)
        posts: dict[str, list[ForumPost]] = defaultdict(list)
        checksums = {}
        found = []
        folder_of: dict[tuple[str, str], Path] = {}  # (split, market) -> the folder it was read from
        market_of: dict[Path, str] = {}  # folder -> the market its train.csv names
        for split in SPLITS:
            files = [matches_path] if matches_path.is_file() else []
            for market_dir in market_dirs(data_dir):
                part = read_market_split(market_dir, split, self.episode_length)
                _check_market(part, market_dir, split, folder_of, market_of)
                found.append(part.market)
                if self.market is not None and part.market != self.market:
                    continue
                files += part.files
                episodes[split] += [
                    e._replace(person=persons.get((e.market, e.author), e.person)) for e in part.episodes
                ]
                posts[split] += part.posts
            checksums[split] = sha256_files(files, root=data_dir)
        if self.market is not None and self.market not in found:
            raise HarnessError(f"market {self.market!r} not in {data_dir}; it has {', '.join(sorted(set(found)))}")
        unknown = sorted({market for market, _ in persons} - set(found))
        if unknown:  # a misspelt market there would make its accounts' migrant rows vanish without a word
            raise DataError(
                f"names market(s) {', '.join(map(repr, unknown))}, which no market's csv has (they have "
                f"{', '.join(sorted(set(found)))})",
                path=matches_path,
            )
        return episodes, posts, checksums

    def _kept_persons(self, persons: Iterable[str]) -> set[str] | None:
        """The persons `author_share` and `max_authors` keep (None: everyone), chosen by name hash."""
        if self.max_authors is None and self.author_share >= 1.0:
            return None
        chosen = sorted({p for p in persons if _unit_hash(p) < self.author_share})
        chosen.sort(key=lambda p: (_unit_hash(p), p))
        return set(chosen[: self.max_authors])

    def _cross_persons(self, train_accounts: Iterable[tuple[str, str]]) -> frozenset[str]:
        """The persons with training accounts (person, market) in several markets that may get a CROSS label."""
        markets_of: dict[str, set[str]] = defaultdict(set)
        for person, market in train_accounts:
            markets_of[person].add(market)
        return frozenset(p for p, ms in markets_of.items() if len(ms) > 1 and self.may_cross(p))


def _unique_pairs(first: np.ndarray, second: np.ndarray) -> list[tuple[int, int]]:
    """The distinct (first[k], second[k]) pairs of two code arrays, sorted."""
    if len(first) == 0:
        return []
    pairs = np.unique(np.stack([first, second], axis=1), axis=0)
    return [(int(a), int(b)) for a, b in pairs.tolist()]


def _check_threads(episodes: Sequence[Episode], *, warn: bool = True) -> None:
    """The thread-disjoint protocol needs thread ids: refuse data with none, warn (`warn`) where some lack one."""
    if isinstance(episodes, EpisodeRows):
        return  # from a posts file, whose reader requires a thread id on every post (tasks.forum.reader)
    posts = [post for episode in episodes for post in episode.posts]
    missing = sum(not post.thread_id for post in posts)
    if posts and missing == len(posts):
        raise HarnessError(
            "the episodes' posts have no thread ids (e.g. SYSML's layout without a thread_id column): "
            "the thread-disjoint protocol cannot be applied; pass --task-param protocol=legacy"
        )
    if missing and warn:
        logger.warning("%d of %d posts have no thread id: they share no thread with any query", missing, len(posts))


def _unit_hash(name: str) -> float:
    """A name's fixed pseudo-random number in [0, 1): the same on every machine and run."""
    return int.from_bytes(hashlib.sha256(name.encode("utf-8")).digest()[:8], "big") / 2**64


class _Protocol(NamedTuple):
    """A posts file after the paper's protocol: per market and split, its posts (rows in time order) and episodes."""

    table: PostTable
    markets: tuple[str, ...]
    posts: dict[str, dict[str, np.ndarray]]
    episodes: dict[str, dict[str, EpisodeIndex]]


def _posts_protocol(path: Path, episode_length: int, min_posts: int) -> _Protocol:
    """Time split and episodes of every market, kept per process like the post table itself."""
    stat = Path(path).stat()
    return _protocol(Path(path).resolve(), stat.st_size, stat.st_mtime_ns, episode_length, min_posts)


@lru_cache(maxsize=4)
def _protocol(path: Path, size: int, mtime_ns: int, episode_length: int, min_posts: int) -> _Protocol:
    table = _post_table(path, size, mtime_ns)
    market_codes, authors = table.codes("market"), table.codes("author")
    names = table.names("market")
    by_market = time_split_rows(market_codes, table.created, table.id_ranks())
    posts = {names[code]: splits for code, splits in by_market.items()}
    episodes = {
        names[code]: {
            split: episode_index(rows, authors, code, length=episode_length, min_posts=min_posts)
            for split, rows in splits.items()
        }
        for code, splits in by_market.items()
    }
    return _Protocol(table, tuple(sorted(posts)), posts, episodes)


@lru_cache(maxsize=2)
def _post_table(path: Path, size: int, mtime_ns: int) -> PostTable:
    """The posts of a file as a memory-mapped table (cached on disk by checksum), kept per process."""
    return open_post_table(path)


def _check_market(
    part: MarketSplit, market_dir: Path, split: str, folder_of: dict[tuple[str, str], Path], market_of: dict[Path, str]
) -> None:
    """One market per folder and one folder per market: a test.csv naming another market than its train.csv, or a
    second folder of one market (a backup copy kept beside it), would otherwise be scored as a market training never
    saw, or as every query beside its own clone."""
    first = market_of.setdefault(market_dir, part.market)
    if first != part.market:
        raise DataError(
            f"market {part.market!r} differs from {first!r}, which train.csv in the same folder names",
            path=market_dir / f"{split}.csv",
        )
    other = folder_of.setdefault((split, part.market), market_dir)
    if other != market_dir:
        raise DataError(f"market {part.market!r} is also the market of {other}; one folder a market", path=market_dir)
