"""Calling a system's `embed` on the task's samples (the metric it asks for: toolkit.retrieval.system_metric)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from core.errors import HarnessError
from core.progress import Progress
from tasks.reddit.records import Action


def embed_samples(system: Any, samples: Sequence[Sequence[Action]], progress: Progress | None = None) -> np.ndarray:
    """One float32 row per sample; a system returning anything else is a system bug, reported as such.

    `progress`, where given, advances by the number of samples once they are embedded.
    """
    embeddings = np.asarray(system.embed(list(samples)), dtype=np.float32)
    if embeddings.ndim != 2 or embeddings.shape[0] != len(samples):
        raise HarnessError(
            f"system {getattr(system, 'name', system)!r} returned embeddings of shape {embeddings.shape} "
            f"for {len(samples)} samples; expected ({len(samples)}, dim)"
        )
    if not np.isfinite(embeddings).all():
        raise HarnessError(f"system {getattr(system, 'name', system)!r} returned NaN or infinite embeddings")
    if progress is not None:
        progress.update(len(samples))
    return embeddings
