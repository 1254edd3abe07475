"""Seed every random number generator a run may use, so the same seed gives the same scores."""

from __future__ import annotations

import random
import sys

import numpy as np


def seed_everything(seed: int) -> None:
    """Seed Python's, numpy's and (where a system imported it) torch's generators."""
    random.seed(seed)
    np.random.seed(seed % (2**32))
    # torch is seeded only if a system already imported it: importing it here would slow every run
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.manual_seed(seed)
        if torch.cuda.is_available():
            torch.cuda.manual_seed_all(seed)
