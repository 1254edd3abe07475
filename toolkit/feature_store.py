"""A disk cache of per-text arrays in shards: thousands of texts per file, memory-mapped on read.

One store is one folder for one namespace (an encoder, its settings and the layers kept): whoever
opens it names the folder after a hash of that description. Inside it:

    meta.json             the namespace's description, row shape and dtype (written once)
    index.txt             the committed shards, one name a line (replaced whole, under index.lock)
    <shard>.rows.npy      every row of the shard's texts, concatenated: (rows, *row_shape)
    <shard>.keys.npy      (key, start, count) per text: its rows are rows[start:start + count]

A text's key is a 16-byte hash of the text as given (`cache_key`); a text owns one or more rows (the chunks
of a text, or its one vector). Safe against partial writes and concurrent writers: a shard's two
files are written beside their names and renamed into place, and only then is the shard added to
the index, under a file lock; a reader only ever opens shards the index lists, so a crash leaves at
most an unlisted file that nobody reads. Two writers that compute the same text both commit it; the
copies are equal and a reader takes either. A listed shard that cannot be opened (damaged on disk)
is dropped from the index with a warning, and its texts count as missing (computed again).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import uuid
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from core.files import atomic_write

logger = logging.getLogger("harness")

KEY_BYTES = 16
KEY_DTYPE = np.dtype([("key", f"S{KEY_BYTES}"), ("start", "<i8"), ("count", "<i8")])
INDEX = "index.txt"
OPEN_SHARDS = 64
_ROWS, _KEYS = ".rows.npy", ".keys.npy"


def cache_key(text: str) -> bytes:
    """The 16-byte store key of a text: blake2b of its UTF-8 bytes as given (lone surrogates kept).

    Not `toolkit.splits.text_key`, which identifies a text up to white space for leak checks: a cache
    keeps exactly what was computed, so two spellings of a text are two entries.
    """
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=KEY_BYTES).digest()


def namespace_folder(root: Path, description: dict[str, Any]) -> Path:
    """`root/<hash of the description>`: one folder per namespace, whatever the description holds."""
    digest = hashlib.sha256(json.dumps(description, sort_keys=True).encode()).hexdigest()
    return Path(root) / digest[:24]


class ShardStore:
    """Rows of texts in shards under `folder` (see the module docstring).

    `find(keys)` says where each text's rows are (or that they are missing); `rows(location)` reads
    them (a memory-mapped view); `add(keys, arrays)` writes one shard of new texts and commits it.
    """

    def __init__(
        self, folder: Path, *, row_shape: Sequence[int], dtype: Any, description: dict[str, Any] | None = None
    ) -> None:
        self.folder = Path(folder)
        self.row_shape = tuple(int(x) for x in row_shape)
        self.dtype = np.dtype(dtype)
        self.description = dict(description or {})
        self._shards: list[str] = []  # shard number -> name, in the order loaded
        self._numbers: dict[str, int] = {}
        self._rows: OrderedDict[int, np.ndarray] = OrderedDict()  # opened (memory-mapped) row files, last used last
        self._broken: set[int] = set()
        self._pending: list[tuple[np.ndarray, np.ndarray]] = []  # (records, shard numbers) not yet in the table
        self._table_keys = np.zeros(0, dtype=f"S{KEY_BYTES}")
        self._table_where = np.zeros((0, 3), dtype=np.int64)  # shard number, start, count
        self._index_stamp: tuple[int, int] | None = None

    # -- reading -------------------------------------------------------------------------------------

    def find(self, keys: Sequence[bytes]) -> list[tuple[int, int, int] | None]:
        """Per key, (shard number, start, count) of its rows, or None when no readable shard holds it."""
        self._refresh()
        if not len(keys):
            return []
        query = np.array(list(keys), dtype=f"S{KEY_BYTES}")
        if not len(self._table_keys):
            return [None] * len(query)
        at = np.minimum(np.searchsorted(self._table_keys, query), len(self._table_keys) - 1)
        hit = self._table_keys[at] == query
        where = self._table_where[at].tolist()
        found: list[tuple[int, int, int] | None] = []
        for ok, (shard, start, count) in zip(hit.tolist(), where, strict=True):
            found.append((shard, start, count) if ok and self._open(shard) is not None else None)
        return found

    def rows(self, where: tuple[int, int, int]) -> np.ndarray:
        """The rows at a location `find` gave: a read-only view of the memory-mapped shard (copy what you keep:
        a view keeps its shard's file open)."""
        shard, start, count = where
        array = self._open(shard)
        if array is None:
            raise KeyError(f"shard {self._shards[shard]} of {self.folder} cannot be read")
        return array[start : start + count]

    def _refresh(self) -> None:
        """Load shards the index lists that are not loaded yet (another process may have added some)."""
        index = self.folder / INDEX
        try:
            info = index.stat()
        except FileNotFoundError:
            return
        stamp = (info.st_mtime_ns, info.st_size)
        if stamp != self._index_stamp:
            self._index_stamp = stamp
            for name in index.read_text(encoding="utf-8").split():
                if name not in self._numbers:
                    self._load_keys(name)
        if self._pending:
            self._merge()

    def _load_keys(self, name: str) -> None:
        number = len(self._shards)
        self._shards.append(name)
        self._numbers[name] = number
        path = self.folder / f"{name}{_KEYS}"
        try:
            records = np.load(path, allow_pickle=False)
            if records.dtype != KEY_DTYPE or records.ndim != 1:
                raise ValueError(f"records of dtype {records.dtype}, shape {records.shape}")
        except (OSError, ValueError) as exc:
            self._drop(number, exc)
            return
        self._pending.append((records, np.full(len(records), number, dtype=np.int64)))

    def _merge(self) -> None:
        """One sorted table of every loaded key: a lookup of n keys is one vectorised binary search."""
        records = [r for r, _ in self._pending]
        keys = np.concatenate([self._table_keys, *(r["key"] for r in records)])
        where = np.concatenate(
            [
                self._table_where,
                *(np.stack([n, r["start"], r["count"]], axis=1) for r, n in self._pending),
            ]
        )
        order = np.argsort(keys, kind="stable")
        self._table_keys, self._table_where = keys[order], where[order]
        self._pending = []

    def _open(self, number: int) -> np.ndarray | None:
        """The shard's rows, memory-mapped; at most `OPEN_SHARDS` stay open (each mapping holds a file handle)."""
        if number in self._broken:
            return None
        if number in self._rows:
            self._rows.move_to_end(number)
        else:
            path = self.folder / f"{self._shards[number]}{_ROWS}"
            try:
                array = np.load(path, mmap_mode="r", allow_pickle=False)
                if array.shape[1:] != self.row_shape or array.dtype != self.dtype:
                    raise ValueError(f"rows of shape {array.shape}, dtype {array.dtype}, expected {self.row_shape}")
            except (OSError, ValueError) as exc:
                self._drop(number, exc)
                return None
            self._rows[number] = array
            while len(self._rows) > OPEN_SHARDS:
                self._rows.popitem(last=False)  # closed once no view of it is left
        return self._rows[number]

    def _drop(self, number: int, reason: Exception) -> None:
        """Forget a damaged shard, here and in the index: its texts are computed again."""
        name = self._shards[number]
        self._broken.add(number)
        logger.warning(
            "feature cache shard %s in %s is unreadable (%s): its texts are computed again", name, self.folder, reason
        )
        with contextlib.suppress(OSError), self._lock():
            self._write_index([n for n in self._read_index() if n != name])

    # -- writing -------------------------------------------------------------------------------------

    def add(self, keys: Sequence[bytes], arrays: Sequence[np.ndarray]) -> None:
        """Write one shard holding each key's array (rows of `row_shape`, at least one) and commit it."""
        if len(keys) != len(arrays):
            raise ValueError(f"{len(keys)} keys but {len(arrays)} arrays")
        if not len(keys):
            return
        counts = np.array([len(a) for a in arrays], dtype=np.int64)
        records = np.zeros(len(keys), dtype=KEY_DTYPE)
        records["key"] = list(keys)
        records["count"] = counts
        records["start"] = np.concatenate([[0], np.cumsum(counts)[:-1]])
        rows = np.concatenate([np.asarray(a, dtype=self.dtype).reshape(-1, *self.row_shape) for a in arrays])
        self.folder.mkdir(parents=True, exist_ok=True)
        self._write_meta()
        name = f"shard-{os.getpid()}-{uuid.uuid4().hex[:12]}"
        # rows first, keys second, index last: whatever the index lists is complete
        with atomic_write(self.folder / f"{name}{_ROWS}", "wb") as handle:
            np.save(handle, rows, allow_pickle=False)
        with atomic_write(self.folder / f"{name}{_KEYS}", "wb") as handle:
            np.save(handle, records, allow_pickle=False)
        with self._lock():
            self._write_index([*self._read_index(), name])
        self._numbers[name] = number = len(self._shards)
        self._shards.append(name)
        self._pending.append((records, np.full(len(records), number, dtype=np.int64)))

    def _write_meta(self) -> None:
        path = self.folder / "meta.json"
        if path.is_file():
            return
        meta = {"description": self.description, "row_shape": list(self.row_shape), "dtype": self.dtype.str}
        with atomic_write(path) as handle:
            json.dump(meta, handle, indent=2, sort_keys=True)

    def _lock(self) -> Any:
        from filelock import FileLock

        return FileLock(str(self.folder / "index.lock"))

    def _read_index(self) -> list[str]:
        path = self.folder / INDEX
        return path.read_text(encoding="utf-8").split() if path.is_file() else []

    def _write_index(self, names: list[str]) -> None:
        with atomic_write(self.folder / INDEX) as handle:
            handle.write("".join(f"{n}\n" for n in names))

    # -- housekeeping --------------------------------------------------------------------------------

    def stats(self) -> dict[str, int]:
        """Shards and texts committed (as far as this process has loaded them)."""
        self._refresh()
        return {"shards": len(self._shards) - len(self._broken), "texts": int(len(self._table_keys))}
