"""Which texts a pre-trained style encoder read, so that no run answers about them.

`harness pretrain-style` keeps a key of every post of its corpus, held-out authors' too (they chose the kept step):
`text_keys`, 64 bits of the hash of the prepared text (`toolkit.splits.text_key`: equal up to white space). An n-gram
model keeps them in its weights, a transformer folder in `READ_KEYS_FILE` beside its files. A system answering with
such an encoder keeps of them only those outside its own training data (`read_outside`: a test text equal to a
training text, as PAN14 reuses texts and "thanks" posts recur, is no leak of the encoder's), and refuses to answer
about any other (`refuse_read_texts`). Audit 10 found a model made for one pair set read on another set of the same
posts, silently.

On the forum tasks a model made with `pretrain-style --train-split-of` records its split's digest (`keys_digest` of
`split_keys`); one made for another split, or on the same posts with no split, may know the test authors from their
other posts and is refused (`refuse_other_split`; audit 10: reddit's EER fell from 0.225 to 0.087).
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from core.errors import HarnessError

logger = logging.getLogger("harness")

READ_KEYS = "read_text_keys"  # the array's name in a model's weights and a checkpoint
READ_KEYS_FILE = f"{READ_KEYS}.npy"  # beside a pre-trained transformer's files
READ_BY, READ_OUTSIDE = "read_by", "read_outside_training"  # `TextsRead.checkpoint`'s names

PRETRAIN_HINT = (
    "pre-train it again with them left out, from a base encoder that did not read them either (the same `harness "
    "pretrain-style` command and `--encoder`, with `--exclude-test-of SET` for a pan23 set SET, or `--train-split-of "
    "TASK` and this run's task parameters for darkweb and reddit)"
)


def text_keys(texts: Iterable[str]) -> np.ndarray:
    """Sorted distinct 64-bit keys of prepared texts (`toolkit.splits.text_key`: equal up to white space)."""
    from toolkit.splits import text_key

    return np.unique(np.array([int(text_key(text)[:16], 16) for text in texts], dtype=np.uint64))


def prepared_keys(texts: Iterable[str]) -> np.ndarray:
    """`text_keys` of raw texts, prepared as pre-training prepares its posts (`toolkit.text_prep`)."""
    from toolkit.text_prep import prepare_text

    return text_keys(prepare_text(text) for text in texts)


def split_keys(post_texts: Iterable[Sequence[str]]) -> np.ndarray:
    """The keys of a forum split's posts (`ForumSplit.post_texts()`): what it holds, whatever the task's parameters."""
    return prepared_keys(text for texts in post_texts for text in texts if text.strip())


def keys_digest(keys: np.ndarray) -> str:
    """One checksum of a split's `split_keys`: tells the training split a model was pre-trained on from a run's (the
    task's own checksum is the posts file's)."""
    return "sha256:" + hashlib.sha256(np.ascontiguousarray(keys, dtype="<u8").tobytes()).hexdigest()


def write_read_keys(folder: Path, keys: np.ndarray) -> None:
    """Keep `keys` (`text_keys` of what an encoder read) in `folder`, beside its model files."""
    np.save(Path(folder) / READ_KEYS_FILE, np.ascontiguousarray(keys, dtype="<u8"), allow_pickle=False)


def folder_read_keys(model: str | Path | None) -> np.ndarray | None:
    """The keys a pre-trained encoder's folder keeps; None where `model` is no folder or keeps none (a Hugging Face
    model, the default encoder, a folder pre-trained before folders kept them: those are not checked)."""
    if model is None:
        return None
    path = Path(model).expanduser() / READ_KEYS_FILE
    if not path.exists() and not path.is_symlink():  # a dangling link or a folder there is refused, not skipped
        return None
    try:
        keys = np.load(path, allow_pickle=False)
    except OSError as error:
        raise HarnessError(f"{path}: cannot read the keys of the texts the encoder read ({error})") from None
    except ValueError:
        raise HarnessError(
            f"{path}: not an array of text keys (Python objects, or a file cut short); pre-train the encoder again"
        ) from None
    if keys.ndim != 1 or keys.dtype.kind != "u" or keys.dtype.itemsize != 8:
        raise HarnessError(f"{path}: expected one row of uint64 text keys, found {keys.dtype} {keys.shape}")
    return keys.astype(np.uint64)


class TextsRead(NamedTuple):
    """What the pre-trained encoder(s) at `encoder` read outside a run's training data: sorted `text_keys`."""

    keys: np.ndarray
    encoder: str

    def checkpoint(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """(state, arrays) entries that keep it in a system's checkpoint (`from_checkpoint` reads them back)."""
        return {READ_BY: self.encoder}, {READ_OUTSIDE: self.keys}

    @classmethod
    def from_checkpoint(cls, state: Mapping[str, Any], arrays: Mapping[str, np.ndarray]) -> TextsRead | None:
        """What `checkpoint` kept; None where the checkpoint keeps nothing (its encoder kept no keys)."""
        if READ_BY not in state:
            return None
        return cls(np.asarray(arrays[READ_OUTSIDE], dtype=np.uint64), str(state[READ_BY]))


def pretraining_manifest(model: str | Path | None) -> dict[str, Any] | None:
    """The manifest `harness pretrain-style` wrote beside a transformer encoder (`STYLE_PRETRAINING_MANIFEST`); None
    where `model` is no such folder."""
    import json

    from toolkit.pretrained import STYLE_PRETRAINING_MANIFEST

    if model is None:
        return None
    path = Path(model).expanduser() / STYLE_PRETRAINING_MANIFEST
    if not path.is_file():
        return None
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise HarnessError(f"{path}: cannot read the style pre-training's manifest ({error})") from None
    if not isinstance(manifest, dict):
        raise HarnessError(f"{path}: expected a JSON object, the style pre-training's manifest")
    return manifest


def read_outside(reads: Sequence[np.ndarray | None], training: np.ndarray, encoder: Any) -> TextsRead | None:
    """What the encoders that answer read (`reads`, one array each, None: unknown) outside the run's training data
    (`training`: its keys); None where no encoder keeps what it read."""
    known = [read for read in reads if read is not None]
    if not known:
        return None
    return TextsRead(np.setdiff1d(np.unique(np.concatenate(known)), training), str(encoder))


def refuse_read_texts(reads: Sequence[TextsRead], keys: np.ndarray, *, name: str) -> None:
    """A HarnessError where an encoder read (`reads`, from `read_outside`) any of the texts of `keys` (`text_keys` of
    the prepared texts a run answers about): its answers would rest on them."""
    for read in reads:
        found = int(np.isin(keys, read.keys).sum())
        if found:
            raise HarnessError(
                f"{name}: the encoder at {read.encoder} was pre-trained on {found} of the {len(keys)} texts it is "
                f"asked to answer about, so its answers would rest on them; {PRETRAIN_HINT}"
            )


def refuse_other_split(manifest: dict[str, Any], train: Any, posts: Path | None, *, name: str, model: Any) -> None:
    """A HarnessError where a forum task's run would answer with an encoder (`manifest`: its pre-training's) made for
    another training split than `train` (a `tasks.forum.records.ForumSplit`; by `keys_digest` of its `split_keys`),
    or made on the run's posts file (`posts`; None where the split names none) with no split at all: either may know
    the test authors."""
    made_for = (manifest.get("excluded") or {}).get("training_split_of") or {}
    hint = (
        "pre-train it again with `--train-split-of TASK` and this run's task parameters (the same `harness "
        "pretrain-style` command and `--encoder`)"
    )
    if made_for and "split_texts" not in made_for:
        logger.warning(
            "%s: the encoder at %s was pre-trained before models recorded their training split's texts, so that it "
            "was made for this run's split (%s with this run's task parameters) cannot be checked; pre-train it "
            "again to have it checked",
            name, model, made_for.get("task"),
        )  # fmt: skip
    recorded = made_for.get("split_texts")
    if recorded is not None and recorded != keys_digest(split_keys(train.post_texts())):
        split = f"{made_for.get('task')} {made_for.get('task_params') or ''}".strip()
        raise HarnessError(
            f"{name}: the encoder at {model} was pre-trained on the training split of {split}, not on this run's "
            f"(another task or other task parameters), so it may know the test authors; {hint}"
        )
    if not made_for and posts is not None and _same_file(manifest, posts):
        raise HarnessError(
            f"{name}: the encoder at {model} was pre-trained on these posts, its test side included; {hint}"
        )


def read_in_split(
    manifest: dict[str, Any] | None, read: np.ndarray | None, train: Any, posts: Path | None, *, name: str, model: Any
) -> TextsRead | None:
    """What a forum system's pre-trained encoder at `model` (its pre-training's `manifest`, None where none; its
    `read` keys) read outside the training split `train` (every post it holds: `held_texts`), after
    `refuse_other_split`; None where the encoder keeps no keys."""
    if manifest is not None:
        refuse_other_split(manifest, train, posts, name=name, model=model)
    if read is None:
        return None
    return read_outside([read], prepared_keys(train.held_texts()), model)


def _same_file(manifest: dict[str, Any], posts: Path) -> bool:
    """Whether the pre-training's corpus was the file `posts` (by the checksum its manifest records)."""
    from core.files import sha256_files

    recorded = (manifest.get("corpus") or {}).get("sha256")
    return recorded is not None and recorded == sha256_files([posts])
