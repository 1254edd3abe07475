"""`harness pretrain-style`'s work, behind the CLI (which must not import torch): corpus, exclusions, training."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from systems.style_encoder.corpus import excluded_by_sets, pretraining_corpus, training_split_of
from systems.style_encoder.pretraining import preset, pretrain_style_encoder

logger = logging.getLogger("harness")


def pretrain_style(
    posts: Path,
    out_dir: Path,
    *,
    exclude_sets: Sequence[Path],
    preset_name: str,
    train_split_of: str | None = None,
    task_params: dict[str, Any] | None = None,
    **settings: Any,
):
    """Read the posts less the sets' test sides (and, for a forum task, only its training split), pre-train, write
    `out_dir`; return the manifest."""
    chosen = preset(preset_name, **settings)  # refuses bad settings before the corpus is read
    exclusions = excluded_by_sets(exclude_sets)
    if train_split_of is not None:
        from harness.runner import make_task

        params = dict(task_params or {})
        exclusions.only_post_ids = training_split_of(make_task(train_split_of, params), train_split_of, params, posts)
        exclusions.training_split_of = {"task": train_split_of, "task_params": params}
    corpus = pretraining_corpus(posts, exclusions)
    logger.info(
        "style pre-training on %d posts of %d authors (%d with two kinds); left out: %s",
        corpus.posts,
        len(corpus.authors),
        corpus.summary()["authors_with_two_kinds"],
        corpus.left_out,
    )
    return pretrain_style_encoder(corpus, exclusions, out_dir, chosen)
