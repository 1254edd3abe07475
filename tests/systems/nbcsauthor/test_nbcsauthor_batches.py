"""Single-task and multitask labels (per-market heads plus CROSS) and the epoch's batches."""

from __future__ import annotations

from collections import Counter

import numpy as np
from helpers.darkweb_data import synthetic_split

from systems.nbcsauthor.batches import CROSS, SINGLE, epoch_batches, plan_labels


def test_single_task_labels_are_accounts():
    train = synthetic_split("train", authors_per_market=4, migrants=2)
    plan = plan_labels(train.episodes, multitask=False, cross_persons=frozenset())
    # p0 and p1 post in both markets but are two accounts each: 8 classes, no CROSS head
    assert plan.classes == {SINGLE: 8} and not plan.cross
    account = {(e.market, e.author): int(label) for e, label in zip(train.episodes, plan.labels, strict=True)}
    assert len(set(account.values())) == 8 and account[("alpha", "p0")] != account[("beta", "p0")]


def test_multitask_labels_per_market_and_cross():
    train = synthetic_split("train", authors_per_market=4, migrants=2, multitask=True)
    assert train.cross_persons == {"p0", "p1"}
    plan = plan_labels(train.episodes, multitask=True, cross_persons=train.cross_persons)
    assert plan.classes == {"alpha": 4, "beta": 4, CROSS: 2}
    assert plan.heads == [e.market for e in train.episodes]
    # CROSS draws: one entry per (person, market), all episodes of that account, one label per person
    assert sorted(plan.cross) == [("p0", "alpha"), ("p0", "beta"), ("p1", "alpha"), ("p1", "beta")]
    assert plan.cross[("p0", "alpha")][0] == plan.cross[("p0", "beta")][0] != plan.cross[("p1", "alpha")][0]
    for (person, market), (_, pool) in plan.cross.items():
        assert {(train.episodes[i].person, train.episodes[i].market) for i in pool} == {(person, market)}
    # a CROSS person absent from the episodes is ignored
    assert plan_labels(train.episodes, multitask=True, cross_persons=frozenset({"ghost"})).cross == {}


def test_epoch_batches_one_head_each_and_cross_share():
    train = synthetic_split("train", authors_per_market=6, episodes_per_author=4, migrants=3, multitask=True)
    plan = plan_labels(train.episodes, multitask=True, cross_persons=train.cross_persons)
    batches = epoch_batches(plan, batch_size=5, cross_sampling=0.25, rng=np.random.default_rng(0))
    regular = [b for b in batches if b.head != CROSS]
    cross = [b for b in batches if b.head == CROSS]
    # every episode once in its market's batches; labels are that head's labels
    assert sorted(i for b in regular for i in b.episodes) == list(range(len(train.episodes)))
    for b in regular:
        assert {train.episodes[i].market for i in b.episodes} == {b.head}
        assert b.labels.tolist() == plan.labels[b.episodes].tolist()
    # CROSS: a quarter of the episodes drawn, labelled by person, balanced over (person, market)
    drawn = [i for b in cross for i in b.episodes]
    assert len(drawn) == round(0.25 * len(train.episodes))
    person_label = {p: plan.cross[(p, "alpha")][0] for p in ("p0", "p1", "p2")}
    for b in cross:
        assert [person_label[train.episodes[i].person] for i in b.episodes] == b.labels.tolist()
    assert max(Counter((train.episodes[i].person, train.episodes[i].market) for i in drawn).values()) <= 2
    # the same generator state gives the same epoch
    again = epoch_batches(plan, batch_size=5, cross_sampling=0.25, rng=np.random.default_rng(0))
    assert [b.episodes.tolist() for b in again] == [b.episodes.tolist() for b in batches]
