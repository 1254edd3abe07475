"""Band-fold encoders pre-trained several at a time (`harness pretrain-style --jobs N`), each in its own process.

A band-fold folder holds K x (repeats + views) + 1 encoders that do not depend on one another, and one pre-training
keeps little more than one core busy (its TF-IDF and sparse products run on one; on this project's 2-core VM the
load stayed at 1.1-1.5), so processes, not threads, are what use a machine's cores (`benchmarks/band_fold_jobs.py`:
a three-fold folder in 572 s two at a time against 954 s one at a time, at 5.9 GB of memory against 3.4).

Each worker reads the posts of the fold it is given (that fold's exclusions applied, as one at a time does), trains
with its share of the BLAS and torch threads and sends the model back; the parent keeps the encoders' order. The recipe
(posts, exclusions, settings, seed) is that of one at a time, so the encoders are the same up to the summation order
that another number of threads can change.

Workers are spawned, not forked (torch's thread pools do not survive a fork), and log through the `harness` logger
with the encoder's folder name in front, as plain lines: several progress bars on one terminal would overwrite one
another.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

from core.errors import HarnessError
from systems.style_encoder.corpus import Exclusions, PretrainingCorpus, pretraining_corpus
from systems.style_encoder.ngram import NgramStyleModel, NgramStylePretraining, pretrain_ngram_style

logger = logging.getLogger("harness")

MAIN = -1  # the fold of the folder's main encoder, which leaves out no training fold


class FoldEncoder(NamedTuple):
    """One encoder to pre-train: its folder name ("." the main one), its fold (0-based; MAIN for the main one), what it
    leaves out and its settings."""

    name: str
    fold: int
    exclusions: Exclusions
    settings: NgramStylePretraining


def pretrain_fold_encoders(
    posts: Path,
    encoders: Sequence[FoldEncoder],
    *,
    jobs: int,
    read: dict[int, PretrainingCorpus] | None = None,
) -> list[tuple[NgramStyleModel, dict[str, Any]]]:
    """(model, manifest) of each of `encoders`, in their order: one at a time in this process where `jobs` is 1
    (`read`: posts already read, by fold), else `jobs` at a time in spawned processes that share this one's threads."""
    if jobs == 1 or len(encoders) < 2:
        fold_posts = _FoldPosts(posts, read)
        return [pretrain_ngram_style(fold_posts.of(e), e.exclusions, None, e.settings) for e in encoders]
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    import torch

    threads = max(1, torch.get_num_threads() // jobs)
    logger.info("pre-training %d encoders %d at a time, %d thread(s) each", len(encoders), jobs, threads)
    level = logging.getLogger("harness").getEffectiveLevel()
    context = multiprocessing.get_context("spawn")
    initargs = (Path(posts), threads, level)
    with ProcessPoolExecutor(jobs, mp_context=context, initializer=_start_worker, initargs=initargs) as pool:
        futures = [pool.submit(_pretrain_one, encoder) for encoder in encoders]
        try:
            return [future.result() for future in futures]
        except BrokenProcessPool:
            pool.shutdown(cancel_futures=True)
            raise HarnessError(
                f"a pre-training process ended abruptly (out of memory? each of the {jobs} jobs holds its fold's "
                "posts and model; try a smaller --jobs); nothing was written"
            ) from None
        except BaseException:  # the first failure, Ctrl-C or SIGTERM: no encoder goes on, none not begun begins
            _stop_workers(pool)
            pool.shutdown(cancel_futures=True)
            raise


def _stop_workers(pool: Any) -> None:
    """End the pool's processes now: a stopped command must not leave encoders training on, nor idle workers holding
    their fold's posts (a SIGTERM had left them running). ProcessPoolExecutor can stop running work itself only from
    Python 3.14 (`terminate_workers`); before, its processes are ended one by one."""
    terminate = getattr(pool, "terminate_workers", None)
    if terminate is not None:
        terminate()
        return
    processes = getattr(pool, "_processes", None) or {}
    for process in list(processes.values()):
        process.terminate()


class _FoldPosts:
    """The posts of one fold at a time (the encoders come fold by fold), read with that fold's exclusions."""

    def __init__(self, posts: Path, read: dict[int, PretrainingCorpus] | None = None) -> None:
        self.posts, self.read = posts, dict(read or {})
        self.fold: int | None = None
        self.corpus: PretrainingCorpus | None = None

    def of(self, encoder: FoldEncoder) -> PretrainingCorpus:
        if encoder.fold != self.fold or self.corpus is None:
            self.fold = encoder.fold
            known = self.read.get(encoder.fold)
            self.corpus = known if known is not None else pretraining_corpus(self.posts, encoder.exclusions)
            logger.info("%s: %d posts to pre-train on", encoder.name, self.corpus.posts)
        return self.corpus


_worker: dict[str, Any] = {"posts": None, "name": ""}  # a worker's posts (`_FoldPosts`), and the encoder it trains now


class _NamePrefix(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        record.msg = f"[{_worker['name']}] {record.msg}"
        return True


def _start_worker(posts: Path, threads: int, level: int) -> None:
    import torch
    from threadpoolctl import threadpool_limits

    import core.progress

    _end_with_parent()
    torch.set_num_threads(threads)
    threadpool_limits(threads)
    core.progress.BARS = False
    _worker["posts"] = _FoldPosts(posts)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(message)s"))
    handler.addFilter(_NamePrefix())
    harness_logger = logging.getLogger("harness")
    harness_logger.handlers[:] = [handler]
    harness_logger.setLevel(level)
    harness_logger.propagate = False


def _end_with_parent(every: float = 1.0) -> None:
    """Exit when the command that started this worker is gone: SIGKILL (the OOM killer's, `kill -9`) runs none of its
    clean-up, and an orphaned worker would go on holding its fold's posts and model (gigabytes) for good (audit 10,
    F7). A watcher thread, not PR_SET_PDEATHSIG, which fires when the creating thread ends and is Linux only."""
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(every)
        os._exit(1)

    threading.Thread(target=watch, name="end-with-parent", daemon=True).start()


def _pretrain_one(encoder: FoldEncoder) -> tuple[NgramStyleModel, dict[str, Any]]:
    _worker["name"] = encoder.name
    return pretrain_ngram_style(_worker["posts"].of(encoder), encoder.exclusions, None, encoder.settings)
