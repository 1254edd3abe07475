"""forum_wccn: how training sequences become samples of their author, and its refusals."""

from __future__ import annotations

import pytest

from core.errors import HarnessError
from harness.registry import system_class
from systems.forum_wccn import ForumWccn, sequence_parts


def test_registered():
    assert system_class("forum_wccn") is ForumWccn


def test_sequences_are_cut_into_runs_of_consecutive_posts_one_author_each():
    sequences = [("a1", "a2", "a3", "a4", "a5"), ("b1",), ("c1", "c2")]
    documents, authors = sequence_parts(sequences, 2)
    # b has one post: it cannot show how an author varies, so it gives no sample
    assert documents == ["a1\na2", "a3\na4\na5", "c1", "c2"]
    assert authors.tolist() == [0, 0, 2, 2]
    documents, authors = sequence_parts(sequences, 3)
    assert documents == ["a1\na2", "a3", "a4\na5"] and authors.tolist() == [0, 0, 0]


class OneSplit:
    def __init__(self, sequences):
        self.sequences = sequences

    def post_texts(self):
        return self.sequences


def test_refusals():
    with pytest.raises(HarnessError, match="parts"):
        ForumWccn(parts=1)
    with pytest.raises(HarnessError, match="dimensions"):
        ForumWccn(dimensions=0)
    with pytest.raises(HarnessError, match="at least 3 training sequences"):
        ForumWccn().fit(OneSplit((("a", "b"),)), seed=0)
    with pytest.raises(HarnessError, match="no training sequence has 2 posts"):
        ForumWccn().fit(OneSplit((("one post here",), ("another post",), ("a third post",))), seed=0)
    with pytest.raises(HarnessError, match="not fitted"):
        ForumWccn().embed([])
