"""The sampling rules of `harness pairs`: which texts may pair, which authors go where, and how pairs are drawn.

Rules (each a tested property, see tests/test_pairs_*.py):
1. Authors are split between train and test, never shared; so are groups (threads, problems): each group goes to
   the split that holds most of its texts (each weighed by how scarce its discourse type is; a seeded coin on
   ties), and its texts by the other split's authors are left out, so no thread's subject is seen in training and
   tested on.
2. Each text is used in at most `text_uses` pairs (default 1), all in its author's split; texts equal
   after white-space normalisation count as one text.
3. A same-author pair never takes both texts from one group (thread, problem); neither does a
   different-author pair, or "same thread" would tell the answer ("different author").
4. Each different-author pair is the twin of one same-author pair (a1, a2): x is the text nearest in time
   to a1 among the unused texts of a1's discourse type, community and topic, by another author; y likewise
   for a2, nearest to time(x) + (time(a2) - time(a1)), by a third author, with the same time-gap bucket.
   So the classes have exactly the same mix of (ordered) discourse-type pairs, community pairs, topic
   relations and gap buckets: none of them tells the answer. With `match_length`, x and y also share the
   length classes of a1 and a2. No author gives more than AUTHOR_SLACK texts more to different-author pairs
   than to same-author pairs, so how often a writer recurs does not tell the class either.
5. Half the pairs of each split are same-author (one more when the split's count is odd).
6. round(cross_share * same-author pairs) have two different discourse types, and their twins too.
7. Everything follows from the seed: authors and texts are visited in sorted or seeded order only.

Only authors that can give a same-author pair of the kind asked take part at all, on both sides: else
different-author pairs would draw on writers (one-post users, comment-only users) that same-author
pairs never show, and who wrote a text would hint at the answer.
"""

from __future__ import annotations

import bisect
import hashlib
import random
from collections import Counter, defaultdict, deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from core.errors import DataError, HarnessError
from tasks.pairs.sources import SourceText

SPLITS = ("train", "test")

# Time-gap buckets (seconds) that a different-author pair must share with its same-author twin.
GAP_EDGES = (3600, 86400, 7 * 86400, 30 * 86400, 365 * 86400)
GAP_LABELS = ("<1h", "1h-1d", "1d-7d", "7d-30d", "30d-1y", ">=1y")
NO_TIME = "n/a"
# With match_length, a twin's texts also share their same-author originals' length class (doubling from this).
LENGTH_FIRST_EDGE = 64

# Search limits, so one pathological author or an exhausted corner of the data cannot cost O(n^2):
PAIR_SEARCH_BUDGET = 20_000  # text comparisons per same-author draw or eligibility check
TWIN_STEPS = 256  # candidates looked at per side of a twin search
TWIN_FIRST_TEXTS = 8  # candidates for the twin's first text tried before giving up
# An author gives at most this many more texts to different-author pairs than to same-author pairs. Without
# this bound, the nearest-in-time search would fill different-author pairs with the most prolific writers'
# texts (one forum user gave 112 texts to them and 4 to same-author pairs), and how often a writer's style
# recurs in a set would hint at the answer.
AUTHOR_SLACK = 2
OTHER_SPLIT_GROUP = "in a group (thread, problem) of the other split"
AFTER_GROUP_SPLIT = "once groups were split"
REJECTIONS_PER_AUTHOR = 32  # same-author pairs of one author without a twin before the author is out


@dataclass(frozen=True)
class PairRules:
    pairs: int  # in all, train and test
    test_share: float = 0.5
    cross_share: float = 1.0
    text_uses: int = 1
    min_chars: int = 1
    seed: int = 0
    match_length: bool = True

    def check(self) -> None:
        if not 0.0 < self.test_share < 1.0:
            raise HarnessError(f"test_share must lie strictly between 0 and 1, got {self.test_share}")
        if not 0.0 <= self.cross_share <= 1.0:
            raise HarnessError(f"cross_share must lie in [0, 1], got {self.cross_share}")
        if self.text_uses < 1:
            raise HarnessError(f"text_uses must be at least 1, got {self.text_uses}")
        if self.min_chars < 1:
            raise HarnessError(f"min_chars must be at least 1, got {self.min_chars}")
        if self.seed < 0:
            raise HarnessError(f"seed must be a non-negative integer, got {self.seed}")
        if min(self.split_sizes().values()) < 2:
            raise HarnessError(f"{self.pairs} pairs at test_share {self.test_share} leave a split under 2 pairs")

    def split_sizes(self) -> dict[str, int]:
        test = round(self.pairs * self.test_share)
        return {"train": self.pairs - test, "test": test}


