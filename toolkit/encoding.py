"""Token sequences -> model outputs in length-sorted batches, the next group prepared while the device works.

The one encoding path of the systems that run a frozen transformer over many texts
(toolkit.layer_features, systems.forum_encoder.encoding). The caller hands over `Group`s:
texts (by key) and their token sequences, one or more per text (chunks), special tokens included.
`encode_groups` then, for each group in turn:

- on a background thread, while the device works on the group before: sorts its sequences by
  length (a batch is padded only to its own longest, so there is little padding), pads them into
  batches (pinned memory on CUDA) — and, since the groups are a lazy iterable, tokenises them;
- on the calling thread: copies each batch to the device (non-blocking), runs the caller's
  `forward` under `torch.inference_mode` and (on CUDA, when asked) fp16/bf16 autocast, and copies the
  result back into pinned memory without waiting: the result of batch i is read after batch i+1 is
  launched, so the device does not wait for Python between batches;
- yields the group with its outputs (float32, one row per sequence, in the group's order).

`tokenize_many` calls the fast tokenizer on many texts at once (Rust, several threads), not one
text per call. torch is imported inside the functions: this module is safe to import from the CLI.
"""

from __future__ import annotations

import queue
import threading
import weakref
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import chain
from typing import Any

import numpy as np

from toolkit.devices import autocast

# texts per tokenizer call: enough for its threads; the characters bound keeps the token lists of long texts small
TEXTS_PER_CALL = 256
CHARS_PER_CALL = 1 << 20
_DONE = object()


def tokenize_many(
    tokenizer: Any, texts: Sequence[str], *, add_special_tokens: bool, max_length: int | None = None
) -> list[list[int]]:
    """Each text's token ids, as `tokenizer(text, ...)["input_ids"]` gives them, `TEXTS_PER_CALL` texts a call.

    `max_length` truncates (special tokens included); without it, long texts are kept whole. A fast
    tokenizer's Rust backend is called directly (a private copy, so the tokenizer's own truncation
    and padding state is left alone), without the character offsets nobody here reads.
    """
    backend = _backend(tokenizer, max_length)
    ids: list[list[int]] = []
    for part in portions(texts):
        group = list(texts[part])
        if backend is not None:
            ids.extend(e.ids for e in backend.encode_batch_fast(group, add_special_tokens=add_special_tokens))
            continue
        encoded = tokenizer(  # a slow (Python) tokenizer: its own batch call
            group,
            add_special_tokens=add_special_tokens,
            truncation=max_length is not None,
            max_length=max_length,
            return_attention_mask=False,
            return_token_type_ids=False,
            verbose=False,  # texts longer than the model's maximum are expected here (they are chunked)
        )
        ids.extend(encoded["input_ids"])
    return ids


_backends: weakref.WeakKeyDictionary[Any, dict[int | None, Any]] = weakref.WeakKeyDictionary()
_backends_lock = threading.Lock()


def _backend(tokenizer: Any, max_length: int | None) -> Any:
    """A copy of a fast tokenizer's backend with no padding and the given truncation (None: not fast)."""
    original = getattr(tokenizer, "backend_tokenizer", None) if getattr(tokenizer, "is_fast", False) else None
    if original is None or not hasattr(original, "encode_batch_fast"):
        return None
    with _backends_lock:
        per_length = _backends.setdefault(tokenizer, {})
        if max_length not in per_length:
            from tokenizers import Tokenizer

            backend = Tokenizer.from_str(original.to_str())
            backend.no_padding()
            if max_length is None:
                backend.no_truncation()
            else:
                side = getattr(tokenizer, "truncation_side", "right")
                backend.enable_truncation(max_length, stride=0, strategy="longest_first", direction=side)
            per_length[max_length] = backend
        return per_length[max_length]


def portions(
    texts: Sequence[str], *, most_texts: int = TEXTS_PER_CALL, most_chars: int = CHARS_PER_CALL
) -> Iterator[slice]:
    """Consecutive slices of `texts` of at most `most_texts` texts and `most_chars` characters (but at
    least one text): what one tokenizer call gets, so that long texts (novels) never pile up."""
    start = 0
    while start < len(texts):
        stop, chars = start, 0
        while (
            stop < len(texts)
            and stop - start < most_texts
            and (stop == start or chars + len(texts[stop]) <= most_chars)
        ):
            chars += len(texts[stop])
            stop += 1
        yield slice(start, stop)
        start = stop


