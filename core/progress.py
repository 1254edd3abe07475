"""One place for progress and timing, so library code never prints directly.

`Progress` counts items (texts, problems, batches, queries): on a terminal it is a tqdm bar on
stderr; otherwise (CI, TIRA, `| tee log`) there is no bar but a plain line through the `harness`
logger at most every HARNESS_PROGRESS_INTERVAL seconds (default 30; 0 logs every update) and one
at the end (left out for work done within a second, unless the interval is shorter), e.g.

    encoding chunks: 1200/5000 texts (24%), 40.1 texts/s, eta 1m35s, loss=0.4123

`pbar(iterable, ...)` wraps an iterable in one, one item per element; batched work advances a
`Progress` by the batch's size (`bar.update(len(batch))`) and sets fields such as the running loss
with `bar.set_postfix(loss=...)`.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import time
from collections.abc import Iterable, Iterator
from typing import Any, TypeVar

from core.errors import HarnessError

T = TypeVar("T")

logger = logging.getLogger("harness")

INTERVAL_VARIABLE = "HARNESS_PROGRESS_INTERVAL"
DEFAULT_INTERVAL = 30.0  # seconds between two log lines when stderr is not a terminal
QUICK_SECONDS = 1.0  # work done faster gets no end line: cross-validation folds would fill the log
BARS = True  # False: log lines even on a terminal (processes that share one, whose bars would overwrite each other)


def log_interval() -> float:
    """Seconds between two progress log lines: HARNESS_PROGRESS_INTERVAL, else DEFAULT_INTERVAL."""
    value = os.environ.get(INTERVAL_VARIABLE, "").strip()
    if not value:
        return DEFAULT_INTERVAL
    try:
        seconds = float(value)
    except ValueError:
        seconds = -1.0
    if not seconds >= 0:  # also refuses nan
        raise HarnessError(f"{INTERVAL_VARIABLE} must be a number of seconds >= 0, got {value!r}")
    return seconds


def _on_terminal() -> bool:
    if not BARS:
        return False
    isatty = getattr(sys.stderr, "isatty", None)
    return bool(isatty and isatty())


def format_duration(seconds: float) -> str:
    """12s, 1m35s, 2h03m: short enough for a log line."""
    seconds = max(int(round(seconds)), 0)
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


def _format_rate(rate: float) -> str:
    return f"{rate:.0f}" if rate >= 100 else f"{rate:.1f}" if rate >= 10 else f"{rate:.2f}"


def _format_value(value: Any) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)


class Progress:
    """Progress over `total` items (None: unknown); a context manager, closed on exit.

    `end_line=False` leaves out the final log line, for callers that log their own summary.
    `disable=True` shows and logs nothing (e.g. the other processes of a torchrun launch).
    """

    def __init__(
        self,
        total: int | None = None,
        *,
        desc: str,
        unit: str = "items",
        end_line: bool = True,
        disable: bool = False,
    ) -> None:
        self.total = total
        self.desc = desc
        self.unit = unit
        self.count = 0
        self.postfix: dict[str, Any] = {}
        self.end_line = end_line
        self.disabled = disable
        self.closed = False
        self._started = self._last_log = time.perf_counter()
        self._logged = False
        self._bar: Any = None
        self._interval = log_interval()
        if not disable and _on_terminal():
            from tqdm.auto import tqdm

            self._bar = tqdm(total=total, desc=desc, unit=unit, leave=False, file=sys.stderr)

    def update(self, n: int = 1) -> None:
        """Advance by `n` items done."""
        self.count += n
        if self._bar is not None:
            self._bar.update(n)
        elif not self.disabled:
            now = time.perf_counter()
            if now - self._last_log >= self._interval:
                self._last_log = now
                self._logged = True
                logger.info("%s", self.line(now))

    def set_postfix(self, **fields: Any) -> None:
        """Fields shown after the counts (`loss=0.41`), kept until set again; shown from the next update on."""
        self.postfix.update(fields)
        if self._bar is not None:
            self._bar.set_postfix({k: _format_value(v) for k, v in self.postfix.items()}, refresh=False)

    def line(self, now: float | None = None) -> str:
        """`desc: done/total unit (pct), rate unit/s, eta ...` and the postfix fields."""
        elapsed = (time.perf_counter() if now is None else now) - self._started
        rate = self.count / elapsed if elapsed > 0 else 0.0
        if self.total:
            parts = [f"{self.count}/{self.total} {self.unit} ({100 * self.count / self.total:.0f}%)"]
        else:
            parts = [f"{self.count} {self.unit}"]
        parts.append(f"{_format_rate(rate)} {self.unit}/s")
        if self.closed:
            parts.append(f"took {format_duration(elapsed)}")
        elif self.total and rate > 0 and self.count < self.total:
            parts.append(f"eta {format_duration((self.total - self.count) / rate)}")
        parts += [f"{key}={_format_value(value)}" for key, value in self.postfix.items()]
        return f"{self.desc}: " + ", ".join(parts)

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        if self._bar is not None:
            self._bar.close()
        elif not self.disabled and self.end_line:
            now = time.perf_counter()
            if self._logged or now - self._started >= min(self._interval, QUICK_SECONDS):
                logger.info("%s", self.line(now))

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, exc_type: object, *exc: object) -> None:
        if exc_type is not None:
            self.end_line = False  # a failed step is reported by its error, not as done
        self.close()


def pbar(iterable: Iterable[T], *, desc: str, total: int | None = None, unit: str = "items") -> Iterator[T]:
    """The items of `iterable`, counted by a Progress (total: `len(iterable)` where it has one)."""
    if total is None and hasattr(iterable, "__len__"):
        total = len(iterable)  # type: ignore[arg-type]
    # the context manager also sees the consumer leaving early or failing (GeneratorExit at the yield)
    with Progress(total, desc=desc, unit=unit) as progress:
        for item in iterable:
            yield item
            progress.update()


@contextlib.contextmanager
def duration(label: str, timings: dict[str, float] | None = None) -> Iterator[None]:
    """Log how long a step took and, if given a dict, record it there in seconds."""
    start = time.perf_counter()
    yield  # a failed step is reported by its error, not timed
    elapsed = time.perf_counter() - start
    if timings is not None:
        timings[label] = round(elapsed, 6)
    logger.info("%s took %.2fs", label, elapsed)
