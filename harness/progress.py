"""One place for progress bars and timing, so library code never prints directly."""

from __future__ import annotations

import contextlib
import logging
import sys
import time
from collections.abc import Iterable, Iterator
from typing import TypeVar

T = TypeVar("T")

logger = logging.getLogger("harness")


def pbar(iterable: Iterable[T], *, desc: str, total: int | None = None, unit: str = "it") -> Iterator[T]:
    """A tqdm progress bar on stderr; silent when stderr is not a terminal (CI, TIRA logs)."""
    from tqdm.auto import tqdm

    return iter(tqdm(iterable, desc=desc, total=total, unit=unit, disable=not sys.stderr.isatty(), leave=False))


@contextlib.contextmanager
def duration(label: str, timings: dict[str, float] | None = None) -> Iterator[None]:
    """Log how long a step took and, if given a dict, record it there in seconds."""
    start = time.perf_counter()
    yield  # a failed step is reported by its error, not timed
    elapsed = time.perf_counter() - start
    if timings is not None:
        timings[label] = round(elapsed, 6)
    logger.info("%s took %.2fs", label, elapsed)
