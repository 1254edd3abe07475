"""`reddit`: account ranking and linking on per-author post streams (Khan et al., NAACL 2021).

Input: a posts file in the forum-posts format (`posts.jsonl[.gz]`: author, subforum = subreddit,
created, text), e.g. ../shared/data/forum-posts. Each post becomes an action (text, hour of day,
subreddit index among the N most common training subreddits, or "other"). The split is by author
and by time (tasks.reddit.split); training streams go to `fit`, and the test split carries the
ranking set (tasks.reddit.ranking) and the linking set (tasks.reddit.linking).

Protocols (`protocol`, recorded in every result's task parameters and measure settings):

- "leak-free" (the default): a ranking query's target lies outside every thread of the query and
  starts more than `ranking_gap_days` after it (tasks.reddit.ranking); a distinguished author's
  linking target never shares a thread with their query (tasks.reddit.linking). Linking is scored
  per subreddit and averaged, as the paper reports it (section 4.3, Table 2: "averaged over 5
  subreddits"): the `linking_subreddit_count` most common training subreddits, each with at least
  `linking_min_subreddit_queries` distinguished authors.
- "legacy": query and target are consecutive posts (they often share threads), linking is pooled
  over all subreddits; the scores of task version 1, kept to reproduce them.

Scores: MRR, R@4, R@8 (ranking); EER and minDCF (linking, at `linking_target_size`; lower is
better). Under "leak-free", `eer` and `min_dcf` are the means over the averaged subreddits,
`eer@<subreddit>` / `min_dcf@<subreddit>` each subreddit's figure, and `eer_pooled` /
`min_dcf_pooled` the figures of one linking set pooled over all subreddits (what "legacy" calls
`eer`, less the thread rule). Curves: `eer_vs_target_size` is the subreddit mean (the paper's
Figure 6), `eer_vs_target_size_pooled` and `det` come from the pooled set. Systems say how their
embeddings compare through a `metric` attribute ("cosine" or "euclidean"; cosine when absent;
toolkit.retrieval.system_metric), as for every embedding task.

Why not more linking queries: the paper's distinguished authors have at least 100 posts in the
subreddit before the target period and 16 after it; this data gives few such authors per
subreddit (at the default split, ApplyingToCollege about 105 with 32 or more, the next subreddit
20, the rest 5 or fewer), so the history minimum is already lowered to 32 (`linking_min_query_posts`);
lowering it further would make queries no larger than targets, which is not the paper's setting.
Every result records the per-subreddit counts and which subreddits were left out of the mean, and why.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

from core.errors import DataError, HarnessError
from core.progress import Progress
from harness.task import Evaluation, TaskMetadata
from tasks.forum.reader import find_posts_file, read_forum_posts, warn_of_empty_texts
from tasks.forum.records import ForumPost, time_order
from tasks.reddit.actions import ActionEncoder, subreddit_vocabulary
from tasks.reddit.linking import (
    EER_VARIANT,
    build_linking_set,
    build_subreddit_linking_sets,
    check_linking_set,
    evaluate_linking,
    evaluate_linking_by_subreddit,
)
from tasks.reddit.ranking import build_leak_free_ranking_set, build_ranking_set, check_ranking_set, evaluate_ranking
from tasks.reddit.records import LinkingSet, RedditData, Stream
from tasks.reddit.split import AuthorTimeSplit, split_by_author_and_time, why_a_side_is_empty
from toolkit.retrieval import system_metric

logger = logging.getLogger("harness")

CITATION = (
    "Aleem Khan, Elizabeth Fleming, Noah Schofield, Marcus Bishop, Nicholas Andrews. "
    "A Deep Metric Learning Approach to Account Linking. NAACL 2021."
)


PROTOCOLS = ("leak-free", "legacy")
SECONDS_PER_DAY = 86400


def posts_by_author(posts: Sequence[ForumPost]) -> dict[str, list[ForumPost]]:
    """Each author's posts, oldest first (post id breaks ties in time, not the file's order), authors sorted by name."""
    by_author: dict[str, list[ForumPost]] = defaultdict(list)
    for post in posts:
        by_author[post.author].append(post)
    return {author: sorted(by_author[author], key=time_order) for author in sorted(by_author)}


def group_streams(posts: Sequence[ForumPost], encoder: ActionEncoder) -> tuple[Stream, ...]:
    """One stream per author (sorted by name), actions oldest first (post id breaks ties in time)."""
    return tuple(Stream(author, encoder.actions(own)) for author, own in posts_by_author(posts).items())


class RedditTask:
    """Account ranking and linking on the reddit-style posts of the forum-posts format.

    Parameters (all JSON values, so `harness run --task-param KEY=VALUE` can set them):
        protocol: "leak-free" (default) or "legacy" (the module doc says how they differ).
        num_subreddits: N, the subreddit vocabulary (most common in training); others -> "other".
        cutoff_quantile: the split time T is this quantile of all post times.
        test_author_share: share of authors (by a seeded hash of the name) that are test authors.
        split_seed: seeds the author coin and the random subsets under the caps below.
        ranking_query_size, ranking_target_size: posts per ranking query and target (paper: 16, 16).
        ranking_gap_days: leak-free: a ranking target's posts are made more than this after the query's last post.
        linking_split_quantile: T2, between history and target posts, is this quantile of the test posts' times.
        linking_query_size: a query holds the most recent this-many history posts (paper: 100).
        linking_min_query_posts: history posts a distinguished author needs at least.
        linking_target_sizes: target sample sizes of the EER curve (paper: 1, 2, 4, 8, 16).
        linking_target_size: the size the reported EER and minDCF are measured at (paper: 4).
        linking_subreddit: restrict linking to this subreddit's posts (None: all subreddits); under
            "leak-free" the mean is then over this one subreddit.
        linking_subreddit_count: leak-free: the per-subreddit mean is over this many most common
            training subreddits (paper: 5).
        linking_min_subreddit_queries: leak-free: a subreddit with fewer distinguished authors is
            left out of the mean (and recorded). Default 10: with fewer same-author trials one trial
            moves the miss rate, hence the EER, by more than 0.1 (5 queries gave EER 0.20 in one
            subreddit against 0.30-0.38 in the others, on the development data).
        max_linking_queries, max_linking_targets: caps on distinguished authors and on target
            accounts (paper: 100 and 5,000); None keeps all.
        p_target, c_miss, c_fa: minDCF's prior and costs (paper: 0.05, 1, 2).
        min_dcf_normalized: divide minDCF by the cost of the better trivial system (reject all here).
            The paper's minDCF values (0.79-0.999) are above 0.05, the most an unnormalised minDCF
            can be with these costs, so they must be normalised; True keeps them comparable.
    """

    metadata: ClassVar[TaskMetadata] = TaskMetadata(
        name="reddit",
        version="2",  # 2: the leak-free protocol became the default (version 1 = protocol "legacy")
        kind="linking",
        description=(
            "account ranking (MRR, R@4, R@8) and linking (EER, minDCF) on per-author post streams, "
            "split by author and time (Khan et al. 2021); main score EER, lower is better"
        ),
        main_score="eer",
        measures=("mrr", "recall_at_4", "recall_at_8", "eer", "min_dcf"),
        splits=("train", "test"),
        citation=CITATION,
        ranking_rows={"evaluation": "ranking"},  # account ranking's rows; the linking rows hold trials, not ranks
        table_note=(
            "MRR and R@k: account ranking, one ranking over the test authors; EER and minDCF: linking, the unweighted "
            "mean over the subreddits with at least {linking_min_subreddit_queries} query authors "
            "({linking_averaged_subreddits}; Khan et al. average five), minDCF normalised (p_target {p_target}, "
            "C_miss {c_miss}, C_fa {c_fa}); protocol {protocol} (lowest-seed run of the first row)."
        ),
        curve_note="the pooled linking set of every subreddit, target size {linking_target_size}, not the table's mean",
    )

    def __init__(
        self,
        *,
        protocol: str = "leak-free",
        num_subreddits: int = 2048,
        cutoff_quantile: float = 0.5,
        test_author_share: float = 0.5,
        split_seed: int = 0,
        ranking_query_size: int = 16,
        ranking_target_size: int = 16,
        ranking_gap_days: float = 1.0,
        linking_split_quantile: float = 0.5,
        linking_query_size: int = 64,
        linking_min_query_posts: int = 32,
        linking_target_sizes: Sequence[int] = (1, 2, 4, 8, 16),
        linking_target_size: int = 4,
        linking_subreddit: str | None = None,
        linking_subreddit_count: int = 5,
        linking_min_subreddit_queries: int = 10,
        max_linking_queries: int | None = None,
        max_linking_targets: int | None = None,
        p_target: float = 0.05,
        c_miss: float = 1.0,
        c_fa: float = 2.0,
        min_dcf_normalized: bool = True,
    ) -> None:
        if protocol not in PROTOCOLS:
            raise HarnessError(f"protocol must be one of {PROTOCOLS}, got {protocol!r}")
        if ranking_gap_days < 0:
            raise HarnessError(f"ranking_gap_days must not be negative, got {ranking_gap_days}")
        if linking_subreddit_count < 1 or linking_min_subreddit_queries < 1:
            raise HarnessError("linking_subreddit_count and linking_min_subreddit_queries must be positive")
        if num_subreddits < 1:
            raise HarnessError(f"num_subreddits must be positive, got {num_subreddits}")
        for name, value in (("cutoff_quantile", cutoff_quantile), ("test_author_share", test_author_share)):
            if not 0.0 < value < 1.0:
                raise HarnessError(f"{name} must lie in (0, 1), got {value}")
        if not 0.0 < linking_split_quantile < 1.0:
            raise HarnessError(f"linking_split_quantile must lie in (0, 1), got {linking_split_quantile}")
        if split_seed < 0:  # numpy's generators take seeds of any size, but none below 0
            raise HarnessError(f"split_seed must not be negative, got {split_seed}")
        if linking_target_size < 1:
            raise HarnessError(f"linking_target_size must be positive, got {linking_target_size}")
        for name, cap in (("max_linking_queries", max_linking_queries), ("max_linking_targets", max_linking_targets)):
            if cap is not None and cap < 1:
                raise HarnessError(f"{name} must be positive or None, got {cap}")
        sizes = tuple(int(k) for k in linking_target_sizes)
        if not sizes or min(sizes) < 1:
            raise HarnessError(f"linking_target_sizes must be positive integers, got {list(linking_target_sizes)}")
        if linking_target_size not in sizes:
            sizes = tuple(sorted({*sizes, linking_target_size}))
        if min(ranking_query_size, ranking_target_size, linking_query_size) < 1:
            raise HarnessError("sample sizes must be positive")
        if not 1 <= linking_min_query_posts <= linking_query_size:
            raise HarnessError("need 1 <= linking_min_query_posts <= linking_query_size")
        if not 0.0 < p_target < 1.0 or c_miss <= 0 or c_fa <= 0:
            raise HarnessError("need 0 < p_target < 1 and positive costs")
        self.protocol = protocol
        self.num_subreddits = num_subreddits
        self.cutoff_quantile = cutoff_quantile
        self.test_author_share = test_author_share
        self.split_seed = split_seed
        self.ranking_query_size = ranking_query_size
        self.ranking_target_size = ranking_target_size
        self.ranking_gap_days = ranking_gap_days
        self.linking_split_quantile = linking_split_quantile
        self.linking_query_size = linking_query_size
        self.linking_min_query_posts = linking_min_query_posts
        self.linking_target_sizes = sizes
        self.linking_target_size = linking_target_size
        self.linking_subreddit = linking_subreddit
        self.linking_subreddit_count = linking_subreddit_count
        self.linking_min_subreddit_queries = linking_min_subreddit_queries
        self.max_linking_queries = max_linking_queries
        self.max_linking_targets = max_linking_targets
        self.p_target = p_target
        self.c_miss = c_miss
        self.c_fa = c_fa
        self.min_dcf_normalized = min_dcf_normalized
        self._posts_cache: tuple[Path, float, list[ForumPost], str] | None = None

    def _read(self, data_dir: Path) -> tuple[Path, list[ForumPost], str]:
        """The posts file of a data folder, read once per task object (train and test come from the same file)."""
        path = find_posts_file(Path(data_dir)).resolve()
        stamp = path.stat().st_mtime
        if self._posts_cache is None or self._posts_cache[:2] != (path, stamp):
            posts, checksum = read_forum_posts(path)
            warn_of_empty_texts(path, sum(not post.text.strip() for post in posts), len(posts))
            self._posts_cache = (path, stamp, posts, checksum)
        return path, self._posts_cache[2], self._posts_cache[3]

    def training_post_ids(self, data_dir: Path) -> set[str]:
        """The post ids of the training split (training authors' posts before the cutoff): all that a model made
        for this task may learn from (`harness pretrain-style --train-split-of reddit`)."""
        return {post.post_id for post in self._split(self._read(data_dir)[1]).train}

    def _split(self, posts: Sequence[ForumPost]) -> AuthorTimeSplit:
        return split_by_author_and_time(
            posts,
            cutoff_quantile=self.cutoff_quantile,
            test_author_share=self.test_author_share,
            seed=self.split_seed,
        )

    def load(self, data_dir: Path, split: str) -> RedditData:
        """The training streams ("train") or the test streams with the ranking and linking sets ("test")."""
        if split not in self.metadata.splits:
            raise HarnessError(f"task reddit has splits {self.metadata.splits}, not {split!r}")
        path, posts, checksum = self._read(data_dir)
        parts = self._split(posts)
        if not parts.train or not parts.test:
            why = why_a_side_is_empty(posts, parts, test_author_share=self.test_author_share, seed=self.split_seed)
            raise DataError(
                f"the split leaves {len(parts.train)} training and {len(parts.test)} test posts; both need some: {why}",
                path=path,
            )
        encoder = ActionEncoder(subreddit_vocabulary(parts.train, self.num_subreddits))
        counts: dict[str, Any] = {"protocol": self.protocol, "split": parts.counts}
        if split == "train":
            streams = group_streams(parts.train, encoder)
            return RedditData("train", streams, encoder.subreddits, path, checksum, counts)
        by_author = posts_by_author(parts.test)
        streams = tuple(Stream(author, encoder.actions(own)) for author, own in by_author.items())
        legacy = self.protocol == "legacy"
        if legacy:
            ranking, counts["ranking"] = build_ranking_set(
                streams, query_size=self.ranking_query_size, target_size=self.ranking_target_size
            )
        else:
            ranking, counts["ranking"] = build_leak_free_ranking_set(
                by_author,
                encoder,
                query_size=self.ranking_query_size,
                target_size=self.ranking_target_size,
                gap_seconds=self.ranking_gap_days * SECONDS_PER_DAY,
            )
        linking_settings = {
            "split_quantile": self.linking_split_quantile,
            "query_size": self.linking_query_size,
            "min_query_posts": self.linking_min_query_posts,
            "target_sizes": self.linking_target_sizes,
            "max_queries": self.max_linking_queries,
            "max_targets": self.max_linking_targets,
            "seed": self.split_seed,
            "exclude_query_threads": not legacy,
        }
        linking, counts["linking"] = build_linking_set(
            parts.test, encoder, subreddit=self.linking_subreddit, **linking_settings
        )
        by_subreddit = {}
        if not legacy:
            names = (
                (self.linking_subreddit,)
                if self.linking_subreddit is not None
                else encoder.subreddits[: self.linking_subreddit_count]
            )
            by_subreddit, counts["linking_by_subreddit"] = build_subreddit_linking_sets(
                parts.test,
                encoder,
                subreddits=names,
                min_queries=self.linking_min_subreddit_queries,
                **linking_settings,
            )
        counts["unknown_subreddit_test_posts"] = sum(
            1 for s in streams for a in s.actions if a.subreddit == encoder.other
        )
        logger.info("reddit test split (%s): %s", self.protocol, _summary(counts))
        logger.debug("reddit test split counts: %s", counts)
        return RedditData("test", streams, encoder.subreddits, path, checksum, counts, ranking, linking, by_subreddit)

    def check_splits(self, train: RedditData, test: RedditData) -> None:
        """Refuse a test split the evaluation cannot score, before a system is fitted (harness.task.SplitCheck)."""
        self._check_test_split(test)

    def _check_test_split(self, test: RedditData) -> None:
        if test.ranking is None or test.linking is None:
            raise HarnessError("the reddit test split holds no ranking or linking set (load(data_dir, 'test'))")
        check_ranking_set(test.ranking)
        check_linking_set(test.linking, self.linking_target_size)
        if self.protocol != "legacy" and not test.linking_by_subreddit:
            left_out = test.counts.get("linking_by_subreddit", {}).get("left_out", {})
            shown = "; ".join(f"{name}: {why}" for name, why in left_out.items()) if left_out else "none"
            raise HarnessError(
                f"no subreddit has {self.linking_min_subreddit_queries} or more distinguished linking authors to "
                f"average over (left out: {shown}); lower linking_min_subreddit_queries or linking_min_query_posts, "
                "or pass --task-param protocol=legacy"
            )

    def evaluate(self, system: Any, data: RedditData) -> Evaluation:
        """Embed the ranking and linking samples with the system and score both evaluations."""
        if data.ranking is None or data.linking is None:
            raise HarnessError("evaluate needs the test split (load(data_dir, 'test'))")
        self._check_test_split(data)  # as `harness run` checked it before the fit
        metric = system_metric(system)
        by_subreddit = (data.linking_by_subreddit or {}) if self.protocol != "legacy" else {}
        sets = [data.linking, *by_subreddit.values()]
        total = 2 * len(data.ranking.queries) + sum(_linking_samples(linking) for linking in sets)
        progress = Progress(total, desc=f"reddit: evaluating {getattr(system, 'name', 'system')}", unit="samples")
        ranking_scores, ranking_details = evaluate_ranking(system, data.ranking, metric=metric, progress=progress)
        measure = {
            "metric": metric,
            "main_target_size": self.linking_target_size,
            "p_target": self.p_target,
            "c_miss": self.c_miss,
            "c_fa": self.c_fa,
            "normalized": self.min_dcf_normalized,
        }
        linking_scores, linking_details, curves = evaluate_linking(system, data.linking, progress=progress, **measure)
        if self.protocol != "legacy":
            averaged, subreddit_details, subreddit_curves = evaluate_linking_by_subreddit(
                system, data.linking_by_subreddit, progress=progress, **measure
            )
            linking_scores = {
                "eer": averaged.pop("eer"),
                "min_dcf": averaged.pop("min_dcf"),
                "eer_pooled": linking_scores["eer"],
                "min_dcf_pooled": linking_scores["min_dcf"],
                **averaged,  # eer@<subreddit>, min_dcf@<subreddit>
            }
            linking_details = [{**row, "linking_set": "pooled"} for row in linking_details] + subreddit_details
            curves = {
                "main_target_size": self.linking_target_size,
                "eer_vs_target_size": subreddit_curves["eer_vs_target_size"],
                "eer_vs_target_size_pooled": curves["eer_vs_target_size"],
                "det": curves["det"],  # of the pooled set
                "by_subreddit": subreddit_curves["by_subreddit"],
            }
        progress.close()
        settings = {
            "protocol": self.protocol,
            "metric": metric,
            "min_dcf": {
                "p_target": self.p_target,
                "c_miss": self.c_miss,
                "c_fa": self.c_fa,
                "normalized": self.min_dcf_normalized,
            },
            "eer_variant": EER_VARIANT,
            "linking_target_size": self.linking_target_size,
            "linking_subreddit": self.linking_subreddit,
            "linking_averaged_subreddits": list(data.linking_by_subreddit),
            "counts": data.counts,
        }
        return Evaluation(
            scores={**ranking_scores, **linking_scores},
            details=ranking_details + linking_details,
            curves=curves,
            settings=settings,
        )


def _linking_samples(linking: LinkingSet) -> int:
    """The samples a linking evaluation embeds: its queries and its targets at every size."""
    return len(linking.queries) + sum(len(targets) for targets in linking.targets.values())


def _summary(counts: dict[str, Any]) -> str:
    """One readable line of the test split's counts (all of them are in result.json and in the debug log)."""
    linking = counts["linking"]
    parts = [
        f"{counts['ranking']['authors']} ranking authors",
        f"linking {linking['queries']} queries x {linking['target_accounts']} target accounts",
    ]
    by_subreddit = counts.get("linking_by_subreddit")
    if by_subreddit:
        averaged = by_subreddit["averaged"]  # none where every subreddit is left out (an error follows: audit 21)
        parts.append("EER averaged over " + (", ".join(averaged) if averaged else "no subreddit"))
        if by_subreddit["left_out"]:
            parts.append("left out: " + "; ".join(f"{k} ({v})" for k, v in by_subreddit["left_out"].items()))
    return ", ".join(parts)
