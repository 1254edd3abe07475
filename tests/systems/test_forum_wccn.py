"""forum_wccn: how training sequences become samples of their author, and its refusals."""

from __future__ import annotations

import pytest

from core.errors import HarnessError
from harness.registry import system_class
from systems.forum_wccn import ForumWccn, author_samples


def test_registered():
    assert system_class("forum_wccn") is ForumWccn


def test_authors_give_their_sequences_whole_or_one_cut_into_runs_of_consecutive_posts():
    sequences = [("a1", "a2", "a3", "a4", "a5"), ("b1",), ("c1", "c2"), ("d1",), ("d2", "d3")]
    authors = ["a", "b", "c", "d", "d"]
    documents, labels = author_samples(sequences, authors, 2)
    # a and c wrote one sequence each: cut in two; b's one post cannot show how an author varies; d wrote two
    assert documents == ["a1\na2", "a3\na4\na5", "c1", "c2", "d1", "d2\nd3"]
    assert labels.tolist() == [0, 0, 2, 2, 3, 3]
    documents, labels = author_samples(sequences[:1], authors[:1], 3)
    assert documents == ["a1\na2", "a3", "a4\na5"] and labels.tolist() == [0, 0, 0]


class OneSplit:
    def __init__(self, sequences):
        self.sequences = sequences

    def post_texts(self):
        return self.sequences

    def sequence_authors(self):
        return tuple(str(n) for n in range(len(self.sequences)))


def test_refusals():
    with pytest.raises(HarnessError, match="parts"):
        ForumWccn(parts=1)
    with pytest.raises(HarnessError, match="dimensions"):
        ForumWccn(dimensions=0)
    with pytest.raises(HarnessError, match="at least 3 training sequences"):
        ForumWccn().fit(OneSplit((("a", "b"),)), seed=0)
    with pytest.raises(HarnessError, match="no training author has two sequences or one of 2 posts"):
        ForumWccn().fit(OneSplit((("one post here",), ("another post",), ("a third post",))), seed=0)
    with pytest.raises(HarnessError, match="not fitted"):
        ForumWccn().embed([])
