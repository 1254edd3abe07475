"""The validation split of the SYSML family's training, and the best epoch it selects.

SYSML (`run.py`) holds out `val_frac = 0.1` of the training data, keeps the epoch with the lowest
validation loss (Lightning's ModelCheckpoint on `val_loss`) and halves the learning rate when that
loss stops falling (ReduceLROnPlateau); NBC-Softmax trains the same way. Its split is positional
(the last 10% of episodes or batches); ours is by author-episodes, so that a validation loss of a
classifier over authors means something and the thread-disjoint test protocol is respected:

- only accounts (market, author) with at least two training episodes take part, and each gives at
  most one episode, its latest (by start time, then id): the account keeps its earlier episodes for
  fitting, so its class exists, and the held-out episode is later, as test episodes are;
- the held-out episode shares no thread with the account's other (fitting) episodes: a validation
  loss that rewards recalling a thread's topic would pick the epoch that memorises topics;
- among the eligible accounts, a seeded random choice of round(share * episodes) of them (fewer if
  fewer are eligible; the count is in the fit info).

The fitting episodes and the validation episodes are disjoint, and no validation episode shares a
thread with a fitting episode of its own account.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
from torch import nn

from tasks.darkweb.records import Episode


class ValidationSplit(NamedTuple):
    """Indices into the training episodes: those fitted on and those held out for validation."""

    fit: list[int]
    validation: list[int]
    eligible_accounts: int  # accounts that could have given an episode


def threads(episode: Episode) -> set[str]:
    """The known threads an episode's posts are in ("" is unknown: it shares nothing)."""
    return {p.thread_id for p in episode.posts if p.thread_id}


def hold_out(episodes: Sequence[Episode], share: float, rng: np.random.Generator) -> ValidationSplit:
    """The validation split described in the module docstring; share 0 holds nothing out."""
    if not 0.0 <= share < 1.0:
        raise ValueError(f"validation share must lie in [0, 1), got {share!r}")
    everything = list(range(len(episodes)))
    wanted = int(round(share * len(episodes)))
    if wanted == 0:
        return ValidationSplit(everything, [], 0)
    by_account: dict[tuple[str, str], list[int]] = defaultdict(list)
    for i, episode in enumerate(episodes):
        by_account[(episode.market, episode.author)].append(i)
    candidates = []
    for account in sorted(by_account):
        members = sorted(by_account[account], key=lambda i: (episodes[i].start, episodes[i].id))
        if len(members) < 2:
            continue
        last, rest = members[-1], members[:-1]
        if threads(episodes[last]) & set().union(*(threads(episodes[i]) for i in rest)):
            continue
        candidates.append(last)
    chosen = sorted(candidates[k] for k in rng.permutation(len(candidates))[:wanted])
    held = set(chosen)
    return ValidationSplit([i for i in everything if i not in held], chosen, len(candidates))


class BestEpoch:
    """Keeps a copy of a module's weights at the epoch of the lowest finite validation loss."""

    def __init__(self) -> None:
        self.epoch: int | None = None  # 1-based
        self.loss = math.inf
        self._state: dict | None = None

    def update(self, epoch: int, loss: float, module: nn.Module) -> bool:
        """Record `epoch` (1-based) if its loss is the lowest so far; True if it was."""
        if not math.isfinite(loss) or loss >= self.loss:
            return False
        self.epoch, self.loss = epoch, loss
        self._state = {k: v.detach().cpu().clone() for k, v in module.state_dict().items()}
        return True

    def restore(self, module: nn.Module) -> None:
        """Load the kept weights into `module` (nothing kept: nothing changes)."""
        if self._state is not None:
            module.load_state_dict(self._state)