def growing(count: int, *, first: int, most: int) -> Iterator[slice]:
    """Slices covering `range(count)`, `first` long, then each twice the one before, up to `most`: the
    device gets its first batch soon, and later groups are large (batches sorted over many texts)."""
    start, size = 0, max(1, first)
    while start < count:
        yield slice(start, min(count, start + size))
        start += size
        size = min(max(most, 1), 2 * size)


@dataclass
class Group:
    """Texts (`keys`) and their token sequences: text i owns `sequences[offsets[i]:offsets[i + 1]]`."""

    keys: list[Any]
    sequences: list[Sequence[int]]
    offsets: np.ndarray

    @classmethod
    def of(cls, keys: Sequence[Any], per_text: Sequence[Sequence[Sequence[int]]]) -> Group:
        """A group from each text's list of sequences (one list per key)."""
        counts = [len(s) for s in per_text]
        offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        return cls(list(keys), [seq for seqs in per_text for seq in seqs], offsets)

    def split(self, outputs: np.ndarray) -> list[np.ndarray]:
        """The outputs of each text (views of `outputs`, in key order)."""
        return [outputs[a:b] for a, b in zip(self.offsets[:-1].tolist(), self.offsets[1:].tolist(), strict=True)]


def length_batches(lengths: np.ndarray, batch_size: int) -> list[np.ndarray]:
    """Positions in batches of `batch_size`, longest first (ties in position order): little padding, and
    the widest batch comes first, so running out of memory shows at once rather than at the end."""
    if batch_size < 1:
        raise ValueError(f"batch_size must be positive, got {batch_size}")
    order = np.argsort(-np.asarray(lengths, dtype=np.int64), kind="stable")
    return [order[i : i + batch_size] for i in range(0, len(order), batch_size)]


def pad(sequences: Sequence[Sequence[int]], pad_id: int) -> tuple[np.ndarray, np.ndarray]:
    """(input_ids, attention_mask), int64 arrays of shape (n, longest), padded on the right."""
    lengths = np.fromiter((len(s) for s in sequences), dtype=np.int64, count=len(sequences))
    width = max(1, int(lengths.max(initial=0)))
    mask = np.arange(width)[None, :] < lengths[:, None]
    ids = np.full((len(sequences), width), pad_id, dtype=np.int64)
    ids[mask] = np.fromiter(chain.from_iterable(sequences), dtype=np.int64, count=int(lengths.sum()))
    return ids, mask.astype(np.int64)


@dataclass
class _InFlight:
    """A group being encoded: its outputs so far, how many rows are still to come, per text and in all."""

    group: Group
    outputs: np.ndarray | None
    rows_left: int
    sequences_left: np.ndarray
    texts_reported: int = 0


