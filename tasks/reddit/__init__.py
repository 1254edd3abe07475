"""The `reddit` task: account ranking and linking on per-author post streams (Khan et al., NAACL 2021)."""

from tasks.reddit.records import Action, LinkingSet, RankingSet, RedditData, Sample, Stream
from tasks.reddit.task import RedditTask

__all__ = ["Action", "LinkingSet", "RankingSet", "RedditData", "RedditTask", "Sample", "Stream"]
