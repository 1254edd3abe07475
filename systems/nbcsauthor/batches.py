"""Labels and training batches: single-task (one label set) and SYSML's multitask set-up.

- Single-task: one head; each (market, author) account is a class. With one market that is
  SYSML/NBCSAuthor's single-market training; with several it pools them without linking accounts.
- Multitask (SYSML, paper Fig. 4): one head per market, whose classes are that market's authors,
  plus a CROSS head whose classes are the persons active in several markets. Every batch comes from
  one head: a market's batches hold its episodes; CROSS batches draw, for each (person, market) of a
  CROSS person in turn, one random episode of that person in that market, labelled by the person.
  CROSS batches add `cross_sampling` times the number of episodes per epoch (SYSML: 0.2).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from tasks.darkweb.records import Episode

SINGLE = "all"
CROSS = "CROSS"


class HeadBatch(NamedTuple):
    head: str
    episodes: np.ndarray  # indices into the training episodes
    labels: np.ndarray


class LabelPlan(NamedTuple):
    """Each head's class count, each episode's (head, label), and the CROSS draws."""

    classes: dict[str, int]
    heads: list[str]  # per episode
    labels: np.ndarray  # per episode
    cross: dict[tuple[str, str], tuple[int, list[int]]]  # (person, market) -> (CROSS label, its episodes)


def class_numbers(episodes: Sequence[Episode], *, multitask: bool) -> dict[tuple[str, str], tuple[str, int]]:
    """(market, author) -> (head, label), numbered by sorted name: the same episodes, the same labels.

    Single-task: one head, each account a class. Multitask: a head per market, its authors the classes.
    """
    if not multitask:
        accounts = sorted({(e.market, e.author) for e in episodes})
        return {a: (SINGLE, i) for i, a in enumerate(accounts)}
    numbers = {}
    for market in sorted({e.market for e in episodes}):
        names = sorted({e.author for e in episodes if e.market == market})
        numbers.update({(market, a): (market, i) for i, a in enumerate(names)})
    return numbers


def plan_labels(episodes: Sequence[Episode], *, multitask: bool, cross_persons: frozenset[str]) -> LabelPlan:
    """Class numbers by sorted name (`class_numbers`), so the same episodes always get the same labels."""
    numbers = class_numbers(episodes, multitask=multitask)
    heads = [numbers[(e.market, e.author)][0] for e in episodes]
    labels = np.array([numbers[(e.market, e.author)][1] for e in episodes], dtype=np.int64)
    classes: dict[str, int] = defaultdict(int)
    for head, _ in numbers.values():
        classes[head] += 1
    classes = dict(classes)  # heads in sorted order: `numbers` is built market by sorted market
    if not multitask:
        return LabelPlan(classes, heads, labels, {})
    persons = sorted(p for p in cross_persons if p in {e.person for e in episodes})
    cross_label = {p: i for i, p in enumerate(persons)}
    draws: dict[tuple[str, str], list[int]] = defaultdict(list)
    for i, e in enumerate(episodes):
        if e.person in cross_label:
            draws[(e.person, e.market)].append(i)
    cross = {key: (cross_label[key[0]], idx) for key, idx in sorted(draws.items())}
    if cross:
        classes[CROSS] = len(persons)
    return LabelPlan(classes, heads, labels, cross)


def epoch_batches(
    plan: LabelPlan, *, batch_size: int, cross_sampling: float, rng: np.random.Generator
) -> list[HeadBatch]:
    """One epoch's batches in random order; a batch of one (useless to BatchNorm) is dropped."""
    by_head: dict[str, list[int]] = defaultdict(list)
    for i, head in enumerate(plan.heads):
        by_head[head].append(i)
    batches = []
    for head in sorted(by_head):
        order = rng.permutation(np.asarray(by_head[head], dtype=np.int64))
        batches += [HeadBatch(head, chunk, plan.labels[chunk]) for chunk in _chunks(order, batch_size)]
    if plan.cross and cross_sampling > 0:
        keys = list(plan.cross)
        draws = int(round(cross_sampling * len(plan.heads)))
        picked, labels = [], []
        while len(picked) < draws:
            for k in rng.permutation(len(keys))[: draws - len(picked)]:
                label, pool = plan.cross[keys[k]]
                picked.append(pool[int(rng.integers(len(pool)))])
                labels.append(label)
        picked_a, labels_a = np.asarray(picked, dtype=np.int64), np.asarray(labels, dtype=np.int64)
        for chunk in _chunks(np.arange(len(picked_a)), batch_size):
            batches.append(HeadBatch(CROSS, picked_a[chunk], labels_a[chunk]))
    return [batches[i] for i in rng.permutation(len(batches))]


def _chunks(values: np.ndarray, size: int) -> list[np.ndarray]:
    return [values[s : s + size] for s in range(0, len(values), size) if len(values[s : s + size]) > 1]