def encode_groups(
    model: Any,
    groups: Iterable[Group],
    forward: Callable[[Any, Any, Any], Any],
    *,
    pad_id: int,
    batch_size: int,
    device: str = "cpu",
    mixed_precision: bool = False,
    groups_ahead: int = 1,
    on_texts_done: Callable[[int], None] | None = None,
) -> Iterator[tuple[Group, np.ndarray]]:
    """Each group with its outputs: `forward(model, input_ids, attention_mask)` (a tensor, one row per
    sequence) for all its sequences, as float32 in the group's order. Groups come out in order.

    Groups are pulled (and so tokenised, when `groups` is lazy) and batched on a background thread,
    at most `groups_ahead` groups ahead of the device. `on_texts_done(n)` is called as soon as a batch
    completes the last sequences of `n` texts (e.g. `Progress.update`): a group of thousands of texts
    takes minutes on a CPU, and progress counted per group would be silent all that time.
    """
    import torch

    cuda = device.startswith("cuda")
    amp = mixed_precision and cuda

    def prepare(group: Group) -> tuple[Group, list[tuple[np.ndarray, Any, Any]]]:
        lengths = np.fromiter((len(s) for s in group.sequences), dtype=np.int64, count=len(group.sequences))
        batches = []
        for rows in length_batches(lengths, batch_size):
            ids, mask = pad([group.sequences[i] for i in rows.tolist()], pad_id)
            ids_t, mask_t = torch.from_numpy(ids), torch.from_numpy(mask)
            if cuda:  # page-locked: the copy to the device is asynchronous
                ids_t, mask_t = ids_t.pin_memory(), mask_t.pin_memory()
            batches.append((rows, ids_t, mask_t))
        return group, batches

    def launch(rows: np.ndarray, ids: Any, mask: Any) -> tuple[Any, ...]:
        """Start one batch; on CUDA its result comes back into pinned memory without waiting for it."""
        # no yield inside these blocks: a suspended generator would leave the modes set for its caller
        with torch.inference_mode(), autocast(device, amp):
            out = forward(model, ids.to(device, non_blocking=True), mask.to(device, non_blocking=True)).float()
            if not cuda:
                return rows, out.numpy(), None, None
            host = torch.empty(out.shape, dtype=torch.float32, pin_memory=True)
            host.copy_(out, non_blocking=True)
            event = torch.cuda.Event()
            event.record()
        return rows, host, event, (ids, mask)  # the inputs kept alive until their copy is done

    def land(slot: _InFlight, launched: tuple[Any, ...]) -> None:
        rows, values, event, _ = launched
        if event is not None:
            event.synchronize()
            values = values.numpy()
        if slot.outputs is None:
            slot.outputs = np.empty((len(slot.group.sequences), *values.shape[1:]), dtype=np.float32)
        slot.outputs[rows] = values
        slot.rows_left -= len(rows)
        if on_texts_done is not None:
            owners = np.searchsorted(slot.group.offsets, rows, side="right") - 1  # the text of each row
            np.subtract.at(slot.sequences_left, owners, 1)
            done = int(np.count_nonzero(slot.sequences_left[np.unique(owners)] == 0))  # just finished
            slot.texts_reported += done
            on_texts_done(done)

    def finished() -> Iterator[tuple[Group, np.ndarray]]:
        while state and state[0].rows_left == 0:
            slot = state.pop(0)
            if on_texts_done is not None and slot.texts_reported < len(slot.group.keys):
                on_texts_done(len(slot.group.keys) - slot.texts_reported)  # texts without sequences
            yield slot.group, slot.outputs if slot.outputs is not None else np.zeros((0,), dtype=np.float32)

    prepared = _Prefetch(map(prepare, groups), ahead=groups_ahead)
    state: list[_InFlight] = []  # the groups in flight, in order
    waiting: tuple[_InFlight, tuple[Any, ...]] | None = None  # the batch launched last, not landed yet
    try:
        for group, batches in prepared:
            state.append(_InFlight(group, None, len(group.sequences), np.diff(group.offsets)))
            for rows, ids, mask in batches:
                launched = (state[-1], launch(rows, ids, mask))
                if waiting is not None:  # the batch before: done (CPU) or done soon, while this one runs (CUDA)
                    land(*waiting)
                waiting = launched
                yield from finished()
            yield from finished()  # a group without sequences
        if waiting is not None:
            land(*waiting)
        yield from finished()
    finally:
        prepared.close()


class _Prefetch:
    """Iterate `items` on a background thread, at most `ahead` items ahead of the consumer.

    An exception on the thread is raised in the consumer; `close()` stops the thread.
    """

    def __init__(self, items: Iterable[Any], *, ahead: int) -> None:
        self._queue: queue.Queue[Any] = queue.Queue(maxsize=max(1, ahead))
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(iter(items),), daemon=True, name="encoding-prefetch")
        self._thread.start()

    def _run(self, items: Iterator[Any]) -> None:
        try:
            for item in items:
                if not self._put((True, item)):
                    return
        except BaseException as exc:  # handed to the consumer, raised there
            self._put((False, exc))
            return
        self._put((True, _DONE))

    def _put(self, item: Any) -> bool:
        while not self._stop.is_set():
            try:
                self._queue.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def __iter__(self) -> Iterator[Any]:
        while True:
            ok, item = self._queue.get()
            if not ok:
                raise item
            if item is _DONE:
                return
            yield item

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
