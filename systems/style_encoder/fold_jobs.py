"""Band-fold encoders pre-trained several at a time (`harness pretrain-style --jobs N`), each in its own process.

A band-fold folder holds K x (repeats + views) + 1 encoders that do not depend on one another, and one pre-training
keeps little more than one core busy (its TF-IDF and sparse products run on one; on this project's 2-core VM the
load stayed at 1.1-1.5), so processes, not threads, are what use a machine's cores (`benchmarks/band_fold_jobs.py`:
a three-fold folder in 572 s two at a time against 954 s one at a time, at 5.9 GB of memory against 3.4).

Each worker reads the posts of the fold it is given (that fold's exclusions applied, as one at a time does), trains
with `threads` BLAS and torch threads and sends the model back; the parent keeps the encoders' order. The recipe
(posts, exclusions, settings, seed) is that of one at a time, so the encoders are the same up to the summation order
that another number of threads can change.

Workers are spawned, not forked (torch's thread pools do not survive a fork), and log through the `harness` logger
with the encoder's folder name in front, as plain lines: several progress bars on one terminal would overwrite one
another.
"""

from __future__ import annotations

import logging
import sys
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
    posts: Path, encoders: Sequence[FoldEncoder], *, jobs: int, threads: int
) -> list[tuple[NgramStyleModel, dict[str, Any]]]:
    """(model, manifest) of each of `encoders`, in their order, pre-trained `jobs` at a time in spawned processes of
    `threads` threads each."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    level = logging.getLogger("harness").getEffectiveLevel()
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(jobs, mp_context=context, initializer=_start_worker, initargs=(threads, level)) as pool:
        futures = [pool.submit(_pretrain_one, Path(posts), encoder) for encoder in encoders]
        try:
            return [future.result() for future in futures]
        except BrokenProcessPool:
            pool.shutdown(cancel_futures=True)
            raise HarnessError(
                f"a pre-training process ended abruptly (out of memory? each of the {jobs} jobs holds its fold's "
                "posts and model; try a smaller --jobs); nothing was written"
            ) from None
        except BaseException:  # the first failure (or Ctrl-C): encoders not yet started are not started
            pool.shutdown(cancel_futures=True)
            raise


_worker: dict[str, Any] = {"corpora": {}, "name": ""}  # a worker's corpus per fold, and the encoder it trains now


class _NamePrefix(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        record.msg = f"[{_worker['name']}] {record.msg}"
        return True


def _start_worker(threads: int, level: int) -> None:
    import torch
    from threadpoolctl import threadpool_limits

    import core.progress

    torch.set_num_threads(threads)
    threadpool_limits(threads)
    core.progress.BARS = False
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(message)s"))
    handler.addFilter(_NamePrefix())
    harness_logger = logging.getLogger("harness")
    harness_logger.handlers[:] = [handler]
    harness_logger.setLevel(level)
    harness_logger.propagate = False


def _pretrain_one(posts: Path, encoder: FoldEncoder) -> tuple[NgramStyleModel, dict[str, Any]]:
    _worker["name"] = encoder.name
    corpora: dict[int, PretrainingCorpus] = _worker["corpora"]
    if encoder.fold not in corpora:
        corpora.clear()  # the encoders come fold by fold: keep one fold's posts at a time
        corpora[encoder.fold] = pretraining_corpus(posts, encoder.exclusions)
    return pretrain_ngram_style(corpora[encoder.fold], encoder.exclusions, None, encoder.settings)