@dataclass
class BuiltPairs:
    """The pairs of each split as (first, second, same) indices into `texts`, and what was left out and why."""

    texts: list[SourceText]
    splits: dict[str, list[tuple[int, int, bool]]]
    split_authors: dict[str, int]
    split_texts: dict[str, int]
    dropped_texts: Counter = field(default_factory=Counter)
    dropped_authors: Counter = field(default_factory=Counter)
    unmatched: dict[str, int] = field(default_factory=dict)  # same-author pairs proposed that found no twin


def length_bucket(text: str) -> str:
    """A text's length class, doubling from 64 characters: "<64", "64-127", "128-255", ..."""
    size = len(text)
    if size < LENGTH_FIRST_EDGE:
        return f"<{LENGTH_FIRST_EDGE}"
    low = LENGTH_FIRST_EDGE << ((size // LENGTH_FIRST_EDGE).bit_length() - 1)
    return f"{low}-{2 * low - 1}"


def gap_bucket(first: float | None, second: float | None) -> str:
    if first is None or second is None:
        return NO_TIME
    return GAP_LABELS[bisect.bisect_right(GAP_EDGES, abs(second - first))]


def draw_pairs(texts: Sequence[SourceText], rules: PairRules, source: Path) -> BuiltPairs:
    """Pairs for train and test under the rules above; a DataError naming `source` when the data cannot give them."""
    rules.check()
    kept, dropped_texts = candidate_texts(texts, rules.min_chars)
    kept, dropped_authors, other_kind_would_keep = pairable_authors(kept, rules.cross_share)
    reasons = ", ".join(f"{n} {why}" for why, n in sorted((dropped_authors + dropped_texts).items()))
    pairable = len({t.author for t in kept})
    # another cross_share is advice only where the authors it would keep make a set (2 a split)
    enough = pairable + other_kind_would_keep >= 2 * len(SPLITS)
    fixes = _fixes(dropped_texts, other_kind_would_keep if enough else 0, rules)
    if not kept:
        raise DataError(
            f"no author has two texts that can form a pair ({reasons}){fixes or '; give more texts per author'}",
            path=source,
            field="author",
        )
    if pairable < 2 * len(SPLITS):  # no test_share helps: the data gives too few writers
        left_out = f"; left out: {reasons}" if reasons else ""
        raise DataError(
            f"only {pairable} authors can give same-author pairs, and each split needs at least 2 "
            f"({2 * len(SPLITS)} in all){left_out}{fixes or '; give texts of more authors'}",
            path=source,
            field="author",
        )
    assignment = split_authors(kept, rules.test_share, random.Random(f"{rules.seed}:authors"))
    kept, apart = groups_in_one_split(kept, assignment, random.Random(f"{rules.seed}:groups"))
    if apart:
        dropped_texts[OTHER_SPLIT_GROUP] += apart
        kept, no_longer, _ = pairable_authors(kept, rules.cross_share)  # authors whose pairs needed those texts
        dropped_authors.update({f"{why} {AFTER_GROUP_SPLIT}": n for why, n in no_longer.items()})
    uses = [rules.text_uses] * len(kept)
    built = BuiltPairs(kept, {}, {}, {}, dropped_texts, dropped_authors)
    for split, size in rules.split_sizes().items():
        members = [i for i, t in enumerate(kept) if assignment[t.author] == split]
        authors = len({kept[i].author for i in members})
        if authors < 2:  # enough authors, but the share sent too few of them (or their texts) to one side
            raise DataError(
                f"{pairable} authors can give same-author pairs, but only {authors} of them go to the {split} split "
                f"at test_share {rules.test_share} (each split needs at least 2); a test_share nearer 0.5 "
                "balances them",
                path=source,
                field="test_share",
            )
        sampler = _SplitSampler(kept, members, uses, random.Random(f"{rules.seed}:{split}"), rules.match_length)
        pairs, unmatched = _draw_split(sampler, size, rules, split, source, authors, fixes)
        built.splits[split], built.unmatched[split] = pairs, unmatched
        built.split_authors[split], built.split_texts[split] = authors, len(members)
    return built


def _fixes(dropped_texts: Counter, other_kind_would_keep: int, rules: PairRules) -> str:
    """ "; <what would keep more of the data>" for the reasons texts and authors were left out ("" for none that a
    parameter changes: an author with one text, or a text under several authors, stays out whatever is asked; nor
    does another cross_share help an author whose texts give no pair of the other kind either)."""
    fixes = []
    if any(why.startswith("shorter than min_chars") for why in dropped_texts):
        fixes.append("a lower min_chars keeps the shorter texts")
    if other_kind_would_keep and rules.cross_share == 1:
        fixes.append("a lower cross_share allows pairs of one discourse type")
    if other_kind_would_keep and rules.cross_share == 0:
        fixes.append("a higher cross_share allows pairs of two discourse types")
    return "; " + ", or ".join(fixes) if fixes else ""


# ------------------------------------------------------------------------------------ candidate texts


def candidate_texts(texts: Sequence[SourceText], min_chars: int) -> tuple[list[SourceText], Counter]:
    """Texts long enough, each once: equal texts (after white-space folding) of one author are kept once,
    and of several authors are all left out (whose they are is unknowable, and any one would sit in two splits)."""
    dropped: Counter = Counter()
    long_enough = []
    for text in texts:
        if len(text.text) < min_chars:
            dropped[f"shorter than min_chars={min_chars}"] += 1
        else:
            long_enough.append(text)
    first: dict[bytes, int] = {}
    authors_of: dict[bytes, set[str]] = {}
    keys = []
    for i, text in enumerate(long_enough):
        key = hashlib.blake2b(" ".join(text.text.split()).encode("utf-8", "surrogatepass"), digest_size=16).digest()
        keys.append(key)
        first.setdefault(key, i)
        authors_of.setdefault(key, set()).add(text.author)
    kept = []
    for i, (text, key) in enumerate(zip(long_enough, keys, strict=True)):
        if len(authors_of[key]) > 1:
            dropped["same text under several authors"] += 1
        elif first[key] != i:
            dropped["repeated text of one author"] += 1
        else:
            kept.append(text)
    return kept, dropped


def pairable_authors(texts: list[SourceText], cross_share: float) -> tuple[list[SourceText], Counter, int]:
    """The texts of authors who can give a same-author pair of a kind asked; the others' counted by reason; and how
    many of those the other kind of pair would keep (what a lower or higher cross_share would win)."""
    by_author: dict[str, list[SourceText]] = defaultdict(list)
    for text in texts:
        by_author[text.author].append(text)
    dropped: Counter = Counter()
    keep: set[str] = set()
    other_kind_would_keep = 0
    for author, own in by_author.items():
        if len(own) < 2:
            dropped["author with one text"] += 1
            continue
        cross, within = _possible_pairs(own)
        if (cross_share > 0 and cross) or (cross_share < 1 and within):
            keep.add(author)
        else:
            what = (
                " of two discourse types" if cross_share == 1 else " of one discourse type" if cross_share == 0 else ""
            )
            dropped[f"author without two texts{what} from two groups"] += 1
            other_kind_would_keep += cross or within  # only where cross_share is 0 or 1 can either be true here
    return [t for t in texts if t.author in keep], dropped, other_kind_would_keep


def _possible_pairs(own: list[SourceText]) -> tuple[bool, bool]:
    """(a cross-discourse pair exists, a same-discourse pair exists) among one author's texts, groups disjoint."""
    if all(len(t.groups) == 1 for t in own):
        # one group per text (posts, files): decided from the groups of each type, without looking at pairs
        groups_of: dict[str, set[str]] = defaultdict(set)
        for t in own:
            groups_of[t.discourse_type].add(t.groups[0])
        all_groups = set().union(*groups_of.values())
        return len(groups_of) >= 2 and len(all_groups) >= 2, any(len(g) >= 2 for g in groups_of.values())
    cross = within = False
    budget = PAIR_SEARCH_BUDGET
    for i, first in enumerate(own):
        for second in own[i + 1 :]:
            budget -= 1
            if budget < 0:
                return True, True  # undecided: keep the author; drawing finds out
            if _disjoint(first.groups, second.groups):
                if first.discourse_type != second.discourse_type:
                    cross = True
                else:
                    within = True
                if cross and within:
                    return True, True
    return cross, within


def _disjoint(first: tuple[str, ...], second: tuple[str, ...]) -> bool:
    if len(first) == 1 and len(second) == 1:
        return first[0] != second[0]
    return set(first).isdisjoint(second)


# ------------------------------------------------------------------------------------------ author split


def split_authors(texts: Sequence[SourceText], test_share: float, rng: random.Random) -> dict[str, str]:
    """train or test per author, in seeded order: each author goes to the split whose stock of that author's
    discourse types is least filled relative to its share, so scarce types (forum submissions) split in
    proportion too, not just texts."""
    counts: dict[str, Counter] = defaultdict(Counter)
    for text in texts:
        counts[text.author][text.discourse_type] += 1
    totals: Counter = Counter(text.discourse_type for text in texts)
    share = {"train": 1.0 - test_share, "test": test_share}
    held = {split: Counter() for split in SPLITS}
    sizes = dict.fromkeys(SPLITS, 0)
    order = sorted(counts)
    rng.shuffle(order)
    assignment: dict[str, str] = {}
    for author in order:
        own = counts[author]

        def fill(split: str, own: Counter = own) -> tuple[float, float]:
            by_type = sum(n * held[split][t] / (share[split] * totals[t]) for t, n in own.items())
            return by_type / sum(own.values()), sizes[split] / share[split]

        split = "test" if fill("test") <= fill("train") else "train"
        assignment[author] = split
        held[split].update(own)
        sizes[split] += sum(own.values())
    return assignment


def groups_in_one_split(
    texts: Sequence[SourceText], assignment: dict[str, str], rng: random.Random
) -> tuple[list[SourceText], int]:
    """The texts whose every group lies in their author's split, and how many were left out (rule 1).

    A group goes to the split whose authors wrote most of its texts, each text counted by how scarce its discourse
    type is (1 / its texts), so that a thread's one opening post outweighs a handful of its comments: the scarce
    type is what cross-discourse pairs run short of. A seeded coin decides ties. A text with several groups (a
    PAN text reused in several problems) stays only if all of them went to its split.
    """
    scarcity = {kind: 1.0 / n for kind, n in Counter(t.discourse_type for t in texts).items()}
    votes: dict[str, Counter] = defaultdict(Counter)
    for text in texts:
        for group in set(text.groups):
            votes[group][assignment[text.author]] += scarcity[text.discourse_type]
    split_of = {}
    for group in sorted(votes):  # sorted, so the coins fall the same way for the same seed
        train, test = votes[group]["train"], votes[group]["test"]
        coin = rng.random() < 0.5
        split_of[group] = "train" if train > test or (train == test and coin) else "test"
    kept = [t for t in texts if all(split_of[g] == assignment[t.author] for g in t.groups)]
    return kept, len(texts) - len(kept)


# -------------------------------------------------------------------------------------- drawing a split


def _draw_split(
    sampler: _SplitSampler, size: int, rules: PairRules, split: str, source: Path, authors: int, fixes: str = ""
) -> tuple[list[tuple[int, int, bool]], int]:
    """`size` pairs: same-author pairs, each followed by its different-author twin, then shuffled."""
    positives_wanted = size - size // 2  # one more same-author pair than twins when size is odd
    targets = {True: round(rules.cross_share * positives_wanted)}
    targets[False] = positives_wanted - targets[True]
    made = {True: 0, False: 0}
    open_kinds = {kind for kind, n in targets.items() if n > 0}
    pairs: list[tuple[int, int, bool]] = []
    unmatched = 0
    while open_kinds:
        # the kind (cross- or same-discourse) furthest behind its target goes next, so both fill evenly
        cross = min(open_kinds, key=lambda kind: (made[kind] / targets[kind], not kind))
        proposal = sampler.propose(cross)
        if proposal is None:
            _too_few(made, targets, unmatched, rules, split, source, authors, sampler, cross, fixes)
        a, b = proposal.first, proposal.second
        # the twin first: a same-author pair without one is not taken, and its texts stay free for other pairs
        twin = sampler.draw_twin(a, b)
        if twin is None:
            unmatched += 1
            sampler.reject(proposal)
            continue
        sampler.commit(proposal)
        x, y = twin
        if sampler.rng.random() < 0.5:  # which text comes first is no clue either: both pairs turn alike
            a, b, x, y = b, a, y, x
        pairs.append((a, b, True))
        pairs.append((x, y, False))
        made[cross] += 1
        if made[cross] == targets[cross]:
            open_kinds.discard(cross)
    if size % 2:
        pairs.pop()  # the last twin: one same-author pair more than different-author pairs
    sampler.rng.shuffle(pairs)
    return pairs, unmatched


def _too_few(made, targets, unmatched, rules, split, source, authors, sampler, short_of_cross, fixes) -> None:
    """The one-line error when a split's authors cannot give the pairs asked, with a count that would fit.

    `short_of_cross`: whether the kind that ran out is cross-discourse (a lower cross_share asks for fewer of them)
    or same-discourse (a higher one does); `fixes`: what would keep texts that were left out (`_fixes`).
    """
    total = made[True] + made[False]
    cross = f", {made[True]} of {targets[True]} across discourse types" if targets[True] else ""
    share = rules.test_share if split == "test" else 1.0 - rules.test_share
    kind = "a lower cross_share" if short_of_cross else "a higher cross_share"
    raise DataError(
        f"{split} split: only {total} of {targets[True] + targets[False]} same-author pairs{cross} could be drawn "
        f"with a matching different-author pair ({unmatched} had none) from {authors} authors and {sampler.size} "
        f"texts, each text in at most {rules.text_uses} pair(s); ask for at most about {int(2 * total / share)} "
        f"pairs, {kind} or a higher text_uses{fixes}",
        path=source,
        field="pairs",
    )


def _key(first: int, second: int) -> tuple[int, int]:
    return (first, second) if first < second else (second, first)


class _Proposal(NamedTuple):
    """A same-author pair not yet taken, and where its texts sit in their author's queues."""

    author: str
    first: int
    second: int
    first_queue: list[int]
    first_position: int
    second_queue: list[int]
    second_position: int


class _Cell:
    """The texts of one (discourse type, community, topic[, length class]) in one split, by time, with O(~1) removal.

    `right` and `left` are union-find forests that jump over used-up texts, so the nearest unused text
    to a time is found without scanning runs of used ones. Untimed texts are in seeded random order, and
    a search starts at a random place: the nearest unused text is then a random one.
    """

    def __init__(self, members: list[int], times: list[float]) -> None:
        self.members = members
        self.times = times
        n = len(members)
        self.right = list(range(n + 1))  # element i, or n for none
        self.left = list(range(n + 1))  # element i at i + 1, or 0 for none

    def remove(self, position: int) -> None:
        self.right[position] = position + 1
        self.left[position + 1] = position

    @staticmethod
    def _root(forest: list[int], i: int) -> int:
        while forest[i] != i:
            forest[i] = forest[forest[i]]
            i = forest[i]
        return i

    def nearest(self, target: float) -> Iterator[int]:
        """Unused texts by growing distance of their time from `target` (nearer first, later first on ties)."""
        times, members = self.times, self.members
        n = len(members)
        start = bisect.bisect_left(times, target)
        right = self._root(self.right, start)
        left = self._root(self.left, start) - 1
        while right < n or left >= 0:
            if left < 0 or (right < n and times[right] - target <= target - times[left]):
                yield members[right]
                right = self._root(self.right, right + 1)
            else:
                yield members[left]
                left = self._root(self.left, left) - 1


class _SplitSampler:
    """Same-author pairs drawn round-robin over authors, and different-author twins found in `_Cell`s."""

    def __init__(
        self, texts: list[SourceText], members: list[int], uses: list[int], rng: random.Random, match_length: bool
    ) -> None:
        self.texts, self.uses, self.rng, self.size = texts, uses, rng, len(members)
        self.used_pairs: set[tuple[int, int]] = set()
        # same-author side: per author and discourse type, a seeded queue of texts (a list with a head)
        self.queues: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
        for i in members:
            self.queues[texts[i].author][texts[i].discourse_type].append(i)
        self.heads: dict[tuple[str, str], int] = {}
        self.alive: dict[tuple[str, str], int] = {}
        for author, by_type in self.queues.items():
            for kind, queue in by_type.items():
                rng.shuffle(queue)
                self.heads[author, kind] = 0
                self.alive[author, kind] = len(queue)
        authors = sorted(self.queues)
        rng.shuffle(authors)
        self.rounds = {True: deque(authors), False: deque(authors)}  # authors not yet out of pairs of that kind
        self.rejected: Counter = Counter()  # proposals without a twin, per author
        self.in_same: Counter = Counter()  # texts per author in same-author pairs so far
        self.in_different: Counter = Counter()  # and in different-author pairs
        self.retired: set[str] = set()
        # different-author side: cells by (discourse type, community, topic[, length class]), ordered by time
        by_cell: dict[tuple, list[int]] = defaultdict(list)
        for i in members:
            t = texts[i]
            by_cell[t.discourse_type, t.community, t.topic, length_bucket(t.text) if match_length else None].append(i)
        self.cell_of: dict[int, _Cell] = {}
        self.position: dict[int, int] = {}
        for key in sorted(by_cell, key=repr):
            cell_members = by_cell[key]
            rng.shuffle(cell_members)  # ties in time (and untimed texts) in seeded order
            if all(texts[i].time is not None for i in cell_members):
                cell_members.sort(key=lambda i: texts[i].time)  # stable: keeps the seeded order among ties
                times = [float(texts[i].time) for i in cell_members]
            else:
                times = [float(p) for p in range(len(cell_members))]
            cell = _Cell(cell_members, times)
            for position, i in enumerate(cell_members):
                self.cell_of[i], self.position[i] = cell, position

    # --- shared bookkeeping

    def _use(self, i: int) -> None:
        self.uses[i] -= 1
        if self.uses[i] == 0:
            self.cell_of[i].remove(self.position[i])
            t = self.texts[i]
            self.alive[t.author, t.discourse_type] -= 1

    # --- same-author pairs

    def propose(self, cross: bool) -> _Proposal | None:
        """The next same-author pair of the kind, from the next author in turn who still has one; None if none has.

        Nothing is used until `commit`: a proposal whose twin cannot be found is `reject`ed instead.
        """
        authors = self.rounds[cross]
        while authors:
            author = authors.popleft()
            if author in self.retired:
                continue
            proposal = self._draw_from(author, cross)
            if proposal is not None:
                authors.append(author)
                return proposal
        return None

    def commit(self, proposal: _Proposal) -> None:
        """Take the proposed texts out of their queues; a text with uses left goes to the back of its queue."""
        self.used_pairs.add(_key(proposal.first, proposal.second))
        self.in_same[proposal.author] += 2
        for text, queue, position in (
            (proposal.first, proposal.first_queue, proposal.first_position),
            (proposal.second, proposal.second_queue, proposal.second_position),
        ):
            queue[position] = -1
            self._use(text)
            if self.uses[text] > 0:
                queue.append(text)

    def reject(self, proposal: _Proposal) -> None:
        """Never propose this pair again; an author whose pairs keep finding no twin is out for good."""
        self.used_pairs.add(_key(proposal.first, proposal.second))
        self.rejected[proposal.author] += 1
        if self.rejected[proposal.author] >= REJECTIONS_PER_AUTHOR:
            self.retired.add(proposal.author)

    def _draw_from(self, author: str, cross: bool) -> _Proposal | None:
        by_type = self.queues[author]
        live = [kind for kind in sorted(by_type) if self.alive[author, kind] > 0]
        # the best-stocked types first (most pairs in the end), random among equals
        rank = {kind: (-self.alive[author, kind], self.rng.random()) for kind in live}
        live.sort(key=rank.__getitem__)
        if cross:
            combos = [(a, b) for i, a in enumerate(live) for b in live[i + 1 :]]
        else:
            combos = [(a, a) for a in live if self.alive[author, a] >= 2]
        budget = [PAIR_SEARCH_BUDGET]
        for first_type, second_type in combos:
            pair = self._find(author, first_type, second_type, budget)
            if pair is not None or budget[0] <= 0:
                return pair
        return None

    def _head(self, author: str, kind: str) -> int:
        queue, head = self.queues[author][kind], self.heads[author, kind]
        while head < len(queue) and (queue[head] < 0 or self.uses[queue[head]] == 0):
            head += 1
        self.heads[author, kind] = head
        return head

    def _find(self, author: str, first_type: str, second_type: str, budget: list[int]) -> _Proposal | None:
        firsts, seconds = self.queues[author][first_type], self.queues[author][second_type]
        uses = self.uses
        second_start = self._head(author, second_type)
        for i in range(self._head(author, first_type), len(firsts)):
            x = firsts[i]
            if x < 0 or uses[x] == 0:
                continue
            groups = self.texts[x].groups
            for j in range(second_start, len(seconds)):
                y = seconds[j]
                if y < 0 or y == x or uses[y] == 0:
                    continue
                budget[0] -= 1
                if budget[0] < 0:
                    return None
                if _disjoint(groups, self.texts[y].groups) and _key(x, y) not in self.used_pairs:
                    return _Proposal(author, x, y, firsts, i, seconds, j)
        return None

    # --- different-author twins

    def _start(self, cell: _Cell, time: float | None) -> float:
        if time is None:
            return float(self.rng.randrange(len(cell.members)))
        return float(time)

    def draw_twin(self, a: int, b: int) -> tuple[int, int] | None:
        """A different-author pair like (a, b) in discourse types, communities, topics and time gap (rule 4)."""
        texts = self.texts
        first, second = texts[a], texts[b]
        want = gap_bucket(first.time, second.time)
        timed = first.time is not None and second.time is not None
        tried = 0
        for steps, x in enumerate(self.cell_of[a].nearest(self._start(self.cell_of[a], first.time))):
            if steps >= TWIN_STEPS or tried >= TWIN_FIRST_TEXTS:
                return None
            tx = texts[x]
            if tx.author == first.author or not self._may_lend(tx.author):
                continue
            tried += 1
            target = tx.time + (second.time - first.time) if timed else None
            cell = self.cell_of[b]
            for more, y in enumerate(cell.nearest(self._start(cell, target))):
                if more >= TWIN_STEPS:
                    break
                ty = texts[y]
                if ty.author == first.author or ty.author == tx.author or not _disjoint(tx.groups, ty.groups):
                    continue
                if not self._may_lend(ty.author):
                    continue
                if gap_bucket(tx.time, ty.time) != want:
                    continue
                if _key(x, y) in self.used_pairs:
                    continue
                self.used_pairs.add(_key(x, y))
                self._use(x)
                self._use(y)
                self.in_different[tx.author] += 1
                self.in_different[ty.author] += 1
                return x, y
        return None

    def _may_lend(self, author: str) -> bool:
        """Whether an author may give one more text to a different-author pair (see AUTHOR_SLACK)."""
        return self.in_different[author] < self.in_same[author] + AUTHOR_SLACK
