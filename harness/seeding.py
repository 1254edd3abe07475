"""Seed every random number generator a run may use, so the same seed gives the same scores."""

from __future__ import annotations

import random
import sys

import numpy as np

# numpy's legacy generator and scikit-learn's `random_state` take seeds below 2**32; `harness run --seed` takes
# anything up to 2**64 - 1, as numpy's Generator and torch do
LEGACY_SEEDS = 2**32


def legacy_seed(seed: int) -> int:
    """The harness seed as numpy's legacy generator and scikit-learn's `random_state` take it: below 2**32.

    Seeds below 2**32 are kept as they are (results recorded with them stay reproducible); larger ones are taken
    modulo 2**32, as `seed_everything` seeds numpy. A system passes `legacy_seed(seed)`, never `seed` itself, to
    `random_state`, so every seed `harness run --seed` accepts fits.
    """
    return int(seed) % LEGACY_SEEDS


def seed_everything(seed: int) -> None:
    """Seed Python's, numpy's and (where a system imported it) torch's generators."""
    random.seed(seed)
    np.random.seed(legacy_seed(seed))
    # torch is seeded only if a system already imported it: importing it here would slow every run
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.manual_seed(seed)
        if torch.cuda.is_available():
            torch.cuda.manual_seed_all(seed)
