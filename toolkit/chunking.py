"""Overlapping chunks of at most `max_tokens` tokens, cut where the encoder's tokenizer says (as the BERT-BiLSTM paper).

A text is tokenised once, without special tokens; its token ids are cut into windows of
`max_tokens - <special tokens>` ids (126 for BERT's [CLS] ... [SEP]); consecutive windows start
`stride` ids apart, so with `stride` below the window they overlap. The last window is aligned to
the end of the text, so every chunk of a text longer than one window is full: the paper overlaps
chunks "to avoid too long padding sequences". A text shorter than one window is one short chunk.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np


def default_stride(window: int) -> int:
    """A quarter of each window overlaps the next: the default `stride` is 3/4 of the window."""
    return max(1, (3 * window) // 4)


def chunk_spans(length: int, window: int, stride: int) -> list[tuple[int, int]]:
    """`[start, end)` spans covering `length` token positions with windows of `window`, `stride` apart.

    Every position is covered; every span is `window` long except when the whole text is shorter
    (one span); the last span ends at `length`. An empty text gives one empty span, so every text
    has at least one chunk.
    """
    if window < 1 or stride < 1:
        raise ValueError(f"window and stride must be positive, got window={window}, stride={stride}")
    if stride > window:
        raise ValueError(f"stride {stride} > window {window} would skip tokens between chunks")
    if length <= window:
        return [(0, length)]
    starts = list(range(0, length - window + 1, stride))
    if starts[-1] + window < length:
        starts.append(length - window)  # the end-aligned last window: full, overlapping its neighbour more
    return [(s, s + window) for s in starts]


def spread(count: int, limit: int | None) -> list[int]:
    """Indices of at most `limit` of `count` items, evenly spread from first to last (all if no limit)."""
    if limit is None or count <= limit:
        return list(range(count))
    if limit < 1:
        raise ValueError(f"limit must be positive, got {limit}")
    return sorted({int(round(x)) for x in np.linspace(0, count - 1, limit)})


def special_tokens(tokenizer: Any) -> tuple[list[int], list[int]]:
    """The ids the tokenizer puts before and after a single sequence ([CLS] and [SEP] for BERT).

    Found by encoding one word with and without special tokens, which works for any Hugging Face
    tokenizer (transformers 5 no longer offers `build_inputs_with_special_tokens` on all of them).
    """
    plain = tokenizer("a", add_special_tokens=False)["input_ids"]
    full = tokenizer("a", add_special_tokens=True)["input_ids"]
    for start in range(len(full) - len(plain) + 1):
        if full[start : start + len(plain)] == plain:
            return list(full[:start]), list(full[start + len(plain) :])
    raise ValueError(f"cannot tell the special tokens of {type(tokenizer).__name__}")


def chunk_text(
    text: str,
    tokenizer: Any,
    *,
    max_tokens: int = 128,
    stride: int | None = None,
    max_chunks: int | None = None,
) -> list[list[int]]:
    """The input ids (special tokens included) of each chunk of `text`, in text order.

    `tokenizer` is a Hugging Face tokenizer. `stride` defaults to `default_stride(window)`;
    `max_chunks`, if given, keeps that many chunks evenly spread over the text (long novels).
    """
    prefix, suffix = special_tokens(tokenizer)
    window = max_tokens - len(prefix) - len(suffix)
    if window < 1:
        raise ValueError(f"max_tokens={max_tokens} leaves no room beside {len(prefix) + len(suffix)} special tokens")
    stride = default_stride(window) if stride is None else stride
    # verbose=False: a long text is expected here; the "longer than the model's maximum" warning is noise
    encoded = tokenizer(text, add_special_tokens=False, return_attention_mask=False, verbose=False)
    ids: Sequence[int] = encoded["input_ids"]
    spans = chunk_spans(len(ids), window, stride)
    return [prefix + list(ids[a:b]) + suffix for a, b in (spans[i] for i in spread(len(spans), max_chunks))]
