"""Task `darkweb`: SYSML / NBC-Softmax forum author retrieval and cross-market migrant linking."""

from tasks.darkweb.records import DarkwebData, Episode, EpisodePost
from tasks.darkweb.task import DarkwebTask

__all__ = ["DarkwebData", "DarkwebTask", "Episode", "EpisodePost"]
